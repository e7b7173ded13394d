//! The typed debug tools: a GDB/MI session held across calls (`debug/`), started halted, driven one MI
//! command at a time, and stopped with the core halted and gdb disconnected (never detached: QEMU
//! resumes a detached core, OpenOCD runs its gdb-detach handler). The session start is the same for
//! every backend but its debug server: the emulated board's stub, or an OpenOCD or ST-LINK_gdbserver
//! started for the session on a loopback port. ST-Link entries without a gdb server, ST-Link symbol
//! lookups and reads outside a session, and probe-rs symbol lookups and reads are served from the last flashed ELF
//! (`debug/offline.rs`); other debugger types answer `not_supported`.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::sync::Arc;
use std::time::Duration;

use ahil_config::{Debugger, DebuggerType, ExecutableState, Interface};
use ahil_drivers::Contact;
use ahil_drivers::cubeprog::gdbserver::StlinkGdbServer;
use ahil_drivers::gdbmi::{self, Session as Gdb, quote};
use ahil_drivers::openocd::OpenOcd;
use ahil_drivers::openocd::gdbserver::ServerError;
use ahil_drivers::probe::{Budget, DebugProbe};
use ahil_drivers::probe_cli::CliSettings;
use ahil_drivers::qemu::QemuProbe;
use serde_json::{Value, json};

use super::debug_ops as ops;
use super::debugger_info::{self, bound_debugger};
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::artifacts::{ArtifactPolicy, ArtifactUse, Purpose, StagedArtifact};
use crate::debug::{self, Live, Server, Sessions};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};
use crate::ownership::runs::debugger_keys;
use crate::policy::{Action, BreakpointAt, DeviceUse, SymbolAllowlist};
use crate::session_lifecycle::Host;
use crate::snapshot::pinned_debugger_executable;

/// The gate's margin over the session's own waits.
const MARGIN: Duration = Duration::from_secs(5);
/// Each MI step waits 10 s at most.
const STEP_MAX: Duration = Duration::from_secs(10);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[
            ToolId::DebugStartSession,
            ToolId::DebugStopSession,
            ToolId::DebugGetSessionStatus,
            ToolId::DebugSetBreakpoint,
            ToolId::DebugListBreakpoints,
            ToolId::DebugClearBreakpoints,
            ToolId::DebugContinue,
            ToolId::DebugHalt,
            ToolId::DebugGetStopReason,
            ToolId::DebugSymbolInfo,
            ToolId::DebugSymbolValue,
            ToolId::DebugDumpSymbolIhex,
        ],
    )?;
    let bound = bound_debugger(ctx)?;
    let (name, debugger) = bound;
    let tool = ctx.tool;
    let executable = pinned_debugger_executable(ctx.loaded, name);
    let resources = debugger_keys(debugger, executable.as_deref());
    let settings = &ctx.loaded.config.debug;
    let allowlist = SymbolAllowlist {
        allow_all_symbols: settings.allow_all_symbols,
        allowed_symbols: &settings.allowed_symbols,
    };
    let symbol = ctx.args.arg_str("symbol").unwrap_or("");
    let action = match tool {
        ToolId::DebugStartSession => Action::DebugSessionStart,
        ToolId::DebugGetSessionStatus
        | ToolId::DebugListBreakpoints
        | ToolId::DebugGetStopReason => Action::DebugInspect,
        ToolId::DebugSetBreakpoint => Action::DebugBreakpoint {
            at: match location(ctx.args.get("location")) {
                Some((_, true)) => BreakpointAt::Line,
                Some((_, false)) => BreakpointAt::Symbol(symbol_of(ctx.args.get("location"))),
                None => {
                    return Err(invalid(
                        tool,
                        "location names no symbol, function or file and line.",
                    ));
                }
            },
            allowlist,
        },
        ToolId::DebugContinue => Action::DebugContinue,
        ToolId::DebugSymbolInfo | ToolId::DebugSymbolValue | ToolId::DebugDumpSymbolIhex => {
            Action::SymbolRead { symbol, allowlist }
        }
        ToolId::DebugStopSession | ToolId::DebugClearBreakpoints | ToolId::DebugHalt => {
            Action::DebugContain
        }
        other => return Err(super::misrouted(other)),
    };
    let also = if tool == ToolId::DebugStartSession {
        start_uses(ctx, name, debugger)
    } else {
        Vec::new()
    };
    let stlink_server = (debugger.kind == DebuggerType::Stlink)
        .then(|| ctx.loaded.executables.gdb_servers.get(name))
        .flatten()
        .and_then(ExecutableState::path);
    let sessionless = match debugger.kind {
        DebuggerType::Stlink => stlink_server.is_none() || !ctx.debug.is_active(),
        DebuggerType::ProbeRs => true,
        _ => false,
    };
    let work = if sessionless
        && matches!(
            tool,
            ToolId::DebugSymbolInfo | ToolId::DebugSymbolValue | ToolId::DebugDumpSymbolIhex
        ) {
        debug::offline::work(ctx, tool, name, debugger)?
    } else if matches!(debugger.kind, DebuggerType::Qemu | DebuggerType::Openocd)
        || stlink_server.is_some()
    {
        session_work(ctx, tool, name, debugger)?
    } else {
        let kind = debugger.kind;
        super::backend_not_built(
            tool,
            kind,
            if kind == DebuggerType::Stlink {
                "Typed debug sessions on ST-Link need ST-LINK_gdbserver, and none is pinned (debuggers.<name>.gdb_server_executable); without it ST-Link serves only debug_symbol_info, debug_symbol_value and debug_dump_symbol_ihex, from the last flashed ELF.".to_owned()
            } else if kind == DebuggerType::ProbeRs {
                "probe-rs serves no typed debug session here; it serves debug_symbol_info, debug_symbol_value and debug_dump_symbol_ihex from the last flashed ELF.".to_owned()
            } else {
                format!(
                    "Typed debug sessions need the OpenOCD backend (or the emulated board), not {}.",
                    kind.as_str()
                )
            },
        )
    };
    Ok(debugger_info::addressed(
        bound, action, also, resources, work,
    ))
}

