//! Lexical path helpers and the link-refusing walk used for every configured location.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Expands a leading `~` (alone or followed by `/`) to `home`.
pub(crate) fn expand_tilde(raw: &str, home: &Path) -> PathBuf {
    if raw == "~" {
        return home.to_path_buf();
    }
    match raw.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(raw),
    }
}

/// Folds `.` and `..` without touching the file system (`..` at the root stays at the root).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let at_root = out.has_root() && out.parent().is_none();
                if !at_root && !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Absolute without following links: joined onto `base` when relative, then folded.
pub fn absolute_lexical(p: &Path, base: &Path) -> PathBuf {
    if p.is_absolute() {
        normalize(p)
    } else {
        normalize(&base.join(p))
    }
}

/// `a` is `b` or lies below it (lexically).
pub(crate) fn is_within(a: &Path, b: &Path) -> bool {
    a.starts_with(b)
}

/// Why a walk refused a path.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// A component is a symlink, or a non-final component is not a directory.
    Unsafe,
    /// The path (or a parent) does not exist.
    Missing,
    Io(io::Error),
}

/// Checks every existing component of an absolute, normalized path with `lstat`: no
/// symbolic link anywhere, every parent a directory. Components that do not exist yet are
/// allowed only when `allow_missing_tail` (a directory about to be created).
pub(crate) fn walk_no_links(path: &Path, allow_missing_tail: bool) -> Result<(), WalkError> {
    let mut cur = PathBuf::new();
    let comps: Vec<Component<'_>> = path.components().collect();
    for (i, c) in comps.iter().enumerate() {
        cur.push(c);
        if matches!(c, Component::RootDir | Component::Prefix(_)) {
            continue;
        }
        match fs::symlink_metadata(&cur) {
            Ok(md) => {
                if md.file_type().is_symlink() {
                    return Err(WalkError::Unsafe);
                }
                let last = i + 1 == comps.len();
                if !last && !md.is_dir() {
                    return Err(WalkError::Unsafe);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return if allow_missing_tail {
                    Ok(())
                } else {
                    Err(WalkError::Missing)
                };
            }
            Err(e) if e.raw_os_error() == Some(20) => return Err(WalkError::Unsafe), // ENOTDIR
            Err(e) => return Err(WalkError::Io(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_expands_only_at_the_start() {
        let home = Path::new("/home/op");
        assert_eq!(expand_tilde("~/x", home), PathBuf::from("/home/op/x"));
        assert_eq!(expand_tilde("~", home), PathBuf::from("/home/op"));
        assert_eq!(expand_tilde("a/~/x", home), PathBuf::from("a/~/x"));
        assert_eq!(expand_tilde("~other/x", home), PathBuf::from("~other/x"));
    }

    #[test]
    fn normalize_folds_dots_lexically() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(normalize(Path::new("/..")), PathBuf::from("/"));
    }

    #[test]
    fn a_symlinked_parent_is_unsafe() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = dir.path().join("real");
        fs::create_dir(&real).expect("mkdir");
        fs::write(real.join("f"), "x").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert!(walk_no_links(&real.join("f"), false).is_ok());
        assert!(matches!(
            walk_no_links(&link.join("f"), false),
            Err(WalkError::Unsafe)
        ));
        assert!(matches!(
            walk_no_links(&real.join("f").join("g"), true),
            Err(WalkError::Unsafe)
        ));
        assert!(matches!(
            walk_no_links(&real.join("nope"), false),
            Err(WalkError::Missing)
        ));
        assert!(walk_no_links(&real.join("nope").join("deeper"), true).is_ok());
    }
}
