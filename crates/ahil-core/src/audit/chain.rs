//! Hash-chained JSONL logs. The canonical copy under the state root carries a digest sidecar
//! `{"sequence","chain_sha256","bytes"}` with `chain = sha256(prev_hex + line)` from 64 zeros; the
//! workspace log is a mirror that must hold every canonical line, in order (passive lines such as
//! received UART text may sit between them).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Audit, AuditError, crash_point, json as pyjson, safe, safe_filename};
use ahil_config::digest::hex;

/// One log line of a scrubbed event: the canonical copy and the workspace mirror hold the same
/// bytes, and neither a secret nor a private directory.
fn jsonl(event: &super::Scrubbed) -> String {
    let mut line = pyjson::line(event.as_value());
    line.push('\n');
    line
}

/// The chain value before the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The digest sidecar of a canonical log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sidecar {
    pub sequence: u64,
    pub chain_sha256: String,
    pub bytes: u64,
}

impl Sidecar {
    /// The sidecar of an empty log.
    pub fn genesis() -> Self {
        Self {
            sequence: 0,
            chain_sha256: GENESIS.to_owned(),
            bytes: 0,
        }
    }

    /// Parses a sidecar; anything but three fields of the right types is refused.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(bytes).ok()?;
        let chain = value.get("chain_sha256")?.as_str()?;
        if chain.len() != 64 || !chain.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(Self {
            sequence: value.get("sequence")?.as_u64()?,
            chain_sha256: chain.to_ascii_lowercase(),
            bytes: value.get("bytes")?.as_u64()?,
        })
    }

    fn to_document(&self) -> String {
        pyjson::document(&json!({
            "sequence": self.sequence,
            "chain_sha256": self.chain_sha256,
            "bytes": self.bytes,
        }))
    }
}

/// The next chain value: `sha256(prev_hex + line)`, `line` including its newline.
pub fn chain_next(prev: &str, line: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev.as_bytes());
    hasher.update(line);
    hex(&hasher.finalize())
}

/// Why a canonical log fails verification against its sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainFault {
    /// The file is not as long as the sidecar says (lines cut off or added).
    SizeMismatch { recorded: u64, actual: u64 },
    /// The last record has no newline: a write was cut short.
    Truncated,
    /// The number of records differs from the sidecar's sequence.
    SequenceMismatch { recorded: u64, actual: u64 },
    /// A record is not a JSON object.
    NotARecord { line: u64 },
    /// The recomputed chain differs: a record was altered, removed or reordered.
    ChainMismatch,
}

impl ChainFault {
    /// A short reason for results.
    pub fn reason(&self) -> String {
        match self {
            Self::SizeMismatch { recorded, actual } => {
                format!("the log is {actual} bytes but its sidecar records {recorded}")
            }
            Self::Truncated => "the last record has no line end".into(),
            Self::SequenceMismatch { recorded, actual } => {
                format!("the log holds {actual} records but its sidecar records {recorded}")
            }
            Self::NotARecord { line } => format!("record {line} is not a JSON object"),
            Self::ChainMismatch => "the recomputed hash chain differs from the sidecar".into(),
        }
    }
}

/// Recomputes the chain over `log` and compares every sidecar value. Never panics on any input.
pub fn verify_chain(log: &[u8], sidecar: &Sidecar) -> Result<(), ChainFault> {
    let actual = u64::try_from(log.len()).unwrap_or(u64::MAX);
    if actual != sidecar.bytes {
        return Err(ChainFault::SizeMismatch {
            recorded: sidecar.bytes,
            actual,
        });
    }
    if !log.is_empty() && !log.ends_with(b"\n") {
        return Err(ChainFault::Truncated);
    }
    let mut chain = GENESIS.to_owned();
    let mut count = 0u64;
    for line in log.split_inclusive(|b| *b == b'\n') {
        count += 1;
        let body = &line[..line.len() - 1];
        if !matches!(serde_json::from_slice::<Value>(body), Ok(Value::Object(_))) {
            return Err(ChainFault::NotARecord { line: count });
        }
        chain = chain_next(&chain, line);
    }
    if count != sidecar.sequence {
        return Err(ChainFault::SequenceMismatch {
            recorded: sidecar.sequence,
            actual: count,
        });
    }
    if chain != sidecar.chain_sha256 {
        return Err(ChainFault::ChainMismatch);
    }
    Ok(())
}

/// How the workspace mirror compares with its canonical log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorVerdict {
    /// Every canonical line is there, in order.
    Verified,
    /// The mirror holds the canonical lines up to some point and none after it: the latest records
    /// were never mirrored (a crash between the two writes) or were cut off.
    Behind,
    /// A canonical line is missing from the middle, altered or out of order.
    Altered,
    /// There is no mirror.
    Missing,
    /// The mirror is a link or a multi-link file.
    Unsafe,
}