/// What a start does on its debugger beyond attaching: `reset_halt` resets the target, `load` also
/// writes the ELF into flash; an `artifact_id` uses the upload store.
fn start_uses<'a>(ctx: &Context<'_>, name: &'a str, debugger: &Debugger) -> Vec<DeviceUse<'a>> {
    let device = debugger_info::device(name, debugger);
    let mode = ctx.args.arg_str("mode");
    let mut uses = Vec::new();
    if matches!(mode, Some("reset_halt" | "load")) {
        uses.push(DeviceUse::on(device, Action::Reset));
    }
    if mode == Some("load") {
        uses.push(DeviceUse::on(device, Action::Flash { reset_after: false }));
    }
    if ctx.args.get("artifact_id").is_some() {
        uses.push(super::probe::uploaded_artifact(ctx));
    }
    uses
}

fn invalid(tool: ToolId, summary: &str) -> Box<Outcome> {
    Box::new(
        Outcome::refused(tool, ErrorType::InvalidArgument, summary)
            .with_remediation(["Correct the arguments as the tool's input schema describes."])
            .not_contacted(),
    )
}

/// gdb's location for a breakpoint argument, and whether it is a source line.
pub fn location(arg: Option<&Value>) -> Option<(String, bool)> {
    match arg? {
        Value::String(symbol) => Some((symbol.clone(), false)),
        Value::Object(map) => {
            if let Some(symbol) = map
                .get("symbol")
                .or_else(|| map.get("function"))
                .and_then(Value::as_str)
            {
                return Some((symbol.to_owned(), false));
            }
            // gdb's MI reads an argument starting with `-` as an option of -break-insert, even
            // quoted, and fails the call as a debugger error after the session was reached.
            let file = map.get("file")?.as_str()?;
            if file.starts_with('-') {
                return None;
            }
            let line = map.get("line")?.as_u64()?;
            Some((format!("{file}:{line}"), true))
        }
        _ => None,
    }
}

fn symbol_of(arg: Option<&Value>) -> &str {
    match arg {
        Some(Value::String(symbol)) => symbol,
        Some(Value::Object(map)) => map
            .get("symbol")
            .or_else(|| map.get("function"))
            .and_then(Value::as_str)
            .unwrap_or(""),
        _ => "",
    }
}

/// The per-call wait: the argument floored at 0.1 s, never above `ceiling`.
pub(super) fn wait_of(args: &Value, ceiling: Duration) -> Duration {
    match args.arg_f64("timeout_s") {
        Some(secs) => Duration::try_from_secs_f64(secs.max(0.1))
            .unwrap_or(ceiling)
            .min(ceiling),
        None => ceiling,
    }
}

