//! `can_session_start` and `can_session_stop`: open a configured bus and hold it (with its device
//! lock) across calls, then give both back.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use ahil_drivers::Contact;
use ahil_drivers::can::{self, AdapterSpec, Bus, CanError, OpenRequest};
use ahil_drivers::process::CancelFlag;
use serde_json::{Value, json};

use super::can_buses::{bus_entry, device};
use super::com_session::WithLog;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::audit::Audit;
use crate::can::{Failure, Link, Session, Sessions, adapter};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};
use crate::policy::Action;
use crate::session_lifecycle::{
    self, Begun, Host, SessionClass, SessionKind, SessionLog, Stopping,
};

/// How long a start waits for the adapter's backlog to reach the queue before it drains.
const DRAIN_SETTLE: Duration = Duration::from_secs(1);
/// Frames a start reads off a bus whose adapter never runs dry before it gives the clear up, as
/// the reference's bounded drain does.
const DRAIN_LIMIT: u64 = 16_384;

/// What the start job needs, owned so the blocking job can carry it.
struct Start {
    bus_id: String,
    kind: &'static str,
    spec: AdapterSpec,
    request: OpenRequest,
    cap: usize,
    clear: bool,
    lock_key: String,
    host: Host<Sessions>,
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::CanSessionStart, ToolId::CanSessionStop])?;
    let entry = bus_entry(ctx)?;
    if entry.share.is_some() {
        return super::can_participant::plan(ctx, &entry);
    }
    let (bus_id, bus) = (entry.bus_id, entry.bus);
    let lock_key = bus.lock_key();
    let sessions = Arc::clone(&ctx.can);
    let policy_device = device(bus_id, bus);
    if ctx.tool == ToolId::CanSessionStop {
        let bus_id = bus_id.to_owned();
        return Ok(Plan {
            action: Action::CanStop,
            device: Some(policy_device),
            also: Vec::new(),
            resources: vec![lock_key],
            work: Work::Driver(DriverJob {
                deadline: Duration::from_secs(15),
                if_abandoned: Contact::Possible,
                run: Box::new(move |_cancel| stop(&sessions, &bus_id)),
            }),
        });
    }
    let clear = ctx.args.arg_bool("clear_rx_queue").unwrap_or(true);
    if clear && ctx.loaded.config.version <= 1 && !bus.permissions.allow_read {
        // Clearing discards what the bus sent: that is reading it, so it is not silently skipped.
        let key = format!("can_buses.{bus_id}.permissions.allow_read");
        return Err(Box::new(
            Outcome::refused(
                ctx.tool,
                ErrorType::PermissionDenied,
                "Clearing the receive queue reads the bus, and this bus does not allow reading.",
            )
            .with("permission", key)
            .with("device", format!("can_buses.{bus_id}"))
            .with_remediation(["Call can_session_start with clear_rx_queue false."])
            .not_contacted(),
        ));
    }
    let spec = adapter::spec(ctx.loaded, bus_id, bus).map_err(|error| {
        Box::new(
            Outcome::refused(
                ctx.tool,
                error.error_type(),
                error.to_string(),
            )
            .with("bus_id", bus_id)
            .with_remediation([
                "Ask the operator to correct the can_buses entry; `agentic-hil doctor` shows it.",
            ])
            .not_started(error.retry_safe()),
        )
    })?;
    let request = adapter::request(bus);
    let deadline = request.timeout * 2 + Duration::from_secs(15);
    let start = Start {
        bus_id: bus_id.to_owned(),
        kind: adapter::effective_kind(bus),
        spec,
        request,
        cap: usize::try_from(bus.max_buffer_frames.max(1)).unwrap_or(usize::MAX),
        clear,
        lock_key,
        host: Host::new(Audit::for_config(ctx.loaded), ctx.ownership, &sessions),
    };
    let action =
        session_lifecycle::start_action(bus.permissions, Action::CanRead, Action::CanWrite);
    Ok(Plan {
        action,
        device: Some(policy_device),
        // The same resources as the stop, so the session's lease is the one the stop ends.
        also: Vec::new(),
        resources: vec![start.lock_key.clone()],
        work: Work::Driver(DriverJob {
            deadline,
            if_abandoned: Contact::Possible,
            run: Box::new(move |cancel| start.run(&cancel)),
        }),
    })
}

