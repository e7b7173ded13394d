//! The debug tools that work on an open session: status, breakpoints, run control, symbol reads, stop.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::session_lifecycle;
use std::time::{Duration, Instant};

use ahil_drivers::Contact;
use ahil_drivers::gdbmi::{self, Record, SessionError, quote};
use ahil_drivers::process::CancelFlag;
use serde_json::{Value, json};

use super::Acted;
use super::debug::{evaluated, location, wait_of};
use crate::debug::elfsym;
use crate::debug::output::Output;
use crate::debug::stop::{abnormal, classify, is_stopped};
use crate::debug::{self, Breakpoint, Live, Server, Sessions, ihex};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};

mod stop;

pub(super) use stop::stop_session;

/// Interrupts and their stops wait 5 s at most.
const HALT_WAIT: Duration = Duration::from_secs(5);
/// How often a wait for the target's stop looks at the call's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// Memory is read in chunks of this many bytes.
const CHUNK: u64 = 1024;
/// The last gdb lines kept in the session log's stop event.
const TRANSCRIPT_TAIL: usize = 400;

/// The configuration's bounds on symbol reads, and a dump's checked output path.
pub struct Limits {
    pub max_dump: u64,
    pub output: Option<Result<Output, Box<Outcome>>>,
}

/// Runs `tool` against the open session. `cancel` is the call's: raised by the client's
/// `notifications/cancelled` and when the gate's deadline abandons the call.
pub fn run(
    tool: ToolId,
    sessions: &Sessions,
    args: &Value,
    timeout: Duration,
    limits: &Limits,
    cancel: &CancelFlag,
) -> Acted {
    // An output path the agent can fix is answered before the missing session, as an image path is.
    if let Some(Err(refusal)) = &limits.output {
        return quiet(*refusal.clone());
    }
    let Some(live) = sessions.get() else {
        return match tool {
            ToolId::DebugStopSession => quiet(
                Outcome::ok(tool, "No debug session is active.")
                    .with("active", false)
                    .with("status", "stopped")
                    .with("safe_state_confirmed", true),
            ),
            ToolId::DebugGetSessionStatus => quiet(
                Outcome::ok(tool, "No debug session is active.")
                    .with("active", false)
                    .with("status", "stopped")
                    .with("session", Value::Null),
            ),
            ToolId::DebugListBreakpoints => quiet(
                Outcome::ok(tool, "No debug session is active, so no breakpoint is set.")
                    .with("active", false)
                    .with("breakpoints", json!([])),
            ),
            _ => quiet(
                Outcome::refused(
                    tool,
                    ErrorType::SessionNotActive,
                    "No debug session is active. Start one with debug_start_session first.",
                )
                .with_next_step("Call debug_start_session with the ELF the board runs.")
                .not_contacted(),
            ),
        };
    };
    let mut guard = debug::lock(&live);
    let session = &mut *guard;
    match tool {
        ToolId::DebugGetSessionStatus => quiet(with_stop(
            Outcome::ok(
                tool,
                format!(
                    "A debug session is active; the target is {}.",
                    session.status
                ),
            )
            .with("active", true)
            .with("status", session.status)
            .with("session", session.describe()),
            session.stop.as_ref(),
        )),
        ToolId::DebugListBreakpoints => quiet(
            Outcome::ok(
                tool,
                format!("{} breakpoint(s) set.", session.breakpoints.len()),
            )
            .with("active", true)
            .with(
                "breakpoints",
                json!(
                    session
                        .breakpoints
                        .iter()
                        .map(Breakpoint::to_value)
                        .collect::<Vec<_>>()
                ),
            ),
        ),
        ToolId::DebugGetStopReason => match session.stop.clone() {
            Some(stop) => quiet(stop_outcome(
                tool,
                "The target's last stop.",
                &stop,
                session,
            )),
            None => quiet(
                Outcome::refused(
                    tool,
                    ErrorType::StopReasonNotAvailable,
                    "The target has not stopped since the session started.",
                )
                .with("session", session.describe())
                .with_next_step("Set a breakpoint and call debug_continue, or call debug_halt.")
                .not_contacted(),
            ),
        },
        ToolId::DebugSetBreakpoint
        | ToolId::DebugClearBreakpoints
        | ToolId::DebugContinue
        | ToolId::DebugHalt
        | ToolId::DebugSymbolInfo
        | ToolId::DebugSymbolValue
        | ToolId::DebugDumpSymbolIhex => {
            let mut acted = match tool {
                ToolId::DebugSetBreakpoint => set_breakpoint(tool, session, args),
                ToolId::DebugClearBreakpoints => clear_breakpoints(tool, session),
                ToolId::DebugContinue => resume(tool, session, args, timeout, cancel),
                ToolId::DebugHalt => halt(tool, session, args, timeout),
                _ => symbol(tool, session, args, limits),
            };
            logged(session, &mut acted.outcome);
            acted
        }
        ToolId::DebugStopSession => {
            drop(guard);
            stop_session(tool, sessions, args, timeout)
        }
        other => quiet(*super::misrouted(other)),
    }
}

