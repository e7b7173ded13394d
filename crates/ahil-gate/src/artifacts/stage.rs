//! Private staging: the bytes that were validated are copied into a directory only this process can
//! enter (0700, created fresh, so nobody else can have planted anything in it), re-hashed there, and
//! the source is re-checked for replacement after the copy. A driver gets the staged path, never the
//! agent's, so a build that rewrites the file mid-flash cannot change what is flashed.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::error::{ArtifactError, ArtifactRefusal};
use super::{ArtifactPolicy, CheckedArtifact, Format, hex, open, open_components};

const PREFIX: &str = "agentic-hil-artifacts-";
/// The system's temporary directory, never `TMPDIR`: the agent sets the server's environment
/// (`.mcp.json`), and a staging directory inside the workspace would let it swap a staged image
/// between its check and the flash.
pub const SYSTEM_TEMP: &str = "/tmp";

static PROCESS: OnceLock<Result<Stager, String>> = OnceLock::new();

/// The per-process staging directory.
#[derive(Debug)]
pub struct Stager {
    root: PathBuf,
    next: AtomicU64,
}

impl Stager {
    /// A fresh private directory `agentic-hil-artifacts-<pid>-<n>` inside `parent`. Directories
    /// that dead processes of this user left there (a server killed mid-flash) are removed first.
    pub fn new_in(parent: &Path) -> io::Result<Self> {
        sweep_abandoned(parent);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = io::Error::other("no attempt made");
        for attempt in 0..32_u32 {
            let root = parent.join(format!(
                "{PREFIX}{}-{nanos:x}-{attempt}",
                std::process::id()
            ));
            // Not recursive: an existing directory (someone else's) is an error, never reused.
            match DirBuilder::new().mode(0o700).create(&root) {
                Ok(()) => {
                    return Ok(Self {
                        root,
                        next: AtomicU64::new(0),
                    });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = error,
                Err(error) => return Err(error),
            }
        }
        Err(last)
    }

    /// The staging directory of this process, under the system's temporary directory.
    pub fn process() -> Result<&'static Self, ArtifactRefusal> {
        PROCESS
            .get_or_init(|| Self::new_in(Path::new(SYSTEM_TEMP)).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|why| ArtifactRefusal::bare(ArtifactError::Staging(why.clone())))
    }

    /// Removes this process's staging directory, if it was ever created. Called once on the way
    /// out: a staged copy still held then is worthless, and a directory per server run would
    /// otherwise pile up in the temporary directory.
    pub fn release_process() {
        if let Some(Ok(stager)) = PROCESS.get() {
            let _ = fs::remove_dir_all(&stager.root);
        }
    }

    /// The private directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Copy, re-hash, re-check the source. Every failure removes what was staged.
    pub(crate) fn stage(
        &self,
        checked: &CheckedArtifact,
        policy: &ArtifactPolicy,
    ) -> Result<StagedArtifact, ArtifactRefusal> {
        #[cfg(test)]
        counted::note(&policy.workspace);
        let staging =
            |why: String| ArtifactRefusal::new(ArtifactError::Staging(why), checked.checks.clone());
        let changed = |why: &str| {
            ArtifactRefusal::new(
                ArtifactError::Changed(why.to_owned()),
                checked.checks.clone(),
            )
        };
        let dir = self.root.join(format!(
            "stage-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| staging(e.to_string()))?;
        let staged = StagedArtifact {
            path: dir.join(staged_name(&checked.file_name)),
            dir,
            sha256: checked.sha256.clone(),
            size: u64::try_from(checked.bytes.len()).unwrap_or(u64::MAX),
            format: checked.format,
            report: checked.report(),
            display: checked.display.clone(),
        };
        write_new(&staged.path, &checked.bytes).map_err(|e| staging(e.to_string()))?;
        let copy = hash_file(&staged.path).map_err(|e| staging(e.to_string()))?;
        if copy != checked.sha256 {
            return Err(staging(
                "the staged copy does not match the validated bytes".into(),
            ));
        }
        // Written in place through the same inode since the check?
        match open::identity(&checked.opened.file) {
            Ok(now) if now == checked.opened.id => {}
            _ => return Err(changed("the file was modified after it was checked")),
        }
        // Replaced, moved, or a link swapped in at some component since the check?
        let again = open_components(policy, &checked.components)
            .map_err(|_| changed("the path no longer leads to the file that was checked"))?;
        if again.id != checked.opened.id {
            return Err(changed("the path now leads to a different file"));
        }
        let digest =
            hash_reader(&again.file).map_err(|_| changed("the file could not be read again"))?;
        if digest != checked.sha256 {
            return Err(changed("the file's content differs from the checked bytes"));
        }
        Ok(staged)
    }
}

/// The name of a staged copy: `image`, with the agent's extension when it is plain ASCII letters and
/// digits (programmers pick a format by it). Nothing else of the agent's name reaches a backend,
/// because some read the path again as code: OpenOCD's `program` wraps it in braces and `eval`s it,
/// so a `}` in a file name would run the rest as Tcl (`exec` included); gdb's `file` splits it at
/// spaces and reads a leading `-` as an option.
fn staged_name(file_name: &str) -> String {
    match Path::new(file_name).extension().and_then(|e| e.to_str()) {
        Some(ext)
            if (1..=16).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            format!("image.{ext}")
        }
        _ => "image".to_owned(),
    }
}

/// Removes staging directories whose creator is gone. Only real directories (never a link) owned by
/// this user, named by a pid that no longer runs: a live server's copies, or another user's, are left
/// alone. Best effort: a directory that cannot be removed now is tried again by the next server.
fn sweep_abandoned(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(creator_pid) else {
            continue;
        };
        if pid == std::process::id() || creator_is_running(pid) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() && std::os::unix::fs::MetadataExt::uid(&meta) == me {
            // remove_dir_all does not follow links inside the tree.
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The pid in `agentic-hil-artifacts-<pid>-<nanos>-<attempt>`.
fn creator_pid(name: &str) -> Option<u32> {
    let mut parts = name.strip_prefix(PREFIX)?.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let nanos = parts.next()?;
    let attempt = parts.next()?;
    let hex = nanos.chars().all(|c| c.is_ascii_hexdigit()) && !nanos.is_empty();
    (hex && attempt.parse::<u32>().is_ok()).then_some(pid)
}

fn creator_is_running(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // EPERM means it runs under another user: alive all the same.
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // No fsync: the copy lives only for this call and is worthless after a crash, while every
    // reader in this OS sees the page cache. Durability would cost milliseconds per flash for nothing.
    file.write_all(bytes)
}

fn hash_file(path: &Path) -> io::Result<String> {
    hash_reader(&File::open(path)?)
}

/// Streams a file through sha256 with one small buffer (no second copy of the image in memory). The
/// size is bounded by the identity check that precedes it.
fn hash_reader(mut file: &File) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 256 * 1024];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(buffer.get(..n).unwrap_or_default());
    }
    Ok(hex(&hasher.finalize()))
}

