//! One lifecycle for every session kind (COM port, CAN bus, CAN participant, debug, RTT).
//!
//! A start is: claim the device locks (a guard) → open the chained session log → open the device →
//! register the session. A stop is: the kind closes its device → stop event → hold given back →
//! unregistered. The steps and their undo are written here once; a kind writes only how its device
//! opens and what its session and result look like. Each step's undo is the drop of what the
//! earlier steps made (the lock guard, the device), and a log that saw a start always sees how it
//! ended, so no failure leaves a held device, a half-open session or a log claiming a session that
//! does not exist.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use ahil_config::IoPermissions;
use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use serde_json::{Map, Value, json};

use crate::ErrorType;
use crate::actions::{Acted, DriverJob, Plan, Work};
use crate::audit::{Audit, AuditError, unavailable};
use crate::catalogue::ToolId;
use crate::envelope::Outcome;
use crate::ownership::{Ownership, SessionLocks};
use crate::policy::{Action, Device};
use crate::serial::log_stamp;

/// What policy is asked to start a session on a COM port or CAN bus: reading, unless the entry
/// grants only writing (version 1 grants reads separately), so a write-only device may still be
/// opened.
pub fn start_action<'a>(grants: IoPermissions, read: Action<'a>, write: Action<'a>) -> Action<'a> {
    if grants.allow_write && !grants.allow_read {
        write
    } else {
        read
    }
}

/// How long a read may wait for what it expects: the call's `wait_timeout_s`, else `default_s`,
/// held to `0..=max_s`.
pub fn read_wait(args: &Value, default_s: f64, max_s: f64) -> Duration {
    let wait_s = args
        .get("wait_timeout_s")
        .and_then(Value::as_f64)
        .unwrap_or(default_s)
        .clamp(0.0, max_s.max(0.0));
    Duration::from_secs_f64(wait_s)
}

/// A read on a held session. The session holds the device lock, so a read claims nothing more and
/// a long wait does not hold up a write to the same device; it only takes what the device already
/// sent, which `proof` says if the gate abandons it.
pub fn read_plan<'a>(
    action: Action<'a>,
    device: Device<'a>,
    wait: Duration,
    proof: &str,
    run: impl FnOnce(&CancelFlag) -> Acted + Send + 'static,
) -> Plan<'a> {
    Plan {
        action,
        device: Some(device),
        also: Vec::new(),
        resources: Vec::new(),
        work: Work::Driver(DriverJob {
            deadline: wait + Duration::from_secs(5),
            if_abandoned: Contact::none(proof),
            run: Box::new(move |cancel| run(&cancel)),
        }),
    }
}

/// The answer of a read whose wait ended because its call was given up (the wait's `gave_up`):
/// `interrupted`, as the gate says of any cancelled job, never `ok` with nothing read. The wait
/// took nothing, so what arrived stays queued for the next read; a read changes nothing on the
/// target, so `contact` (the read's proof) settles it as not contacted and nothing is quarantined.
/// The gate keeps a job's own `interrupted` answer (bench.rs `cancelled`); a read that ended by its
/// own rules before the cancel answers as usual and stands as done.
pub fn read_given_up(tool: ToolId, id: (&str, &str), contact: Contact) -> Acted {
    let outcome = Outcome::refused(
        tool,
        ErrorType::Interrupted,
        "The client cancelled the read while it waited; it took nothing, so what arrived stays queued for the next read.",
    )
    .with(id.0, id.1)
    .with("cancelled", true)
    .with_next_step("Read again when you want the data; nothing of it was lost.");
    Acted::new(outcome, contact)
}

/// What a session start uses of the gate: the audit its log chains into, the machine-wide
/// ownership its locks come from, and the table (of sessions `S`) it registers in.
pub struct Host<S> {
    pub audit: Audit,
    pub ownership: Arc<Ownership>,
    pub sessions: Arc<S>,
}

impl<S> Host<S> {
    pub fn new(audit: Audit, ownership: &Arc<Ownership>, sessions: &Arc<S>) -> Self {
        Self {
            audit,
            ownership: Arc::clone(ownership),
            sessions: Arc::clone(sessions),
        }
    }
}