/// The refusal for an adapter failure, with what is known about the bus.
pub fn adapter_refusal(tool: &str, bus_id: &str, error: &CanError) -> Outcome {
    let mut outcome = Outcome::refused(
        tool,
        ErrorType::layer(&error.public_error_type()),
        error.to_string(),
    )
    .with("bus_id", bus_id);
    if let CanError::ListenOnlyUnsupported(_, link_state) = error {
        outcome.set("link_state", link_state.clone());
    }
    if let CanError::Refused { body, .. } = error {
        outcome.set("adapter_result", Value::Object(body.clone()));
    }
    if let Some(tail) = error.stderr_tail() {
        outcome.set("stderr_tail", tail);
    }
    match error.contact() {
        Contact::None { .. } => outcome.not_contacted(),
        _ => outcome,
    }
}

/// The refusal for a session's failure: the adapter's, or the broker's on a shared bus.
pub fn failure_refusal(tool: impl AsRef<str>, bus_id: &str, failure: &Failure) -> Outcome {
    match failure {
        Failure::Adapter(error) => adapter_refusal(tool.as_ref(), bus_id, error),
        Failure::Broker(refused) => {
            let mut outcome = Outcome::refused(
                tool,
                ErrorType::layer(&refused.error_type),
                refused.summary.clone(),
            )
            .with("bus_id", bus_id);
            for (key, value) in refused.detail.iter() {
                outcome.set(key, value.clone());
            }
            if refused.contact_possible {
                outcome
            } else {
                outcome.not_contacted()
            }
        }
    }
}

/// A start's answer when `key` already has a live session: reused (its backlog drained when asked),
/// nothing sent. A session whose adapter or broker failed is stopped, and the start goes on to
/// replace it (`None`).
pub(super) fn reuse_or_replace(sessions: &Sessions, key: &str, clear: bool) -> Option<Acted> {
    let existing = sessions.get(key)?;
    if !existing.bus.is_alive() {
        let _ = super::can_participant::stop(sessions, &existing);
        return None;
    }
    let drained = if clear {
        if let Err(drained) = existing.bus.settle_backlog(DRAIN_LIMIT, DRAIN_SETTLE) {
            // The session stays as it was; only the clear is refused.
            return Some(Acted::new(
                clear_limit(&existing.bus_id, drained).with_log(&existing.log.path),
                Contact::Made,
            ));
        }
        existing.bus.drain()
    } else {
        0
    };
    // A participant is named by its share; a bus session by its adapter.
    let (summary, (key, named)) = match &existing.participant {
        Some(participant) => (
            "The CAN participant session was already active.",
            ("participant", Value::from(participant.as_str())),
        ),
        None => (
            "The CAN bus session was already active.",
            ("adapter", Value::from(existing.adapter)),
        ),
    };
    let outcome = Outcome::ok(ToolId::CanSessionStart, summary)
        .with("bus_id", existing.bus_id.as_str())
        .with(key, named);
    Some(Acted {
        outcome: outcome
            .with("already_active", true)
            .with("frames_drained", drained)
            .with("session", existing.describe(true))
            .with_log(&existing.log.path),
        contact: Some(Contact::none(
            "the open session was reused; nothing was sent",
        )),
    })
}

impl Start {
    fn run(self, cancel: &CancelFlag) -> Acted {
        if let Some(reused) = reuse_or_replace(&self.host.sessions, &self.bus_id, self.clear) {
            return reused;
        }
        let host = self.host.clone();
        session_lifecycle::start(self, &host, cancel)
    }
}

/// The bus as its start left it: pumped, its backlog drained when asked.
struct Pumped {
    bus: Bus,
    opened: can::Opened,
    drained: usize,
}

impl SessionKind for Start {
    type Device = Pumped;
    const CLASS: SessionClass = SessionClass::Can;

