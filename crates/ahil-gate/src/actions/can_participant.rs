//! `can_session_start` / `can_session_stop` as a participant of a shared bus (`shares:`): the
//! participant lock first, then an attachment to the bus's broker (started when none runs). The
//! broker owns the adapter; the session owns only its filtered queue.

use super::args::Args;
use crate::catalogue::ToolId;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use serde_json::{Value, json};

use super::can_buses::Entry;
use super::com_session::WithLog;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::audit::Audit;
use crate::can::broker::client::Participant;
use crate::can::broker::{self, AuditPlace, BrokerSpec};
use crate::can::{Link, Session, Sessions, adapter};
use crate::envelope::Outcome;
use crate::policy::Action;
use crate::serial::log_stamp;
use crate::session_lifecycle::{self, Begun, Host, SessionClass, SessionKind, SessionLog};

struct StartShared {
    spec: BrokerSpec,
    participant: String,
    session_key: String,
    lock_key: String,
    clear: bool,
    open_timeout: Duration,
    host: Host<Sessions>,
}

pub fn plan<'a>(ctx: &'a Context<'a>, entry: &Entry<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    let (bus_id, bus) = (entry.bus_id, entry.bus);
    let Some((participant, share)) = entry.share else {
        unreachable!("a participant plan needs a share");
    };
    let lock_key = entry.lock_key();
    let session_key = entry.session_key();
    let sessions = Arc::clone(&ctx.can);
    if ctx.tool == ToolId::CanSessionStop {
        let (owned, name) = (bus_id.to_owned(), participant.to_owned());
        return Ok(Plan {
            action: Action::CanStop,
            device: Some(entry.device()),
            also: Vec::new(),
            resources: vec![lock_key],
            work: Work::Driver(DriverJob {
                deadline: Duration::from_secs(20),
                if_abandoned: Contact::Possible,
                run: Box::new(move |_cancel| match sessions.get(&session_key) {
                    Some(session) => stop(&sessions, &session),
                    None => super::can_session::not_active(&owned, Some(&name)),
                }),
            }),
        });
    }
    let spec = adapter::spec(ctx.loaded, bus_id, bus).map_err(|error| {
        Box::new(
            Outcome::refused(ctx.tool, error.error_type(), error.to_string())
                .with("bus_id", bus_id)
                .not_started(error.retry_safe()),
        )
    })?;
    let loaded = ctx.loaded;
    let bridge = match spec {
        ahil_drivers::can::AdapterSpec::Bridge { executable } => Some(executable),
        ahil_drivers::can::AdapterSpec::SocketCan => None,
    };
    let spec = BrokerSpec {
        bus_id: bus_id.to_owned(),
        bus_key: bus.lock_key(),
        bus: bus.clone(),
        bridge,
        kind: adapter::effective_kind(bus).to_owned(),
        config_version: u64::from(loaded.config.version),
        home: ctx.env.account_home(),
        audit: AuditPlace {
            state_root: loaded.config.state_root.clone(),
            config_path: loaded.path.clone(),
            workspace: loaded.workspace.clone(),
            reports_dir: loaded.config.reports.directory.clone(),
            logs_dir: loaded.config.logs.directory.clone(),
        },
        first_attach_timeout_ms: u64::try_from(broker::FIRST_ATTACH_TIMEOUT.as_millis())
            .unwrap_or(15_000),
    };
    let open_timeout = adapter::timeout(bus);
    let start = StartShared {
        spec,
        participant: participant.to_owned(),
        session_key,
        lock_key: lock_key.clone(),
        clear: ctx.args.arg_bool("clear_rx_queue").unwrap_or(true),
        open_timeout,
        host: Host::new(Audit::for_config(ctx.loaded), ctx.ownership, &sessions),
    };
    let action = if broker::share_writes(bus, share)
        && !broker::share_reads(u64::from(loaded.config.version), share)
    {
        Action::CanWrite
    } else {
        Action::CanRead
    };
    Ok(Plan {
        action,
        device: Some(entry.device()),
        also: Vec::new(),
        resources: vec![lock_key],
        work: Work::Driver(DriverJob {
            deadline: open_timeout * 3 + Duration::from_secs(20),
            if_abandoned: Contact::Possible,
            run: Box::new(move |cancel| start.run(&cancel)),
        }),
    })
}

