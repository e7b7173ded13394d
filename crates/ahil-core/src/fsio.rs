//! File writes that never leave a half-written file behind: temp file in the same directory, fsync,
//! rename over the target, fsync the directory. Every fsync passes [`sync_file`] or `sync_dir`, which
//! count them per thread, so a test can pin how many durable writes a call makes (ADR 0011).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` atomically. A reader sees the old file or the new one, never a mix; a
/// crash leaves at worst a stray `.tmp-*` file beside it.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace(path, bytes, mode)?;
    sync_dir(parent(path))
}

/// Whether a replacement in a batch is synced before the batch returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync of the file before its rename, and of its directory after: durable on return.
    Synced,
    /// Neither: a kill still leaves the old file or the new one, a power loss may leave the old
    /// one or an empty one, so only a file whose readers take an empty one for "nothing said"
    /// may be written so (ADR 0014).
    View,
}

/// Replaces every file as [`write_atomic`] does (or, for a [`Durability::View`], without its
/// fsyncs), in order, then syncs once each directory that holds a synced file: a call that moves
/// several records of one directory pays one directory sync, not one per file. The synced files
/// are durable when this returns; an error on one file still lets the others be written and synced,
/// and the first error is returned.
pub fn write_atomic_all(files: &[(PathBuf, Vec<u8>, Durability)], mode: u32) -> io::Result<()> {
    let mut first_error = None;
    let mut dirs: Vec<&Path> = Vec::new();
    for (path, bytes, durability) in files {
        let synced = *durability == Durability::Synced;
        match replace_with(path, bytes, mode, synced) {
            Ok(()) if synced && !dirs.contains(&parent(path)) => dirs.push(parent(path)),
            Ok(()) => {}
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    for dir in dirs {
        if let Err(err) = sync_dir(dir) {
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Replaces `path` with `bytes` through a temp file and a rename, without any fsync: for workspace
/// views derived from a canonical copy that is already durable (ADR 0011). A kill leaves the old file
/// or the new one; a power loss may also leave the old one, which readers report as behind.
pub fn write_view(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace_with(path, bytes, mode, false)
}

/// The largest record [`overwrite_small`] writes in place: one disk sector, which a device writes
/// whole or not at all on power loss (ADR 0028). Anything larger is replaced by rename.
pub const IN_PLACE_LIMIT: usize = 512;

/// Overwrites the existing regular file `file` (opened for writing, its checks done by the caller)
/// with `bytes` in place and syncs its data: one fdatasync, no temp file, no rename, so no directory
/// sync. A kill cannot tear one `pwrite`; only a device that tears a sector on power loss could,
/// and a record written so must be one whose readers refuse a torn copy (a digest sidecar).
pub fn overwrite_small(file: &File, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    if bytes.len() > IN_PLACE_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a record written in place fits in one sector",
        ));
    }
    file.write_all_at(bytes, 0)?;
    if file.metadata()?.len() > bytes.len() as u64 {
        file.set_len(bytes.len() as u64)?;
    }
    count_sync();
    file.sync_data()
}

/// fsyncs `file`, counted for [`syncs_on_this_thread`].
pub fn sync_file(file: &File) -> io::Result<()> {
    count_sync();
    file.sync_all()
}

fn count_sync() {
    SYNCS.with(|n| n.set(n.get() + 1));
}

thread_local! {
    static SYNCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many fsyncs (files and directories) this thread has made through this module.
pub fn syncs_on_this_thread() -> u64 {
    SYNCS.with(std::cell::Cell::get)
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Temp file in the same directory, fsync, rename over `path`; the rename is durable only once the
/// caller syncs the directory.
fn replace(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace_with(path, bytes, mode, true)
}

fn replace_with(path: &Path, bytes: &[u8], mode: u32, durable: bool) -> io::Result<()> {
    let dir = parent(path);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path names no file"))?;
    let temp = dir.join(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        unique_suffix()
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)?;
        file.write_all(bytes)?;
        if durable {
            sync_file(&file)?;
        }
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// [`write_atomic`]'s temp file and rename (and with `durable` its file fsync) relative to the open
/// directory `dir`, so nothing of a path is looked up again; the caller syncs `dir`
/// ([`sync_dir_fd`]) when the new name must be durable.
pub fn replace_at(
    dir: &std::os::fd::OwnedFd,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    mode: u32,
    durable: bool,
) -> io::Result<()> {
    use rustix::fs::{AtFlags, Mode, OFlags, openat, renameat, unlinkat};
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".tmp-{}-{}", std::process::id(), unique_suffix()));
    let fd = openat(
        dir,
        temp.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    let result = (|| {
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        if durable {
            sync_file(&file)?;
        }
        renameat(dir, temp.as_os_str(), dir, name)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = unlinkat(dir, temp.as_os_str(), AtFlags::empty());
    }
    result
}

/// fsyncs the open directory `dir`, counted as [`sync_file`] is.
pub fn sync_dir_fd(dir: &std::os::fd::OwnedFd) -> io::Result<()> {
    count_sync();
    rustix::fs::fsync(dir).map_err(io::Error::from)
}

/// Why [`write_beneath`] wrote nothing.
#[derive(Debug)]
pub enum WriteError {
    /// A folder on the way, or the name itself, is a symbolic link (the base-relative path).
    Link(String),
    /// Anything else the kernel said.
    Io(io::Error),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Link(at) => write!(f, "`{at}` is a link"),
            Self::Io(error) => write!(f, "{:?}", error.kind()),
        }
    }
}

/// Replaces the file `relative` beneath the operator's directory `base` (a workspace) with `bytes`
/// (0644), creating missing folders (0755), and runs `between` after the folders are opened (tests
/// swap a folder for a link there). Every folder is opened relative to the one above it without
/// following a link, and the file is written to a temp name and renamed relative to the last one,
/// so a folder the agent swaps for a link after any check cannot lead the write out of `base`, as
/// a write by path could. A link on the way, or at the name, is refused.
pub fn write_beneath(
    base: &Path,
    relative: &Path,
    bytes: &[u8],
    between: impl FnOnce(),
) -> Result<(), WriteError> {
    use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, mkdirat, openat, statat};
    use rustix::io::Errno;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|c| match c {
            std::path::Component::Normal(name) => Ok(name),
            _ => Err(WriteError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path is not a plain relative path",
            ))),
        })
        .collect::<Result<_, _>>()?;
    let Some((name, folders)) = names.split_last() else {
        return Err(WriteError::Io(io::Error::other("the path names no file")));
    };
    let is_link = |dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr| {
        statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
    };
    // The base is the operator's, opened as it is named.
    let mut dir = openat(CWD, base, flags & !OFlags::NOFOLLOW, Mode::empty())
        .map_err(|e| WriteError::Io(e.into()))?;
    let mut at = PathBuf::new();
    for folder in folders {
        at.push(folder);
        let next = match openat(&dir, *folder, flags, Mode::empty()) {
            Err(Errno::NOENT) => {
                match mkdirat(&dir, *folder, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(WriteError::Io(errno.into())),
                }
                openat(&dir, *folder, flags, Mode::empty())
            }
            other => other,
        };
        dir = match next {
            Ok(next) => next,
            // `O_DIRECTORY` answers a link with ENOTDIR before `O_NOFOLLOW` can say ELOOP.
            Err(Errno::LOOP | Errno::NOTDIR) if is_link(&dir, folder) => {
                return Err(WriteError::Link(at.display().to_string()));
            }
            Err(errno) => return Err(WriteError::Io(errno.into())),
        };
    }
    between();
    // The rename would replace a link, never follow it; it is refused as the folders' are.
    if is_link(&dir, name) {
        return Err(WriteError::Link(relative.display().to_string()));
    }
    replace_at(&dir, name, bytes, 0o644, true)
        .and_then(|()| sync_dir_fd(&dir))
        .map_err(WriteError::Io)
}

