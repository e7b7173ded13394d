//! `can_send` and `can_read` over an open session.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::sync::Arc;
use std::time::Duration;

use ahil_drivers::Contact;
use ahil_drivers::can::{Frame, FrameError, frame};
use ahil_drivers::process::CancelFlag;
use serde_json::{Value, json};

use super::can_buses::bus_entry;
use super::can_session::failure_refusal;
use super::com_session::WithLog;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::can::{Session, adapter, untrusted_meta};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};
use crate::policy::Action;
use crate::session_lifecycle;

/// Waits are capped here whatever the caller or the bus asks.
const MAX_WAIT_S: f64 = 60.0;
/// The default wait when `until_id` is given.
const UNTIL_DEFAULT_WAIT_S: f64 = 10.0;

fn not_active(tool: &str, bus_id: &str) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::SessionNotActive,
        "No CAN session is open on this bus.",
    )
    .with("bus_id", bus_id)
    .with_remediation([format!(
        "Call can_session_start with bus_id \"{bus_id}\" first."
    )])
    .not_contacted()
}

/// The session's adapter failed: the session is not active any more.
fn failed_session(tool: ToolId, session: &Session) -> Option<Outcome> {
    let error = session.bus.error()?;
    let mut outcome = failure_refusal(tool, &session.bus_id, &error)
        .with("session", session.describe(true))
        .with_remediation([format!(
            "Call can_session_stop with bus_id \"{}\", then can_session_start to open the bus again.",
            session.bus_id
        )])
        .with_log(&session.log.path);
    outcome.summary = format!("The CAN session's bus failed: {}.", error.summary());
    Some(outcome)
}

fn invalid(tool: &str, field: &str, summary: impl Into<String>) -> Outcome {
    Outcome::refused(tool, ErrorType::InvalidArgument, summary)
        .with("field", field)
        .not_contacted()
}