impl StartShared {
    fn run(self, cancel: &CancelFlag) -> Acted {
        if let Some(reused) =
            super::can_session::reuse_or_replace(&self.host.sessions, &self.session_key, self.clear)
        {
            return reused;
        }
        let host = self.host.clone();
        session_lifecycle::start(self, &host, cancel)
    }
}

impl SessionKind for StartShared {
    type Device = Participant;
    const CLASS: SessionClass = SessionClass::Can;
    const LOCK_REFUSED: &'static str =
        "the participant lock was refused before the broker was asked";

    fn holds(&self) -> (Cow<'_, str>, &[String]) {
        let id = crate::can::session_key(&self.spec.bus_id, Some(&self.participant));
        (Cow::from(id), std::slice::from_ref(&self.lock_key))
    }

    fn start_fields(&self) -> Value {
        json!({
            "bus_id": self.spec.bus_id,
            "participant": self.participant,
            "adapter": self.spec.kind,
            "channel": self.spec.bus.channel,
            "listen_only": self.spec.bus.listen_only,
        })
    }

    // A file name parts the bus and the participant with a dash, not the id's `#`.
    fn log_name(&self) -> String {
        let (bus_id, participant) = (&self.spec.bus_id, &self.participant);
        format!(
            "{}-{}-{bus_id}-{participant}.jsonl",
            Self::CLASS.log_prefix(),
            log_stamp()
        )
    }

    fn open(&mut self, log: &SessionLog) -> Result<Participant, Box<Acted>> {
        broker::client::attach(&self.spec, &self.participant, self.open_timeout).map_err(|refused| {
            let contact = if refused.contact_possible {
                Contact::Possible
            } else {
                Contact::none("the attach was refused before the participant reached the bus")
            };
            let failure = crate::can::Failure::Broker(refused);
            Box::new(Acted {
                outcome: super::can_session::failure_refusal(Self::CLASS.start_tool(), &self.spec.bus_id, &failure)
                    .with("participant", self.participant.as_str())
                    .with_remediation(["Call can_buses_list to see the bus and its active_participants, then call can_session_start again."])
                    .with_log(&log.path),
                contact: Some(contact),
            })
        })
    }

    // Dropped alone it would stay attached: the broker hears the detach.
    fn close_unregistered(&self, part: Participant) {
        drop(part.detach());
    }

    fn register(self, part: Participant, begun: Begun) -> Option<Acted> {
        let bus_id = self.spec.bus_id.clone();
        let broker_info = json!({
            "broker_pid": part.broker_pid,
            "bus_frame_log": part.attached.get("bus_frame_log"),
            "attached_participants": part.attached.get("attached_participants"),
        });
        let backend = part
            .attached
            .get("backend")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let session = Session {
            key: self.session_key.clone(),
            bus_id: bus_id.clone(),
            bus: Link::Shared(Box::new(part)),
            participant: Some(self.participant.clone()),
            // As the reference names it: the session's adapter is the broker, not the bus's own.
            adapter: "broker",
            backend,
            listen_only: self.spec.bus.listen_only,
            fd: self.spec.bus.fd,
            started_at: ahil_config::time::now_millis(),
            log: begun.log,
            locks: begun.locks,
        };
        let session = self.host.sessions.register_started(session)?;
        let drained = if self.clear { session.bus.drain() } else { 0 };
        Some(Acted {
            outcome: Outcome::ok(
                Self::CLASS.start_tool(),
                format!(
                    "CAN bus session started as participant `{}`.",
                    self.participant
                ),
            )
            .with("bus_id", bus_id.as_str())
            .with("participant", self.participant.as_str())
            .with("already_active", false)
            .with("adapter", session.adapter)
            .with("broker", broker_info)
            .with("frames_drained", drained)
            .with("session", session.describe(true))
            .with_log(&session.log.path),
            contact: Some(Contact::Made),
        })
    }
}