/// Appends the call to the session log and names the log in the result.
fn logged(session: &Live, outcome: &mut Outcome) {
    let event = json!({
        "event": outcome.tool,
        "ok": outcome.ok,
        "error_type": outcome.error_type,
        "stop": outcome.details.get("stop"),
        "breakpoint": outcome.details.get("breakpoint"),
        "symbol": outcome.details.get("symbol"),
        "hex": outcome.details.get("hex"),
        "output": outcome.details.get("output"),
    });
    match session.log(&event) {
        Ok(()) => outcome.log_path = Some(session.log.path.clone()),
        Err(err) => session_lifecycle::mark_unlogged(outcome, &err),
    }
}

/// An answer that touched no hardware.
fn quiet(outcome: Outcome) -> Acted {
    Acted::new(
        outcome,
        Contact::none("answered from the session's own record"),
    )
}

fn made(outcome: Outcome) -> Acted {
    Acted::new(outcome, Contact::Made)
}

fn with_stop(mut outcome: Outcome, stop: Option<&Value>) -> Outcome {
    if let Some(stop) = stop {
        let reason = stop["stop_reason"].clone();
        outcome.set("stop_reason", reason.clone());
        outcome.set("target_stop_reason", reason);
        outcome.set("stop", stop.clone());
    }
    outcome
}

/// A stop as a result: abnormal stops answer `ok: false` with their error type.
fn stop_outcome(tool: ToolId, summary: &str, stop: &Value, session: &Live) -> Outcome {
    let reason = stop["stop_reason"].as_str().unwrap_or("unknown");
    let abnormal = abnormal(reason);
    let mut outcome = match abnormal {
        Some(error_type) => Outcome::refused(
            tool,
            ErrorType::layer(error_type),
            format!("The target stopped abnormally: {reason}."),
        )
        .with("target_error_type", error_type)
        .with(
            "suggested_actions",
            json!([
                "Read the stop's frame and the fault registers before resuming.",
                "debug_stop_session leaves the core halted for inspection."
            ]),
        ),
        None => Outcome::ok(tool, summary),
    };
    outcome.target_ok = Some(abnormal.is_none());
    outcome = with_stop(outcome, Some(stop)).with("session", session.describe());
    outcome
}

/// A failed MI step: the session's stop becomes `debugger_error` and the board's state is unknown.
fn mi_failure(tool: ToolId, session: &mut Live, command: &str, message: &str) -> Acted {
    session.stop = Some(json!({
        "stop_reason": "debugger_error",
        "backend_stop_reason": if message.contains("within") { "timeout" } else { "error" },
        "backend_error": message,
    }));
    let outcome = Outcome::refused(
        tool,
        ErrorType::DebuggerError,
        format!(
            "gdb did not complete `{command}`: {}.",
            message.lines().next().unwrap_or_default()
        ),
    )
    .with("session", session.describe());
    Acted::new(outcome, Contact::Made)
}

/// One MI command; the reply or the failure text.
fn mi(session: &mut Live, command: &str, limit: Duration) -> Result<gdbmi::session::Reply, String> {
    let Some(gdb) = session.gdb.as_mut() else {
        return Err("gdb is no longer running".to_owned());
    };
    match gdb.command(command, limit) {
        Ok(reply) if reply.ok() => Ok(reply),
        Ok(reply) => Err(reply.message()),
        Err(error) => Err(error.to_string()),
    }
}