impl MirrorVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Behind => "behind",
            Self::Altered => "altered",
            Self::Missing => "missing",
            Self::Unsafe => "unsafe",
        }
    }
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether the canonical lines appear in the mirror as an ordered subsequence.
pub fn verify_mirror(canonical: &[u8], mirror: &[u8]) -> MirrorVerdict {
    let wanted = lines(canonical);
    let have = lines(mirror);
    let mut at = 0;
    let mut matched = 0;
    for line in &wanted {
        match have[at..].iter().position(|h| h == line) {
            Some(offset) => {
                at += offset + 1;
                matched += 1;
            }
            None => break,
        }
    }
    if matched == wanted.len() {
        return MirrorVerdict::Verified;
    }
    // Behind only if no later canonical line shows up in the mirror at all; otherwise something in
    // the middle was removed, altered or moved.
    let later_present = wanted[matched..]
        .iter()
        .any(|line| have.iter().any(|h| h == line));
    if later_present {
        MirrorVerdict::Altered
    } else {
        MirrorVerdict::Behind
    }
}

impl Audit {
    fn canonical_log(&self, name: &str) -> std::path::PathBuf {
        self.canonical_logs().join(safe_filename(name))
    }

    /// The workspace-relative POSIX path of a workspace log.
    pub fn log_path(&self, name: &str) -> String {
        let name = safe_filename(name);
        if self.logs_rel().is_empty() {
            name
        } else {
            format!("{}/{name}", self.logs_rel())
        }
    }

    /// Appends one audited event: canonical copy and sidecar first, under the log's lock, then the
    /// workspace mirror. A canonical failure writes nothing to the mirror. Returns the line written.
    /// The mirror is not fsynced: the canonical line is already durable, and a mirror that lost its
    /// last line to a power loss reads `behind`, as after a crash between the two writes (ADR 0011).
    pub fn append_event(&self, name: &str, event: &Value) -> Result<String, AuditError> {
        let mut entry = match event {
            Value::Object(map) => map.clone(),
            other => {
                let mut map = serde_json::Map::new();
                map.insert("event".into(), other.clone());
                map
            }
        };
        entry
            .entry("time")
            .or_insert_with(|| ahil_config::time::now_millis().into());
        let line = jsonl(&self.sink().scrub(&Value::Object(entry)));
        self.append_canonical(name, line.as_bytes())?;
        crash_point("after_canonical_log");
        let mirror = self.workspace().join(self.log_path(name));
        safe::append_view(self.workspace(), &mirror, line.as_bytes())?;
        Ok(line)
    }

    /// Appends a line that only the workspace mirror keeps (passive device output), without fsync
    /// (ADR 0025): the received bytes are in the session's ring, the line is evidence of nothing
    /// the mirror check counts, and its fsync competed on the same disk with every call's own.
    pub fn append_passive(&self, name: &str, event: &Value) -> Result<(), AuditError> {
        let line = jsonl(&self.sink().scrub(event));
        let mirror = self.workspace().join(self.log_path(name));
        safe::append_view(self.workspace(), &mirror, line.as_bytes())
    }

    /// Locks the canonical log `name` and reads its sidecar (genesis when absent). Returns the lock
    /// guard, the log path, the sidecar path and the sidecar.
    fn lock_canonical(
        &self,
        name: &str,
    ) -> Result<
        (
            std::fs::File,
            std::path::PathBuf,
            std::path::PathBuf,
            Sidecar,
        ),
        AuditError,
    > {
        let root = self.state_root();
        let log = self.canonical_log(name);
        let sidecar_path = log.with_file_name(format!("{}.digest", safe_filename(name)));
        let lock_path = log.with_file_name(format!("{}.lock", safe_filename(name)));
        safe::ensure_dir(root, &self.canonical_logs())?;
        let lock = safe::lock(root, &lock_path)?;
        let sidecar = match safe::read(root, &sidecar_path)? {
            None => Sidecar::genesis(),
            Some(bytes) => Sidecar::parse(&bytes).ok_or_else(|| AuditError::StateInvalid {
                what: safe::shown(root, &sidecar_path),
                why: "the digest sidecar is not a valid sidecar document".into(),
            })?,
        };
        Ok((lock, log, sidecar_path, sidecar))
    }