/// The gdb a debug session runs. One removed since the server pinned it is found missing here,
/// before the debug server starts and takes the probe, as the reference finds it.
fn pinned_gdb(
    loaded: &ahil_config::LoadedConfig,
    tool: ToolId,
    backend: &str,
) -> Result<std::path::PathBuf, Box<Outcome>> {
    match &loaded.executables.gdb {
        Some(ExecutableState::Pinned { path }) if path.is_file() => Ok(path.clone()),
        pinned => {
            let summary = if matches!(pinned, Some(ExecutableState::Pinned { .. })) {
                "The gdb `debug.gdb_executable` was pinned to when this server started is no longer there."
            } else {
                "Debug sessions need gdb (gdb-multiarch or arm-none-eabi-gdb), and none was found."
            };
            Err(Box::new(
                Outcome::refused(tool, ErrorType::GdbNotFound, summary)
                    .with("backend", backend)
                    .with("field", "debug.gdb_executable")
                    .with_remediation(["Install it with scripts/setup-debian.sh, or have the operator name it in `debug.gdb_executable`; then restart the server."])
                    .not_contacted(),
            ))
        }
    }
}

fn session_work<'a>(
    ctx: &'a Context<'a>,
    tool: ToolId,
    name: &str,
    debugger: &Debugger,
) -> Result<Work<'a>, Box<Outcome>> {
    let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    let sessions = Arc::clone(&ctx.debug);
    let args = ctx.args.clone();
    if tool == ToolId::DebugStartSession {
        let config = &ctx.loaded.config;
        let backend = debugger.kind.as_str();
        let elf = ArtifactUse::from_args(
            tool,
            &args,
            Purpose::DebugElf,
            ArtifactPolicy::from_config(config),
        )?;
        let gdb = pinned_gdb(ctx.loaded, tool, backend);
        let openocd = if debugger.kind == DebuggerType::Openocd {
            let Some(executable) = pinned_debugger_executable(ctx.loaded, name) else {
                return Ok(missing_program(
                    elf,
                    Outcome::refused(
                        tool,
                        ErrorType::DebuggerNotFound,
                        "No OpenOCD executable is available for this debugger, so no debug server can start.",
                    )
                    .with("backend", backend)
                    .with_remediation(["Install OpenOCD, or name it in `debuggers.<name>.executable`, then restart the server."])
                    .not_contacted(),
                ));
            };
            Some(executable)
        } else {
            None
        };
        // The debugger's own program is named first, as the reference does.
        let gdb = match gdb {
            Ok(gdb) => gdb,
            Err(refusal) => return Ok(missing_program(elf, *refusal)),
        };
        let server = if let Some(executable) = openocd {
            ServerKind::OpenOcd {
                openocd: OpenOcd::new(
                    CliSettings {
                        executable,
                        probe_id: debugger.probe_id.clone(),
                        timeout,
                    },
                    &debugger.interface_cfg,
                    &debugger.target_cfg,
                ),
                gdb,
            }
        } else if debugger.kind == DebuggerType::Stlink {
            let Some(server) = ctx
                .loaded
                .executables
                .gdb_servers
                .get(name)
                .and_then(ExecutableState::path)
            else {
                return Err(invalid(tool, "This debugger has no gdb server pinned."));
            };
            ServerKind::Stlink {
                server: StlinkGdbServer::new(
                    server.to_path_buf(),
                    pinned_debugger_executable(ctx.loaded, name).as_deref(),
                    debugger.probe_id.as_deref(),
                    debugger.interface == Interface::Swd,
                ),
                gdb,
            }
        } else {
            let Some(dir) = config.board_dir(name) else {
                return Err(invalid(tool, "This debugger has no board directory."));
            };
            ServerKind::Qemu(QemuProbe::new(dir, gdb, debugger.qemu_machine()))
        };
        let mode = args.arg_str("mode").unwrap_or("attach").to_owned();
        // The argument may shorten the entry's timeout, never lengthen it.
        let timeout = wait_of(&args, timeout);
        let start = Start {
            server,
            mode,
            timeout,
            lock_keys: debugger_keys(
                debugger,
                pinned_debugger_executable(ctx.loaded, name).as_deref(),
            ),
            debugger: name.to_owned(),
            host: Host::new(
                crate::audit::Audit::for_config(ctx.loaded),
                ctx.ownership,
                &sessions,
            ),
        };
        return Ok(super::staged_job(
            elf,
            timeout * 2 + MARGIN,
            move |staged, cancel| start.run(staged, cancel),
        ));
    }
    let limits = ops::Limits {
        max_dump: ctx.loaded.config.debug.max_dump_size_bytes,
        // Checked now, answered inside the work: policy decides first.
        output: (tool == ToolId::DebugDumpSymbolIhex).then(|| {
            debug::output::check(
                tool.name(),
                &ctx.loaded.config,
                args.arg_str("output_path").unwrap_or_default(),
            )
        }),
    };
    let deadline = match tool {
        ToolId::DebugContinue => wait_of(&args, timeout) + STEP_MAX + MARGIN * 2,
        _ => timeout.min(STEP_MAX) * 3 + MARGIN,
    };
    Ok(Work::Driver(DriverJob {
        deadline,
        if_abandoned: Contact::Possible,
        run: Box::new(move |cancel| ops::run(tool, &sessions, &args, timeout, &limits, &cancel)),
    }))
}

