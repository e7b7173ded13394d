//! The one way a lock file is opened here (device locks, lease locks, the configuration's write
//! lock): created 0600 if absent, never through a link, and refused unless it is a single-link
//! regular file, since whoever planted a link or a hard link could point the lock somewhere else.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::OFlags;

/// Opens (creating) the lock file at `path`; taking the lock is the caller's.
pub fn open(path: &Path) -> io::Result<File> {
    let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(flags.bits().cast_signed())
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() || meta.nlink() != 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "lock file is not a single-link regular file",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_or_a_hard_link_is_never_opened_as_a_lock() {
        let dir = tempfile::tempdir().expect("dir");
        let target = dir.path().join("target");
        std::fs::write(&target, "").expect("target");
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(open(&link).is_err(), "a symlink");
        let hard = dir.path().join("hard.lock");
        std::fs::hard_link(&target, &hard).expect("hard link");
        assert!(open(&hard).is_err(), "a second name for one file");
        assert!(open(&dir.path().join("fresh.lock")).is_ok());
    }
}
