//! A participant's end: find the bus's broker (or start one), prove who we are, attach, then send,
//! read and detach over one connection.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ahil_drivers::can::Frame;
use ahil_drivers::can::bus::take_ready;
use ahil_drivers::process::CancelFlag;
use serde_json::{Map, Value, json};

use super::wire;
use super::{BrokerSpec, PROTOCOL_VERSION, Rendezvous};

/// How long a request other than an open may take to be answered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long each read request waits at most; longer waits are several requests, so a send from the
/// same server is never stuck behind a long read.
const READ_SLICE: Duration = Duration::from_millis(100);

/// A refusal from the broker, or about reaching it.
#[derive(Debug, Clone)]
pub struct Refused {
    pub error_type: String,
    pub summary: String,
    /// The request may have reached the bus.
    pub contact_possible: bool,
    pub detail: Box<Map<String, Value>>,
}

impl Refused {
    pub fn new(error_type: &str, summary: impl Into<String>) -> Self {
        Self {
            error_type: error_type.to_owned(),
            summary: summary.into(),
            contact_possible: false,
            detail: Box::default(),
        }
    }

    fn from_wire(mut reply: Map<String, Value>) -> Self {
        let text = |reply: &mut Map<String, Value>, key: &str| match reply.remove(key) {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        let error_type = text(&mut reply, "error_type");
        let summary = text(&mut reply, "summary");
        let contact_possible = reply
            .remove("contact")
            .and_then(|c| c.as_str().map(str::to_owned))
            == Some("possible".to_owned());
        reply.remove("ok");
        Self {
            error_type: if error_type.is_empty() {
                "can_broker_invalid_message".into()
            } else {
                error_type
            },
            summary,
            contact_possible,
            detail: Box::new(reply),
        }
    }
}

fn unavailable(summary: impl Into<String>) -> Refused {
    Refused::new("can_broker_unavailable", summary)
}

struct Conn {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Conn {
    fn request(&mut self, message: &Value, timeout: Duration) -> io::Result<Map<String, Value>> {
        self.reader.get_ref().set_read_timeout(Some(timeout))?;
        wire::send(&mut self.writer, message)?;
        wire::receive(&mut self.reader)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the broker closed the connection",
            )
        })
    }
}

/// What a read took from the participant's queue.
pub struct Read {
    pub frames: Vec<Frame>,
    pub matched: bool,
    pub remaining: usize,
    /// The read ended because its call was given up, not by its own rules: it returned no frame.
    pub gave_up: bool,
}

/// The end of an attachment.
pub struct Detached {
    /// This participant was the last: the broker closed the adapter and exited.
    pub last: bool,
    pub close_result: Option<Value>,
    pub broker_exited: bool,
}

/// One attachment to a broker.
pub struct Participant {
    pub name: String,
    pub broker_pid: u32,
    /// The broker's attach answer (bus frame log, grants, budget).
    pub attached: Map<String, Value>,
    conn: Mutex<Conn>,
    /// Why the attachment stopped working: the broker went away, or aborted this participant.
    failure: Mutex<Option<Refused>>,
    counters: Mutex<(usize, u64)>,
    /// Frames a given-up read had taken from the broker, for the next read before the broker's.
    held: Mutex<VecDeque<Frame>>,
    detached: std::sync::atomic::AtomicBool,
}

