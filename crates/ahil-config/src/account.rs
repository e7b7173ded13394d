//! The home of the account this process runs as: what `~` in the operator's configuration means,
//! and where the machine-wide meeting places of every server of the account live (device locks, CAN
//! brokers).
//!
//! Not `$HOME`: an agent's `.mcp.json` sets the server's environment, and a server given another
//! HOME (its configuration still found through `XDG_CONFIG_HOME` or `AGENTIC_HIL_CONFIG`) would take
//! its locks in a folder no other server looks in, and drive a board another server holds; a
//! `state_root: ~/…` would move its evidence, incidents and quarantines to a fresh folder. The
//! password database names the account's home whatever the environment says; with the account's
//! own HOME, as the reference runs, the two are the same folder, so the reference and we still
//! exclude each other.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::discover::Environment;

/// Debug builds only: the account's home for a test's servers, which each get their own HOME (the
/// password database's answer would make every test on the machine share one lock folder).
const TEST_ACCOUNT_HOME: &str = "AHIL_TEST_ACCOUNT_HOME";

impl Environment {
    /// The account's home: the password database's entry for this process's user. A user the
    /// database does not know (a container run under a bare uid) falls back to the environment's
    /// HOME, as before there was this lookup. A debug build takes `AHIL_TEST_ACCOUNT_HOME` when set,
    /// else the environment's HOME.
    pub fn account_home(&self) -> PathBuf {
        if cfg!(debug_assertions) {
            return std::env::var_os(TEST_ACCOUNT_HOME)
                .filter(|v| !v.is_empty())
                .map_or_else(|| self.home.clone(), PathBuf::from);
        }
        password_database_home().unwrap_or_else(|| self.home.clone())
    }
}

/// The home directory `getpwuid_r` gives for the real user id, when it names an absolute one.
#[allow(unsafe_code)]
fn password_database_home() -> Option<PathBuf> {
    let uid = rustix::process::getuid().as_raw();
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

    #[test]
    fn the_password_database_names_the_home_getent_gives_for_this_user() {
        let uid = rustix::process::getuid().as_raw().to_string();
        let out = std::process::Command::new("/usr/bin/getent")
            .args(["passwd", &uid])
            .output()
            .expect("getent runs");
        let line = String::from_utf8_lossy(&out.stdout);
        let expected = line.trim_end().split(':').nth(5).map(PathBuf::from);
        assert_eq!(password_database_home(), expected, "getent: {line}");
    }
}
