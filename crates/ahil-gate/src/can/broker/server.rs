//! The broker process (`agentic-hil can-broker`): the bus lock for its life, the adapter opened once,
//! a pump that fans frames out to participants, one thread per connection.
//!
//! Its first stdout line answers the server that started it (`{"ok":true,…}` or a refusal); nothing
//! else is written there. Exit codes: 0 done, 3 bus busy, 4 adapter failed, 5 setup failed.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::io::{self, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ahil_config::CanShare;
use ahil_drivers::Contact;
use ahil_drivers::can::{self, Adapter, Bus, Frame, Opened};
use serde_json::{Value, json};

use super::wire::{self, refusal};
use super::{BrokerSpec, PROTOCOL_VERSION, Rendezvous, filter_accepts, share_reads, share_writes};
use crate::audit::Audit;
use crate::can::adapter;
use crate::ownership::{DeviceLocks, LockRoot, Owner};

/// How long a starting broker waits for the bus lock (a broker that is stopping still holds it).
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// How long a connection may take to say who it is.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// One attached participant.
pub(super) struct Part {
    pub(super) share: CanShare,
    pub(super) reads: bool,
    pub(super) writes: bool,
    pub(super) queue: VecDeque<Frame>,
    pub(super) received: u64,
    pub(super) frames_used: u64,
    /// Why the broker stopped serving it (overflow, budget, bus incident).
    pub(super) aborted: Option<(String, String)>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) parts: BTreeMap<String, Part>,
    pub(super) attached_ever: bool,
    pub(super) stopping: bool,
    /// Every reply is written; the process may exit.
    pub(super) finished: bool,
    pub(super) seq: u64,
    /// The adapter failed: the whole bus is gated.
    pub(super) incident: Option<String>,
}

/// What a broker holds before its adapter opens: the rendezvous, the bus lock, the bus frame log.
pub(super) struct Held {
    pub(super) place: Rendezvous,
    pub(super) locks: DeviceLocks,
    pub(super) audit: Audit,
    pub(super) log_name: String,
}

pub(super) struct Broker {
    pub(super) spec: BrokerSpec,
    pub(super) place: Rendezvous,
    pub(super) key: String,
    pub(super) bus: Bus,
    pub(super) locks: DeviceLocks,
    pub(super) audit: Audit,
    pub(super) log_name: String,
    pub(super) log_path: String,
    pub(super) backend: String,
    pub(super) state: Mutex<State>,
    pub(super) changed: Condvar,
    pub(super) closed: Mutex<Option<Value>>,
}

/// The broker's entry point; the spec arrives as one JSON line on stdin.
pub fn main(_args: &[String]) -> i32 {
    let mut line = String::new();
    if io::stdin().read_line(&mut line).is_err() {
        return 5;
    }
    let spec: BrokerSpec = match serde_json::from_str(&line) {
        Ok(spec) => spec,
        Err(err) => {
            answer(&refusal(
                "can_broker_invalid_message",
                format!("the broker spec is unreadable: {err}"),
            ));
            return 5;
        }
    };
    match Broker::start(spec) {
        Ok((broker, ready)) => {
            let broker = Arc::new(broker);
            match broker.publish() {
                Ok(listener) => {
                    answer(&ready);
                    broker.serve(listener)
                }
                Err(err) => {
                    broker.finish("publish_failed");
                    answer(&refusal(
                        "can_broker_unavailable",
                        format!("the broker could not publish its socket: {err}"),
                    ));
                    5
                }
            }
        }
        Err((code, refused)) => {
            answer(&refused);
            code
        }
    }
}

fn answer(message: &Value) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

pub(super) fn contact_word(contact: &Contact) -> &'static str {
    match contact {
        Contact::None { .. } => "none",
        _ => "possible",
    }
}