impl Participant {
    fn request(&self, message: &Value, timeout: Duration) -> Result<Map<String, Value>, Refused> {
        if self.detached.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Refused::new(
                "session_not_active",
                "the participant has detached",
            ));
        }
        if let Some(lost) = self.lost() {
            return Err(lost);
        }
        let reply = self
            .conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .request(message, timeout);
        match reply {
            Ok(reply) if reply.get("ok") == Some(&Value::Bool(true)) => Ok(reply),
            Ok(reply) => Err(Refused::from_wire(reply)),
            Err(err) => {
                let lost = Refused::new(
                    "can_broker_disconnected",
                    format!("the bus broker is gone ({err})"),
                );
                *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(lost.clone());
                Err(lost)
            }
        }
    }

    fn note(&self, reply: &Map<String, Value>) {
        if let Some(aborted) = reply.get("aborted").and_then(Value::as_object) {
            let mut failure = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
            failure.get_or_insert_with(|| Refused::from_wire(aborted.clone()));
        }
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = reply
            .get("remaining")
            .or_else(|| reply.get("queued"))
            .and_then(Value::as_u64)
        {
            counters.0 = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = reply.get("received").and_then(Value::as_u64) {
            counters.1 = n;
        }
    }

    /// The failure known without asking the broker.
    pub fn lost(&self) -> Option<Refused> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// (queued, received) as last seen.
    pub fn levels(&self) -> (usize, u64) {
        let (queued, received) = *self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        (queued + self.held().len(), received)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, VecDeque<Frame>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the broker for the participant's levels (and learns of an abort).
    pub fn refresh(&self) {
        if let Ok(reply) = self.request(&json!({"message": "status"}), Duration::from_secs(2)) {
            self.note(&reply);
        }
    }

    pub fn send(&self, frame: &Frame) -> Result<Map<String, Value>, Refused> {
        let mut reply = self.request(
            &json!({"message": "send", "frame": frame.to_json()}),
            REQUEST_TIMEOUT,
        )?;
        reply.remove("ok");
        reply.remove("message");
        Ok(reply)
    }

    /// Up to `max` frames, waiting up to `wait` for the first (or for an `until` identifier).
    /// Once `cancel` is up (the call was given up) the read returns no frame, within a slice:
    /// what it had taken is held for the next read, which hands it out first.
    pub fn read(
        &self,
        max: usize,
        wait: Duration,
        until: &[u32],
        cancel: &CancelFlag,
    ) -> Result<Read, Refused> {
        let deadline = Instant::now() + wait;
        let mut taken = Read {
            frames: Vec::new(),
            matched: false,
            remaining: 0,
            gave_up: false,
        };
        let (frames, matched) = (&mut taken.frames, &mut taken.matched);
        if take_ready(&mut self.held(), frames, matched, max.max(1), until) {
            taken.remaining = self.levels().0;
            return Ok(taken);
        }
        loop {
            let slice = deadline
                .saturating_duration_since(Instant::now())
                .min(READ_SLICE);
            let wanted = max.saturating_sub(taken.frames.len()).max(1);
            let reply = self.request(
                &json!({"message": "read", "max_frames": wanted, "wait_ms": slice.as_millis(), "until": until}),
                REQUEST_TIMEOUT,
            )?;
            self.note(&reply);
            let frames = reply.get("frames").and_then(Value::as_array);
            taken
                .frames
                .extend(frames.into_iter().flatten().filter_map(Frame::from_bridge));
            taken.matched = reply.get("matched") == Some(&Value::Bool(true));
            // Looked at once: frames taken by a read given up must not go out in its answer.
            taken.gave_up = cancel.is_cancelled();
            if taken.gave_up {
                let mut held = self.held();
                for frame in taken.frames.drain(..).rev() {
                    held.push_front(frame);
                }
                taken.matched = false;
            }
            taken.remaining = self.levels().0;
            if taken.gave_up {
                return Ok(taken);
            }
            let satisfied = if until.is_empty() {
                !taken.frames.is_empty()
            } else {
                taken.matched
            };
            if satisfied
                || taken.frames.len() >= max
                || Instant::now() >= deadline
                || reply.contains_key("aborted")
            {
                return Ok(taken);
            }
        }
    }

    pub fn drain(&self) -> usize {
        let held = std::mem::take(&mut *self.held()).len();
        held + self
            .request(&json!({"message": "drain"}), REQUEST_TIMEOUT)
            .ok()
            .and_then(|r| r.get("drained").and_then(Value::as_u64))
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    }

    /// Detaches; the last participant's detach closes the adapter, and this waits (a few seconds at
    /// most) for the broker process to be gone.
    pub fn detach(&self) -> Detached {
        let reply = self.request(&json!({"message": "detach"}), REQUEST_TIMEOUT);
        self.detached
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let (last, close_result) = match &reply {
            Ok(reply) => (
                reply.get("last") == Some(&Value::Bool(true)),
                reply.get("close_result").filter(|v| !v.is_null()).cloned(),
            ),
            Err(_) => (false, None),
        };
        let broker_exited = if last || reply.is_err() {
            wait_gone(self.broker_pid, Duration::from_secs(5))
        } else {
            false
        };
        Detached {
            last,
            close_result,
            broker_exited,
        }
    }
}

/// Whether process `pid` exists (a zombie counts: it is not reaped yet).
pub fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::test_kill_process(pid).is_ok()
}

fn wait_gone(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while process_exists(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Connects to the published broker of `bus_key`; the peer must be the process the descriptor
/// names, running as us, in our private directory.
fn connect(place: &Rendezvous, bus_key: &str) -> io::Result<(Conn, String, u32)> {
    place.check_private()?;
    let descriptor: Value = serde_json::from_slice(&fs::read(place.descriptor())?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    if descriptor.get("bus_key").and_then(Value::as_str) != Some(bus_key) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "descriptor for another bus",
        ));
    }
    let pid = descriptor
        .get("pid")
        .and_then(Value::as_u64)
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "descriptor without pid"))?;
    let key_meta = fs::symlink_metadata(place.key())?;
    if !key_meta.file_type().is_file()
        || key_meta.uid() != wire::own_uid()
        || key_meta.mode() & 0o077 != 0
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the broker key is not private",
        ));
    }
    let key = fs::read_to_string(place.key())?;
    let stream = UnixStream::connect(place.socket())?;
    let (peer, uid) = wire::peer(&stream)?;
    if uid != wire::own_uid() || u32::try_from(peer).ok() != Some(pid) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the socket is not the broker's",
        ));
    }
    let reader = BufReader::new(stream.try_clone()?);
    Ok((
        Conn {
            writer: stream,
            reader,
        },
        key,
        pid,
    ))
}

