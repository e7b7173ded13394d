//! Files under the state root and the workspace mirrors, opened so an agent cannot redirect them:
//! every component from the trusted base down is checked for symlinks, files must be single-link
//! regular files, writes are atomic and appends are `O_APPEND | O_NOFOLLOW` with fsync.
//!
//! Errors name the file relative to its base, never the absolute path.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path};

use super::AuditError;
use crate::fsio;

/// `path` relative to `base`, for messages (`reports/report-state.json`).
pub fn shown(base: &Path, path: &Path) -> String {
    path.strip_prefix(base).map_or_else(
        |_| {
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        },
        |rest| rest.display().to_string(),
    )
}

/// Refuses a symlink at `base` or at any component below it on the way to `path`, a non-directory
/// where a directory is needed, and an existing final file that is not a single-link regular file.
/// Components that do not exist yet are fine: they will be created without following links.
pub fn check(base: &Path, path: &Path) -> Result<(), AuditError> {
    walk(base, path).map(|_| ())
}

/// [`check`], answering the metadata of `path` when it exists.
fn walk(base: &Path, path: &Path) -> Result<Option<fs::Metadata>, AuditError> {
    let rest = path
        .strip_prefix(base)
        .map_err(|_| AuditError::unsafe_path(base, path, "lies outside its base directory"))?;
    if rest
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(AuditError::unsafe_path(base, path, "is not a plain path"));
    }
    let mut current = base.to_path_buf();
    let mut parts = rest.components().peekable();
    let mut is_last = parts.peek().is_none();
    loop {
        match fs::symlink_metadata(&current) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(AuditError::io(base, &current, &err)),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(AuditError::unsafe_path(
                    base,
                    &current,
                    "is a symbolic link",
                ));
            }
            Ok(meta) if !is_last && !meta.is_dir() => {
                return Err(AuditError::unsafe_path(
                    base,
                    &current,
                    "is not a directory",
                ));
            }
            Ok(meta) if is_last && !meta.is_dir() && (!meta.is_file() || meta.nlink() != 1) => {
                return Err(AuditError::unsafe_path(
                    base,
                    &current,
                    "is not a single-link regular file",
                ));
            }
            Ok(meta) if is_last => return Ok(Some(meta)),
            Ok(_) => {}
        }
        match parts.next() {
            Some(part) => current.push(part),
            None => return Ok(None),
        }
        is_last = parts.peek().is_none();
    }
}

/// Checks the way to `dir` below `base`; a directory already there needs nothing more. Otherwise
/// creates it (0700) and checks again, so a link planted in between is still refused.
pub fn ensure_dir(base: &Path, dir: &Path) -> Result<(), AuditError> {
    if walk(base, dir)?.is_some_and(|meta| meta.is_dir()) {
        return Ok(());
    }
    fsio::create_dir_all_private(dir, 0o700).map_err(|err| AuditError::io(base, dir, &err))?;
    check(base, dir)
}

/// Replaces `path` atomically (temp, fsync, rename, directory fsync).
pub fn write_atomic(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    if let Some(dir) = path.parent() {
        ensure_dir(base, dir)?;
    }
    check(base, path)?;
    fsio::write_atomic(path, bytes, 0o600).map_err(|err| AuditError::io(base, path, &err))
}

/// Writes the small record `path` durably with one fsync: overwritten in place when it exists as a
/// single-link regular file (ADR 0028), created by [`write_atomic`] when it does not (its new name
/// needs the directory sync) or when `bytes` do not fit in one sector.
pub fn write_small(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    if bytes.len() > fsio::IN_PLACE_LIMIT {
        return write_atomic(base, path, bytes);
    }
    check(base, path)?;
    let file = match OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return write_atomic(base, path, bytes);
        }
        Err(err) => return Err(classify_open(base, path, &err)),
    };
    single_link(base, path, &file)?;
    fsio::overwrite_small(&file, bytes).map_err(|err| AuditError::io(base, path, &err))
}

/// Replaces the workspace view `path` atomically without fsync (see [`fsio::write_view`]).
pub fn write_view(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    if let Some(dir) = path.parent() {
        ensure_dir(base, dir)?;
    }
    check(base, path)?;
    fsio::write_view(path, bytes, 0o600).map_err(|err| AuditError::io(base, path, &err))
}

/// Proves `dir` takes a new file: an unnamed one is created in it (`O_TMPFILE`) and dropped, so
/// nothing is ever named, left behind by a kill, or synced. A filesystem without unnamed files
/// gets a named probe, created (never following a link, never reusing a name) and removed. The
/// caller has checked the way to `dir` ([`ensure_dir`]); a link planted at `dir` since is refused
/// by `O_NOFOLLOW`.
pub fn probe(base: &Path, dir: &Path) -> Result<(), AuditError> {
    match OpenOptions::new()
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_NOFOLLOW)
        .open(dir)
    {
        Ok(_) => Ok(()),
        Err(err) if unnamed_files_unsupported(&err) => named_probe(base, dir),
        Err(err) => Err(classify_open(base, dir, &err)),
    }
}

/// `EOPNOTSUPP` (a filesystem without `O_TMPFILE`) or `EISDIR` (a kernel that reads the flag as
/// `O_DIRECTORY` alone).
fn unnamed_files_unsupported(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR))
}

