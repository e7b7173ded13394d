//! Machine-wide device locks: one `flock` per physical resource under `~/.agentic-hil/device-locks`,
//! keyed by the sha256 of the resource name exactly as the reference keys them, so the reference and
//! this program exclude each other on one machine. Ownership *is* the kernel lock: a holder that dies
//! frees the device at once, and the next taker only reads in the holder record that it did.

use crate::ErrorType;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ahil_config::time::iso_millis;
use ahil_job::CancelFlag;
use serde_json::{Value, json};

use super::owner::Owner;
use crate::envelope::Outcome;
use crate::fsio::{self, Durability};

/// Prefixes of resource names that name a physical device; only these take machine-wide locks.
const PHYSICAL_PREFIXES: [&str; 5] = ["physical:", "probe:", "probe-exe:", "com:", "can:"];
/// How often a waiting caller retries.
const POLL: Duration = Duration::from_millis(200);
/// Recorded in holder files; a later issue runs the heartbeat itself.
const HEARTBEAT_INTERVAL_S: f64 = 30.0;

pub fn is_physical(resource: &str) -> bool {
    PHYSICAL_PREFIXES.iter().any(|p| resource.starts_with(p))
}

/// Where the locks live. Fixed below the account's home ([`ahil_config::Environment::account_home`]) with no override,
/// so two sessions with different configurations, state roots or HOMEs still see each other.
#[derive(Debug, Clone)]
pub struct LockRoot {
    dir: PathBuf,
}

impl LockRoot {
    pub fn for_home(home: &Path) -> Self {
        Self {
            dir: home.join(".agentic-hil").join("device-locks"),
        }
    }

    fn digest(resource: &str) -> String {
        ahil_config::digest::sha256_hex(resource.as_bytes())
    }

    pub fn lock_path(&self, resource: &str) -> PathBuf {
        self.dir.join(format!("{}.lock", Self::digest(resource)))
    }

    pub fn holder_path(&self, resource: &str) -> PathBuf {
        self.dir
            .join(format!("{}.holder.json", Self::digest(resource)))
    }

    /// Creates the two directories (0700) if missing; a symlink or non-directory in their place is
    /// refused, since whoever planted it could point every lock somewhere else.
    fn ensure(&self) -> io::Result<()> {
        let parent = self.dir.parent().unwrap_or(Path::new("/"));
        for dir in [parent, self.dir.as_path()] {
            match fs::symlink_metadata(dir) {
                Ok(meta) if meta.file_type().is_dir() => {}
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "lock directory is not a plain directory",
                    ));
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    match fs::DirBuilder::new().mode(0o700).create(dir) {
                        Ok(()) => {}
                        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(err) => return Err(err),
                    }
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

struct HeldLock {
    /// One locked file in each root, in the roots' order.
    files: Vec<File>,
    count: usize,
    acquired_at: String,
    /// What the hold is for (a run's label), kept so heartbeats rewrite the same owner.
    label: Option<String>,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        // Unlocked, not only closed: a child another thread is starting shares this open file
        // until its exec, and a close alone would leave the flock held for as long as it does.
        for file in &self.files {
            let _ = file.unlock();
        }
    }
}

/// Devices taken by one call to [`DeviceLocks::acquire`].
#[derive(Debug, Clone, PartialEq)]
pub struct Acquired {
    pub resources: Vec<String>,
    /// Holder records that still said `held` when we took the lock: their owner died without releasing.
    pub reclaimed: Vec<Value>,
}

/// A device someone else holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Busy {
    pub resource: String,
    /// The holder's owner record, when its holder file could be read.
    pub holder: Option<Value>,
    pub held_since: Option<String>,
    pub heartbeat_at: Option<String>,
    pub waited_s: f64,
    /// Set when the lock directory itself could not be used.
    pub error_class: Option<String>,
}

impl Busy {
    fn holder_field(&self, key: &str) -> Option<&Value> {
        self.holder.as_ref().and_then(|h| h.get(key))
    }

