//! Run records under `<state_root>/coordination/runs/`: the handle, the record only the running
//! process writes, the lock it holds for the run's life (liveness, like a device lock: a worker killed
//! with SIGKILL frees it at once), the stop request any process may plant, and a detached worker's log.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ahil_config::time::now_millis;
use serde_json::{Map, Value, json};

use crate::fsio;

/// States a record is written in; `worker_gone` is only ever derived.
pub const TERMINAL: [&str; 2] = ["finished", "stopped"];
/// Progress is written at most this often; state changes are written at once.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// The stop file is looked at most this often.
const STOP_EVERY: Duration = Duration::from_millis(100);
/// Records kept; older terminal ones go with their files.
const KEEP: usize = 100;

/// Why the run files could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Another process holds this handle's lock.
    #[error("another process holds run {0}")]
    Held(String),
    /// The record exists but is not a record this program writes, even after retries.
    #[error("the record of run {0} cannot be read")]
    Invalid(String),
    #[error("the run files could not be written ({0:?})")]
    Io(io::ErrorKind),
}

impl From<io::Error> for RecordError {
    fn from(err: io::Error) -> Self {
        Self::Io(err.kind())
    }
}

/// A run handle: `run-` and 16 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle(String);

impl Handle {
    /// A fresh handle from the kernel's random source.
    pub fn mint() -> Self {
        let mut bytes = [0u8; 8];
        let read = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
        if read.is_err() {
            // No random source: time and pid still make a collision unlikely on one machine.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let low = u64::try_from(nanos & u128::from(u64::MAX)).unwrap_or_default();
            let mixed = low ^ (u64::from(std::process::id()) << 40);
            bytes = mixed.to_le_bytes();
        }
        Self(format!("run-{}", ahil_config::digest::hex(&bytes)))
    }

    /// The handle in `text`, if it has the one accepted shape.
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.strip_prefix("run-")?;
        (hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The directory of run files.
#[derive(Debug, Clone)]
pub struct RunsDir {
    dir: PathBuf,
}

impl RunsDir {
    pub fn new(state_root: &Path) -> Self {
        Self {
            dir: state_root.join("coordination").join("runs"),
        }
    }

    fn file(&self, handle: &Handle, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{ext}", handle.as_str()))
    }

    /// Where a detached worker's stdout and stderr go.
    pub fn log_path(&self, handle: &Handle) -> PathBuf {
        self.file(handle, "log")
    }

    pub fn ensure(&self) -> io::Result<()> {
        fsio::create_dir_all_private(&self.dir, 0o700)
    }

    /// The record of `handle`, `None` if there is none. A record being replaced is retried.
    pub fn read(&self, handle: &Handle) -> Result<Option<Map<String, Value>>, RecordError> {
        let path = self.file(handle, "json");
        for attempt in 0..6 {
            match fs::read(&path) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
                Ok(bytes) => {
                    if let Ok(Value::Object(map)) = serde_json::from_slice(&bytes) {
                        return Ok(Some(map));
                    }
                }
                Err(_) => {}
            }
            if attempt < 5 {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Err(RecordError::Invalid(handle.as_str().to_owned()))
    }

    /// Whether nobody holds the run's lock (its process ended, or it never existed).
    pub fn lock_free(&self, handle: &Handle) -> bool {
        let Ok(file) = open_lock(&self.file(handle, "lock")) else {
            return false;
        };
        file.try_lock().is_ok()
    }

    /// When a stop was requested, if one was.
    pub fn stop_requested_at(&self, handle: &Handle) -> Option<String> {
        let path = self.file(handle, "stop");
        let bytes = fs::read(&path).ok()?;
        let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Some(
            doc["requested_at"]
                .as_str()
                .map_or_else(now_millis, str::to_owned),
        )
    }

    /// Plants the stop request; its existence is the request.
    pub fn request_stop(&self, handle: &Handle) -> Result<String, RecordError> {
        if let Some(at) = self.stop_requested_at(handle) {
            return Ok(at);
        }
        let at = now_millis();
        let doc = json!({"run": handle.as_str(), "requested_at": at, "requested_by_pid": std::process::id()});
        fsio::write_atomic(
            &self.file(handle, "stop"),
            doc.to_string().as_bytes(),
            0o600,
        )?;
        Ok(at)
    }

    /// Every handle with a record, newest first.
    pub fn handles(&self) -> Vec<(Handle, std::time::SystemTime)> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut found: Vec<(Handle, std::time::SystemTime)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_str()?.strip_suffix(".json")?.to_owned();
                let handle = Handle::parse(&name)?;
                let modified = e.metadata().ok()?.modified().ok()?;
                Some((handle, modified))
            })
            .collect();
        found.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        found
    }

    /// Removes terminal records beyond the newest [`KEEP`], with their other files.
    fn prune(&self) {
        for (handle, _) in self.handles().into_iter().skip(KEEP) {
            let terminal = self.read(&handle).ok().flatten().is_some_and(|r| {
                r.get("state")
                    .and_then(Value::as_str)
                    .is_some_and(|s| TERMINAL.contains(&s))
            });
            if terminal && self.lock_free(&handle) {
                for ext in ["json", "stop", "lock", "log"] {
                    let _ = fs::remove_file(self.file(&handle, ext));
                }
            }
        }
    }