/// Detaches a participant session: its queue is gone, its lock released; the adapter closes only
/// when it was the last participant of the bus.
pub fn stop(sessions: &Sessions, session: &Session) -> Acted {
    const TOOL: ToolId = ToolId::CanSessionStop;
    let Link::Shared(part) = &session.bus else {
        return super::can_session::stop(sessions, &session.bus_id);
    };
    let failure = part.lost();
    let detached = part.detach();
    let close_result = match &detached.close_result {
        Some(close) => close.clone(),
        None if failure.is_some() => {
            json!({"adapter_closed": null, "reason": "the broker was already gone"})
        }
        None => json!({"adapter_closed": false, "reason": "other participants share the bus"}),
    };
    let logged = session_lifecycle::end(
        sessions,
        &session.key,
        &session.log,
        &session.locks,
        &json!({
            "event": "stop",
            "reason": "requested",
            "participant": part.name,
            "last_participant": detached.last,
            "broker_exited": detached.broker_exited,
        }),
    );
    let unconfirmed =
        detached.last && close_result.get("safe_state_confirmed") != Some(&Value::Bool(true));
    let outcome = if unconfirmed {
        super::can_session::safe_state_unconfirmed(
            "The last participant detached, but the adapter did not confirm it left the bus in a safe state.",
        )
    } else if detached.last {
        Outcome::ok(
            TOOL,
            format!(
                "CAN participant `{}` detached; it was the last, so the adapter closed.",
                part.name
            ),
        )
    } else {
        Outcome::ok(
            TOOL,
            format!(
                "CAN participant `{}` detached; the adapter stays open for the other participants.",
                part.name
            ),
        )
    };
    let outcome = super::can_session::stopped(
        outcome
            .with("bus_id", session.bus_id.as_str())
            .with("participant", part.name.as_str())
            .with("last_participant", detached.last)
            .with("broker_exited", detached.broker_exited),
        session,
        close_result,
        failure.map(crate::can::Failure::Broker),
    );
    Acted {
        outcome: session_lifecycle::with_event_logged(outcome, logged),
        contact: Some(Contact::none(
            "detaching takes a participant off the broker and sends nothing",
        )),
    }
}

/// A start of `participant` on the bus `can:shared-adapter` whose broker is found from `home`
/// (a broker directory that cannot be made fails the open), registered as `bus#tester`, past its
/// checks, for the lifecycle's tests.
#[cfg(test)]
pub(super) fn test_kind(
    home: &std::path::Path,
    participant: &str,
    lock_key: &str,
    host: &Host<Sessions>,
) -> impl SessionKind + use<> {
    StartShared {
        spec: test_spec(home),
        participant: participant.to_owned(),
        session_key: "bus#tester".to_owned(),
        lock_key: lock_key.to_owned(),
        clear: false,
        open_timeout: Duration::from_millis(200),
        host: host.clone(),
    }
}

/// Whether `participant` attaches to the broker found from `home` (and then detaches): nothing of
/// an earlier start still holds its place on the bus.
#[cfg(test)]
pub(super) fn test_attaches(home: &std::path::Path, participant: &str) -> bool {
    broker::client::attach(&test_spec(home), participant, Duration::from_millis(200))
        .map(|attached| attached.detach())
        .is_ok()
}

#[cfg(test)]
fn test_spec(home: &std::path::Path) -> BrokerSpec {
    let place = home.to_path_buf();
    BrokerSpec {
        bus_id: "bus".to_owned(),
        bus_key: "can:shared-adapter".to_owned(),
        bus: ahil_config::CanBus::default(),
        bridge: None,
        kind: "socketcan".to_owned(),
        config_version: 3,
        home: place.clone(),
        audit: AuditPlace {
            config_path: place.join("config.yaml"),
            workspace: place.clone(),
            state_root: place,
            reports_dir: "reports".to_owned(),
            logs_dir: "logs".to_owned(),
        },
        first_attach_timeout_ms: 1000,
    }
}
