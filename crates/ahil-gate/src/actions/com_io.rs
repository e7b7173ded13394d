//! `com_write` and `com_read` over an open session.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use ahil_drivers::serial::{Ring, SerialError};
use serde_json::{Value, json};

use super::com_ports::{device, port_entry};
use super::com_session::{WithLog, encoding_of};
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::audit::{MaskedStream, Pulled};
use crate::envelope::{Outcome, SideEffectStatus};
use crate::policy::Action;
use crate::serial::{Encoding, Session, reader_error, text, untrusted_meta};
use crate::session_lifecycle;

/// Waits are capped here whatever the caller asks.
const MAX_WAIT_S: f64 = 60.0;
/// A read's wait looks at its call's cancel flag this often.
const CANCEL_SLICE: Duration = Duration::from_millis(100);
/// The default wait when `until` is given.
const UNTIL_DEFAULT_WAIT_S: f64 = 10.0;

fn not_active(tool: &str, port_id: &str, session: Option<&Session>) -> Outcome {
    let mut outcome = Outcome::refused(
        tool,
        ErrorType::SessionNotActive,
        "No COM session is open on this port.",
    )
    .with("port_id", port_id)
    .with_remediation([format!(
        "Call com_session_start with port_id \"{port_id}\" first."
    )])
    .not_contacted();
    if let Some(error) = session.and_then(|s| s.port.ring().reader_error()) {
        outcome.summary =
            "The COM session's reader stopped on a failure; the session is no longer active."
                .into();
        outcome.set("reader_error", reader_error(&error));
        outcome.remediation = vec![format!(
            "Call com_session_start with port_id \"{port_id}\" again; it replaces the failed session."
        )];
    }
    outcome
}

fn invalid(tool: &str, field: &str, summary: impl Into<String>) -> Box<Outcome> {
    Box::new(
        Outcome::refused(tool, ErrorType::InvalidArgument, summary)
            .with("field", field)
            .not_contacted(),
    )
}

/// `{hex, text, encoding}` for bytes.
pub(super) fn data(bytes: &[u8], encoding: Encoding) -> Value {
    json!({"hex": text::to_hex(bytes), "text": encoding.decode(bytes), "encoding": encoding.name()})
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ComWrite, ToolId::ComRead])?;
    let (port_id, port) = port_entry(ctx)?;
    let encoding = encoding_of(ctx.tool.name(), port_id, port)?;
    let session = ctx.serial.get(port_id);
    if ctx.tool == ToolId::ComWrite {
        let max = usize::try_from(port.max_write_bytes).unwrap_or(usize::MAX);
        let payload = write_payload(ctx, encoding, max, "this port's")?;
        let port_id_owned = port_id.to_owned();
        let deadline = Duration::try_from_secs_f64(port.write_timeout_s * 4.0 + 5.0)
            .unwrap_or(Duration::from_secs(10));
        return Ok(Plan {
            action: Action::ComWrite,
            device: Some(device(port_id, port)),
            also: Vec::new(),
            resources: vec![port.lock_key(port_id)],
            work: Work::Driver(DriverJob {
                deadline,
                if_abandoned: Contact::Possible,
                run: Box::new(move |_cancel| write(&port_id_owned, session, &payload, encoding)),
            }),
        });
    }
    // com_read
    let request = read_request(ctx, port.max_buffer_bytes, encoding)?;
    let port_id_owned = port_id.to_owned();
    Ok(session_lifecycle::read_plan(
        Action::ComRead,
        device(port_id, port),
        request.wait,
        "a read only takes bytes already received",
        move |cancel| read(&port_id_owned, session, &request, encoding, cancel),
    ))
}

/// The payload of a write (`text` in `encoding`, or `hex`), refused past `max` bytes: `com_write`'s
/// rules, which `rtt_write` shares. `whose` names the cap's owner in the refusal ("this port's").
pub(super) fn write_payload(
    ctx: &Context<'_>,
    encoding: Encoding,
    max: usize,
    whose: &str,
) -> Result<Vec<u8>, Box<Outcome>> {
    let payload = if let Some(hex) = ctx.args.arg_str("hex") {
        text::parse_hex(hex).ok_or_else(|| {
            invalid(
                ctx.tool.name(),
                "hex",
                "hex must be pairs of hexadecimal digits (whitespace is ignored).",
            )
        })?
    } else {
        let text = ctx.args.arg_str("text").unwrap_or_default();
        encoding.encode(text).map_err(|c| {
            invalid(
                ctx.tool.name(),
                "text",
                format!(
                    "The port's encoding {} cannot carry {c:?}.",
                    encoding.name()
                ),
            )
        })?
    };
    if payload.len() > max {
        let mut refusal = invalid(
            ctx.tool.name(),
            if ctx.args.get("hex").is_some() {
                "hex"
            } else {
                "text"
            },
            format!(
                "{} bytes exceed {whose} max_write_bytes of {max}.",
                payload.len()
            ),
        );
        refusal.set("bytes_requested", payload.len());
        refusal.set("max_write_bytes", max);
        return Err(refusal);
    }
    Ok(payload)
}