/// A validated image copied into private staging. The copy is removed when this is dropped, so hold
/// it for as long as a driver (or a debug session) uses [`StagedArtifact::path`].
#[derive(Debug)]
pub struct StagedArtifact {
    path: PathBuf,
    dir: PathBuf,
    sha256: String,
    size: u64,
    format: Option<Format>,
    report: Value,
    display: String,
}

impl StagedArtifact {
    /// The staged copy: the only path a driver receives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// sha256 of the staged bytes (lowercase hex), equal to the validated digest.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size
    }

    /// The format its extension names, if it is one of the three known ones.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// The source's workspace-relative path.
    pub fn display_path(&self) -> &str {
        &self.display
    }

    /// The `artifact` object of a result (source, path, sha256, size_bytes, validation).
    pub fn report(&self) -> &Value {
        &self.report
    }

    /// The staged bytes.
    pub fn read_bytes(&self) -> io::Result<Vec<u8>> {
        fs::read(&self.path)
    }
}

impl Drop for StagedArtifact {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_new_stager_removes_directories_that_dead_servers_left_behind() {
        let parent = tempfile::tempdir().unwrap();
        let dead = parent.path().join(format!("{PREFIX}{}-1f-0", dead_pid()));
        fs::create_dir_all(dead.join("stage-0")).unwrap();
        fs::write(dead.join("stage-0/app.elf"), b"image").unwrap();

        let stager = Stager::new_in(parent.path()).unwrap();

        assert!(!dead.exists());
        assert!(stager.root().is_dir());
    }

    #[test]
    fn a_live_server_s_staging_a_link_and_unrelated_names_are_left_alone() {
        let parent = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        fs::write(elsewhere.path().join("keep"), b"keep").unwrap();
        let mut live_child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let live = parent
            .path()
            .join(format!("{PREFIX}{}-1f-0", live_child.id()));
        fs::create_dir(&live).unwrap();
        let link = parent.path().join(format!("{PREFIX}{}-2f-0", dead_pid()));
        std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
        let unrelated = parent.path().join(format!("{PREFIX}notapid"));
        fs::create_dir(&unrelated).unwrap();

        let _stager = Stager::new_in(parent.path()).unwrap();
        live_child.kill().unwrap();
        live_child.wait().unwrap();

        assert!(live.is_dir());
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(elsewhere.path().join("keep").is_file());
        assert!(unrelated.is_dir());
    }

    #[test]
    fn a_staged_name_keeps_only_a_plain_extension_of_the_agents() {
        for (name, staged) in [
            ("fw.elf", "image.elf"),
            ("fw.HEX", "image.HEX"),
            ("fw", "image"),
            (".elf", "image"),
            ("fw.e}lf", "image"),
            ("fw.el f", "image"),
            ("fw.elf;", "image"),
            ("fw.", "image"),
            ("fw.abcdefghijklmnopq", "image"),
        ] {
            assert_eq!(staged_name(name), staged, "{name}");
        }
    }

    #[test]
    fn staging_names_parse_only_in_the_shape_this_code_writes() {
        assert_eq!(creator_pid("agentic-hil-artifacts-42-1a2b-0"), Some(42));
        assert_eq!(creator_pid("agentic-hil-artifacts-42-xyz-0"), None);
        assert_eq!(creator_pid("agentic-hil-artifacts-42-1a2b"), None);
        assert_eq!(creator_pid("agentic-hil-artifacts-ytlzulvx"), None);
        assert_eq!(creator_pid("other-42-1a-0"), None);
    }
}

/// Stagings per workspace, so a test can prove that a call staged its artifact exactly once.
#[cfg(test)]
pub(crate) mod counted {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::{Mutex, PoisonError};

    static COUNTS: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

    fn key(workspace: &Path) -> PathBuf {
        workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf())
    }

    pub(crate) fn note(workspace: &Path) {
        let mut counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        *counts.entry(key(workspace)).or_default() += 1;
    }

    /// How many stagings the artifacts of `workspace` went through so far.
    pub(crate) fn of(workspace: &Path) -> usize {
        let counts = COUNTS.lock().unwrap_or_else(PoisonError::into_inner);
        counts.get(&key(workspace)).copied().unwrap_or_default()
    }
}