    pub fn summary(&self) -> String {
        if let Some(class) = &self.error_class {
            return format!(
                "The device lock for {} could not be opened ({class}).",
                self.resource
            );
        }
        let pid = self
            .holder_field("pid")
            .map_or_else(|| "an unknown process".to_owned(), |p| format!("pid {p}"));
        let host = self
            .holder_field("host")
            .and_then(Value::as_str)
            .unwrap_or("this host");
        let frontend = self
            .holder_field("frontend")
            .and_then(Value::as_str)
            .unwrap_or("unknown frontend");
        let label = self
            .holder_field("label")
            .and_then(Value::as_str)
            .map(|l| format!(" running {l}"))
            .unwrap_or_default();
        format!(
            "Physical device {} is held by {pid} on {host} ({frontend}){label}.",
            self.resource
        )
    }

    /// The `device_busy` refusal. Nothing was contacted, so a retry later is safe.
    pub fn into_outcome(self, tool: &str) -> Outcome {
        let summary = self.summary();
        let mut outcome = Outcome::refused(tool, ErrorType::DeviceBusy, summary)
            .with("resource", self.resource.as_str())
            .with("waited_s", self.waited_s)
            .with_causes(["another agent or test run is using this board"])
            .with_remediation([
                "Wait for the holder to finish, or pass wait_s to wait for it.",
                "If the holder is yours and stuck, stop that session or process; its lock frees when it exits.",
            ])
            .with_do_not(["Do not delete lock files: the kernel lock is the ownership, the file only names it."])
            .not_contacted();
        if let Some(holder) = self.holder {
            outcome.set("holder", holder);
        }
        if let Some(at) = self.held_since {
            outcome.set("held_since", at);
        }
        if let Some(at) = self.heartbeat_at {
            outcome.set("heartbeat_at", at);
        }
        if let Some(class) = self.error_class {
            outcome.set("error_class", class);
        }
        outcome
    }
}

/// The locks one owner holds. Re-taking a lock it already holds counts up instead of deadlocking on
/// its own `flock`.
///
/// A device is locked in every root: the account's, and the environment's HOME's when that is
/// another folder. The account's root is where every server of the account meets whatever HOME it
/// was given; the HOME's root is where the reference, which follows HOME, takes the same device, so
/// the two implementations still exclude each other under any HOME.
pub struct DeviceLocks {
    roots: Vec<LockRoot>,
    owner: Owner,
    held: Mutex<BTreeMap<String, HeldLock>>,
}

impl DeviceLocks {
    pub fn new(root: LockRoot, owner: Owner) -> Self {
        Self::in_roots(vec![root], owner)
    }