/// What a read asks for: at most `max_bytes`, through the first of `patterns`, waiting `wait`;
/// `cap` is the buffer's size, the most masked bytes that wait between reads.
pub(super) struct ReadRequest {
    pub max_bytes: usize,
    pub patterns: Vec<Vec<u8>>,
    pub wait: Duration,
    pub cap: usize,
}

/// A read's `max_bytes`, `until` patterns and wait: `com_read`'s rules, which `rtt_read` shares.
pub(super) fn read_request(
    ctx: &Context<'_>,
    max_buffer_bytes: u64,
    encoding: Encoding,
) -> Result<ReadRequest, Box<Outcome>> {
    // The buffer never holds more than max_buffer_bytes, so a larger ask reads the same as it
    // (as the reference reads); lowering it keeps every later size computation in range.
    let max_bytes = ctx
        .args
        .arg_u64("max_bytes")
        .unwrap_or(max_buffer_bytes)
        .min(max_buffer_bytes);
    let max_bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let patterns: Vec<Vec<u8>> = ctx
        .args
        .arg_texts("until")
        .iter()
        .map(|p| {
            encoding.encode(p).map_err(|c| {
                invalid(
                    ctx.tool.name(),
                    "until",
                    format!("The port's encoding cannot carry {c:?}."),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let default_wait = if patterns.is_empty() {
        0.0
    } else {
        UNTIL_DEFAULT_WAIT_S
    };
    Ok(ReadRequest {
        max_bytes,
        patterns,
        wait: session_lifecycle::read_wait(ctx.args, default_wait, MAX_WAIT_S),
        cap: usize::try_from(max_buffer_bytes).unwrap_or(usize::MAX),
    })
}

/// What a read took of a device's masked stream: the masked bytes, and what was decided on them.
pub(crate) struct MaskedRead {
    pub bytes: Vec<u8>,
    /// With patterns: whether the bytes end with a match.
    pub matched: Option<bool>,
    /// Bytes still waiting: masked ones queued, and raw ones not yet pulled.
    pub remaining: usize,
    /// Bytes dropped, oldest first, by the ring or the masked queue.
    pub overflow: u64,
    /// Why the device's reader stopped, if it did.
    pub reader_error: Option<String>,
    /// The read ended because its call was given up: it took nothing.
    pub gave_up: bool,
    /// The device's reader had ended when the read returned (its session stopped, or the device
    /// went away), so no more bytes could come.
    pub ended: bool,
}

/// A read of `ring` as the agent may observe it: everything received is pulled into `stream`,
/// masked there, and the read's decisions (where `until` matches, how many bytes it returns,
/// when its wait ends) are made on the masked queue, so a credential's bytes decide nothing
/// ([`MaskedStream`]). The answer's bytes are masked; its counts are of masked bytes, plus the
/// raw bytes that arrived after the last pull. At most `cap` masked bytes wait between reads.
/// The wait looks at `cancel` every slice: a read whose call was given up (the client's cancel,
/// the gate's deadline) stops at once and takes nothing, so the bytes stay for the next read and
/// the next read is not held up behind it.
pub(crate) fn take_masked(
    stream: &mut MaskedStream,
    ring: &Ring,
    max: usize,
    deadline: Instant,
    patterns: &[Vec<u8>],
    cap: usize,
    cancel: &CancelFlag,
) -> MaskedRead {
    let mut overflow = 0;
    let mut reader_error = None;
    let pull = |until: Instant| {
        // Asked before the take: an ended reader has pushed its last bytes, so the held tail
        // can go out after them.
        let ended = ring.reader_done();
        let taken = ring.take(usize::MAX, until.min(Instant::now() + CANCEL_SLICE));
        overflow = taken.overflow;
        reader_error = taken.reader_error;
        Pulled {
            bytes: taken.bytes,
            ended,
        }
    };
    let took = stream.read(max, deadline, patterns, cap, pull, || cancel.is_cancelled());
    MaskedRead {
        bytes: took.bytes,
        matched: took.matched,
        remaining: took.remaining + ring.levels().0,
        overflow: overflow + took.dropped,
        reader_error,
        gave_up: took.gave_up,
        ended: ring.reader_done(),
    }
}

/// The answer to a read that took `taken` (masked by [`take_masked`]): `com_read`'s fields,
/// which `rtt_read` shares. `id` is the (key, value) naming what was read, `what` its kind in the
/// summary ("COM port").
pub(super) fn read_outcome(
    tool: ToolId,
    id: (&str, &str),
    what: &str,
    taken: &MaskedRead,
    patterns: &[Vec<u8>],
    encoding: Encoding,
) -> Outcome {
    let summary = if taken.bytes.is_empty() {
        format!("No {what} feedback was available.")
    } else {
        format!("Feedback read from {what}.")
    };
    let mut outcome = Outcome::ok(tool, summary)
        .with(id.0, id.1)
        .with("bytes_read", taken.bytes.len())
        .with("buffer_remaining_bytes", taken.remaining)
        .with("overflow_bytes", taken.overflow)
        .with("data", data(&taken.bytes, encoding));
    if let Some(matched) = taken.matched {
        outcome.set("until_matched", matched);
        if matched && let Some(pattern) = patterns.iter().find(|p| taken.bytes.ends_with(p)) {
            outcome.set("matched", encoding.decode(pattern));
        }
        if !matched {
            outcome.summary = if taken.ended {
                format!(
                    "The {what} session ended before the until text was seen; the bytes so far are returned."
                )
            } else {
                "The until text was not seen in time; the bytes so far are returned.".into()
            };
        }
    }
    outcome
}

fn write(
    port_id: &str,
    session: Option<Arc<Session>>,
    payload: &[u8],
    encoding: Encoding,
) -> Acted {
    const TOOL: ToolId = ToolId::ComWrite;
    let Some(session) = session.filter(|s| s.port.is_alive()) else {
        return Acted::new(
            not_active(TOOL.name(), port_id, None),
            Contact::none("no session, so nothing was written"),
        );
    };
    let result = session.port.write(payload);
    let written = match &result {
        Ok(n)
        | Err(SerialError::Incomplete { written: n, .. } | SerialError::Write { written: n, .. }) => {
            *n
        }
        Err(_) => 0,
    };
    let logged = session.log(&json!({
        "direction": "tx",
        "bytes": written,
        "hex": text::to_hex(&payload[..written.min(payload.len())]),
        "text": encoding.decode(&payload[..written.min(payload.len())]),
        "requested": payload.len(),
    }));
    let sent = match result {
        Ok(n) => Ok(Outcome::ok(TOOL, "Stimulus written to COM port.")
            .with("port_id", port_id)
            .with("bytes_written", n)
            .with("data", data(payload, encoding))),
        Err(err) => {
            let mut outcome =
                Outcome::refused(TOOL, ErrorType::layer(err.error_type()), err.to_string())
                    .with("port_id", port_id)
                    .with("bytes_written", written)
                    .with("bytes_requested", payload.len());
            outcome.side_effect_committed = Some(written > 0);
            outcome.retry_safe = Some(false);
            if matches!(err, SerialError::Incomplete { .. }) {
                outcome.side_effect_status = Some(SideEffectStatus::Partial);
                outcome.remediation = vec![
                    "Read what the device answered before sending the rest; do not resend blindly."
                        .into(),
                ];
            } else {
                outcome.side_effect_status = Some(SideEffectStatus::Unknown);
                outcome.cleanup_required = Some(true);
                outcome.remediation = vec!["Stop and restart the session, then check the device's state before writing again.".into()];
            }
            Err((outcome, err.contact()))
        }
    };
    session_lifecycle::write_answer(sent, logged, &session.log)
}

fn read(
    port_id: &str,
    session: Option<Arc<Session>>,
    ReadRequest {
        max_bytes,
        patterns,
        wait,
        cap,
    }: &ReadRequest,
    encoding: Encoding,
    cancel: &CancelFlag,
) -> Acted {
    const TOOL: ToolId = ToolId::ComRead;
    let (max_bytes, wait, cap) = (*max_bytes, *wait, *cap);
    let none = || Contact::none("a read only takes bytes already received");
    let Some(session) = session else {
        return Acted::new(not_active(TOOL.name(), port_id, None), none());
    };
    let taken = take_masked(
        &mut session
            .shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        session.port.ring(),
        max_bytes,
        Instant::now() + wait,
        patterns,
        cap,
        cancel,
    );
    if taken.gave_up {
        return session_lifecycle::read_given_up(TOOL, ("port_id", port_id), none());
    }
    if taken.bytes.is_empty() && taken.reader_error.is_some() {
        return Acted::new(not_active(TOOL.name(), port_id, Some(&session)), none());
    }
    let mut outcome = read_outcome(
        TOOL,
        ("port_id", port_id),
        "COM port",
        &taken,
        patterns,
        encoding,
    );
    if let Some(error) = &taken.reader_error {
        outcome.set("reader_error", reader_error(error));
    }
    outcome.meta = Some(untrusted_meta(port_id));
    Acted::new(outcome.with_log(&session.log.path), none())
}