impl<S> Clone for Host<S> {
    fn clone(&self) -> Self {
        Self::new(self.audit.clone(), &self.ownership, &self.sessions)
    }
}

/// The device locks a start claims, and what its refusal says when they are held elsewhere.
pub struct Claim {
    pub keys: Vec<String>,
    /// What the holder records say the device is busy with.
    pub label: String,
    /// Why nothing was contacted when the lock is refused.
    pub refused: &'static str,
}

impl Claim {
    pub fn new(keys: Vec<String>, label: String, refused: &'static str) -> Self {
        Self {
            keys,
            label,
            refused,
        }
    }
}

/// A session's chained log: its name in the logs directory and the workspace-relative path results
/// show.
#[derive(Clone)]
pub struct SessionLog {
    pub audit: Audit,
    pub name: String,
    pub path: String,
}

impl SessionLog {
    fn new(audit: &Audit, name: String) -> Self {
        Self {
            path: audit.log_path(&name),
            audit: audit.clone(),
            name,
        }
    }

    /// Appends an audited event.
    pub fn append(&self, event: &Value) -> Result<(), AuditError> {
        self.audit.append_event(&self.name, event).map(|_| ())
    }
}

/// What a start holds once its log is open: the session takes both over at registration.
pub struct Begun {
    pub locks: SessionLocks,
    pub log: SessionLog,
}

/// What a device is busy with while a session holds it. The holder records' label and a busy
/// refusal's `held_by` name it, and it fixes the session's start tool, log name and the proofs a
/// start gives when it stops before the device is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionClass {
    Com,
    Can,
    Rtt,
    Debug,
}

impl SessionClass {
    /// The holder records' label before `:` and the session's id; a refusal's `held_by`.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Com => "com_session",
            Self::Can => "can_session",
            Self::Rtt => "rtt_session",
            Self::Debug => "debug_session",
        }
    }

    /// The tool that starts a session of this class.
    pub const fn start_tool(self) -> ToolId {
        match self {
            Self::Com => ToolId::ComSessionStart,
            Self::Can => ToolId::CanSessionStart,
            Self::Rtt => ToolId::RttSessionStart,
            Self::Debug => ToolId::DebugStartSession,
        }
    }

    /// The session log's name begins with this and a `-`.
    pub const fn log_prefix(self) -> &'static str {
        match self {
            Self::Com => "com",
            Self::Can => "can",
            Self::Rtt => "rtt",
            Self::Debug => "gdb",
        }
    }

    /// Why nothing was contacted when the device lock is refused.
    const fn lock_refused(self) -> &'static str {
        match self {
            Self::Com => "the device lock was refused before the port was opened",
            Self::Can => "the device lock was refused before the adapter was opened",
            Self::Rtt => "the device lock was refused before the target's memory was read",
            Self::Debug => "the device lock was refused before gdb started",
        }
    }

    /// Why nothing was contacted when the session log cannot be written.
    const fn log_refused(self) -> &'static str {
        match self {
            Self::Com => "the session log could not be written, so the port was not opened",
            Self::Debug => "the session log could not be written, so gdb was not started",
            Self::Can | Self::Rtt => "the session log could not be written, so nothing was opened",
        }
    }
}

/// One kind of session: what names it, how its device opens and how its session is registered. A
/// kind declares its names and its start event's fields; its claim and log are built from them here,
/// so every kind's label, log name and start event keep one form.
pub trait SessionKind: Sized {
    /// The open device (a port, a bus, a broker attachment, gdb and its server). Dropping it closes
    /// it and ends any child process it runs.
    type Device;
    /// What the device is busy with while the session holds it: its start tool, claim label and
    /// log name come from it.
    const CLASS: SessionClass;
    /// Why nothing was contacted when the lock is refused.
    const LOCK_REFUSED: &'static str = Self::CLASS.lock_refused();