    fn holds(&self) -> (Cow<'_, str>, &[String]) {
        (
            Cow::from(&self.bus_id),
            std::slice::from_ref(&self.lock_key),
        )
    }

    fn start_fields(&self) -> Value {
        json!({
            "bus_id": self.bus_id,
            "adapter": self.kind,
            "channel": self.request.channel,
            "bitrate": self.request.bitrate,
            "fd": self.request.fd,
            "listen_only": self.request.listen_only,
        })
    }

    fn open(&mut self, log: &SessionLog) -> Result<Pumped, Box<Acted>> {
        let (adapter, opened) = can::open(&self.spec, &self.request).map_err(|error| {
            Box::new(Acted::new(
                open_refusal(&self.bus_id, &error).with_log(&log.path),
                error.contact(),
            ))
        })?;
        let bus = Bus::start(adapter, self.cap, self.request.poll_interval);
        let drained = if self.clear {
            bus.settle(DRAIN_SETTLE);
            if let Some(error) = bus.error() {
                // A read that failed while clearing: the session is not kept.
                let drained = bus.drain();
                let closed = bus.close();
                let confirmed = closed.safe_state_confirmed && closed.process_reaped;
                return Err(Box::new(Acted::new(
                    clear_failed(&self.bus_id, &error, drained)
                        .with("cleanup_confirmed", confirmed)
                        .with_log(&log.path),
                    Contact::Made,
                )));
            }
            if let Err(drained) = bus.settle_backlog(DRAIN_LIMIT, DRAIN_SETTLE) {
                // A session that opens with an unknown backlog behind it is not kept.
                let closed = bus.close();
                let confirmed = closed.safe_state_confirmed && closed.process_reaped;
                return Err(Box::new(Acted::new(
                    clear_limit(&self.bus_id, drained)
                        .with("cleanup_confirmed", confirmed)
                        .with_log(&log.path),
                    Contact::Made,
                )));
            }
            bus.drain()
        } else {
            0
        };
        Ok(Pumped {
            bus,
            opened,
            drained,
        })
    }

    // Closed as a stop closes it: a bridge confirms its safe state and is reaped.
    fn close_unregistered(&self, device: Pumped) {
        drop(device.bus.close());
    }

    fn register(self, device: Pumped, begun: Begun) -> Option<Acted> {
        let Pumped {
            bus,
            opened,
            drained,
        } = device;
        let session = Session {
            key: self.bus_id.clone(),
            bus_id: self.bus_id.clone(),
            bus: Link::Direct(bus),
            participant: None,
            adapter: self.kind,
            backend: opened.backend.clone(),
            listen_only: self.request.listen_only,
            fd: self.request.fd,
            started_at: ahil_config::time::now_millis(),
            log: begun.log,
            locks: begun.locks,
        };
        let session = self.host.sessions.register_started(session)?;
        Some(Acted {
            outcome: self.started(&session, &opened, drained),
            // The channel is on the bus now: in active mode the controller acknowledges frames.
            contact: Some(Contact::Made),
        })
    }
}

impl Start {
    /// The result of a start that registered `session`.
    fn started(&self, session: &Session, opened: &can::Opened, drained: usize) -> Outcome {
        let mut adapter_result = opened.report.clone();
        adapter_result.insert("backend".into(), opened.backend.clone().into());
        if opened.listen_only_confirmed {
            adapter_result.insert("listen_only".into(), true.into());
            adapter_result.insert(
                "listen_only_enforcement".into(),
                if self.kind == "process" {
                    "bridge_confirmed"
                } else {
                    "link_verified"
                }
                .into(),
            );
        }
        let mut outcome = Outcome::ok(Self::CLASS.start_tool(), "CAN bus session started.")
            .with("bus_id", self.bus_id.as_str())
            .with("already_active", false)
            .with("adapter", self.kind)
            .with("adapter_result", Value::Object(adapter_result))
            .with("frames_drained", drained)
            .with("session", session.describe(true))
            .with_log(&session.log.path);
        if self.kind == "socketcan" {
            outcome.set("bitrate_verified", false);
            outcome.set(
                "bitrate_note",
                "The interface keeps the bit timing the operator set with `ip link`; the configured bitrate is not applied.",
            );
        }
        outcome
    }
}

