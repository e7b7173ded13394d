//! Files under the state root and the workspace mirrors, opened so an agent cannot redirect them:
//! every component from the trusted base down is checked for symlinks, files must be single-link
//! regular files, writes are atomic and appends are `O_APPEND | O_NOFOLLOW` with fsync.
//!
//! The checks by path name what is wrong; the writes do not trust them. Each write walks from the
//! base again one directory at a time with `openat(O_NOFOLLOW)` and creates, renames and opens its
//! file relative to the last directory it opened, so a directory the agent swaps for a link after
//! the checks (the workspace is its to change at any moment) is refused by the kernel, never
//! followed out of the base.
//!
//! Errors name the file relative to its base, never the absolute path.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, mkdirat, openat, statat, unlinkat};
use rustix::io::Errno;

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
/// creates it (0700) without following a link and checks again.
pub fn ensure_dir(base: &Path, dir: &Path) -> Result<(), AuditError> {
    if walk(base, dir)?.is_some_and(|meta| meta.is_dir()) {
        return Ok(());
    }
    open_dir_beneath(base, dir, true)?;
    check(base, dir)
}

/// Opens `dir` (`base` or below it) from `base` one component at a time without following a link,
/// creating (0700) what is missing when `create`; `None` when a component is missing otherwise.
fn open_dir_beneath(base: &Path, dir: &Path, create: bool) -> Result<Option<OwnedFd>, AuditError> {
    let rest = dir
        .strip_prefix(base)
        .map_err(|_| AuditError::unsafe_path(base, dir, "lies outside its base directory"))?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut fd = match openat(CWD, base, flags, Mode::empty()) {
        // The base and the directories above it are the operator's: created by path.
        Err(Errno::NOENT) if create => {
            fsio::create_dir_all_private(base, 0o700)
                .map_err(|err| AuditError::io(base, base, &err))?;
            openat(CWD, base, flags, Mode::empty())
        }
        Err(Errno::NOENT) => return Ok(None),
        other => other,
    }
    .map_err(|errno| classify_open(base, base, &errno.into()))?;
    let mut at = base.to_path_buf();
    for part in rest.components() {
        let Component::Normal(name) = part else {
            return Err(AuditError::unsafe_path(base, dir, "is not a plain path"));
        };
        at.push(name);
        let next = match openat(&fd, name, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match mkdirat(&fd, name, Mode::RWXU) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(AuditError::io(base, &at, &errno.into())),
                }
                openat(&fd, name, flags, Mode::empty())
            }
            Err(Errno::NOENT) => return Ok(None),
            other => other,
        };
        fd = next.map_err(|errno| {
            // `O_DIRECTORY` answers a link with ENOTDIR before `O_NOFOLLOW` can say ELOOP.
            let link = errno == Errno::NOTDIR
                && statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
            if link {
                AuditError::unsafe_path(base, &at, "is a symbolic link")
            } else {
                classify_open(base, &at, &errno.into())
            }
        })?;
    }
    Ok(Some(fd))
}

/// The directory holding `path`, opened as [`open_dir_beneath`] opens it, and the file's name.
fn parent_beneath<'p>(
    base: &Path,
    path: &'p Path,
    create: bool,
) -> Result<Option<(OwnedFd, &'p OsStr)>, AuditError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(AuditError::unsafe_path(base, path, "is not a plain path"));
    };
    Ok(open_dir_beneath(base, dir, create)?.map(|fd| (fd, name)))
}

/// Where the checks by path end and the writes by descriptor begin (a test swaps a directory for a
/// link here).
fn after_check() {
    #[cfg(test)]
    tests::AFTER_CHECK.with(|hook| {
        if let Some(hook) = hook.borrow_mut().take() {
            hook();
        }
    });
}

/// The directory `path` is to be written in, created and checked beneath `base`, then opened from
/// `base` without following links, with the file name to act on relative to it: whatever a
/// directory on the way became after the checks, the write stays beneath `base`.
fn checked_parent<'p>(base: &Path, path: &'p Path) -> Result<(OwnedFd, &'p OsStr), AuditError> {
    if let Some(dir) = path.parent() {
        ensure_dir(base, dir)?;
    }
    check(base, path)?;
    after_check();
    parent_beneath(base, path, true)?
        .ok_or_else(|| AuditError::io(base, path, &io::ErrorKind::NotFound.into()))
}