impl Broker {
    fn start(spec: BrokerSpec) -> Result<(Self, Value), (i32, Value)> {
        let place = Rendezvous::new(&spec.home, &spec.bus_key);
        let setup = |err: &dyn std::fmt::Display| {
            (
                5,
                refusal(
                    "can_broker_unavailable",
                    format!("the broker could not set up: {err}"),
                ),
            )
        };
        place.ensure().map_err(|e| setup(&e))?;
        let locks = DeviceLocks::new(
            LockRoot::for_home(&spec.home),
            Owner::this_process("can-broker"),
        );
        let label = format!("can_broker:{}", spec.bus_id);
        if let Err(busy) =
            locks.acquire_labeled(std::slice::from_ref(&spec.bus_key), LOCK_WAIT, Some(&label))
        {
            let mut refused = refusal("device_busy", "The bus is held by another owner.");
            refused["resource"] = json!(busy.resource);
            if let Some(holder) = busy.holder {
                refused["holder"] = holder;
            }
            return Err((3, refused));
        }
        let a = &spec.audit;
        let audit = Audit::new(
            &a.state_root,
            &a.config_path,
            &a.workspace,
            &a.reports_dir,
            &a.logs_dir,
        );
        let log_name = format!(
            "can-bus-{}-{}.jsonl",
            crate::serial::log_stamp(),
            spec.bus_id
        );
        let shares: Vec<&String> = spec.bus.shares.iter().flat_map(|s| s.keys()).collect();
        audit
            .append_event(
                &log_name,
                &json!({
                    "event": "broker_start",
                    "bus_id": spec.bus_id,
                    "adapter": spec.kind,
                    "channel": spec.bus.channel,
                    "bitrate": spec.bus.bitrate,
                    "listen_only": spec.bus.listen_only,
                    "broker_pid": std::process::id(),
                    "shares": shares,
                }),
            )
            .map_err(|e| (5, refusal("audit_unavailable", e.to_string())))?;
        let request = adapter::request(&spec.bus);
        let (opened_adapter, opened) = can::open(&spec.adapter(), &request).map_err(|error| {
            let mut refused = refusal(&error.public_error_type(), error.to_string());
            refused["contact"] = json!(contact_word(&error.contact()));
            if let Some(tail) = error.stderr_tail() {
                refused["stderr_tail"] = json!(tail);
            }
            let _ = audit.append_event(
                &log_name,
                &json!({"event": "broker_stop", "reason": "open_failed", "error_type": error.public_error_type()}),
            );
            (4, refused)
        })?;
        let held = Held {
            place,
            locks,
            audit,
            log_name,
        };
        Ok(Self::over(spec, held, opened_adapter, &opened))
    }

    /// The broker over an opened adapter: any [`Adapter`], so the process bridge and SocketCAN are
    /// served by the same pump and fan-out (and a test's fake adapter too).
    pub(super) fn over(
        spec: BrokerSpec,
        held: Held,
        adapter: Box<dyn Adapter>,
        opened: &Opened,
    ) -> (Self, Value) {
        let request = adapter::request(&spec.bus);
        let cap = usize::try_from(spec.bus.max_buffer_frames.max(1)).unwrap_or(usize::MAX);
        let bus = Bus::start(adapter, cap, request.poll_interval);
        let key = crate::ownership::owner::random_hex(32);
        let broker = Self {
            place: held.place,
            key,
            bus,
            locks: held.locks,
            log_path: held.audit.log_path(&held.log_name),
            audit: held.audit,
            log_name: held.log_name,
            backend: opened.backend.clone(),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            closed: Mutex::new(None),
            spec,
        };
        let mut report = opened.report.clone();
        report.insert("backend".into(), opened.backend.clone().into());
        if opened.listen_only_confirmed {
            report.insert("listen_only".into(), true.into());
        }
        (
            broker,
            json!({"ok": true, "broker_pid": std::process::id(), "adapter_result": report}),
        )
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        // Each critical section leaves the state whole, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Binds the socket and publishes the key and descriptor, in that order: a descriptor names a
    /// socket that already listens.
    pub(super) fn publish(&self) -> io::Result<UnixListener> {
        let socket = self.place.socket();
        if let Ok(meta) = fs::symlink_metadata(&socket)
            && meta.file_type().is_socket()
        {
            // A socket left by a broker that was killed; the bus lock we hold proves it is dead.
            fs::remove_file(&socket)?;
        }
        let listener = UnixListener::bind(&socket)?;
        fs::set_permissions(&socket, fs::Permissions::from_mode(0o600))?;
        let key_path = self.place.key();
        let _ = fs::remove_file(&key_path);
        let mut key = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&key_path)?;
        key.write_all(self.key.as_bytes())?;
        let descriptor = json!({
            "version": 1,
            "protocol_version": PROTOCOL_VERSION,
            "bus_key": self.spec.bus_key,
            "bus_id": self.spec.bus_id,
            "pid": std::process::id(),
            "started_at": ahil_config::time::now_millis(),
            "bus_frame_log": self.log_path,
        });
        let tmp = self
            .place
            .descriptor()
            .with_extension(format!("tmp{}", std::process::id()));
        fs::write(&tmp, descriptor.to_string())?;
        fs::rename(&tmp, self.place.descriptor())?;
        Ok(listener)
    }