    fn append_canonical(&self, name: &str, line: &[u8]) -> Result<(), AuditError> {
        let root = self.state_root();
        let (_lock, log, sidecar_path, sidecar) = self.lock_canonical(name)?;
        let actual = safe::size(root, &log)?;
        if actual != sidecar.bytes {
            return Err(AuditError::StateInvalid {
                what: safe::shown(root, &log),
                why: format!(
                    "the log's size ({actual} bytes) disagrees with its digest sidecar ({} bytes)",
                    sidecar.bytes
                ),
            });
        }
        safe::append(root, &log, line)?;
        crash_point("after_canonical_line");
        let next = Sidecar {
            sequence: sidecar.sequence + 1,
            chain_sha256: chain_next(&sidecar.chain_sha256, line),
            bytes: sidecar.bytes + line.len() as u64,
        };
        // In place, one fsync (ADR 0028): a torn sidecar is refused like one left behind its line.
        safe::write_small(root, &sidecar_path, next.to_document().as_bytes())
    }

    /// Full-file mode (a debug-session snapshot): the canonical copy is replaced whole, the sidecar's
    /// chain is the SHA-256 of the content (not chained to the previous value) and its sequence goes
    /// up by one; then the workspace copy is replaced.
    pub fn write_full_file(&self, name: &str, content: &[u8]) -> Result<(), AuditError> {
        let root = self.state_root();
        let (_lock, log, sidecar_path, previous) = self.lock_canonical(name)?;
        safe::write_atomic(root, &log, content)?;
        let next = Sidecar {
            sequence: previous.sequence + 1,
            chain_sha256: hex(&Sha256::digest(content)),
            bytes: content.len() as u64,
        };
        safe::write_atomic(root, &sidecar_path, next.to_document().as_bytes())?;
        crash_point("after_canonical_full_file");
        let mirror = self.workspace().join(self.log_path(name));
        safe::write_atomic(self.workspace(), &mirror, content)
    }

    /// `canonical_audit` for a report whose top-level `log_path` names a workspace log: `None` when
    /// there is no canonical copy. The chain is recomputed, and the mirror is checked against it.
    pub fn log_evidence(&self, log_path: &str) -> Option<Value> {
        let name = std::path::Path::new(log_path)
            .file_name()?
            .to_string_lossy()
            .into_owned();
        let root = self.state_root();
        let log = self.canonical_log(&name);
        let sidecar_path = log.with_file_name(format!("{}.digest", safe_filename(&name)));
        let exists = std::fs::symlink_metadata(&log).is_ok();
        let sidecar_exists = std::fs::symlink_metadata(&sidecar_path).is_ok();
        if !exists && !sidecar_exists {
            return None;
        }
        let corrupted = |why: String| {
            json!({
                "canonical_log_present": exists,
                "canonical_log_name": safe_filename(&name),
                "canonical_log_corrupted": true,
                "canonical_fault": why,
                "workspace_log_verified": false,
            })
        };
        // The writer's lock, shared: the line and its sidecar are read as one append left them,
        // never between the two writes or within the sidecar's overwrite.
        let lock_path = log.with_file_name(format!("{}.lock", safe_filename(&name)));
        let _lock = match safe::lock_shared(root, &lock_path) {
            Ok(lock) => lock,
            Err(err) => return Some(corrupted(err.to_string())),
        };
        let bytes = match safe::read(root, &log) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Some(corrupted("the canonical log is missing".into())),
            Err(err) => return Some(corrupted(err.to_string())),
        };
        let sidecar = match safe::read(root, &sidecar_path) {
            Ok(Some(raw)) => match Sidecar::parse(&raw) {
                Some(sidecar) => sidecar,
                None => return Some(corrupted("the digest sidecar is unreadable".into())),
            },
            Ok(None) => return Some(corrupted("the digest sidecar is missing".into())),
            Err(err) => return Some(corrupted(err.to_string())),
        };
        // A snapshot written whole carries the digest of its content instead of a chain.
        let whole = u64::try_from(bytes.len()).is_ok_and(|n| n == sidecar.bytes)
            && hex(&Sha256::digest(&bytes)) == sidecar.chain_sha256;
        if !whole && let Err(fault) = verify_chain(&bytes, &sidecar) {
            return Some(corrupted(fault.reason()));
        }
        let mirror_path = self.workspace().join(self.log_path(&name));
        let verdict = match safe::read(self.workspace(), &mirror_path) {
            Ok(Some(mirror)) if whole => {
                if mirror == bytes {
                    MirrorVerdict::Verified
                } else {
                    MirrorVerdict::Altered
                }
            }
            Ok(Some(mirror)) => verify_mirror(&bytes, &mirror),
            Ok(None) => MirrorVerdict::Missing,
            Err(_) => MirrorVerdict::Unsafe,
        };
        Some(json!({
            "canonical_log_present": true,
            "canonical_log_name": safe_filename(&name),
            "log_sequence": sidecar.sequence,
            "log_chain_sha256": sidecar.chain_sha256,
            "canonical_chain_verified": true,
            "workspace_log_verified": verdict == MirrorVerdict::Verified,
            "workspace_log_state": verdict.as_str(),
        }))
    }
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