/// Creates `dir` and its missing parents with `mode` (0700 for private state).
pub fn create_dir_all_private(dir: &Path, mode: u32) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(mode).create(dir)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    sync_file(&File::open(dir)?)
}

fn unique_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_the_file_and_leaves_no_temp_behind() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("config.yaml");
        write_atomic(&target, b"one", 0o600).expect("first write");
        write_atomic(&target, b"two", 0o600).expect("second write");
        assert_eq!(fs::read(&target).expect("read back"), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("config.yaml")]);
    }

    #[test]
    fn a_batch_whose_middle_file_fails_still_writes_the_others_and_reports_the_failure() {
        let dir = tempfile::tempdir().expect("temp dir");
        let files = vec![
            (dir.path().join("a.json"), b"a".to_vec(), Durability::Synced),
            (
                dir.path().join("missing/b.json"),
                b"b".to_vec(),
                Durability::Synced,
            ),
            (dir.path().join("c.json"), b"c".to_vec(), Durability::View),
        ];
        assert!(write_atomic_all(&files, 0o600).is_err());
        assert_eq!(fs::read(dir.path().join("a.json")).expect("a"), b"a");
        assert_eq!(fs::read(dir.path().join("c.json")).expect("c"), b"c");
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["a.json", "c.json"].map(std::ffi::OsString::from));
    }

    #[test]
    fn a_batch_syncs_its_synced_files_and_their_directory_but_not_its_views() {
        let dir = tempfile::tempdir().expect("temp dir");
        let batch = |durability: [Durability; 2]| {
            vec![
                (
                    dir.path().join("project.json"),
                    b"p".to_vec(),
                    durability[0],
                ),
                (dir.path().join("marker.json"), b"m".to_vec(), durability[1]),
            ]
        };
        let before = syncs_on_this_thread();
        write_atomic_all(&batch([Durability::Synced, Durability::View]), 0o600).expect("write");
        assert_eq!(
            syncs_on_this_thread() - before,
            2,
            "one file and its directory"
        );
        let before = syncs_on_this_thread();
        write_atomic_all(&batch([Durability::View, Durability::View]), 0o600).expect("write");
        assert_eq!(
            syncs_on_this_thread() - before,
            0,
            "views alone sync nothing"
        );
        assert_eq!(fs::read(dir.path().join("marker.json")).expect("m"), b"m");
    }

    #[test]
    fn an_atomic_write_into_a_missing_directory_fails_cleanly() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("missing").join("x");
        assert!(write_atomic(&target, b"x", 0o600).is_err());
    }
}
