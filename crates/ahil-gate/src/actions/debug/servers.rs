//! The gdb servers a session starts under its lock: OpenOCD and ST-LINK_gdbserver, held to loopback.

use super::start::{Progress, Reached};
#[allow(clippy::wildcard_imports)]
use super::*;
use ahil_drivers::process::CancelFlag;

/// Starts OpenOCD as the session's gdb server: `init; reset halt`, or `init; halt` for an attach.
pub(super) fn start_openocd(
    openocd: &OpenOcd,
    gdb: &std::path::Path,
    reset_halt: bool,
    timeout: Duration,
    progress: &mut Progress,
    cancel: &CancelFlag,
) -> Result<Reached, Box<Acted>> {
    const TOOL: ToolId = ToolId::DebugStartSession;
    progress.phase = "server_spawned";
    match openocd.start_gdb_server(reset_halt, timeout, Some(cancel)) {
        Ok(process) => Ok(progress.served(gdb, process, &["monitor reset halt"], Server::OpenOcd)),
        Err(ServerError::Spawn(error)) => Err(not_started(
            progress,
            "openocd",
            format!("Debug server process could not be started ({error})."),
        )),
        Err(ServerError::NotReady(_, tails)) => Err(Box::new(
            progress.failed(
                Outcome::refused(
                    TOOL,
                    ErrorType::Timeout,
                    "Debug server did not open its GDB port before the timeout.",
                )
                .with("backend", "openocd")
                .with("backend_error_type", "gdb_server_not_ready")
                .with("server_stderr_tail", tail_lines(&tails.text())),
                true,
            ),
        )),
        Err(ServerError::Exposed { addresses, output }) => Err(Box::new(
            progress.failed(exposed_server("openocd", &addresses, &output), false),
        )),
        Err(ServerError::Exited { code, output }) => {
            let text = output.text();
            let (class, error_type, causes) = openocd_exit(openocd, &text);
            Err(Box::new(
                progress.failed(
                    Outcome::refused(
                        TOOL,
                        ErrorType::layer(error_type),
                        "Debug server exited before the GDB port became ready.",
                    )
                    .with("backend", "openocd")
                    .with("backend_error_type", class)
                    .with("returncode", json!(code))
                    .with("server_stderr_tail", tail_lines(&text))
                    .with_causes(causes.iter().copied()),
                    false,
                ),
            ))
        }
    }
}

/// An OpenOCD server's early exit as its class, public `error_type` and likely causes (an
/// unclassified one is `debugger_error`).
pub(in crate::actions) fn openocd_exit(
    openocd: &OpenOcd,
    text: &str,
) -> (&'static str, &'static str, &'static [&'static str]) {
    let class =
        ahil_drivers::openocd::classify(text, openocd.interface_cfg(), openocd.target_cfg(), false);
    let (error_type, _, causes) = ahil_drivers::probe_cli::public(class);
    let error_type = if class == "unknown_debugger_error" {
        "debugger_error"
    } else {
        error_type
    };
    (class, error_type, causes)
}

/// The `backend` server's process could not be started at all, so nothing reached the probe.
fn not_started(progress: &mut Progress, backend: &'static str, summary: String) -> Box<Acted> {
    progress.phase = "not_started";
    Box::new(
        progress.failed(
            Outcome::refused(
                ToolId::DebugStartSession,
                ErrorType::DebuggerNotFound,
                summary,
            )
            .with("backend", backend),
            false,
        ),
    )
}

/// A debug server found listening beyond loopback (it was stopped before gdb connected).
pub(super) fn exposed_server(
    backend: &'static str,
    addresses: &[String],
    output: &ahil_drivers::openocd::gdbserver::Tails,
) -> Outcome {
    Outcome::refused(
        "debug_start_session",
        ErrorType::ProbeServerOpenFailed,
        format!(
            "The debug server listened beyond this machine ({}), so it was stopped before gdb connected.",
            addresses.join(", ")
        ),
    )
    .with("backend", backend)
    .with("backend_error_type", "gdb_server_not_loopback")
    .with("listen_addresses", addresses.to_vec())
    .with("server_output_tail", tail_lines(&output.text()))
    .with_causes([
        "the server's own settings or a wrapper script make it listen on every interface",
        "the executable configured is not the debug server it is named for",
    ])
    .with_next_step(
        "Stop and ask the operator to make the debug server listen on 127.0.0.1 only; a debug port open to the network hands the target to anyone on it.",
    )
}

/// Starts ST-LINK_gdbserver as the session's gdb server, attached without a reset; gdb's
/// `monitor reset` and `monitor halt` do the resets a mode asks for.
pub(super) fn start_stlink(
    server: &StlinkGdbServer,
    gdb: &std::path::Path,
    timeout: Duration,
    progress: &mut Progress,
    cancel: &CancelFlag,
) -> Result<Reached, Box<Acted>> {
    const TOOL: ToolId = ToolId::DebugStartSession;
    let failed =
        |outcome: Outcome, class: &'static str, tails: &ahil_drivers::openocd::gdbserver::Tails| {
            let causes: &[&str] = match class {
                "probe_not_found" | "target_not_detected" | "adapter_usb_error" => {
                    ahil_drivers::probe_cli::public(class).2
                }
                _ => &[
                    "another program holds the ST-LINK",
                    "the server found no STM32CubeProgrammer beside debuggers.<name>.executable",
                    "the ST-LINK firmware is older than this ST-LINK_gdbserver accepts",
                ],
            };
            outcome
                .with("backend", "stlink")
                .with("backend_error_type", class)
                .with("server_output_tail", tail_lines(&tails.text()))
                .with_causes(causes.iter().copied())
        };
    progress.phase = "server_spawned";
    match server.start(timeout, Some(cancel)) {
        Ok(process) => Ok(progress.served(
            gdb,
            process,
            &["monitor reset", "monitor halt"],
            Server::Stlink,
        )),
        Err(ServerError::Spawn(error)) => Err(not_started(
            progress,
            "stlink",
            format!("ST-LINK_gdbserver could not be started ({error})."),
        )),
        Err(ServerError::NotReady(limit, tails)) => Err(Box::new(progress.failed(
            failed(
                Outcome::refused(
                    TOOL,
                    ErrorType::ProbeServerOpenFailed,
                    format!(
                        "ST-LINK_gdbserver did not open its gdb port within {} s, so it was stopped.",
                        limit.as_secs_f64()
                    ),
                ),
                "gdb_server_not_ready",
                &tails,
            ),
            true,
        ))),
        Err(ServerError::Exposed { addresses, output }) => Err(Box::new(
            progress.failed(exposed_server("stlink", &addresses, &output), false),
        )),
        Err(ServerError::Exited { code, output }) => {
            let class = ahil_drivers::cubeprog::gdbserver::classify_exit(&output.text());
            let error_type = match class {
                "probe_not_found" => "adapter_not_found",
                "target_not_detected" | "adapter_usb_error" => class,
                _ => "probe_server_open_failed",
            };
            Err(Box::new(progress.failed(
                failed(
                    Outcome::refused(
                        TOOL,
                        ErrorType::layer(error_type),
                        "ST-LINK_gdbserver exited before its gdb port opened.",
                    ),
                    class,
                    &output,
                )
                .with("returncode", json!(code)),
                false,
            )))
        }
    }
}

impl ServerKind {
    pub(super) fn backend(&self) -> &'static str {
        self.into()
    }
}

/// The last lines a server printed, for a result.
pub(in crate::actions) fn tail_lines(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(20)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}
