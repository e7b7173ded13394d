//! `rtt_read` and `rtt_write` over an open RTT session: `com_read`'s and `com_write`'s rules (the
//! same argument handling and answer, from `com_io`), on a channel instead of a port.

use std::sync::Arc;
use std::time::Duration;

use ahil_config::{RttChannel, RttDirection, RttFormat};
use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use ahil_drivers::serial::Ring;
use serde_json::{Value, json};

use super::com_io::{ReadRequest, data, read_outcome, read_request, take_masked, write_payload};
use super::com_session::WithLog;
use super::debugger_info::device;
use super::rtt_session::rtt_entry;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::envelope::{Outcome, SideEffectStatus};
use crate::policy::Action;
use crate::rtt::defmt::Decoding;
use crate::rtt::{Session, untrusted_meta};
use crate::serial::{Encoding, text};
use crate::session_lifecycle;

/// RTT carries bytes; text is taken and shown as UTF-8.
const ENCODING: Encoding = Encoding::Utf8;

fn not_active(tool: ToolId, debugger: &str) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::SessionNotActive,
        "No RTT session is open on this debugger.",
    )
    .with("debugger", debugger)
    .with_remediation(["Call rtt_session_start first."])
    .not_contacted()
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::RttRead, ToolId::RttWrite])?;
    let (name, debugger, rtt) = rtt_entry(ctx)?;
    let wanted = if ctx.tool == ToolId::RttRead {
        RttDirection::Up
    } else {
        RttDirection::Down
    };
    let channel = channel_of(ctx, name, rtt.channels.as_slice(), wanted)?;
    let session = ctx.rtt.get(name).filter(|s| s.link.is_alive());
    let owned = name.to_owned();
    if ctx.tool == ToolId::RttWrite {
        let max = usize::try_from(rtt.max_write_bytes).unwrap_or(usize::MAX);
        let payload = write_payload(ctx, ENCODING, max, "this rtt section's")?;
        return Ok(Plan {
            action: Action::RttWrite,
            device: Some(device(name, debugger)),
            also: Vec::new(),
            resources: Vec::new(),
            work: Work::Driver(DriverJob {
                deadline: Duration::from_secs(10),
                if_abandoned: Contact::Possible,
                run: Box::new(move |_cancel| write(&owned, &channel, session, &payload)),
            }),
        });
    }
    let request = read_request(ctx, rtt.max_buffer_bytes, ENCODING)?;
    Ok(Plan {
        action: Action::RttRead,
        device: Some(device(name, debugger)),
        // The session holds the device lock; a read claims nothing more.
        also: Vec::new(),
        resources: Vec::new(),
        work: Work::Driver(DriverJob {
            deadline: request.wait + Duration::from_secs(5),
            if_abandoned: Contact::none("a read only takes bytes already polled"),
            run: Box::new(move |cancel| {
                read(&owned, &channel, session.as_deref(), &request, &cancel)
            }),
        }),
    })
}

/// The configured channel the call names, in the direction the tool needs.
fn channel_of(
    ctx: &Context<'_>,
    debugger: &str,
    channels: &[RttChannel],
    wanted: RttDirection,
) -> Result<RttChannel, Box<Outcome>> {
    let name = ctx
        .args
        .get("channel")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default();
    channel_named(ctx.tool, debugger, channels, wanted, name)
}

/// The configured channel `name`, in the direction the call needs, or `rtt_not_configured`.
pub(super) fn channel_named(
    tool: ToolId,
    debugger: &str,
    channels: &[RttChannel],
    wanted: RttDirection,
    name: &str,
) -> Result<RttChannel, Box<Outcome>> {
    let configured: Vec<&str> = channels
        .iter()
        .filter(|c| c.direction == wanted)
        .map(|c| c.name.as_str())
        .collect();
    match channels
        .iter()
        .find(|c| c.name == name && c.direction == wanted)
    {
        Some(channel) => Ok(channel.clone()),
        None => Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::RttNotConfigured,
                format!(
                    "debuggers.{debugger}.rtt names no {} channel `{name}`.",
                    if wanted == RttDirection::Up {
                        "up"
                    } else {
                        "down"
                    }
                ),
            )
            .with("channel", name)
            .with("configured_channels", json!(configured))
            .with_remediation(["Call rtt_channels_list and use one of its channel names."])
            .not_contacted(),
        )),
    }
}