fn set_breakpoint(tool: ToolId, session: &mut Live, args: &Value) -> Acted {
    let Some((gdb_location, _)) = location(args.get("location")) else {
        return quiet(
            Outcome::refused(
                tool,
                ErrorType::InvalidArgument,
                "location names no symbol, function or file and line.",
            )
            .not_contacted(),
        );
    };
    let command = format!("-break-insert {}", quote(&gdb_location));
    let step = session.step;
    let reply = match mi(session, &command, step) {
        Ok(reply) => reply,
        Err(message) if message.contains("not defined") || message.contains("No symbol") => {
            return quiet(
                Outcome::refused(
                    tool,
                    ErrorType::SymbolNotFound,
                    format!("gdb finds no `{gdb_location}` in the session's ELF."),
                )
                .with("gdb_location", gdb_location)
                .not_contacted(),
            );
        }
        Err(message) => return mi_failure(tool, session, "-break-insert", &message),
    };
    let number = gdbmi::find(&reply.results, "bkpt")
        .and_then(|bkpt| bkpt.get("number"))
        .and_then(gdbmi::Value::as_str)
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_owned);
    let Some(backend_id) = number else {
        return mi_failure(
            tool,
            session,
            "-break-insert",
            "the answer named no breakpoint number",
        );
    };
    let breakpoint = Breakpoint {
        id: session.next_breakpoint,
        backend_id,
        location: args.get("location").cloned().unwrap_or(Value::Null),
        gdb_location,
    };
    session.next_breakpoint += 1;
    let value = breakpoint.to_value();
    session.breakpoints.push(breakpoint);
    made(
        Outcome::ok(tool, "Breakpoint set.")
            .with("breakpoint", value)
            .with("session", session.describe()),
    )
}

fn clear_breakpoints(tool: ToolId, session: &mut Live) -> Acted {
    let step = session.step;
    if let Err(message) = mi(session, "-break-delete", step) {
        return mi_failure(tool, session, "-break-delete", &message);
    }
    let listed = match mi(session, "-break-list", step) {
        Ok(reply) => reply,
        Err(message) => return mi_failure(tool, session, "-break-list", &message),
    };
    let remaining = gdbmi::find(&listed.results, "BreakpointTable")
        .and_then(|table| table.get("body"))
        .map_or(0, |body| body.items().len());
    if remaining != 0 {
        let mut outcome = Outcome::refused(
            tool,
            ErrorType::BreakpointReconciliationFailed,
            format!("gdb still lists {remaining} breakpoint(s) after deleting them all."),
        )
        .with("session", session.describe());
        outcome.hardware_state = Some(HardwareState::Unknown);
        return made(outcome);
    }
    let cleared = session.breakpoints.len();
    session.breakpoints.clear();
    made(
        Outcome::ok(tool, format!("{cleared} breakpoint(s) cleared."))
            .with("cleared", cleared)
            .with("backend_reconciled", true)
            .with("session", session.describe()),
    )
}

/// Waits for a `*stopped` record: first among `events`, then from gdb.
fn await_stop(session: &mut Live, events: &[Record], limit: Duration) -> Option<Record> {
    if let Some(record) = events.iter().rev().find(|r| is_stopped(r)) {
        return Some(record.clone());
    }
    session.gdb.as_mut()?.wait_for(is_stopped, limit).ok()
}

/// Interrupts a running core and waits for its stop; the stop, if one came.
fn interrupt(session: &mut Live, limit: Duration) -> (bool, Option<Record>) {
    match mi(session, "-exec-interrupt --all", limit) {
        Ok(reply) => {
            let stop = await_stop(session, &reply.events, limit);
            (true, stop)
        }
        Err(_) => (false, None),
    }
}

/// How a wait for the target's stop ended.
enum Waited {
    Stopped(Record),
    TimedOut,
    Cancelled,
}