    pub(super) fn serve(self: Arc<Self>, listener: UnixListener) -> i32 {
        std::thread::spawn({
            let broker = Arc::clone(&self);
            move || broker.pump()
        });
        std::thread::spawn({
            let broker = Arc::clone(&self);
            move || {
                for stream in listener.incoming().flatten() {
                    let broker = Arc::clone(&broker);
                    std::thread::spawn(move || broker.connection(stream));
                }
            }
        });
        let started = Instant::now();
        let first_attach = Duration::from_millis(self.spec.first_attach_timeout_ms);
        let mut state = self.state();
        loop {
            if state.finished {
                break;
            }
            if !state.attached_ever && !state.stopping && started.elapsed() >= first_attach {
                state.stopping = true;
                drop(state);
                self.finish("first_attach_timeout");
                return 0;
            }
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(200))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        0
    }

    /// Closes the adapter once, withdraws the rendezvous and gives the bus lock back; answers the
    /// close result (the same one to every caller).
    fn finish(&self, reason: &str) -> Value {
        let mut closed = self.closed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = closed.as_ref() {
            return done.clone();
        }
        self.state().stopping = true;
        for path in [
            self.place.descriptor(),
            self.place.key(),
            self.place.socket(),
        ] {
            let _ = fs::remove_file(path);
        }
        let result = self.bus.close();
        let _ = self.audit.append_event(
            &self.log_name,
            &json!({
                "event": "broker_stop",
                "reason": reason,
                "safe_state_confirmed": result.safe_state_confirmed,
                "process_reaped": result.process_reaped,
            }),
        );
        self.locks.release(std::slice::from_ref(&self.spec.bus_key));
        let value = json!({
            "adapter_closed": true,
            "safe_state_confirmed": result.safe_state_confirmed,
            "process_reaped": result.process_reaped,
            "report": Value::Object(result.report),
        });
        *closed = Some(value.clone());
        self.changed.notify_all();
        value
    }

    /// The only reader of the adapter: every frame goes to each participant that accepts it.
    pub(super) fn pump(&self) {
        loop {
            if self.state().stopping {
                return;
            }
            let taken = self.bus.take(
                256,
                Duration::from_millis(50),
                &[],
                &ahil_drivers::process::CancelFlag::default(),
            );
            if !taken.frames.is_empty() {
                let mut state = self.state();
                for frame in &taken.frames {
                    let (seq, delivered, overflowed) = self.fan_out(&mut state, frame, None);
                    let _ = self.audit.append_passive(
                        &self.log_name,
                        &json!({"event": "frame", "seq": seq, "direction": "rx", "frame": frame.to_json(), "delivered_to": delivered, "overflowed_participants": overflowed}),
                    );
                }
                self.changed.notify_all();
            }
            if let Some(error) = self.bus.error() {
                let summary = format!("the bus adapter failed: {error}");
                let mut state = self.state();
                state.incident = Some(summary.clone());
                for part in state.parts.values_mut() {
                    part.aborted
                        .get_or_insert_with(|| ("can_bus_incident".into(), summary.clone()));
                }
                drop(state);
                self.changed.notify_all();
                let _ = self.audit.append_event(
                    &self.log_name,
                    &json!({"event": "incident", "scope": "bus", "error_type": error.public_error_type(), "detail": error.to_string()}),
                );
                return;
            }
        }
    }