fn read(
    debugger: &str,
    channel: &RttChannel,
    session: Option<&Session>,
    request: &ReadRequest,
    cancel: &CancelFlag,
) -> Acted {
    const TOOL: ToolId = ToolId::RttRead;
    let (max_bytes, patterns) = (request.max_bytes, request.patterns.as_slice());
    let none = || Contact::none("a read only takes bytes already polled");
    let Some((session, ring)) = session.and_then(|s| Some((s, s.link.ring(channel.index)?))) else {
        return Acted::new(not_active(TOOL, debugger), none());
    };
    let deadline = std::time::Instant::now() + request.wait;
    if channel.format == RttFormat::Defmt
        && let Some(decoding) = &session.defmt
    {
        let Some(outcome) = defmt_outcome(
            decoding,
            channel,
            ring,
            (max_bytes, deadline, patterns),
            cancel,
        ) else {
            return session_lifecycle::read_given_up(TOOL, ("channel", &channel.name), none());
        };
        let mut outcome = outcome.with("debugger", debugger);
        let mut meta = untrusted_meta(debugger, &channel.name);
        meta["agentic_hil/untrusted_content"]["fields"] =
            json!(["data.text", "data.hex", "frames"]);
        outcome.meta = Some(meta);
        return Acted::new(outcome.with_log(&session.log.path), none());
    }
    let stream = Arc::clone(
        session
            .shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(channel.index)
            .or_default(),
    );
    let taken = take_masked(
        &mut stream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        ring,
        max_bytes,
        deadline,
        patterns,
        request.cap,
        cancel,
    );
    if taken.gave_up {
        return session_lifecycle::read_given_up(TOOL, ("channel", &channel.name), none());
    }
    let mut outcome = read_outcome(
        TOOL,
        ("channel", &channel.name),
        "RTT channel",
        &taken,
        patterns,
        ENCODING,
    )
    .with("debugger", debugger);
    if channel.format == RttFormat::Defmt {
        // No table: the frames' bytes as they are (hex and lossy text), as on any channel.
        outcome.set(
            "defmt",
            json!({"table": false, "reason": session.defmt_missing}),
        );
    }
    outcome.meta = Some(untrusted_meta(debugger, &channel.name));
    Acted::new(outcome.with_log(&session.log.path), none())
}

/// A defmt channel's read: `com_read`'s answer on the decoded lines, and the frames beside it;
/// `None` when the call's cancel ended the read.
fn defmt_outcome(
    decoding: &Decoding,
    channel: &RttChannel,
    ring: &Ring,
    (max_bytes, deadline, patterns): (usize, std::time::Instant, &[Vec<u8>]),
    cancel: &CancelFlag,
) -> Option<Outcome> {
    let patterns: Vec<String> = patterns
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let read = decoding.read(channel.index, ring, max_bytes, deadline, &patterns, || {
        cancel.is_cancelled()
    });
    if read.gave_up {
        return None;
    }
    let summary = match (read.frames.is_empty(), read.matched) {
        (_, Some(false)) => "The until text was not seen in time; the frames so far are returned.",
        (true, _) => "No defmt frame was available.",
        (false, _) => "defmt frames read from RTT channel.",
    };
    let mut outcome = Outcome::ok(ToolId::RttRead, summary)
        .with("channel", channel.name.as_str())
        .with("bytes_read", read.text.len())
        .with(
            "buffer_remaining_bytes",
            read.remaining_bytes + read.pending_bytes,
        )
        .with("overflow_bytes", read.overflow)
        .with("data", data(read.text.as_bytes(), ENCODING))
        .with("frames", Value::Array(read.frames))
        .with("frames_queued", read.queued_frames)
        .with("defmt", decoding.describe());
    if let Some(matched) = read.matched {
        outcome.set("until_matched", matched);
        if let Some(pattern) = read.pattern {
            outcome.set("matched", pattern);
        }
    }
    Some(outcome)
}

fn write(
    debugger: &str,
    channel: &RttChannel,
    session: Option<Arc<Session>>,
    payload: &[u8],
) -> Acted {
    const TOOL: ToolId = ToolId::RttWrite;
    let Some(session) = session else {
        return Acted::new(
            not_active(TOOL, debugger),
            Contact::none("no session, so nothing was written"),
        );
    };
    let result = session.link.write(channel.index, payload);
    let written = *result.as_ref().unwrap_or(&0);
    let logged = session.log.append(&json!({
        "direction": "tx",
        "channel": channel.name,
        "bytes": written,
        "hex": text::to_hex(&payload[..written]),
        "text": ENCODING.decode(&payload[..written]),
        "requested": payload.len(),
    }));
    let sent = match result {
        Ok(n) if n == payload.len() => Ok(Outcome::ok(TOOL, "Stimulus written to RTT channel.")
            .with("channel", channel.name.as_str())
            .with("bytes_written", n)
            .with("data", data(payload, ENCODING))),
        Ok(n) => {
            let mut outcome = Outcome::refused(
                TOOL,
                ErrorType::RttWriteIncomplete,
                format!(
                    "The down channel had room for {n} of {} bytes.",
                    payload.len()
                ),
            )
            .with("channel", channel.name.as_str())
            .with("bytes_written", n)
            .with("bytes_requested", payload.len());
            outcome.side_effect_committed = Some(n > 0);
            outcome.side_effect_status = Some(if n > 0 {
                SideEffectStatus::Partial
            } else {
                SideEffectStatus::NotStarted
            });
            outcome.retry_safe = Some(n == 0);
            Ok(outcome)
        }
        Err(error) => {
            let mut outcome = Outcome::refused(
                TOOL,
                ErrorType::layer(error.error_type()),
                error.to_string(),
            )
            .with("channel", channel.name.as_str())
            .with("bytes_written", 0)
            .with("bytes_requested", payload.len());
            outcome.side_effect_status = Some(SideEffectStatus::Unknown);
            outcome.retry_safe = Some(false);
            Err((outcome, Contact::Possible))
        }
    };
    session_lifecycle::write_answer(sent, logged, &session.log)
}
