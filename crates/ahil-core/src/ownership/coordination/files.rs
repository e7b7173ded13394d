//! The coordination directory under the state root: per-configuration locks, records and the
//! recovery ledger. Shared by every project on this state root, so a second project sees a device
//! that belongs to another project's unresolved incident.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fsio;

/// Records are small; a planted huge file must not be read whole.
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// Paths under `<state_root>/coordination`.
#[derive(Debug, Clone)]
pub struct Dirs {
    root: PathBuf,
}

impl Dirs {
    pub fn under(state_root: &Path) -> Self {
        Self {
            root: state_root.join("coordination"),
        }
    }

    fn locks(&self) -> PathBuf {
        self.root.join("locks")
    }

    fn records(&self) -> PathBuf {
        self.root.join("records")
    }

    pub fn ledger(&self) -> PathBuf {
        self.root.join("recovery.jsonl")
    }

    pub fn record_path(&self, resource: &str) -> PathBuf {
        self.records().join(format!("{}.json", stem(resource)))
    }

    pub fn retired_dir(&self) -> PathBuf {
        self.records().join("retired")
    }

    pub fn ensure(&self) -> io::Result<()> {
        for dir in [self.locks(), self.records()] {
            fsio::create_dir_all_private(&dir, 0o700)?;
        }
        Ok(())
    }

    /// Takes the per-configuration lock on `resource` without waiting: `Ok(None)` when another
    /// process holds it.
    pub fn try_lock(&self, resource: &str) -> io::Result<Option<File>> {
        self.ensure()?;
        let file =
            ahil_config::lockfile::open(&self.locks().join(format!("{}.lock", stem(resource))))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(err)) => Err(err),
        }
    }

    /// The record for `resource`: `Ok(None)` when none was ever written; an error when one exists
    /// but cannot be read as a JSON object (never silently ignored).
    pub fn read_record(&self, resource: &str) -> io::Result<Option<Value>> {
        read_json(&self.record_path(resource))
    }

    /// A resource's marker, read as [`read_marker`](Self::read_marker) does: an empty file is no
    /// record. A marker that only says `active` or `released` is written without fsync (ADR 0014),
    /// and an empty file is what a power loss can leave of such a replace; a marker that matters
    /// after a crash (`quarantined`) is always synced, so it is never empty.
    pub fn read_marker(&self, resource: &str) -> io::Result<Option<Value>> {
        read_object(&self.record_path(resource), Empty::NoRecord)
    }

    /// Replaces each `(resource, record)` in order; those `synced` picks are durable on return,
    /// with one sync of the records directory for all.
    pub fn write_records(
        &self,
        records: &[(String, Value)],
        synced: impl Fn(&str, &Value) -> bool,
    ) -> io::Result<()> {
        self.ensure()?;
        let files = records
            .iter()
            .map(|(resource, record)| {
                let mut bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
                bytes.push(b'\n');
                let durability = if synced(resource, record) {
                    fsio::Durability::Synced
                } else {
                    fsio::Durability::View
                };
                Ok((self.record_path(resource), bytes, durability))
            })
            .collect::<io::Result<Vec<_>>>()?;
        fsio::write_atomic_all(&files, 0o600)
    }

    /// Appends one line to the recovery ledger and syncs it: the ledger is written before any
    /// record moves, so a crash between the two leaves the line and the incident, never a silent
    /// release.
    pub fn append_ledger(&self, event: &Value) -> io::Result<()> {
        fs::create_dir_all(&self.root)?;
        let mut line = serde_json::to_vec(event).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(self.ledger())?;
        file.write_all(&line)?;
        file.sync_all()
    }
}

/// Lock and record files are named by the SHA-256 of the resource name.
pub fn stem(resource: &str) -> String {
    ahil_config::digest::sha256_hex(resource.as_bytes())
}

pub fn read_json(path: &Path) -> io::Result<Option<Value>> {
    read_object(path, Empty::Invalid)
}

/// What an empty file means to [`read_object`]; the check is on the bytes read, so a marker costs
/// one open and one read on every lease, no extra `stat`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Empty {
    NoRecord,
    Invalid,
}

fn read_object(path: &Path, empty: Empty) -> io::Result<Option<Value>> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut text = String::new();
    file.take(MAX_RECORD_BYTES).read_to_string(&mut text)?;
    if text.is_empty() && empty == Empty::NoRecord {
        return Ok(None);
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Ok(Some(value)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "record is not a JSON object",
        )),
    }
}