    /// Takes the run's lock and writes its first record (`starting`).
    pub fn register(
        &self,
        handle: &Handle,
        record: Map<String, Value>,
    ) -> Result<Registration, RecordError> {
        self.ensure()?;
        let lock = open_lock(&self.file(handle, "lock"))?;
        if lock.try_lock().is_err() {
            return Err(RecordError::Held(handle.as_str().to_owned()));
        }
        let mut registration = Registration {
            dir: self.clone(),
            handle: handle.clone(),
            _lock: lock,
            record,
            last_write: None,
            pending: false,
            last_stop_check: None,
            stopped: false,
        };
        registration.set("state", "starting".into());
        registration.write()?;
        self.prune();
        Ok(registration)
    }
}

fn open_lock(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// A registered run: holds the lock for its life and is the only writer of the record.
pub struct Registration {
    dir: RunsDir,
    handle: Handle,
    _lock: File,
    record: Map<String, Value>,
    last_write: Option<Instant>,
    pending: bool,
    last_stop_check: Option<Instant>,
    stopped: bool,
}

impl Registration {
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    fn set(&mut self, key: &str, value: Value) {
        self.record.insert(key.to_owned(), value);
        self.record
            .insert("updated_at".to_owned(), now_millis().into());
    }

    /// Atomic replace, retried briefly: a reader may hold the old file open.
    fn write(&mut self) -> Result<(), RecordError> {
        let path = self.dir.file(&self.handle, "json");
        let bytes =
            serde_json::to_vec_pretty(&Value::Object(self.record.clone())).unwrap_or_default();
        let mut last = None;
        for _ in 0..10 {
            match fsio::write_atomic(&path, &bytes, 0o600) {
                Ok(()) => {
                    self.last_write = Some(Instant::now());
                    self.pending = false;
                    return Ok(());
                }
                Err(err) => last = Some(err),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(last.map_or(RecordError::Io(io::ErrorKind::Other), Into::into))
    }

    /// A state change, written at once.
    pub fn set_state(&mut self, state: &str) {
        self.set("state", state.into());
        // A record that cannot be written shows as worker_gone to readers; the run itself goes on.
        let _ = self.write();
    }

    /// Where the run is; written at most every 250 ms, the rest at the next stop check.
    pub fn progress(&mut self, progress: Value) {
        self.set("progress", progress);
        self.pending = true;
        if self
            .last_write
            .is_none_or(|t| t.elapsed() >= PROGRESS_EVERY)
        {
            let _ = self.write();
        }
    }

    /// Whether a stop was requested; the file is looked at no more than every 100 ms.
    pub fn stop_requested(&mut self) -> bool {
        if self.stopped {
            return true;
        }
        if self.pending
            && self
                .last_write
                .is_none_or(|t| t.elapsed() >= PROGRESS_EVERY)
        {
            let _ = self.write();
        }
        if self
            .last_stop_check
            .is_some_and(|t| t.elapsed() < STOP_EVERY)
        {
            return false;
        }
        self.last_stop_check = Some(Instant::now());
        self.stopped = self.dir.stop_requested_at(&self.handle).is_some();
        self.stopped
    }

    /// The terminal record: `finished` or `stopped`, with the verdict.
    pub fn finish(&mut self, state: &str, verdict: Map<String, Value>) {
        for (key, value) in verdict {
            self.record.insert(key, value);
        }
        self.record
            .insert("finished_at".to_owned(), now_millis().into());
        self.set_state(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_has_one_shape() {
        let minted = Handle::mint();
        assert!(Handle::parse(minted.as_str()).is_some(), "{minted:?}");
        for bad in [
            "run-0123",
            "run-0123456789ABCDEF",
            "xun-0123456789abcdef",
            "run-0123456789abcdeg",
        ] {
            assert!(Handle::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_registered_run_holds_its_lock_until_dropped() {
        let root = tempfile::tempdir().expect("root");
        let dir = RunsDir::new(root.path());
        let handle = Handle::mint();
        let reg = dir.register(&handle, Map::new()).expect("registers");
        assert!(!dir.lock_free(&handle), "held while registered");
        assert!(matches!(
            dir.register(&handle, Map::new()),
            Err(RecordError::Held(_))
        ));
        assert_eq!(
            dir.read(&handle).expect("readable").expect("exists")["state"],
            "starting"
        );
        drop(reg);
        assert!(dir.lock_free(&handle), "free once the process lets go");
    }

    #[test]
    fn a_stop_request_is_seen_by_the_run_and_kept_once() {
        let root = tempfile::tempdir().expect("root");
        let dir = RunsDir::new(root.path());
        let handle = Handle::mint();
        let mut reg = dir.register(&handle, Map::new()).expect("registers");
        assert!(!reg.stop_requested());
        let first = dir.request_stop(&handle).expect("planted");
        std::thread::sleep(STOP_EVERY);
        assert!(reg.stop_requested());
        assert_eq!(dir.request_stop(&handle).expect("again"), first);
        reg.finish("stopped", Map::new());
        let record = dir.read(&handle).expect("readable").expect("exists");
        assert_eq!(record["state"], "stopped");
        assert!(record["finished_at"].is_string());
    }
}