/// The participants attached to `bus_key`'s broker now; empty when no broker runs.
pub fn attached(home: &Path, bus_key: &str) -> Vec<String> {
    let place = Rendezvous::new(home, bus_key);
    let Ok((mut conn, key, _)) = connect(&place, bus_key) else {
        return Vec::new();
    };
    let hello = json!({"message": "status", "key": key, "protocol_version": PROTOCOL_VERSION, "bus_key": bus_key});
    conn.request(&hello, Duration::from_secs(2))
        .ok()
        .and_then(|r| r.get("attached_participants").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// Attaches `participant` to the broker of `spec`'s bus, starting the broker when none runs.
/// The caller holds the participant lock already.
pub fn attach(
    spec: &BrokerSpec,
    participant: &str,
    open_timeout: Duration,
) -> Result<Participant, Refused> {
    let place = Rendezvous::new(&spec.home, &spec.bus_key);
    place
        .ensure()
        .map_err(|e| unavailable(format!("the broker directory is unusable: {e}")))?;
    let mut deadline = Instant::now() + open_timeout * 2 + Duration::from_secs(5);
    let (mut spawns, mut busy) = (0, None);
    loop {
        match connect(&place, &spec.bus_key) {
            Ok((mut conn, key, pid)) => {
                let hello = json!({
                    "message": "attach",
                    "key": key,
                    "protocol_version": PROTOCOL_VERSION,
                    "bus_key": spec.bus_key,
                    "participant": participant,
                    "client_pid": std::process::id(),
                });
                match conn.request(&hello, REQUEST_TIMEOUT) {
                    Ok(reply) if reply.get("ok") == Some(&Value::Bool(true)) => {
                        return Ok(Participant {
                            name: participant.to_owned(),
                            broker_pid: pid,
                            attached: reply,
                            conn: Mutex::new(conn),
                            failure: Mutex::new(None),
                            counters: Mutex::new((0, 0)),
                            held: Mutex::new(VecDeque::new()),
                            detached: std::sync::atomic::AtomicBool::new(false),
                        });
                    }
                    Ok(reply) => {
                        let refused = Refused::from_wire(reply);
                        if refused.error_type != "can_broker_stopping" {
                            return Err(refused);
                        }
                    }
                    // The broker went away between connect and answer: start over.
                    Err(_) => {}
                }
            }
            Err(_) if spawns < 3 => {
                spawns += 1;
                match spawn(spec, &place, open_timeout * 2 + Duration::from_secs(5)) {
                    Ok(()) => continue,
                    Err(refused) if refused.error_type == "device_busy" => {
                        // Another broker may be starting for this bus; give it a moment.
                        deadline = deadline.min(Instant::now() + Duration::from_secs(2));
                        busy = Some(refused);
                    }
                    Err(refused) => return Err(refused),
                }
            }
            Err(_) => {}
        }
        if Instant::now() >= deadline {
            return Err(busy.unwrap_or_else(|| unavailable("no bus broker answered in time")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts a broker for `spec` (this binary, detached in its own process group) and waits for its
/// first line; the child is reaped on a thread of its own whenever it exits.
fn spawn(spec: &BrokerSpec, place: &Rendezvous, limit: Duration) -> Result<(), Refused> {
    let exe = std::env::current_exe()
        .map_err(|e| unavailable(format!("this program's path is unknown: {e}")))?;
    ahil_drivers::process::require_absolute(&exe).map_err(|e| unavailable(e.to_string()))?;
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(place.log())
        .map_err(|e| unavailable(format!("the broker log cannot be opened: {e}")))?;
    let mut child = ahil_drivers::process::isolate_own_binary(&mut Command::new(&exe))
        .arg("can-broker")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        // Its own group: a signal to one server's group does not end a bus others use.
        .process_group(0)
        .spawn()
        .map_err(|e| unavailable(format!("the bus broker could not be started: {e}")))?;
    let mut line = serde_json::to_string(spec).map_err(|e| unavailable(e.to_string()))?;
    line.push('\n');
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(line.as_bytes());
    }
    let stdout = child.stdout.take();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        if let Some(stdout) = stdout {
            let _ = BufReader::new(stdout).read_line(&mut first);
        }
        let _ = tx.send(first);
    });
    std::thread::spawn(move || child.wait());
    let first = rx
        .recv_timeout(limit)
        .map_err(|_| unavailable("the bus broker did not answer its start in time"))?;
    match serde_json::from_str::<Value>(&first) {
        Ok(Value::Object(reply)) if reply.get("ok") == Some(&Value::Bool(true)) => Ok(()),
        Ok(Value::Object(reply)) => Err(Refused::from_wire(reply)),
        _ => Err(unavailable("the bus broker ended before it was ready")),
    }
}
