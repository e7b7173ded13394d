//! Writing an upload into `artifacts.upload_directory`: created component by component beneath the
//! workspace without following links, then a temp file and a rename, so a link planted at the
//! directory or at the destination name can never redirect the write.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

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
        file.sync_all()?;
        renameat(&dir, temp.as_str(), &dir, id)?;
        rustix::fs::fsync(&dir)?;
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
/// answers `false` and the copy is replaced as usual.
fn kept(dir: &OwnedFd, id: &str, bytes: &[u8]) -> bool {
    use std::io::Read;
    let Ok(fd) = openat(
        dir,
        id,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let mut file = File::from(fd);
    let single = file
        .metadata()
        .is_ok_and(|meta| meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) == 1);
    let mut held = Vec::with_capacity(bytes.len());
    single
        && file.read_to_end(&mut held).is_ok()
        && held == bytes
        && file.sync_all().is_ok()
        && rustix::fs::fsync(dir).is_ok()
}

/// Remove a stored upload that failed its re-validation. Best effort: a leftover is refused again on
/// every use.
pub fn remove(policy: &ArtifactPolicy, id: &str) {
    if let Ok(dir) = open_upload_dir(policy) {
        let _ = unlinkat(&dir, id, AtFlags::empty());
    }
}
