//! The installation lock and the atomic replacement of a binary.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Held for the whole upgrade. The file lives beside the binary, so two upgrades of one installation
/// meet on it whoever started them; it records the holder's pid for `held_by`.
pub struct InstallLock {
    _file: File,
}

pub enum LockError {
    /// Another upgrade holds it; its pid, if it wrote one.
    Held(Option<u32>),
    Io(std::io::Error),
}

pub fn lock_path(exe: &Path) -> PathBuf {
    exe.with_file_name(".agentic-hil-upgrade.lock")
}

pub fn lock(exe: &Path) -> Result<InstallLock, LockError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(lock_path(exe))
        .map_err(LockError::Io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(LockError::Held(text.trim().parse().ok()));
        }
        Err(TryLockError::Error(e)) => return Err(LockError::Io(e)),
    }
    file.set_len(0).map_err(LockError::Io)?;
    file.rewind().map_err(LockError::Io)?;
    write!(file, "{}", std::process::id()).map_err(LockError::Io)?;
    Ok(InstallLock { _file: file })
}

/// Which file sits at a path: a replacement by rename or reinstall changes it even when size and
/// times happen to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

pub fn identity(path: &Path) -> Option<Identity> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Identity {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    })
}

/// The staged copy beside the target; removed on drop unless it was renamed into place.
pub struct Staged {
    path: PathBuf,
    placed: bool,
}

impl Staged {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.placed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Copies `new` beside `target` (same directory, so the rename below is atomic), executable and
/// flushed to disk.
pub fn stage(new: &Path, target: &Path) -> std::io::Result<Staged> {
    let name = format!(".agentic-hil-upgrade-{}.new", std::process::id());
    let staged = Staged {
        path: target.with_file_name(name),
        placed: false,
    };
    let mut source = File::open(new)?;
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&staged.path)?;
    std::io::copy(&mut source, &mut out)?;
    out.set_permissions(std::fs::Permissions::from_mode(0o755))?;
    out.sync_all()?;
    Ok(staged)
}

/// Renames the staged copy over `target`. A process running the old binary keeps its inode, so the
/// swap is safe under a running server; the next start runs the new file.
pub fn place(mut staged: Staged, target: &Path) -> std::io::Result<()> {
    std::fs::rename(&staged.path, target)?;
    staged.placed = true;
    if let Some(dir) = target.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory holding the installed binary's path `target` and a new build beside it.
    fn installation() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("agentic-hil");
        let new = dir.path().join("incoming");
        std::fs::write(&new, b"new").expect("new");
        (dir, target, new)
    }

    #[test]
    fn a_second_lock_on_one_installation_is_refused_with_the_holders_pid() {
        let (_dir, exe, _) = installation();
        let _held = lock(&exe).ok().expect("first lock");
        match lock(&exe) {
            Err(LockError::Held(pid)) => assert_eq!(pid, Some(std::process::id())),
            _ => panic!("the second lock must be refused"),
        }
    }

    #[test]
    fn placing_a_staged_copy_replaces_the_target_and_leaves_nothing_beside_it() {
        let (dir, target, new) = installation();
        std::fs::write(&target, b"old").expect("old");
        let before = identity(&target);
        let staged = stage(&new, &target).expect("staged");
        place(staged, &target).expect("placed");
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
        assert_ne!(identity(&target), before);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }

    #[test]
    fn a_staged_copy_that_is_not_placed_is_removed() {
        let (_dir, target, new) = installation();
        let staged = stage(&new, &target).expect("staged");
        let path = staged.path().to_path_buf();
        assert!(path.exists());
        drop(staged);
        assert!(!path.exists());
    }
}