/// A start of a session through the bridge `executable` past its checks, for the lifecycle's
/// tests.
#[cfg(test)]
pub(super) fn test_kind(
    bus_id: &str,
    executable: &std::path::Path,
    lock_key: &str,
    host: &Host<Sessions>,
) -> impl SessionKind + use<> {
    Start {
        bus_id: bus_id.to_owned(),
        kind: "process",
        spec: AdapterSpec::Bridge {
            executable: executable.to_path_buf(),
        },
        request: OpenRequest {
            channel: "sim0".to_owned(),
            bitrate: 500_000,
            fd: false,
            data_bitrate: None,
            receive_own_messages: false,
            listen_only: false,
            poll_interval: Duration::from_millis(20),
            timeout: Duration::from_secs(5),
        },
        cap: 64,
        clear: false,
        lock_key: lock_key.to_owned(),
        host: host.clone(),
    }
}

/// The refusal of an adapter that would not open, with the likely causes of its kind of failure.
fn open_refusal(bus_id: &str, error: &CanError) -> Outcome {
    let outcome = adapter_refusal(Start::CLASS.start_tool().name(), bus_id, error);
    match error.error_type() {
        "can_listen_only_unsupported" | "can_listen_only_unconfirmed" => outcome
            .with_causes(["the adapter cannot prove its controller stays silent on the bus"])
            .with_remediation(["The operator puts the controller in listen-only mode (SocketCAN: `ip link set <if> type can listen-only on`) or clears listen_only for this bus."]),
        "can_adapter_timeout" => outcome
            .with_causes(["the bridge hung", "the adapter behind it does not answer"])
            .with_remediation(["Check the bridge on its own, then call can_session_start again."]),
        _ => outcome.with_remediation(["Call can_buses_list, check the adapter and its cabling, then call can_session_start again."]),
    }
}

/// The clear of a bus whose frames came as fast as they were read: `drained` frames went and the
/// adapter still held more.
fn clear_limit(bus_id: &str, drained: u64) -> Outcome {
    let mut outcome = Outcome::refused(
        Start::CLASS.start_tool(),
        ErrorType::CanQueueClearLimit,
        "The CAN receive queue did not become empty within the bounded drain: frames arrived as fast as they were read.",
    )
    .with("bus_id", bus_id)
    .with("frames_drained", drained)
    .with_remediation(["On a bus that never falls silent, call can_session_start with `clear_rx_queue: false`, then can_read with `until_id` for the frame the test waits for."]);
    // The frames read off were discarded for good: a retry does not find them again.
    outcome.side_effect_committed = Some(true);
    outcome.side_effect_status = Some(SideEffectStatus::Committed);
    outcome.retry_safe = Some(false);
    outcome
}

/// The clear of a new session's queue, whose read failed: `drained` frames had gone before it.
/// Retry-safe only when none had.
fn clear_failed(bus_id: &str, error: &CanError, drained: usize) -> Outcome {
    let mut outcome = Outcome::refused(
        Start::CLASS.start_tool(),
        ErrorType::CanQueueClearFailed,
        format!("The CAN receive queue could not be cleared ({error}); the adapter was closed."),
    )
        .with("bus_id", bus_id)
        .with("frames_drained", drained)
        .with(
            "backend_result",
            json!({"error_type": error.public_error_type(), "summary": error.to_string()}),
        )
        .with_remediation(["Call can_session_start again; if the clear keeps failing, start with `clear_rx_queue: false` and read with can_read, which reports a failing read itself."]);
    let none_lost = drained == 0;
    outcome.side_effect_committed = Some(!none_lost);
    outcome.side_effect_status = Some(if none_lost {
        SideEffectStatus::NotStarted
    } else {
        SideEffectStatus::Committed
    });
    outcome.retry_safe = Some(none_lost);
    outcome
}