    /// Queues `frame` for every participant (but its sender) whose read grant and filter accept
    /// it; a full queue or a spent budget aborts that participant, never the bus.
    pub(super) fn fan_out(
        &self,
        state: &mut State,
        frame: &Frame,
        sender: Option<&str>,
    ) -> (u64, Vec<String>, Vec<String>) {
        state.seq += 1;
        let cap = usize::try_from(self.spec.bus.max_buffer_frames.max(1)).unwrap_or(usize::MAX);
        let (mut delivered, mut overflowed) = (Vec::new(), Vec::new());
        for (name, part) in &mut state.parts {
            if Some(name.as_str()) == sender
                || part.aborted.is_some()
                || !part.reads
                || !filter_accepts(&part.share.filter, frame)
            {
                continue;
            }
            if part.frames_used >= part.share.max_frames {
                part.aborted = Some((
                    "can_participant_frame_budget_exhausted".into(),
                    format!(
                        "participant `{name}` used its budget of {} frames",
                        part.share.max_frames
                    ),
                ));
                overflowed.push(name.clone());
            } else if part.queue.len() >= cap {
                part.aborted = Some((
                    "can_participant_incident".into(),
                    format!("participant `{name}`'s queue overflowed its {cap} frames"),
                ));
                overflowed.push(name.clone());
            } else {
                part.queue.push_back(frame.clone());
                part.frames_used += 1;
                part.received += 1;
                delivered.push(name.clone());
            }
        }
        (state.seq, delivered, overflowed)
    }

    fn connection(&self, stream: UnixStream) {
        let Ok(mut writer) = stream.try_clone() else {
            return;
        };
        let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
        let mut reader = BufReader::new(stream);
        let Some(participant) = self.admit(&mut reader, &mut writer) else {
            return;
        };
        let _ = reader.get_ref().set_read_timeout(None);
        loop {
            // The server went away (or broke the framing): its participant is detached.
            let Ok(Some(message)) = wire::receive(&mut reader) else {
                self.detach(&participant, "disconnected");
                return;
            };
            let kind = message.get("message").and_then(Value::as_str).unwrap_or("");
            let reply = match kind {
                "send" => self.send(&participant, &message),
                "read" => self.read(&participant, &message),
                "drain" => self.drain(&participant),
                "status" => self.status(Some(&participant)),
                "detach" => {
                    let (last, close) = self.detach(&participant, "requested");
                    let reply = json!({"ok": true, "message": "detached", "last": last, "close_result": close});
                    let _ = wire::send(&mut writer, &reply);
                    if last {
                        self.state().finished = true;
                        self.changed.notify_all();
                    }
                    return;
                }
                _ => refusal(
                    "can_broker_invalid_message",
                    format!("unknown message `{kind}`"),
                ),
            };
            if wire::send(&mut writer, &reply).is_err() {
                self.detach(&participant, "disconnected");
                return;
            }
        }
    }

    /// Authenticates the peer and attaches it; answers the participant, or `None` when the
    /// connection ends here (refused, or a status-only peer).
    fn admit(&self, reader: &mut BufReader<UnixStream>, writer: &mut UnixStream) -> Option<String> {
        let refuse = |writer: &mut UnixStream, error_type: &str, summary: &str| {
            let _ = wire::send(writer, &refusal(error_type, summary));
            None
        };
        match wire::peer(reader.get_ref()) {
            Ok((_, uid)) if uid == wire::own_uid() => {}
            _ => {
                return refuse(
                    writer,
                    "can_broker_authentication_failed",
                    "the peer does not run as this user",
                );
            }
        }
        let hello = wire::receive(reader).ok().flatten()?;
        let key = hello.get("key").and_then(Value::as_str).unwrap_or("");
        if !wire::same_key(key, &self.key) {
            return refuse(
                writer,
                "can_broker_authentication_failed",
                "the key does not match",
            );
        }
        if hello.get("protocol_version").and_then(Value::as_u64) != Some(PROTOCOL_VERSION) {
            return refuse(
                writer,
                "can_broker_protocol_mismatch",
                "the broker speaks another protocol version",
            );
        }
        if hello.get("bus_key").and_then(Value::as_str) != Some(self.spec.bus_key.as_str()) {
            return refuse(
                writer,
                "can_broker_wrong_bus",
                "this broker owns another bus",
            );
        }
        match hello.get("message").and_then(Value::as_str) {
            Some("status") => {
                let _ = wire::send(writer, &self.status(None));
                None
            }
            Some("attach") => {
                let participant = hello.get("participant").and_then(Value::as_str)?;
                match self.attach(participant) {
                    Ok(reply) => wire::send(writer, &reply)
                        .ok()
                        .map(|()| participant.to_owned()),
                    Err(refused) => {
                        let _ = wire::send(writer, &refused);
                        None
                    }
                }
            }
            _ => refuse(
                writer,
                "can_broker_invalid_message",
                "expected attach or status",
            ),
        }
    }