/// The frame of a `can_send` call, checked against the bus.
fn frame_of(tool: &str, args: &Value, fd: bool, max_bytes: usize) -> Result<Frame, Box<Outcome>> {
    let flag = |key: &str| args.get(key).and_then(Value::as_bool).unwrap_or(false);
    let (extended, rtr) = (flag("extended"), flag("rtr"));
    let id = args
        .get("frame_id")
        .and_then(frame::parse_id)
        .ok_or_else(|| {
            Box::new(invalid(
                tool,
                "frame_id",
                "frame_id must be an integer, a decimal string or a 0x hex string.",
            ))
        })?;
    let data = frame::parse_hex(args.arg_str("data_hex").unwrap_or(""))
        .map_err(|e| Box::new(invalid(tool, "data_hex", e.to_string())))?;
    let refuse = |error: &FrameError, field: &str| {
        let mut outcome = Outcome::refused(
            tool,
            ErrorType::layer(error.error_type()),
            format!("{error}."),
        )
        .with("field", field)
        .not_contacted();
        if let FrameError::FdLength(n) | FrameError::ClassicTooLarge(n) = error {
            outcome.set("bytes_requested", *n);
        }
        if matches!(error, FrameError::FdLength(_)) {
            outcome.set("allowed_lengths", json!(frame::fd_lengths()));
        }
        Box::new(outcome)
    };
    let frame = Frame::new(id, extended, rtr, data).map_err(|e| refuse(&e, "frame_id"))?;
    frame.check_for_bus(fd).map_err(|e| {
        refuse(
            &e,
            if e == FrameError::FdRemote {
                "rtr"
            } else {
                "data_hex"
            },
        )
    })?;
    if frame.data.len() > max_bytes {
        let mut outcome = invalid(
            tool,
            "data_hex",
            format!(
                "{} bytes exceed this bus's max_frame_data_bytes of {max_bytes}.",
                frame.data.len()
            ),
        );
        outcome.set("bytes_requested", frame.data.len());
        outcome.set("max_frame_data_bytes", max_bytes);
        return Err(Box::new(outcome));
    }
    Ok(frame)
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::CanSend, ToolId::CanRead])?;
    let entry = bus_entry(ctx)?;
    let (bus_id, bus) = (entry.bus_id, entry.bus);
    // Another participant of the bus is another session: one this server may not have started.
    let session = ctx.can.get(&entry.session_key());
    let owned_id = bus_id.to_owned();
    if ctx.tool == ToolId::CanSend {
        if bus.listen_only {
            // Before policy and before any driver call: a listen-only bus never transmits, whatever
            // the grants say.
            return Err(Box::new(
                Outcome::refused(
                    ctx.tool,
                    ErrorType::CanListenOnlyMode,
                    format!("can_buses.{bus_id} is listen-only; nothing may be sent on it."),
                )
                .with("bus_id", bus_id)
                .with_remediation(["Use can_read to observe the bus; sending needs the operator to configure a bus that is not listen-only."])
                .not_started(false),
            ));
        }
        let args = ctx.args.clone();
        let (fd, max_bytes) = (bus.fd, usize::from(bus.max_frame_data_bytes));
        let timeout = adapter::timeout(bus);
        return Ok(Plan {
            action: Action::CanWrite,
            // As its participant: the share's own grant is asked before the bus's.
            device: Some(entry.device()),
            also: Vec::new(),
            resources: vec![entry.lock_key()],
            work: Work::Driver(DriverJob {
                deadline: timeout + Duration::from_secs(5),
                if_abandoned: Contact::Possible,
                run: Box::new(move |_cancel| send(&owned_id, session, &args, fd, max_bytes)),
            }),
        });
    }
    // can_read
    let cap = usize::try_from(bus.max_buffer_frames.max(1)).unwrap_or(usize::MAX);
    let max_frames = match ctx.args.arg_u64("max_frames") {
        None => cap,
        Some(n) if usize::try_from(n).is_ok_and(|n| n <= cap) => usize::try_from(n).unwrap_or(cap),
        Some(n) => {
            return Err(Box::new(
                invalid(
                    ctx.tool.name(),
                    "max_frames",
                    format!("max_frames {n} is above this bus's max_buffer_frames of {cap}."),
                )
                .with("max_buffer_frames", cap),
            ));
        }
    };
    let until: Vec<u32> = match ctx.args.get("until_id") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .into_iter()
            .collect(),
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
            .collect(),
        _ => Vec::new(),
    };
    let (default_wait, max_wait) = if until.is_empty() {
        (0.0, bus.timeout_s.min(MAX_WAIT_S))
    } else {
        (UNTIL_DEFAULT_WAIT_S, MAX_WAIT_S)
    };
    let wait = session_lifecycle::read_wait(ctx.args, default_wait, max_wait);
    Ok(session_lifecycle::read_plan(
        Action::CanRead,
        entry.device(),
        wait,
        "a read only takes frames already received",
        move |cancel| read(&owned_id, session, (max_frames, wait, &until), cancel),
    ))
}

