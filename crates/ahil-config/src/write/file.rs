//! The two file mechanics of a configuration write: the sidecar lock that serialises writers (ours and
//! the reference's), and the atomic replacement.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// `<config dir>/.<file name>.agentic-hil.lock`, the name the reference locks too.
pub fn lock_path(config: &Path) -> PathBuf {
    let name = config.file_name().map_or_else(
        || "config.yaml".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    config
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!(".{name}.agentic-hil.lock"))
}

/// An exclusive `flock` on the sidecar, released when dropped (or when the process dies).
pub(crate) struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Blocks until no other writer holds the lock; writers hold it for milliseconds.
    pub(crate) fn take(config: &Path) -> io::Result<Self> {
        let file = crate::lockfile::open(&lock_path(config))?;
        flock(&file, FlockOperation::LockExclusive)?;
        Ok(Self { _file: file })
    }
}

/// Replaces `path` with `bytes`: a temp file beside it, fsync, rename, fsync of the directory. The
/// old file's mode is kept (0600 when there was none).
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mode = fs::symlink_metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o777);
    let temp = dir.join(format!(
        ".agentic-hil-write-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_sits_beside_the_file_under_the_reference_name() {
        assert_eq!(
            lock_path(Path::new("/c/p/config.yaml")),
            Path::new("/c/p/.config.yaml.agentic-hil.lock")
        );
    }

    #[test]
    fn a_replacement_keeps_the_mode_and_leaves_only_the_file_and_lock() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.yaml");
        fs::write(&path, "a: 1\n").expect("seed");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        let lock = WriteLock::take(&path).expect("lock");
        replace(&path, b"a: 2\n").expect("replace");
        drop(lock);
        assert_eq!(fs::read(&path).expect("read"), b"a: 2\n");
        assert_eq!(
            fs::metadata(&path).expect("meta").permissions().mode() & 0o777,
            0o640
        );
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".config.yaml.agentic-hil.lock", "config.yaml"]);
    }

    #[test]
    fn a_replacement_is_a_new_file_so_a_reader_of_the_old_one_never_sees_a_mix() {
        use std::io::Read as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.yaml");
        fs::write(&path, "a: 1\n").expect("seed");
        let mut reader = File::open(&path).expect("open");
        replace(&path, b"b: 22\n").expect("replace");
        let mut old = String::new();
        reader.read_to_string(&mut old).expect("read");
        assert_eq!(old, "a: 1\n", "the open file was rewritten in place");
        assert_eq!(fs::read(&path).expect("read"), b"b: 22\n");
    }
}