fn named_probe(base: &Path, dir: &Path) -> Result<(), AuditError> {
    let probe = dir.join(format!(".audit-probe-{}", std::process::id()));
    check(base, &probe)?;
    // A probe a killed server left behind is ours to replace.
    let _ = fs::remove_file(&probe);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&probe)
        .map_err(|err| classify_open(base, &probe, &err))?;
    fs::remove_file(&probe).map_err(|err| AuditError::io(base, &probe, &err))
}

/// Opens `path` for appending without following a final link, and refuses anything but a
/// single-link regular file (a hard link could point the append at another file).
fn open_append(base: &Path, path: &Path) -> Result<File, AuditError> {
    if let Some(dir) = path.parent() {
        ensure_dir(base, dir)?;
    }
    check(base, path)?;
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|err| classify_open(base, path, &err))?;
    single_link(base, path, &file)?;
    Ok(file)
}

/// Refuses what an attacker could swap in under an audit path: anything but a regular file with
/// exactly one link (a hard link would let the same bytes be read or written through another name).
fn single_link(base: &Path, path: &Path, file: &File) -> Result<(), AuditError> {
    let meta = file
        .metadata()
        .map_err(|err| AuditError::io(base, path, &err))?;
    if !meta.is_file() || meta.nlink() != 1 {
        return Err(AuditError::unsafe_path(
            base,
            path,
            "is not a single-link regular file",
        ));
    }
    Ok(())
}

/// Appends `bytes` and fsyncs. The caller holds the lock that orders appends.
pub fn append(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    let mut file = open_append(base, path)?;
    file.write_all(bytes)
        .and_then(|()| fsio::sync_file(&file))
        .map_err(|err| AuditError::io(base, path, &err))
}

/// Appends `bytes` without fsync: only for a workspace mirror of a line whose canonical copy is
/// already durable. A power loss can only leave the mirror behind, which its check reports.
pub fn append_view(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    let mut file = open_append(base, path)?;
    file.write_all(bytes)
        .map_err(|err| AuditError::io(base, path, &err))
}

/// Takes the exclusive advisory lock on `path` (created 0600), blocking; released on drop.
pub fn lock(base: &Path, path: &Path) -> Result<File, AuditError> {
    let file = open_append(base, path)?;
    file.lock()
        .map_err(|err| AuditError::io(base, path, &err))?;
    Ok(file)
}

/// Takes the shared advisory lock on `path` (created 0600), blocking; released on drop: a reader
/// that must not see a write of the exclusive holder half done.
pub fn lock_shared(base: &Path, path: &Path) -> Result<File, AuditError> {
    let file = open_append(base, path)?;
    file.lock_shared()
        .map_err(|err| AuditError::io(base, path, &err))?;
    Ok(file)
}

/// Reads `path` without following a link; `None` when it does not exist.
pub fn read(base: &Path, path: &Path) -> Result<Option<Vec<u8>>, AuditError> {
    check(base, path)?;
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(classify_open(base, path, &err)),
    };
    single_link(base, path, &file)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| AuditError::io(base, path, &err))?;
    Ok(Some(bytes))
}

/// The size of `path` (0 when absent), after the same checks as [`read`], without reading it.
pub fn size(base: &Path, path: &Path) -> Result<u64, AuditError> {
    check(base, path)?;
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.len()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(err) => Err(AuditError::io(base, path, &err)),
    }
}

/// `ELOOP` from `O_NOFOLLOW` means a link was planted after the check.
fn classify_open(base: &Path, path: &Path, err: &io::Error) -> AuditError {
    if err.raw_os_error() == Some(libc::ELOOP) {
        AuditError::unsafe_path(base, path, "is a symbolic link")
    } else {
        AuditError::io(base, path, err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorType;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_symlinked_directory_on_the_way_is_refused() {
        let root = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        symlink(elsewhere.path(), root.path().join("reports")).expect("plant link");
        let err = write_atomic(root.path(), &root.path().join("reports/x.json"), b"{}")
            .expect_err("refused");
        assert_eq!(err.error_type(), ErrorType::UnsafeConfiguredPath);
        assert!(!err.to_string().contains(&*root.path().to_string_lossy()));
        assert!(
            fs::read_dir(elsewhere.path())
                .expect("list")
                .next()
                .is_none()
        );
    }

    #[test]
    fn a_hard_linked_file_is_refused_for_append() {
        let root = tempfile::tempdir().expect("temp dir");
        let target = root.path().join("a.log");
        fs::write(&target, b"x").expect("write");
        fs::hard_link(&target, root.path().join("b.log")).expect("link");
        let err = append(root.path(), &target, b"y").expect_err("refused");
        assert_eq!(err.error_type(), ErrorType::UnsafeConfiguredPath);
    }

    #[test]
    fn appends_accumulate_and_reads_return_them() {
        let root = tempfile::tempdir().expect("temp dir");
        let path = root.path().join("logs/a.jsonl");
        append(root.path(), &path, b"one\n").expect("append");
        append(root.path(), &path, b"two\n").expect("append");
        assert_eq!(
            read(root.path(), &path).expect("read"),
            Some(b"one\ntwo\n".to_vec())
        );
        assert_eq!(
            read(root.path(), &root.path().join("none")).expect("read"),
            None
        );
    }

    #[test]
    fn a_path_that_climbs_out_of_its_base_is_refused() {
        let root = tempfile::tempdir().expect("temp dir");
        let err = check(root.path(), &root.path().join("../x")).expect_err("refused");
        assert_eq!(err.error_type(), ErrorType::UnsafeConfiguredPath);
    }
}