/// A stop whose adapter never said it left the bus safe: the session is gone, the state unknown.
pub(super) fn safe_state_unconfirmed(summary: &str) -> Outcome {
    let mut outcome = Outcome::refused(
        "can_session_stop",
        ErrorType::BridgeSafeStateUnconfirmed,
        summary,
    )
    .with_remediation(["Check the bus and its adapter before starting another session."]);
    outcome.side_effect_status = Some(SideEffectStatus::Unknown);
    outcome.hardware_state = Some(HardwareState::Unknown);
    outcome.cleanup_required = Some(true);
    outcome.retry_safe = Some(false);
    outcome.set(
        "cleanup_reasons",
        json!(["can_bridge_safe_state_unconfirmed"]),
    );
    outcome
}

/// The stop of a session that is not open: `was_active: false`.
pub(super) fn not_active(bus_id: &str, participant: Option<&str>) -> Acted {
    let mut acted = Stopping::new(ToolId::CanSessionStop, "bus_id", bus_id)
        .not_active("CAN bus session was not active.");
    if let Some(name) = participant {
        acted.outcome.set("participant", name);
    }
    acted
}

/// `outcome` with what every stopped CAN session reports, direct or participant: the session, the
/// adapter's close, its log, and the failure that had ended the bus, if one had.
pub(super) fn stopped(
    outcome: Outcome,
    session: &Session,
    close: Value,
    failure: Option<crate::can::Failure>,
) -> Outcome {
    let mut outcome = outcome
        .with("was_active", true)
        .with("session", session.describe(false))
        .with("close_result", close)
        .with_log(&session.log.path);
    if let Some(error) = failure {
        outcome.set(
            "adapter_error",
            json!({"error_type": error.error_type(), "summary": error.summary()}),
        );
    }
    outcome
}

/// Stops the session on `bus_id`: pump stopped, adapter closed, bridge reaped, lock released.
pub fn stop(sessions: &Sessions, bus_id: &str) -> Acted {
    const TOOL: ToolId = ToolId::CanSessionStop;
    let Some(session) = sessions.get(bus_id) else {
        return not_active(bus_id, None);
    };
    let failure = session.bus.error();
    let bus = match &session.bus {
        Link::Direct(bus) => bus,
        Link::Shared(_) => return super::can_participant::stop(sessions, &session),
    };
    let closed = bus.close();
    let close = json!({
        "safe_state_confirmed": closed.safe_state_confirmed,
        "process_reaped": closed.process_reaped,
        "report": Value::Object(closed.report.clone()),
    });
    if !closed.process_reaped {
        return Acted {
            outcome: Outcome::refused(
                TOOL,
                ErrorType::BridgeProcessReapFailed,
                "The bridge process could not be reaped; the session is kept so the stop can be retried.",
            )
            .with("bus_id", bus_id)
            .with("close_result", close)
            .with_remediation(["Call can_session_stop again."])
            .with_log(&session.log.path),
            contact: Some(Contact::Possible),
        };
    }
    let logged = session_lifecycle::end(
        sessions,
        bus_id,
        &session.log,
        &session.locks,
        &json!({
            "event": "stop",
            "reason": "requested",
            "safe_state_confirmed": closed.safe_state_confirmed,
            "process_reaped": closed.process_reaped,
        }),
    );
    let outcome = if closed.safe_state_confirmed {
        Outcome::ok(TOOL, "CAN bus session stopped.")
    } else {
        // The bridge is gone (reaped) but never said the bus was left safe: the lock is released
        // because nothing of ours holds the channel any more, and the unknown state is reported.
        safe_state_unconfirmed(
            "The bus session ended, but the bridge did not confirm it left the bus in a safe state.",
        )
    };
    let outcome = stopped(outcome.with("bus_id", bus_id), &session, close, failure);
    Acted {
        outcome: session_lifecycle::with_event_logged(outcome, logged),
        contact: Some(if closed.safe_state_confirmed {
            Contact::none("closing takes the channel off the bus and sends nothing")
        } else {
            Contact::Possible
        }),
    }
}