mod servers;
/// How a server's failure is told (RTT's OpenOCD server reports it as the gdb server does).
pub(super) use servers::{openocd_exit, tail_lines};
mod start;

#[cfg(test)]
pub(super) use start::test_kind;
use start::{ServerKind, Start, missing_program};

/// The `value` of a `-data-evaluate-expression` answer.
pub fn evaluated(results: &[(String, gdbmi::Value)]) -> Option<String> {
    gdbmi::find(results, "value")
        .and_then(gdbmi::Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::start::Progress;
    use super::*;

    fn failed(mode: &str, steps: &[&str], failing: &str, timed_out: bool) -> Acted {
        let mut progress = Progress::new(mode);
        progress.phase = "server_ready";
        for step in steps {
            progress.before(step);
            progress.after(step);
        }
        progress.before(failing);
        progress.failed(
            Outcome::refused("debug_start_session", ErrorType::DebuggerError, "x"),
            timed_out,
        )
    }

    #[test]
    fn a_breakpoint_file_gdb_would_read_as_an_option_is_no_location() {
        let at = |file: &str| location(Some(&serde_json::json!({"file": file, "line": 5})));
        assert_eq!(at("src/main.c"), Some(("src/main.c:5".to_owned(), true)));
        for file in ["-t", "-source", "--", "-c"] {
            assert_eq!(at(file), None, "{file}");
        }
    }

    #[test]
    fn an_attach_that_never_reached_the_target_changed_nothing() {
        let mut progress = Progress::new("attach");
        progress.phase = "server_spawned";
        let acted = progress.failed(
            Outcome::refused("t", ErrorType::AdapterNotFound, "x"),
            false,
        );
        assert_eq!(
            acted.outcome.side_effect_status,
            Some(SideEffectStatus::NotStarted)
        );
        assert_eq!(acted.outcome.retry_safe, Some(true));
        assert_eq!(acted.outcome.details["load_phase"], "server_spawned");
        assert!(matches!(acted.contact, Some(Contact::None { .. })));
    }

    #[test]
    fn a_reset_halt_start_that_failed_anywhere_is_unknown_and_needs_cleanup() {
        let mut progress = Progress::new("reset_halt");
        progress.phase = "server_spawned";
        let acted = progress.failed(Outcome::refused("t", ErrorType::Timeout, "x"), true);
        assert_eq!(
            acted.outcome.side_effect_status,
            Some(SideEffectStatus::Unknown)
        );
        assert_eq!(acted.outcome.retry_safe, Some(false));
        assert_eq!(acted.outcome.cleanup_required, Some(true));
        assert_eq!(acted.outcome.hardware_state, None);
    }

    #[test]
    fn a_download_that_began_left_the_flash_partial_or_unknown() {
        let connect = "-target-select extended-remote localhost:1";
        let reset = "-interpreter-exec console \"monitor reset halt\"";
        let acted = failed("load", &[connect, reset], "-target-download", false);
        assert_eq!(
            acted.outcome.side_effect_status,
            Some(SideEffectStatus::Partial)
        );
        assert_eq!(acted.outcome.side_effect_committed, Some(true));
        assert_eq!(acted.outcome.hardware_state, Some(HardwareState::Unknown));
        assert_eq!(acted.outcome.details["load_phase"], "download_started");
        assert_eq!(
            acted.outcome.details["firmware_load_status"],
            "partial_or_unknown"
        );
        let acted = failed("load", &[connect, reset, "-target-download"], reset, true);
        assert_eq!(
            acted.outcome.side_effect_status,
            Some(SideEffectStatus::Unknown)
        );
        assert_eq!(
            acted.outcome.details["load_phase"],
            "post_load_reset_started"
        );
        assert_eq!(acted.outcome.details["firmware_load_status"], "committed");
        assert_eq!(acted.outcome.details["command_timed_out"], true);
    }

    #[test]
    fn an_attach_that_failed_after_connecting_is_unknown() {
        let acted = failed(
            "attach",
            &["-target-select extended-remote localhost:1"],
            "-gdb-set x",
            false,
        );
        assert_eq!(
            acted.outcome.side_effect_status,
            Some(SideEffectStatus::Unknown)
        );
        assert_eq!(acted.outcome.details["load_phase"], "target_connected");
    }
}