    /// What the session holds: its id, which its claim's label and its log's name carry (the port,
    /// bus (a shared bus's participant after a `#`) or debugger), and the device locks it claims.
    fn holds(&self) -> (Cow<'_, str>, &[String]);

    /// What the start event says after `"event": "start"`, as an object.
    fn start_fields(&self) -> Value;

    /// The session log's name: the start's stamp keeps each session's log apart from the last one's
    /// on the same device.
    fn log_name(&self) -> String {
        format!(
            "{}-{}-{}.jsonl",
            Self::CLASS.log_prefix(),
            log_stamp(),
            self.holds().0
        )
    }

    /// The locks to claim and what their refusal says.
    fn claim(&self) -> Claim {
        let (id, keys) = self.holds();
        Claim::new(
            keys.to_vec(),
            format!("{}:{}", Self::CLASS.label(), id),
            Self::LOCK_REFUSED,
        )
    }

    /// The session log's name and its start event.
    fn log_start(&self) -> (String, Value) {
        let mut event = Map::from_iter([("event".to_owned(), Value::from("start"))]);
        if let Value::Object(fields) = self.start_fields() {
            event.extend(fields);
        }
        (self.log_name(), Value::Object(event))
    }

    /// Opens the device (it may write to `log` as it goes). A refusal's `error_type` and summary go
    /// to the log as its `open_failed` event.
    fn open(&mut self, log: &SessionLog) -> Result<Self::Device, Box<Acted>>;

    /// Closes a device no session will hold (its call was given up while it opened) before the
    /// start answers; a kind whose device needs more than its drop says so.
    fn close_unregistered(&self, device: Self::Device) {
        drop(device);
    }

    /// Builds the session around `device` and registers it, answering the start's result; `None`
    /// when the table refused it (another session took the id meanwhile), the session dropped.
    fn register(self, device: Self::Device, begun: Begun) -> Option<Acted>;
}

/// Runs a start through every step; each failure answers the kind's refusal with the steps before
/// it undone. `cancel` is the start call's flag: raised by the client's cancel and by the pipeline
/// once it stopped waiting (a deadline, or the cancel's grace), so a device that opens after the
/// call was given up is closed again instead of becoming a session nobody was told of.
pub fn start<K: SessionKind, S>(mut kind: K, host: &Host<S>, cancel: &CancelFlag) -> Acted {
    let claim = kind.claim();
    let locks = match SessionLocks::take(&host.ownership, claim.keys, &claim.label) {
        Ok(locks) => locks,
        Err(busy) => {
            return Acted {
                outcome: busy.into_outcome(K::CLASS.start_tool().name()),
                contact: Some(Contact::none(claim.refused)),
            };
        }
    };
    let (name, started) = kind.log_start();
    let (log, device) = match open_logged(&host.audit, name, &started, |log| kind.open(log)) {
        Ok(opened) => opened,
        Err(NotOpened::Log(err)) => {
            return Acted {
                outcome: unavailable(K::CLASS.start_tool().name(), &err),
                contact: Some(Contact::none(K::CLASS.log_refused())),
            };
        }
        Err(NotOpened::Device(refused)) => return *refused,
    };
    if cancel.is_cancelled() {
        kind.close_unregistered(device);
        return abandoned(K::CLASS.start_tool(), &log);
    }
    let ended = log.clone();
    kind.register(device, Begun { locks, log })
        .unwrap_or_else(|| not_registered(K::CLASS.start_tool(), &ended))
}

/// The refusal of a start whose call was given up while its device opened: the device is closed
/// again (the locks go when the start returns), and the log learns why.
fn abandoned(tool: ToolId, log: &SessionLog) -> Acted {
    let outcome = Outcome::refused(
        tool,
        ErrorType::Interrupted,
        "The call was cancelled (or ran past its deadline) while the device opened, so the device was closed again and no session was kept.",
    )
    .with("cancelled", true)
    .with_next_step("Call the start again to open the session.");
    closed_again(log, "call_abandoned", outcome)
}

/// A start whose device opened and was closed again without a session: the log's last event says
/// why, and the refusal points at the log.
fn closed_again(log: &SessionLog, reason: &str, mut outcome: Outcome) -> Acted {
    let _ = log.append(&json!({"event": "stop", "reason": reason}));
    outcome.log_path = Some(log.path.clone());
    Acted {
        outcome,
        contact: Some(Contact::Possible),
    }
}

/// Why a logged open did not happen.
pub enum NotOpened<E> {
    /// The start event could not be written, so nothing was opened.
    Log(AuditError),
    /// The device refused; the log has the refusal as its `open_failed` event.
    Device(E),
}

/// A refusal whose outcome a log records.
pub trait Refusal {
    fn outcome(&self) -> &Outcome;
}

impl Refusal for Box<Acted> {
    fn outcome(&self) -> &Outcome {
        &self.outcome
    }
}

impl Refusal for Box<Outcome> {
    fn outcome(&self) -> &Outcome {
        self
    }
}

/// Writes the log's start event, then opens the device: a log that saw a start always learns how
/// the open ended (for a session, and for a port a call holds only while it runs).
pub fn open_logged<D, E: Refusal>(
    audit: &Audit,
    name: String,
    started: &Value,
    open: impl FnOnce(&SessionLog) -> Result<D, E>,
) -> Result<(SessionLog, D), NotOpened<E>> {
    let log = SessionLog::new(audit, name);
    if let Err(err) = log.append(started) {
        // The canonical copy may hold the start the mirror refused: it also learns the end.
        let _ = log.append(&json!({"event": "stop", "reason": "log_unwritable"}));
        return Err(NotOpened::Log(err));
    }
    match open(&log) {
        Ok(device) => Ok((log, device)),
        Err(refused) => {
            // Best effort: the refusal is the answer whether or not its line is written.
            let outcome = refused.outcome();
            let _ = log.append(&json!({
                "event": "open_failed",
                "error_type": outcome.error_type,
                "detail": outcome.summary,
            }));
            Err(NotOpened::Device(refused))
        }
    }
}

/// The refusal of a start whose session the table would not take: its device is closed again.
fn not_registered(tool: ToolId, log: &SessionLog) -> Acted {
    let outcome = Outcome::refused(
        tool,
        ErrorType::SessionAlreadyActive,
        "Another session on this device was registered meanwhile, so this one was closed again.",
    )
    .with_next_step("Use the open session, or stop it first.");
    closed_again(log, "not_registered", outcome)
}

/// Where sessions of one kind are registered.
pub trait Registry {
    type Entry;
    /// Registers `entry`, or hands it back when its id is taken.
    fn register(&self, entry: Self::Entry) -> Result<(), Self::Entry>;
    fn unregister(&self, key: &str);
}

/// A stop's end once the kind closed the device: the stop event in the session's `log`, its hold on
/// `locks` given back, the session unregistered. Answers whether the stop event was written.
pub fn end(
    registry: &impl Registry,
    key: &str,
    log: &SessionLog,
    locks: &SessionLocks,
    event: &Value,
) -> Result<(), AuditError> {
    let logged = log.append(event);
    locks.release();
    registry.unregister(key);
    logged
}

/// How a stop's answers name its session: the stop tool, the result's key for the session's id
/// (`port_id`, `debugger`, `bus_id`) and the id.
#[derive(Clone, Copy)]
pub struct Stopping<'a> {
    pub tool: ToolId,
    pub key: &'static str,
    pub id: &'a str,
}

