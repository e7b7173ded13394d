//! `debug_stop_session`: confirm the halt, make gdb's leaving harmless, end gdb and the server, free
//! the lock.

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::session_lifecycle;

/// The refusal of a stop that kept the session for cleanup: the core's halt is not confirmed, or
/// (`halted`) it is but not that gdb leaving keeps it so. `guard`: whether gdb's leaving was made
/// harmless, where the stop got as far as that.
fn kept(tool: ToolId, session: &mut Live, halted: bool, guard: Option<bool>) -> Outcome {
    let (error_type, summary) = if halted {
        (
            ErrorType::DetachResumeNotConfirmed,
            "OpenOCD did not confirm that gdb leaving will keep the core halted, so the session was kept.",
        )
    } else {
        (
            ErrorType::HaltNotConfirmed,
            "The target's halt could not be confirmed, so the session was kept.",
        )
    };
    session.status = "cleanup_required";
    let mut outcome = Outcome::refused(tool, error_type, summary)
        .with("status", "cleanup_required")
        .with("safe_state_confirmed", false)
        .with("halt_not_confirmed", !halted);
    if let Some(confirmed) = guard {
        outcome.set("detach_resume_guard_confirmed", confirmed);
    }
    outcome.set("session", session.describe());
    outcome.hardware_state = Some(HardwareState::Unknown);
    outcome.cleanup_required = Some(true);
    outcome
}

/// Confirms the halt, makes gdb's leaving harmless (the QEMU stub keeps a disconnected core halted;
/// OpenOCD's gdb-detach and gdb-end handlers are emptied), disconnects, ends gdb and the debug server,
/// frees the lock.
pub(in crate::actions) fn stop_session(
    tool: ToolId,
    sessions: &Sessions,
    args: &Value,
    timeout: Duration,
) -> Acted {
    let Some(live) = sessions.get() else {
        return quiet(
            Outcome::ok(tool, "No debug session is active.")
                .with("active", false)
                .with("status", "stopped"),
        );
    };
    let mut guard = debug::lock(&live);
    let session = &mut *guard;
    let limit = wait_of(args, timeout.min(HALT_WAIT));
    if session.status != "halted"
        && session.gdb.is_some()
        && let (_, Some(record)) = interrupt(session, limit)
    {
        session.status = "halted";
        session.stop = Some(classify(&record, &session.breakpoints));
    }
    let step = session.step;
    let on_openocd = matches!(session.server, Server::OpenOcd(_));
    if on_openocd {
        // OpenOCD's own word is gdb's: a core it reported stopped and has not been resumed since.
        let halted = session.status == "halted";
        let guarded = halted
            && mi(
                session,
                &format!("-interpreter-exec console {}", quote(debug::DETACH_GUARD)),
                step,
            )
            .is_ok();
        if !guarded {
            // gdb and OpenOCD stay: a retry can still halt the core and guard the detach.
            return made(kept(tool, session, halted, Some(false)));
        }
    }
    if matches!(session.server, Server::Stlink(_)) && session.status != "halted" {
        // gdb and the server stay: a retry can still halt the core before the server goes.
        return made(kept(tool, session, false, None));
    }
    let _ = mi(session, "-break-delete", step);
    let mut server_output = None;
    if let Server::Stlink(server) = &mut session.server
        && let Some(process) = server.process.take()
    {
        // Killed while gdb still holds the halted core, ST-LINK_gdbserver cannot resume it on the
        // disconnect that follows.
        server_output = Some(process.tails());
        process.stop();
    }
    // Neither server resumes a core on a disconnect (OpenOCD's handlers are empty now); a detach
    // would resume the QEMU stub's.
    let disconnected = mi(session, "-target-disconnect", step).is_ok();
    if let Some(gdb) = session.gdb.take() {
        session.gdb_transcript = gdb.transcript().to_vec();
        gdb.close(limit);
    }
    let (halted, confirmed_by) = match &mut session.server {
        // With gdb gone, the emulator itself is the proof: a core it reports running is paused here.
        Server::Qemu { qmp_socket } => (debug::vm_halted(qmp_socket, limit), "qmp"),
        Server::OpenOcd(server) => {
            // SIGKILL: OpenOCD gets no chance to run a shutdown handler that might resume the core.
            if let Some(process) = server.process.take() {
                server_output = Some(process.tails());
                process.stop();
            }
            (true, "gdb_stop_record")
        }
        Server::Stlink(_) => (true, "server_killed_while_halted"),
    };
    if !halted {
        return made(kept(tool, session, false, Some(disconnected)));
    }
    session.status = "stopped";
    let transcript = session
        .gdb_transcript
        .iter()
        .rev()
        .take(TRANSCRIPT_TAIL)
        .rev()
        .cloned()
        .collect::<Vec<_>>();
    let logged = session_lifecycle::end(
        sessions,
        &session.session_id.clone(),
        &session.log,
        &session.locks,
        &json!({
            "event": "stop",
            "halt_confirmed": true,
            "halt_confirmed_by": confirmed_by,
            "backend": session.server.backend(),
            "gdb_disconnected": disconnected,
            "gdb_transcript": transcript,
            "server_stdout_tail": server_output.as_ref().map(|t| t.stdout.clone()),
            "server_stderr_tail": server_output.as_ref().map(|t| t.stderr.clone()),
        }),
    );
    let log_path = session.log.path.clone();
    let described = session.describe();
    drop(guard);
    let mut outcome = Outcome::ok(tool, "Debug session stopped; the target is left halted.")
        .with("active", false)
        .with("status", "stopped")
        .with("safe_state_confirmed", true)
        .with("halt_not_confirmed", false)
        .with("halt_confirmed", true)
        .with("halt_confirmed_by", confirmed_by)
        .with("detach_resume_guard_confirmed", true)
        .with("gdb_disconnected", disconnected)
        .with("session", described);
    outcome.log_path = Some(log_path);
    made(session_lifecycle::with_event_logged(outcome, logged))
}