/// Replaces `path` atomically (temp, fsync, rename, directory fsync) and with `durable` false
/// without either fsync, beneath `base` whatever a directory on the way became since the checks.
fn replace(base: &Path, path: &Path, bytes: &[u8], durable: bool) -> Result<(), AuditError> {
    let (dir, name) = checked_parent(base, path)?;
    fsio::replace_at(&dir, name, bytes, 0o600, durable)
        .and_then(|()| {
            if durable {
                fsio::sync_dir_fd(&dir)
            } else {
                Ok(())
            }
        })
        .map_err(|err| classify_open(base, path, &err))
}

/// Replaces `path` atomically (temp, fsync, rename, directory fsync).
pub fn write_atomic(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    replace(base, path, bytes, true)
}

/// Opens the existing `path` beneath `base` with `flags` and no link followed; `None` when it (or
/// a directory on the way) does not exist. Non-blocking, so a FIFO swapped in after the checks is
/// opened at once (and refused as no regular file) instead of waiting for a peer forever.
fn open_existing(base: &Path, path: &Path, flags: OFlags) -> Result<Option<File>, AuditError> {
    let Some((dir, name)) = parent_beneath(base, path, false)? else {
        return Ok(None);
    };
    match openat(
        &dir,
        name,
        flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(Errno::NOENT) => Ok(None),
        Err(errno) => Err(classify_open(base, path, &errno.into())),
    }
}

/// Writes the small record `path` durably with one fsync: overwritten in place when it exists as a
/// single-link regular file (ADR 0028), created by [`write_atomic`] when it does not (its new name
/// needs the directory sync) or when `bytes` do not fit in one sector.
pub fn write_small(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    if bytes.len() > fsio::IN_PLACE_LIMIT {
        return write_atomic(base, path, bytes);
    }
    check(base, path)?;
    after_check();
    let Some(file) = open_existing(base, path, OFlags::WRONLY)? else {
        return write_atomic(base, path, bytes);
    };
    single_link(base, path, &file)?;
    fsio::overwrite_small(&file, bytes).map_err(|err| AuditError::io(base, path, &err))
}

/// Replaces the workspace view `path` atomically without fsync (see [`fsio::write_view`]).
pub fn write_view(base: &Path, path: &Path, bytes: &[u8]) -> Result<(), AuditError> {
    replace(base, path, bytes, false)
}

/// Proves `dir` takes a new file: an unnamed one is created in it (`O_TMPFILE`) and dropped, so
/// nothing is ever named, left behind by a kill, or synced. A filesystem without unnamed files
/// gets a named probe, created (never following a link, never reusing a name) and removed. The
/// caller has checked the way to `dir` ([`ensure_dir`]); a link planted at `dir` since is refused
/// by `O_NOFOLLOW`.
pub fn probe(base: &Path, dir: &Path) -> Result<(), AuditError> {
    let fd = open_dir_beneath(base, dir, false)?
        .ok_or_else(|| AuditError::io(base, dir, &io::ErrorKind::NotFound.into()))?;
    match openat(
        &fd,
        ".",
        OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    ) {
        Ok(_) => Ok(()),
        Err(errno) if unnamed_files_unsupported(&errno.into()) => named_probe(base, dir, &fd),
        Err(errno) => Err(classify_open(base, dir, &errno.into())),
    }
}

/// `EOPNOTSUPP` (a filesystem without `O_TMPFILE`) or `EISDIR` (a kernel that reads the flag as
/// `O_DIRECTORY` alone).
fn unnamed_files_unsupported(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR))
}

fn named_probe(base: &Path, dir: &Path, fd: &OwnedFd) -> Result<(), AuditError> {
    let name = format!(".audit-probe-{}", std::process::id());
    let probe = dir.join(&name);
    check(base, &probe)?;
    // A probe a killed server left behind is ours to replace.
    let _ = unlinkat(fd, name.as_str(), AtFlags::empty());
    openat(
        fd,
        name.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|errno| classify_open(base, &probe, &errno.into()))?;
    unlinkat(fd, name.as_str(), AtFlags::empty())
        .map_err(|errno| AuditError::io(base, &probe, &errno.into()))
}

