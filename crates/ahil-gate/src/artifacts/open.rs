//! Opening a file an agent may have planted links around.
//!
//! The workspace root is the operator's and is opened normally. Below it every component is opened with
//! `openat` relative to the previous directory and `O_NOFOLLOW`, so a symbolic link at any component
//! fails the walk instead of leading out of the workspace, and a component swapped for a link between
//! two checks is caught by the kernel, not by a racy `lstat`. The last component is opened with
//! `O_NONBLOCK` so a FIFO cannot hang the server; what was opened is then judged by `fstat` on that one
//! descriptor: a regular file with exactly one link (a hard link is another name for bytes that may
//! live outside the roots).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags, openat};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

/// The identity of an opened file, compared after the copy to detect a replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: i64,
    pub mtime_nsec: i64,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

/// Why a safe open failed.
#[derive(Debug)]
pub enum OpenError {
    /// A component does not exist.
    NotFound,
    /// A link, a non-directory in the middle, a non-regular file, more than one link, …
    Unsafe(&'static str),
    /// Anything else the kernel said.
    Io(io::Error),
}

fn classify(errno: Errno) -> OpenError {
    if errno == Errno::NOENT {
        OpenError::NotFound
    } else if errno == Errno::LOOP || errno == Errno::NOTDIR || errno == Errno::MLINK {
        OpenError::Unsafe("a path component is a symbolic link or not a directory")
    } else if errno == Errno::NXIO || errno == Errno::ISDIR {
        OpenError::Unsafe("the path does not name a regular file")
    } else {
        OpenError::Io(errno.into())
    }
}

/// Opens the operator's directory `path` (links in it are the operator's and are followed).
pub fn open_dir(path: &Path) -> Result<OwnedFd, OpenError> {
    openat(
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(classify)
}

/// Opens directory `name` beneath `dir` without following a link.
pub fn open_subdir(dir: &OwnedFd, name: &str) -> Result<OwnedFd, OpenError> {
    openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(classify)
}

/// A regular, single-link file opened beneath the workspace, with its identity at open time.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub id: FileId,
}

/// Walks `components` beneath `base` (each a plain name) and opens the last as a file.
pub fn open_beneath(base: &OwnedFd, components: &[&str]) -> Result<Opened, OpenError> {
    let Some((last, dirs)) = components.split_last() else {
        return Err(OpenError::Unsafe("the path names the workspace itself"));
    };
    let mut dir: Option<OwnedFd> = None;
    for name in dirs {
        let next = open_subdir(dir.as_ref().unwrap_or(base), name)?;
        dir = Some(next);
    }
    let fd = openat(
        dir.as_ref().unwrap_or(base),
        *last,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(classify)?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.file_type().is_file() {
        return Err(OpenError::Unsafe("the path does not name a regular file"));
    }
    if meta.nlink() != 1 {
        return Err(OpenError::Unsafe("the file has more than one link"));
    }
    Ok(Opened {
        id: FileId::of(&meta),
        file,
    })
}

/// The identity of an open file now.
pub fn identity(file: &File) -> io::Result<FileId> {
    file.metadata().map(|meta| FileId::of(&meta))
}

/// Reads at most `limit` bytes and their SHA-256 (lowercase hex); `Ok(None)` when the file holds
/// more (it grew past the limit). Each piece is hashed as soon as it is read, while it is still in
/// the cache, instead of reading the whole image out of memory a second time (issue #27).
pub fn read_hashed(
    file: &File,
    limit: u64,
    size_hint: u64,
) -> io::Result<Option<(Vec<u8>, String)>> {
    const PIECE: u64 = 128 * 1024;
    // One byte more than the size seen, so reading to the end never grows the buffer.
    let capacity = usize::try_from(size_hint.min(limit).saturating_add(1)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    let mut hasher = Sha256::new();
    let mut reader = Read::take(file, limit.saturating_add(1));
    loop {
        let start = bytes.len();
        if Read::take(&mut reader, PIECE).read_to_end(&mut bytes)? == 0 {
            break;
        }
        hasher.update(&bytes[start..]);
    }
    if u64::try_from(bytes.len()).map_or(true, |n| n > limit) {
        return Ok(None);
    }
    Ok(Some((bytes, ahil_config::digest::hex(&hasher.finalize()))))
}