/// Waits up to `limit` for a `*stopped` record, first among `events`, then from gdb, looking at
/// `cancel` between slices; a gdb that fails is a wait that saw no stop.
fn await_stop_unless(
    session: &mut Live,
    events: &[Record],
    limit: Duration,
    cancel: &CancelFlag,
) -> Waited {
    if let Some(record) = events.iter().rev().find(|r| is_stopped(r)) {
        return Waited::Stopped(record.clone());
    }
    let deadline = Instant::now() + limit;
    loop {
        if cancel.is_cancelled() {
            return Waited::Cancelled;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(gdb) = session.gdb.as_mut().filter(|_| !left.is_zero()) else {
            return Waited::TimedOut;
        };
        match gdb.wait_for(is_stopped, left.min(CANCEL_POLL)) {
            Ok(record) => return Waited::Stopped(record),
            Err(SessionError::Timeout { .. }) => {}
            Err(_) => return Waited::TimedOut,
        }
    }
}

fn resume(
    tool: ToolId,
    session: &mut Live,
    args: &Value,
    timeout: Duration,
    cancel: &CancelFlag,
) -> Acted {
    if let Some(stop) = session.stop.clone()
        && abnormal(stop["stop_reason"].as_str().unwrap_or_default()).is_some()
    {
        return quiet(stop_outcome(
            tool,
            "Target is already stopped.",
            &stop,
            session,
        ));
    }
    let wait = wait_of(args, timeout);
    let step = session.step.min(HALT_WAIT);
    let reply = match mi(session, "-exec-continue", step) {
        Ok(reply) => reply,
        Err(message) => return mi_failure(tool, session, "-exec-continue", &message),
    };
    session.status = "running";
    let clock = Instant::now();
    let refused = match await_stop_unless(session, &reply.events, wait, cancel) {
        Waited::Stopped(record) => {
            session.status = "halted";
            let seen = classify(&record, &session.breakpoints);
            session.stop = Some(seen.clone());
            let mut outcome = stop_outcome(tool, "Target stopped.", &seen, session);
            outcome.set(
                "waited_ms",
                u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
            );
            return made(outcome);
        }
        Waited::TimedOut => Outcome::refused(
            tool,
            ErrorType::Timeout,
            format!(
                "The target did not stop within {} s; a halt was requested.",
                wait.as_secs_f64()
            ),
        ),
        // The gate keeps the answer only when the job says `interrupted` itself (bench.rs).
        Waited::Cancelled => Outcome::refused(
            tool,
            ErrorType::Interrupted,
            "The client cancelled the call; a halt was requested.",
        )
        .with("cancelled", true),
    };
    // No stop in time, or the wait was cancelled: the core must not be left running.
    let (acknowledged, record) = interrupt(session, HALT_WAIT);
    let confirmed = record.is_some();
    let mut outcome = refused
        .with("halt_requested", true)
        .with("halt_command_acknowledged", acknowledged)
        .with("halt_confirmed", confirmed);
    if let Some(record) = record {
        session.status = "halted";
        let seen = classify(&record, &session.breakpoints);
        session.stop = Some(seen.clone());
        outcome = with_stop(outcome, Some(&seen)).with("target_state", "halted");
        outcome.side_effect_status = Some(SideEffectStatus::Committed);
    } else {
        session.status = "error";
        outcome = outcome.with("target_state", "unknown");
        outcome.hardware_state = Some(HardwareState::Unknown);
    }
    made(outcome.with("session", session.describe()))
}

fn halt(tool: ToolId, session: &mut Live, args: &Value, timeout: Duration) -> Acted {
    if session.status == "halted" {
        let stop = session.stop.clone();
        let outcome = with_stop(
            Outcome::ok(tool, "Target was already stopped."),
            stop.as_ref(),
        )
        .with("halt_confirmed", true)
        .with("target_state", "halted")
        .with("session", session.describe());
        return quiet(outcome);
    }
    let limit = wait_of(args, timeout.min(Duration::from_secs(10)));
    let (_, record) = interrupt(session, limit);
    if let Some(record) = record {
        session.status = "halted";
        let stop = classify(&record, &session.breakpoints);
        session.stop = Some(stop.clone());
        return made(
            stop_outcome(tool, "Target halted.", &stop, session).with("halt_confirmed", true),
        );
    }
    session.status = "error";
    let mut outcome = Outcome::refused(
        tool,
        ErrorType::Timeout,
        "The halt was not confirmed in time.",
    )
    .with("halt_confirmed", false)
    .with("target_state", "unknown")
    .with("session", session.describe());
    outcome.side_effect_status = Some(SideEffectStatus::Unknown);
    outcome.hardware_state = Some(HardwareState::Unknown);
    made(outcome)
}

fn number(text: &str) -> Option<u64> {
    let text = text.split_whitespace().next()?;
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn symbol(tool: ToolId, session: &mut Live, args: &Value, limits: &Limits) -> Acted {
    // A refused output path was answered by `run` before anything else.
    let output = limits.output.as_ref().and_then(|o| o.as_ref().ok());
    let name = args.arg_str("symbol").unwrap_or_default().to_owned();
    let step = session.step;
    let mut resolve = |expression: String| -> Result<u64, Box<Acted>> {
        let command = format!("-data-evaluate-expression {}", quote(&expression));
        match mi(session, &command, step) {
            Ok(reply) => evaluated(&reply.results)
                .as_deref()
                .and_then(number)
                .ok_or_else(|| {
                    Box::new(quiet(
                        Outcome::refused(
                            tool,
                            ErrorType::SymbolResolutionFailed,
                            format!("gdb gave no number for `{expression}`."),
                        )
                        .not_contacted(),
                    ))
                }),
            Err(message) if message.contains("No symbol") || message.contains("not defined") => {
                Err(Box::new(quiet(
                    Outcome::refused(
                        tool,
                        ErrorType::SymbolNotFound,
                        format!("The session's ELF has no symbol `{name}`."),
                    )
                    .with("symbol", name.clone())
                    .not_contacted(),
                )))
            }
            Err(message) => Err(Box::new(quiet(
                Outcome::refused(
                    tool,
                    ErrorType::SymbolResolutionFailed,
                    format!("gdb could not resolve `{name}`: {message}."),
                )
                .with("symbol", name.clone())
                .not_contacted(),
            ))),
        }
    };
    let from_gdb = resolve(format!("(unsigned long)&{name}"))
        .and_then(|address| resolve(format!("sizeof({name})")).map(|size| (address, size)));
    // Without DWARF gdb may know the address but not the type; the symbol table still has both.
    let (address, size, resolved_from) = match from_gdb {
        Ok((address, size)) => (address, size, "debug_info"),
        Err(refused) => {
            let staged = match staged_elf(tool, &session.elf) {
                Ok(bytes) => bytes,
                Err(acted) => return *acted,
            };
            match elfsym::lookup(&staged, &name) {
                Ok((address, size)) => (address, size, "elf_symbol_table"),
                Err(miss) => {
                    let mut acted = *refused;
                    acted.outcome.set("symbol_table_lookup", miss.reason());
                    return acted;
                }
            }
        }
    };
    let mut outcome = Outcome::ok(tool, format!("Symbol `{name}` resolved."))
        .with("symbol", name.as_str())
        .with("address", format!("0x{address:x}"))
        .with("address_value", address)
        .with("size_bytes", size)
        .with("resolved_from", resolved_from);
    if tool == ToolId::DebugSymbolInfo {
        return quiet(outcome.with("session", session.describe()));
    }
    if size > limits.max_dump {
        return quiet(
            Outcome::refused(
                tool,
                ErrorType::PermissionDenied,
                "Symbol read/dump exceeds debug.max_dump_size_bytes.",
            )
            .with("symbol", name)
            .with("size_bytes", size)
            .with("permission", "debug.max_dump_size_bytes")
            .not_contacted(),
        );
    }
    let mut bytes = Vec::new();
    let mut offset = 0;
    while offset < size {
        let count = CHUNK.min(size - offset);
        let command = format!("-data-read-memory-bytes 0x{:x} {count}", address + offset);
        let reply = match mi(session, &command, step) {
            Ok(reply) => reply,
            Err(message) => return mi_failure(tool, session, "-data-read-memory-bytes", &message),
        };
        let Some(chunk) = gdbmi::memory_bytes(&reply.results).filter(|c| c.len() as u64 == count)
        else {
            return made(
                Outcome::refused(
                    tool,
                    ErrorType::MemoryReadFailed,
                    "gdb answered fewer bytes than the symbol holds.",
                )
                .with("symbol", name),
            );
        };
        bytes.extend(chunk);
        offset += count;
    }
    if let Some(output) = output {
        if let Err(why) = output.write(&ihex::write(address, &bytes)) {
            return made(
                Outcome::refused(
                    tool,
                    ErrorType::OutputWriteFailed,
                    format!("The dump was read but could not be written: {why}."),
                )
                .with("symbol", name),
            );
        }
        "Symbol memory dumped as Intel HEX.".clone_into(&mut outcome.summary);
        return made(
            outcome
                .with(
                    "output",
                    json!({"path": output.display, "resolved_path": output.display}),
                )
                .with("session", session.describe()),
        );
    }
    if let Value::Object(decoded) = debug::decode(&bytes, session.byte_order) {
        for (key, value) in decoded {
            outcome.set(&key, value);
        }
    }
    outcome.summary = format!("Symbol `{name}` read.");
    made(outcome.with("session", session.describe()))
}

/// The session's staged ELF, read again and checked against the digest it was staged with: the
/// symbol table must be the one gdb loaded.
fn staged_elf(tool: ToolId, elf: &crate::artifacts::StagedArtifact) -> Result<Vec<u8>, Box<Acted>> {
    let bytes = std::fs::read(elf.path()).ok();
    match bytes {
        Some(bytes) if ahil_config::digest::sha256_hex(&bytes) == elf.sha256() => Ok(bytes),
        _ => Err(Box::new(quiet(
            Outcome::refused(
                tool,
                ErrorType::SymbolSourceChanged,
                "The session's staged ELF no longer matches the one gdb loaded, so its symbol table is not used.",
            )
            .with_next_step("Stop the session and start it again from the image.")
            .not_contacted(),
        ))),
    }
}