/// Opens `path` for appending without following a final link, and refuses anything but a
/// single-link regular file (a hard link could point the append at another file).
fn open_append(base: &Path, path: &Path) -> Result<File, AuditError> {
    let (dir, name) = checked_parent(base, path)?;
    let fd = openat(
        &dir,
        name,
        // Non-blocking: a FIFO swapped in after the checks fails the open (no reader) or is
        // refused below, instead of holding this thread until a reader comes.
        OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|errno| classify_open(base, path, &errno.into()))?;
    let file = File::from(fd);
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
    after_check();
    let Some(mut file) = open_existing(base, path, OFlags::RDONLY)? else {
        return Ok(None);
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

/// Opens the existing directory `dir` (`base` or below it) for listing, walking from `base` one
/// component at a time without following a link; `None` when it is missing. A link anywhere on
/// the way is refused (`unsafe_path`), so what is listed and opened through the answer lies
/// beneath `base` whatever the agent made of its workspace.
pub fn open_dir(base: &Path, dir: &Path) -> Result<Option<OwnedFd>, AuditError> {
    open_dir_beneath(base, dir, false)
}

/// The names in the directory `dir` opened by [`open_dir`] (neither `.` nor `..`).
pub fn names(dir: &OwnedFd) -> io::Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(&name).to_owned());
        }
    }
    Ok(out)
}

/// Opens the regular file `name` in the directory `dir` opened by [`open_dir`] for reading, not
/// following a link and not waiting on a FIFO; `None` for anything else or when it is missing.
pub fn open_read_at(dir: &OwnedFd, name: &OsStr) -> Option<File> {
    let fd = openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let file = File::from(fd);
    file.metadata().ok()?.is_file().then_some(file)
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
pub(super) mod tests {
    use super::*;
    use crate::ErrorType;
    use std::cell::RefCell;
    use std::os::unix::fs::symlink;

    thread_local! {
        /// Run once by the next write on this thread between its checks and its write.
        pub(super) static AFTER_CHECK: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
    }

    /// A base with `reports/` in it, a directory outside it, and a hook that swaps `reports` for a
    /// link to the outside after the next write's checks.
    fn swapped_after_the_check() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("temp dir");
        fs::create_dir(root.path().join("reports")).expect("reports");
        let (at, to) = (root.path().to_path_buf(), outside.path().to_path_buf());
        AFTER_CHECK.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                fs::rename(at.join("reports"), at.join("moved")).expect("move");
                symlink(&to, at.join("reports")).expect("link");
            }));
        });
        (root, outside)
    }

    #[test]
    fn a_fifo_swapped_in_after_the_check_is_refused_by_a_read_or_a_write_without_waiting() {
        type Use = fn(&Path, &Path) -> bool;
        let uses: [(&str, Use); 3] = [
            ("read", |base, path| read(base, path).is_err()),
            ("append", |base, path| append(base, path, b"x").is_err()),
            ("write_small", |base, path| {
                write_small(base, path, b"x").is_err()
            }),
        ];
        for (what, refused) in uses {
            let root = tempfile::tempdir().expect("temp dir");
            let path = root.path().join("log.jsonl");
            fs::write(&path, b"{}\n").expect("log");
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            let (base, at) = (root.path().to_path_buf(), path.clone());
            // The hook is the thread's own: it runs between the check and the open.
            std::thread::spawn(move || {
                let swapped = at.clone();
                AFTER_CHECK.with(|hook| {
                    *hook.borrow_mut() = Some(Box::new(move || {
                        fs::remove_file(&swapped).expect("remove");
                        let mode = Mode::RUSR | Mode::WUSR;
                        rustix::fs::mknodat(CWD, &swapped, FileType::Fifo, mode, 0).expect("fifo");
                    }));
                });
                let _ = done_tx.send(refused(&base, &at));
            });
            let answered = done_rx.recv_timeout(std::time::Duration::from_secs(5));
            if answered.is_err() {
                // Release the thread blocked on the FIFO before failing.
                drop(fs::OpenOptions::new().read(true).write(true).open(&path));
            }
            assert_eq!(answered, Ok(true), "{what} hung on the FIFO or accepted it");
        }
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_refused_by_every_write() {
        type Write = fn(&Path, &Path, &[u8]) -> Result<(), AuditError>;
        let writes: [(&str, Write); 4] = [
            ("write_atomic", write_atomic),
            ("write_view", write_view),
            ("write_small", write_small),
            ("append", append),
        ];
        for (what, write) in writes {
            let (root, outside) = swapped_after_the_check();
            let path = root.path().join("reports/x.json");
            let written = write(root.path(), &path, b"{}");
            let there: Vec<_> = fs::read_dir(outside.path()).expect("list").collect();
            assert!(there.is_empty(), "{what} wrote outside its base: {there:?}");
            let err = written.expect_err(what);
            assert_eq!(err.error_type(), ErrorType::UnsafeConfiguredPath, "{what}");
        }
    }

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