impl<'a> Stopping<'a> {
    pub fn new(tool: ToolId, key: &'static str, id: &'a str) -> Self {
        Self { tool, key, id }
    }

    /// The answer when no session is open: `was_active: false`, nothing contacted.
    pub fn not_active(self, summary: &str) -> Acted {
        Acted {
            outcome: Outcome::ok(self.tool, summary)
                .with(self.key, self.id)
                .with("was_active", false),
            contact: Some(Contact::none("there was no session to stop")),
        }
    }

    /// A stop whose kind closed its device and has nothing of its own to log: `end` with the
    /// requested stop event, answered with the session as it was (`described`). `proof` says why
    /// the close sent nothing.
    pub fn stopped(
        self,
        summary: &str,
        registry: &impl Registry,
        log: &SessionLog,
        locks: &SessionLocks,
        described: Value,
        proof: &'static str,
    ) -> Acted {
        let logged = end(
            registry,
            self.id,
            log,
            locks,
            &json!({"event": "stop", "reason": "requested"}),
        );
        let mut outcome = Outcome::ok(self.tool, summary)
            .with(self.key, self.id)
            .with("was_active", true)
            .with("session", described);
        outcome.log_path = Some(log.path.clone());
        Acted {
            outcome: with_event_logged(outcome, logged),
            contact: Some(Contact::none(proof)),
        }
    }
}

