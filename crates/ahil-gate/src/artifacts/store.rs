//! Writing an upload into `artifacts.upload_directory`: created component by component beneath the
//! workspace without following links, then a temp file and a rename, so a link planted at the
//! directory or at the destination name can never redirect the write.

use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, mkdirat, openat, renameat, statat, unlinkat};
use rustix::io::Errno;

use super::error::{ArtifactError, ArtifactRefusal};
use super::{ArtifactPolicy, open};
use open::OpenError;

fn unsafe_destination(why: &str) -> ArtifactRefusal {
    ArtifactRefusal::bare(ArtifactError::UnsafeDestination(why.to_owned()))
}

fn failed(why: impl std::fmt::Display) -> ArtifactRefusal {
    ArtifactRefusal::bare(ArtifactError::Staging(why.to_string()))
}

/// Opens (creating as needed, 0700) the upload directory beneath the workspace.
fn open_upload_dir(policy: &ArtifactPolicy) -> Result<OwnedFd, ArtifactRefusal> {
    let relative = policy
        .upload_dir()
        .strip_prefix(policy.workspace())
        .map_err(|_| unsafe_destination("artifacts.upload_directory is outside the workspace"))?;
    let mut dir = open::open_dir(policy.workspace())
        .map_err(|_| failed("the workspace directory cannot be opened"))?;
    for component in relative.components() {
        let name = component.as_os_str();
        let next = match open::open_subdir(&dir, &name.to_string_lossy()) {
            Err(OpenError::NotFound) => {
                match mkdirat(&dir, name, Mode::RWXU) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(error) => return Err(failed(error)),
                }
                open::open_subdir(&dir, &name.to_string_lossy())
            }
            other => other,
        };
        dir = match next {
            Ok(next) => next,
            Err(OpenError::Unsafe(_)) => {
                return Err(unsafe_destination(
                    "a component of artifacts.upload_directory is a symbolic link or not a directory",
                ));
            }
            Err(OpenError::NotFound) => return Err(failed("the upload directory vanished")),
            Err(OpenError::Io(error)) => return Err(failed(error)),
        };
    }
    Ok(dir)
}

/// Store `bytes` as `<upload_directory>/<id>`, replacing an earlier upload of the same id atomically.
/// A copy already there with exactly these bytes is kept and synced instead of written again (the
/// id is their digest, so a second upload of one build is the common case); any other is replaced.
pub fn store(policy: &ArtifactPolicy, id: &str, bytes: &[u8]) -> Result<(), ArtifactRefusal> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = open_upload_dir(policy)?;
    match statat(&dir, id, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile => {
            return Err(unsafe_destination(
                "the destination is a symbolic link or not a regular file",
            ));
        }
        Ok(stat) if u64::try_from(stat.st_size).is_ok_and(|n| n == bytes.len() as u64) => {
            if kept(&dir, id, bytes) {
                return Ok(());
            }
        }
        Ok(_) | Err(Errno::NOENT) => {}
        Err(error) => return Err(failed(error)),
    }
    let temp = format!(
        ".{id}.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let fd = openat(
        &dir,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(failed)?;
    let written = (|| {
        let mut file = File::from(fd);
        file.write_all(bytes)?;
        crate::fsio::sync_file(&file)?;
        renameat(&dir, temp.as_str(), &dir, id)?;
        sync_dir(&dir)?;
        // After the rename, which moves the file's ctime: the stamp a later upload compares.
        remember_durable(&file.metadata()?);
        Ok::<(), std::io::Error>(())
    })();
    if let Err(error) = written {
        let _ = unlinkat(&dir, temp.as_str(), AtFlags::empty());
        return Err(failed(error));
    }
    Ok(())
}

/// Whether the single-link regular file `id` holds exactly `bytes`, then made durable as it is (its
/// data and its name): such a copy is what a new write would leave. Anything else, or any error,
/// answers `false` and the copy is replaced as usual. A copy this process wrote or synced itself
/// and that nothing has written or renamed since is durable already and is not synced again.
fn kept(dir: &OwnedFd, id: &str, bytes: &[u8]) -> bool {
    let Ok(fd) = openat(
        dir,
        id,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let file = File::from(fd);
    let Ok(meta) = file.metadata() else {
        return false;
    };
    if !meta.is_file() || meta.nlink() != 1 || !holds(&file, bytes).unwrap_or(false) {
        return false;
    }
    if is_durable(&meta) {
        return true;
    }
    let synced = crate::fsio::sync_file(&file).and_then(|()| sync_dir(dir));
    if synced.is_ok() {
        remember_durable(&meta);
    }
    synced.is_ok()
}

/// Whether `file` holds exactly `bytes`, compared piece by piece through a buffer that stays in the
/// cache rather than read whole into a second copy of the image (issue #27).
fn holds(file: &File, bytes: &[u8]) -> io::Result<bool> {
    let mut piece = vec![0_u8; 128 * 1024];
    let mut reader = file;
    let mut at = 0;
    loop {
        let n = match reader.read(&mut piece) {
            Ok(0) => return Ok(at == bytes.len()),
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        let end = at + n;
        if bytes.get(at..end) != piece.get(..n) {
            return Ok(false);
        }
        at = end;
    }
}

/// The upload directory's fsync, counted with the others (`fsio::syncs_on_this_thread`).
fn sync_dir(dir: &OwnedFd) -> io::Result<()> {
    crate::fsio::sync_file(&File::from(dir.try_clone()?))
}

/// A stored copy as it stood when this process made it durable. Any later write moves its mtime
/// and ctime, a rename its ctime, and a replacement is another inode, so an equal stamp means the
/// synced data and name are still the file's.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The copies this process made durable, newest last; a few are enough for one project's builds.
static DURABLE: Mutex<Vec<Stamp>> = Mutex::new(Vec::new());
const REMEMBERED: usize = 32;

fn remember_durable(meta: &Metadata) {
    let mut durable = DURABLE.lock().unwrap_or_else(PoisonError::into_inner);
    let stamp = Stamp::of(meta);
    durable.retain(|known| known.ino != stamp.ino || known.dev != stamp.dev);
    if durable.len() == REMEMBERED {
        durable.remove(0);
    }
    durable.push(stamp);
}

fn is_durable(meta: &Metadata) -> bool {
    let stamp = Stamp::of(meta);
    DURABLE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(&stamp)
}

/// Remove a stored upload that failed its re-validation. Best effort: a leftover is refused again on
/// every use.
pub fn remove(policy: &ArtifactPolicy, id: &str) {
    if let Ok(dir) = open_upload_dir(policy) {
        let _ = unlinkat(&dir, id, AtFlags::empty());
    }
}