fn send(
    bus_id: &str,
    session: Option<Arc<Session>>,
    args: &Value,
    fd: bool,
    max_bytes: usize,
) -> Acted {
    const TOOL: ToolId = ToolId::CanSend;
    let Some(session) = session else {
        return Acted::new(
            not_active(TOOL.name(), bus_id),
            Contact::none("no session, so nothing was sent"),
        );
    };
    if let Some(outcome) = failed_session(TOOL, &session) {
        return Acted {
            outcome,
            contact: Some(Contact::none(
                "the adapter had already failed; nothing was sent",
            )),
        };
    }
    let frame = match frame_of(TOOL.name(), args, fd, max_bytes) {
        Ok(frame) => frame,
        Err(refusal) => {
            return Acted {
                outcome: *refusal,
                contact: Some(Contact::none(
                    "the frame was refused before the adapter saw it",
                )),
            };
        }
    };
    let result = session.bus.send(&frame);
    let logged = session.log(&json!({
        "direction": "tx",
        "frame": frame.to_json(),
        "ok": result.is_ok(),
        "error_type": result.as_ref().err().map(crate::can::Failure::error_type),
    }));
    let sent = match result {
        Ok(adapter_result) => {
            let mut outcome = Outcome::ok(TOOL, "CAN frame sent.")
                .with("bus_id", bus_id)
                .with("adapter", session.adapter)
                .with("frame", frame.to_json())
                .with("adapter_result", Value::Object(adapter_result));
            if let Some(participant) = &session.participant {
                outcome.set("participant", participant.clone());
            }
            Ok(outcome)
        }
        Err(error) => {
            let contact = error.contact();
            let mut outcome = failure_refusal(TOOL, bus_id, &error).with("frame", frame.to_json());
            if !matches!(contact, Contact::None { .. }) {
                // The frame may be on the bus, or the controller may be in a state nobody knows.
                outcome.side_effect_status = Some(SideEffectStatus::Unknown);
                outcome.hardware_state = Some(HardwareState::Unknown);
                outcome.cleanup_required = Some(true);
                outcome.retry_safe = Some(false);
                outcome.set("cleanup_reasons", json!(["can_send_failed"]));
                outcome.remediation = vec![
                    "Read the bus (can_read) to see what happened before sending again.".into(),
                    "Stop and restart the session if the adapter keeps failing.".into(),
                ];
            }
            Err((outcome, contact))
        }
    };
    session_lifecycle::write_answer(sent, logged, &session.log)
}

fn read(
    bus_id: &str,
    session: Option<Arc<Session>>,
    (max_frames, wait, until): (usize, Duration, &[u32]),
    cancel: &CancelFlag,
) -> Acted {
    const TOOL: ToolId = ToolId::CanRead;
    let none = || Contact::none("a read only takes frames already received");
    let Some(session) = session else {
        return Acted::new(not_active(TOOL.name(), bus_id), none());
    };
    let failed = failed_session(TOOL, &session);
    // A failed adapter still hands out what it had queued, without waiting.
    let wait = if failed.is_some() {
        Duration::ZERO
    } else {
        wait
    };
    let taken = session.bus.take(max_frames, wait, until, cancel);
    if taken.gave_up {
        return session_lifecycle::read_given_up(TOOL, ("bus_id", bus_id), none());
    }
    // A shared bus learns of a lost broker or an aborted participant during the read itself.
    let failed = failed.or_else(|| failed_session(TOOL, &session));
    let frames: Vec<Value> = taken.frames.iter().map(Frame::to_json).collect();
    if !frames.is_empty() {
        session.log_passive(&json!({
            "direction": "rx",
            "time": ahil_config::time::now_millis(),
            "frames": frames,
        }));
    }
    let (_, dropped, _) = session.bus.levels();
    let mut outcome = if let Some(mut refusal) = failed {
        refusal.set("frames", json!(frames));
        refusal.set("frames_read", frames.len());
        refusal
    } else {
        let summary = if frames.is_empty() {
            "No CAN frames were available."
        } else {
            "CAN frame(s) read."
        };
        Outcome::ok(TOOL, summary)
            .with("bus_id", bus_id)
            .with("adapter", session.adapter)
            .with("frames_read", frames.len())
            .with("frames", json!(frames))
            .with(
                "adapter_result",
                json!({"ok": true, "queued_frames": taken.remaining, "dropped_frames": dropped}),
            )
            .with("dropped_frames", dropped)
            .with_log(&session.log.path)
    };
    if !until.is_empty() {
        outcome.set("until_matched", taken.matched);
    }
    if let Some(participant) = &session.participant {
        outcome.set("participant", participant.clone());
    }
    outcome.meta = Some(untrusted_meta(bus_id));
    Acted::new(outcome, none())
}
