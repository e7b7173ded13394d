//! The HOME of this process, resolved once.
//!
//! An agent's `.mcp.json` sets the server's HOME. It can spell it through a link in its workspace
//! that leads outside when the server starts and that it re-points afterwards, or climb out of such
//! a link with `..`, which a lexical fold and the kernel take to different folders. So HOME is
//! resolved once, as the kernel resolves it, and that path is both what the configuration's
//! discovery judges (a HOME in the workspace starts nothing) and what the server uses: what was
//! judged is what is used. Children are given the account's home ([`account_home`]), which the
//! password database names whatever HOME says. The configuration and the drivers cannot see each
//! other; this is their one definition of both.

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

static HOME: OnceLock<Option<PathBuf>> = OnceLock::new();
static ACCOUNT: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Test builds only ([`crate::TEST_SEAMS`]): the account's home for a test's servers, which each get a HOME of their own
/// (the password database's answer would make every test on the machine share one home).
pub const TEST_ACCOUNT_HOME: &str = "AHIL_TEST_ACCOUNT_HOME";

/// HOME as this process resolved it the first time it was asked: `None` when unset or empty.
pub fn process_home() -> Option<&'static Path> {
    HOME.get_or_init(|| resolve(std::env::var_os("HOME")))
        .as_deref()
}

/// The home of the account this process runs as, as the password database names it (a test build
/// takes `AHIL_TEST_ACCOUNT_HOME` first), else [`process_home`]: the HOME every child is given. Not
/// the HOME the agent's `.mcp.json` names, which the server may be told to look for the operator's
/// configuration in, but which can be any folder outside the workspace, `/tmp` or another checkout
/// among them, whose `~/.openocd` and Python user site are anyone's.
pub fn account_home() -> Option<&'static Path> {
    ACCOUNT
        .get_or_init(|| {
            // Only a test build reads the seam; every other build asks the password database, so
            // a HOME (or a seam variable) the agent names moves nothing.
            let seam = if crate::TEST_SEAMS {
                std::env::var_os(TEST_ACCOUNT_HOME)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            } else {
                None
            };
            seam.or_else(password_database_home)
                .or_else(|| process_home().map(Path::to_path_buf))
        })
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

/// The home directory `getpwuid_r` gives for the real user id, when it names an absolute one.
#[allow(unsafe_code)]
pub fn password_database_home() -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let mut buffer = vec![0 as libc::c_char; 64 * 1024];
    // SAFETY: `passwd` is plain old data (integers and pointers); all zero is a valid value that
    // getpwuid_r overwrites.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the size given; getpwuid_r writes the entry's
    // strings into `buffer` and sets `found` to `&entry` or null.
    let status = unsafe {
        libc::getpwuid_r(
            uid,
            &raw mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &raw mut found,
        )
    };
    if status != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: on success `pw_dir` points to a NUL-terminated string inside `buffer`, which lives
    // until the end of this function; the bytes are copied out before then.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let home = PathBuf::from(OsStr::from_bytes(dir.to_bytes()));
    home.is_absolute().then_some(home)
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

    #[test]
    fn the_password_database_names_the_home_getent_gives_for_this_user() {
        let id = std::process::Command::new("/usr/bin/id")
            .arg("-u")
            .output()
            .expect("id runs");
        let uid = String::from_utf8_lossy(&id.stdout).trim().to_owned();
        let out = std::process::Command::new("/usr/bin/getent")
            .args(["passwd", &uid])
            .output()
            .expect("getent runs");
        let line = String::from_utf8_lossy(&out.stdout);
        let expected = line.trim_end().split(':').nth(5).map(PathBuf::from);
        assert_eq!(password_database_home(), expected, "getent: {line}");
    }

    /// Set in the copy of this test binary the next test starts with another HOME.
    const ANOTHER_HOME_ROLE: &str = "AHIL_WIRE_TEST_ANOTHER_HOME";

    #[test]
    fn without_the_test_seam_the_accounts_home_is_the_password_databases_whatever_home_says() {
        if std::env::var_os(ANOTHER_HOME_ROLE).is_some() {
            // The child: HOME names a folder that is not the account's, and no seam is set; a
            // test build answers as any other build does.
            let home = process_home().expect("HOME is set").to_path_buf();
            assert_ne!(password_database_home().as_ref(), Some(&home));
            assert_eq!(
                account_home().map(Path::to_path_buf),
                password_database_home(),
                "the account's home followed HOME"
            );
            return;
        }
        let Some(account) = password_database_home() else {
            return; // a uid the password database does not know: nothing to tell apart
        };
        let another = account.join("not-the-account-home");
        let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
            .args([
                "--exact",
                "home::tests::without_the_test_seam_the_accounts_home_is_the_password_databases_whatever_home_says",
                "--test-threads=1",
            ])
            .env_remove(TEST_ACCOUNT_HOME)
            .env("HOME", &another)
            .env(ANOTHER_HOME_ROLE, "1")
            .output()
            .expect("the test binary runs again");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("1 passed"), "the child ran the test: {text}");
    }
}
