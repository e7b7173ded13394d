//! The HOME of this process, resolved once.
//!
//! An agent's `.mcp.json` sets the server's HOME. It can spell it through a link in its workspace
//! that leads outside when the server starts and that it re-points afterwards, or climb out of such
//! a link with `..`, which a lexical fold and the kernel take to different folders. So HOME is
//! resolved once, as the kernel resolves it, and that path is both what the configuration's
//! discovery judges (a HOME in the workspace starts nothing) and what every child is given: what
//! was judged is what is used. The configuration and the drivers cannot see each other; this is
//! their one definition.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

static HOME: OnceLock<Option<PathBuf>> = OnceLock::new();

/// HOME as this process resolved it the first time it was asked: `None` when unset or empty.
pub fn process_home() -> Option<&'static Path> {
    HOME.get_or_init(|| resolve(std::env::var_os("HOME")))
        .as_deref()
}

/// `raw` made absolute against the working directory and resolved as the kernel resolves it: the
/// longest prefix that exists with every link followed where it stands (a `..` after a link climbs
/// from where the link leads), the rest appended as written.
pub fn resolve(raw: Option<OsString>) -> Option<PathBuf> {
    let raw = PathBuf::from(raw.filter(|v| !v.is_empty())?);
    let absolute = std::path::absolute(&raw).unwrap_or(raw);
    let mut resolved = PathBuf::from("/");
    let mut components = absolute.components();
    while let Some(component) = components.next() {
        if matches!(component, Component::RootDir | Component::Prefix(_)) {
            continue;
        }
        if let Ok(next) = std::fs::canonicalize(resolved.join(component)) {
            resolved = next;
            continue;
        }
        // Nothing below a missing folder exists, so the rest can be folded as written on a prefix
        // that holds no link.
        for rest in std::iter::once(component).chain(components) {
            match rest {
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::Normal(name) => resolved.push(name),
                _ => {}
            }
        }
        break;
    }
    Some(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ahil-wire-home-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("ws/inside/a/b")).expect("folders");
        std::fs::canonicalize(dir).expect("resolves")
    }

    #[test]
    fn a_parent_step_after_a_link_climbs_from_where_the_link_leads() {
        let dir = scratch();
        std::os::unix::fs::symlink(dir.join("ws/inside/a/b"), dir.join("ws/hop")).expect("link");
        let spelled = dir.join("ws/hop/../..");
        assert_eq!(
            resolve(Some(spelled.into_os_string())),
            Some(dir.join("ws/inside"))
        );
        let missing = dir.join("ws/hop/../gone/../../x");
        assert_eq!(
            resolve(Some(missing.into_os_string())),
            Some(dir.join("ws/inside/x"))
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn an_unset_or_empty_home_is_none_and_a_relative_one_is_taken_from_the_working_directory() {
        assert_eq!(resolve(None), None);
        assert_eq!(resolve(Some(OsString::new())), None);
        let cwd = std::fs::canonicalize(".").expect("cwd");
        assert_eq!(
            resolve(Some("no-such-home".into())),
            Some(cwd.join("no-such-home"))
        );
    }
}