    pub(super) fn attach(&self, participant: &str) -> Result<Value, Value> {
        let bus = &self.spec.bus;
        let Some(share) = self.spec.share(participant) else {
            return Err(refusal(
                "can_participant_not_configured",
                format!(
                    "can_buses.{}.shares has no participant `{participant}`",
                    self.spec.bus_id
                ),
            ));
        };
        let mut state = self.state();
        if state.stopping {
            return Err(refusal(
                "can_broker_stopping",
                "the broker is closing the bus",
            ));
        }
        if let Some(incident) = &state.incident {
            return Err(refusal("can_bus_gated", incident.clone()));
        }
        if state.parts.contains_key(participant) {
            return Err(refusal(
                "can_participant_busy",
                format!("participant `{participant}` is already attached"),
            ));
        }
        let writes = share_writes(bus, share);
        let conflict = if writes && bus.listen_only {
            Some("a participant that may write cannot attach to a listen-only bus".to_owned())
        } else if writes && share.requires_listen_only {
            Some("a participant cannot both write and require a listen-only bus".to_owned())
        } else if writes
            && let Some((name, _)) = state
                .parts
                .iter()
                .find(|(_, p)| p.share.requires_listen_only)
        {
            Some(format!(
                "participant `{name}` requires that nobody writes on this bus"
            ))
        } else if share.requires_listen_only
            && let Some((name, _)) = state.parts.iter().find(|(_, p)| p.writes)
        {
            Some(format!(
                "participant `{name}` may write, and this participant requires that nobody does"
            ))
        } else {
            None
        };
        if let Some(summary) = conflict {
            return Err(refusal("can_listen_only_conflict", summary));
        }
        let part = Part {
            share: share.clone(),
            reads: share_reads(self.spec.config_version, share),
            writes,
            queue: VecDeque::new(),
            received: 0,
            frames_used: 0,
            aborted: None,
        };
        state.parts.insert(participant.to_owned(), part);
        state.attached_ever = true;
        let attached: Vec<String> = state.parts.keys().cloned().collect();
        drop(state);
        self.changed.notify_all();
        let _ = self.audit.append_event(
            &self.log_name,
            &json!({"event": "participant_attach", "participant": participant, "attached_participants": attached}),
        );
        Ok(json!({
            "ok": true,
            "message": "attached",
            "broker_pid": std::process::id(),
            "bus_id": self.spec.bus_id,
            "participant": participant,
            "backend": self.backend,
            "bus_frame_log": self.log_path,
            "listen_only": bus.listen_only,
            "reads": share_reads(self.spec.config_version, share),
            "writes": writes,
            "max_frames": share.max_frames,
            "attached_participants": attached,
        }))
    }

    /// Removes `participant`; answers whether it was the last, and the close result if so.
    pub(super) fn detach(&self, participant: &str, reason: &str) -> (bool, Option<Value>) {
        let mut state = self.state();
        if state.parts.remove(participant).is_none() {
            return (false, None);
        }
        let last = state.parts.is_empty();
        if last {
            state.stopping = true;
        }
        let remaining: Vec<String> = state.parts.keys().cloned().collect();
        drop(state);
        let _ = self.audit.append_event(
            &self.log_name,
            &json!({"event": "participant_detach", "participant": participant, "reason": reason, "attached_participants": remaining}),
        );
        if !last {
            return (false, None);
        }
        let closed = self.finish("last_participant_detached");
        if reason != "requested" {
            self.state().finished = true;
            self.changed.notify_all();
        }
        (true, Some(closed))
    }
}
