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

/// The per-process staging directory.
#[derive(Debug)]
pub struct Stager {
    root: PathBuf,
    next: AtomicU64,
}

impl Stager {
    /// A fresh private directory `agentic-hil-artifacts-<pid>-<n>` inside `parent`.
    pub fn new_in(parent: &Path) -> io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = io::Error::other("no attempt made");
        for attempt in 0..32_u32 {
            let root = parent.join(format!(
                "agentic-hil-artifacts-{}-{nanos:x}-{attempt}",
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

    /// The staging directory of this process, under the system temporary directory.
    pub fn process() -> Result<&'static Self, ArtifactRefusal> {
        static PROCESS: OnceLock<Result<Stager, String>> = OnceLock::new();
        PROCESS
            .get_or_init(|| Self::new_in(&std::env::temp_dir()).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|why| ArtifactRefusal::bare(ArtifactError::Staging(why.clone())))
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
            path: dir.join(&checked.file_name),
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