    /// Locks taken in each of `roots` (the first is where holders are read first).
    pub fn in_roots(roots: Vec<LockRoot>, owner: Owner) -> Self {
        Self {
            roots,
            owner,
            held: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The physical resources this owner holds now.
    pub fn held(&self) -> Vec<String> {
        self.lock_table().keys().cloned().collect()
    }

    fn lock_table(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, HeldLock>> {
        // A panic while holding the table cannot leave a lock half-recorded (every insert is one
        // statement), so a poisoned table is still consistent.
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes every physical resource in `resources`, all or nothing, in sorted order (so two owners
    /// asking for the same set cannot deadlock), retrying until `wait` has passed.
    pub fn acquire(&self, resources: &[String], wait: Duration) -> Result<Acquired, Box<Busy>> {
        self.acquire_labeled(resources, wait, None)
    }

    /// As [`Self::acquire`], with the run's label in the holder records, so whoever is refused
    /// learns what the device is busy with.
    pub fn acquire_labeled(
        &self,
        resources: &[String],
        wait: Duration,
        label: Option<&str>,
    ) -> Result<Acquired, Box<Busy>> {
        self.acquire_unless(resources, wait, label, &CancelFlag::default())
    }

    /// As [`Self::acquire_labeled`], giving up the wait as soon as `cancel` is raised: a call the
    /// client cancelled (or the gate gave up on) must not take the devices later.
    pub fn acquire_unless(
        &self,
        resources: &[String],
        wait: Duration,
        label: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<Acquired, Box<Busy>> {
        let mut names: Vec<String> = resources
            .iter()
            .filter(|r| is_physical(r))
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        let started = Instant::now();
        loop {
            match self.try_all(&names, label) {
                Ok(acquired) => return Ok(acquired),
                Err(mut busy) => {
                    let waited = started.elapsed();
                    if busy.error_class.is_some() || waited >= wait || cancel.is_cancelled() {
                        busy.waited_s = (waited.as_secs_f64() * 1000.0).round() / 1000.0;
                        return Err(busy);
                    }
                    std::thread::sleep(POLL.min(wait.saturating_sub(waited)));
                }
            }
        }
    }

    fn try_all(&self, names: &[String], label: Option<&str>) -> Result<Acquired, Box<Busy>> {
        let mut table = self.lock_table();
        let mut newly_taken: Vec<String> = Vec::new();
        let mut holders = Vec::new();
        let mut reclaimed = Vec::new();
        for name in names {
            if let Some(held) = table.get_mut(name) {
                held.count += 1;
                continue;
            }
            match self.take_one(name, label) {
                Ok((held, record, previous)) => {
                    table.insert(name.clone(), held);
                    newly_taken.push(name.clone());
                    holders.push((name.clone(), record));
                    reclaimed.extend(previous);
                }
                Err(busy) => {
                    // All or nothing: give back what this attempt took, and undo the re-entries.
                    let mut given_back = Vec::new();
                    for name in names {
                        if newly_taken.contains(name) {
                            if let Some(held) = table.remove(name) {
                                given_back.push((name.clone(), held));
                            }
                        } else if let Some(held) = table.get_mut(name) {
                            held.count = held.count.saturating_sub(1);
                        }
                        if name == &busy.resource {
                            break;
                        }
                    }
                    self.write_released(&given_back);
                    return Err(busy);
                }
            }
        }
        // The records are advisory: a failure to write them does not undo the locks we hold.
        let _ = self.write_holders(&holders);
        Ok(Acquired {
            resources: names.to_vec(),
            reclaimed,
        })
    }

    fn take_one(
        &self,
        resource: &str,
        label: Option<&str>,
    ) -> Result<(HeldLock, Value, Option<Value>), Box<Busy>> {
        let unusable = |err: &io::Error| {
            Box::new(Busy {
                resource: resource.to_owned(),
                holder: None,
                held_since: None,
                heartbeat_at: None,
                waited_s: 0.0,
                error_class: Some(format!("{:?}", err.kind())),
            })
        };
        let mut files = Vec::with_capacity(self.roots.len());
        for (index, root) in self.roots.iter().enumerate() {
            let opened = root
                .ensure()
                .and_then(|()| ahil_config::lockfile::open(&root.lock_path(resource)));
            let file = match opened {
                // One folder reached by two paths (a HOME that is a link to the account's, a bind
                // mount) is locked once: a second open file description would conflict with ours.
                Ok(file) if index > 0 && same_file_as_any(&file, &files) => continue,
                Ok(file) => file,
                // Only the account's root is owed: a HOME's root the reference would use is met
                // where it can be, and one HOME does not allow (`/`, a file) is passed over.
                Err(_) if index > 0 => continue,
                Err(err) => {
                    for taken in &files {
                        let _ = taken.unlock();
                    }
                    return Err(unusable(&err));
                }
            };
            match file.try_lock() {
                Ok(()) => files.push(file),
                Err(fs::TryLockError::WouldBlock) => {
                    // The roots already taken are given back as `files` drops.
                    for taken in &files {
                        let _ = taken.unlock();
                    }
                    let record = Self::read_settled_holder(root, resource);
                    return Err(Box::new(Busy {
                        resource: resource.to_owned(),
                        holder: record.as_ref().and_then(|r| r.get("owner").cloned()),
                        held_since: text(record.as_ref(), "acquired_at"),
                        heartbeat_at: text(record.as_ref(), "heartbeat_at"),
                        waited_s: 0.0,
                        error_class: None,
                    }));
                }
                Err(fs::TryLockError::Error(_)) if index > 0 => {}
                Err(fs::TryLockError::Error(err)) => {
                    for taken in &files {
                        let _ = taken.unlock();
                    }
                    return Err(unusable(&err));
                }
            }
        }
        let previous = self
            .roots
            .iter()
            .filter_map(|root| Self::read_holder(root, resource))
            .find(|r| r.get("state").and_then(Value::as_str) == Some("held"));
        let reclaimed = previous
            .as_ref()
            .filter(|r| r.get("state").and_then(Value::as_str) == Some("held"))
            .map(|r| {
                json!({
                    "resource": resource,
                    "owner": r.get("owner").cloned().unwrap_or(Value::Null),
                    "held_since": r.get("acquired_at").cloned().unwrap_or(Value::Null),
                    "last_heartbeat_at": r.get("heartbeat_at").cloned().unwrap_or(Value::Null),
                    "reason": "owner_process_exited_without_release",
                    "summary": "The previous holder exited without releasing the device; the kernel freed its lock.",
                })
            });
        let now = iso_millis(std::time::SystemTime::now());
        let mut owner = self.owner.clone();
        if let Some(label) = label {
            owner.label = Some(label.to_owned());
        }
        let mut record = json!({
            "version": 1,
            "state": "held",
            "resource": resource,
            "owner": owner,
            "acquired_at": now,
            "heartbeat_at": now,
            "heartbeat_interval_s": HEARTBEAT_INTERVAL_S,
        });
        if let Some(from) = &reclaimed {
            record["reclaimed_from"] = from.clone();
        }
        Ok((
            HeldLock {
                files,
                count: 1,
                acquired_at: now,
                label: label.map(str::to_owned),
            },
            record,
            reclaimed,
        ))
    }

    /// Gives back one hold on each physical resource; the lock is released when the last hold goes.
    pub fn release(&self, resources: &[String]) {
        let mut table = self.lock_table();
        let mut done = Vec::new();
        for name in resources.iter().filter(|r| is_physical(r)) {
            let last = match table.get_mut(name) {
                Some(held) if held.count > 1 => {
                    held.count -= 1;
                    false
                }
                Some(_) => true,
                None => false,
            };
            if last && let Some(held) = table.remove(name) {
                done.push((name.clone(), held));
            }
        }
        // Say "released" before the kernel locks go (`done` drops after), so the next taker does
        // not mistake a clean release for a crash.
        self.write_released(&done);
    }

    /// Another descriptor on the open lock file of a held `resource`, as a child forked meanwhile
    /// holds one.
    #[cfg(test)]
    fn shared_file(&self, resource: &str) -> Option<File> {
        let table = self.lock_table();
        table
            .get(resource)
            .and_then(|held| held.files.first()?.try_clone().ok())
    }

    /// Who holds `resource` right now, without taking it for longer than a probe: `None` when it
    /// is free. A hold of this owner's own is reported with `holder_is_this_owner`.
    pub fn peek(&self, resource: &str) -> Option<Value> {
        if let Some(held) = self.lock_table().get(resource) {
            return Some(json!({
                "resource": resource,
                "holder": self.owner,
                "held_since": held.acquired_at,
                "holder_is_this_owner": true,
            }));
        }
        self.roots
            .iter()
            .find_map(|root| Self::peek_in(root, resource))
    }

    /// Who holds `resource` in `root`: `None` when its lock there is free or was never made.
    fn peek_in(root: &LockRoot, resource: &str) -> Option<Value> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(root.lock_path(resource))
            .ok()?;
        match file.try_lock() {
            // Free: the probe's lock goes with the file.
            Ok(()) => None,
            Err(fs::TryLockError::WouldBlock) => {
                let record = Self::read_settled_holder(root, resource);
                Some(json!({
                    "resource": resource,
                    "holder": record.as_ref().and_then(|r| r.get("owner").cloned()),
                    "held_since": text(record.as_ref(), "acquired_at"),
                    "heartbeat_at": text(record.as_ref(), "heartbeat_at"),
                    "holder_is_this_owner": false,
                }))
            }
            Err(fs::TryLockError::Error(err)) => Some(json!({
                "resource": resource,
                "error_class": format!("{:?}", err.kind()),
                "errno": err.raw_os_error(),
            })),
        }
    }

    /// Rewrites the holder record of every held device with a fresh `heartbeat_at`, so a waiting
    /// owner can tell a long hold from a stale record.
    pub fn heartbeat(&self) {
        let table = self.lock_table();
        let now = iso_millis(std::time::SystemTime::now());
        let mut records = Vec::with_capacity(table.len());
        for (resource, held) in table.iter() {
            let mut owner = self.owner.clone();
            owner.label.clone_from(&held.label);
            let record = json!({
                "version": 1,
                "state": "held",
                "resource": resource,
                "owner": owner,
                "acquired_at": held.acquired_at,
                "heartbeat_at": now,
                "heartbeat_interval_s": HEARTBEAT_INTERVAL_S,
            });
            records.push((resource.clone(), record));
        }
        let _ = self.write_holders(&records);
    }

    /// Writes `released` for each lock in `given_back`, which the caller drops afterwards.
    fn write_released(&self, given_back: &[(String, HeldLock)]) {
        let now = iso_millis(std::time::SystemTime::now());
        let records: Vec<(String, Value)> = given_back
            .iter()
            .map(|(resource, held)| {
                let record = json!({
                    "version": 1,
                    "state": "released",
                    "resource": resource,
                    "owner": self.owner,
                    "acquired_at": held.acquired_at,
                    "heartbeat_at": now,
                    "heartbeat_interval_s": HEARTBEAT_INTERVAL_S,
                    "released_at": now,
                });
                (resource.clone(), record)
            })
            .collect();
        let _ = self.write_holders(&records);
    }

    /// Replaces the holder records of one call in one batch: every record is fsynced before its
    /// rename, and their one directory once after all of them, instead of once per record (they
    /// all live in `device-locks/`). Durable on return, as one `write_atomic` each was.
    fn write_holders(&self, records: &[(String, Value)]) -> io::Result<()> {
        let mut written = Ok(());
        for root in &self.roots {
            let mut files = Vec::with_capacity(records.len());
            for (resource, record) in records {
                let mut bytes = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
                bytes.push(b'\n');
                files.push((root.holder_path(resource), bytes, Durability::Synced));
            }
            // Every root is written even when one fails: each is some server's only record.
            written = written.and(fsio::write_atomic_all(&files, 0o600));
        }
        written
    }

    /// The holder record as the current holder wrote it. A holder that took the lock a moment ago may
    /// not have written its record yet, so a missing or `released` record is read again briefly
    /// before the refusal names whoever it names. Half a second at most: on a loaded host a holder
    /// can take longer than a few milliseconds between its flock and its record.
    fn read_settled_holder(root: &LockRoot, resource: &str) -> Option<Value> {
        let mut record = Self::read_holder(root, resource);
        for _ in 0..100 {
            if record
                .as_ref()
                .and_then(|r| r.get("state"))
                .and_then(Value::as_str)
                == Some("held")
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
            record = Self::read_holder(root, resource);
        }
        record
    }

    fn read_holder(root: &LockRoot, resource: &str) -> Option<Value> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(root.holder_path(resource))
            .ok()?;
        serde_json::from_reader(io::BufReader::new(file.take_bounded())).ok()
    }
}

impl Drop for DeviceLocks {
    fn drop(&mut self) {
        let table = std::mem::take(&mut *self.lock_table());
        let given_back: Vec<(String, HeldLock)> = table.into_iter().collect();
        self.write_released(&given_back);
    }
}

/// Whether `file` is one of `files` (the same device and inode).
fn same_file_as_any(file: &File, files: &[File]) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return false;
    };
    files.iter().any(|other| {
        other
            .metadata()
            .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
    })
}

fn text(record: Option<&Value>, key: &str) -> Option<String> {
    record?.get(key)?.as_str().map(str::to_owned)
}

/// Holder records are small; a planted huge file must not be read whole.
trait TakeBounded {
    fn take_bounded(self) -> io::Take<File>;
}

impl TakeBounded for File {
    fn take_bounded(self) -> io::Take<File> {
        io::Read::take(self, 64 * 1024)
    }
}

#[cfg(test)]
#[path = "device_lock_tests.rs"]
mod tests;