/// A session call's result with its log's fate: an event (a stop, a write) that could not be
/// written is said, and the result is no longer fully audited.
pub fn with_event_logged(mut outcome: Outcome, logged: Result<(), AuditError>) -> Outcome {
    if let Err(err) = logged {
        mark_unlogged(&mut outcome, &err);
    }
    outcome
}

/// Marks a result whose session event could not be written: no longer fully audited, and why.
pub fn mark_unlogged(outcome: &mut Outcome, err: &AuditError) {
    outcome.audit_ok = Some(false);
    outcome.set("audit_error", err.to_value());
}

/// A session write's answer, naming the session's log: a write that failed answers what it may
/// have reached (`contact`); one that went out reached the device. Either way it says whether its
/// tx event was logged: a failed write can have sent part of its bytes, and that event is the
/// evidence of what reached the device.
pub fn write_answer(
    sent: Result<Outcome, (Outcome, Contact)>,
    logged: Result<(), AuditError>,
    log: &SessionLog,
) -> Acted {
    let (outcome, contact) = match sent {
        Ok(outcome) => (outcome, Contact::Made),
        Err(failed) => failed,
    };
    let mut outcome = with_event_logged(outcome, logged);
    outcome.log_path = Some(log.path.clone());
    Acted {
        outcome,
        contact: Some(contact),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Fixture;

    #[test]
    fn a_session_event_that_could_not_be_logged_marks_the_result_unaudited() {
        let lost = AuditError::Io {
            what: "<state_root>/logs/com_write.jsonl".into(),
            class: "StorageFull".into(),
            errno: Some(28),
        };
        let kept = with_event_logged(Outcome::ok("com_write", "Written."), Ok(()));
        assert_eq!(kept.audit_ok, None);
        assert!(kept.details.get("audit_error").is_none());
        let marked = with_event_logged(Outcome::ok("com_write", "Written."), Err(lost));
        assert_eq!(marked.audit_ok, Some(false));
        assert_eq!(marked.details["audit_error"]["errno"], 28);
    }

    #[test]
    fn a_write_that_failed_after_sending_part_of_its_bytes_says_its_tx_event_was_not_logged() {
        // The tx event is the evidence of what reached the device, on a failed write as on a good one.
        let fixture = Fixture::new();
        fixture.write_config(&fixture.starter());
        let log = SessionLog {
            audit: Audit::for_config(&fixture.load()),
            name: "com-dut_uart.jsonl".into(),
            path: ".agentic-hil/logs/com-dut_uart.jsonl".into(),
        };
        let lost = || AuditError::Io {
            what: "<state_root>/logs/com-dut_uart.jsonl".into(),
            class: "StorageFull".into(),
            errno: Some(28),
        };
        let partial = || {
            Outcome::refused(
                "com_write",
                ErrorType::SerialWriteIncomplete,
                "Only part of the bytes were written.",
            )
        };
        let failed = write_answer(Err((partial(), Contact::Made)), Err(lost()), &log);
        assert_eq!(failed.outcome.audit_ok, Some(false));
        assert_eq!(failed.outcome.details["audit_error"]["errno"], 28);
        assert_eq!(
            failed.outcome.error_type,
            partial().error_type,
            "the failure is kept"
        );
        assert!(matches!(failed.contact, Some(Contact::Made)));
        let logged = write_answer(Err((partial(), Contact::Made)), Ok(()), &log);
        assert_eq!(logged.outcome.audit_ok, None);
        assert_eq!(logged.outcome.log_path.as_deref(), Some(log.path.as_str()));
    }
}
