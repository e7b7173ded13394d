//! The typed debug tools: a GDB/MI session held across calls (`debug/`), started halted, driven one MI
//! command at a time, and stopped with the core halted and gdb disconnected (never detached: QEMU
//! resumes a detached core, OpenOCD runs its gdb-detach handler). The session start is the same for
//! every backend but its debug server: the emulated board's stub, or an OpenOCD or ST-LINK_gdbserver
//! started for the session on a loopback port. ST-Link entries without a gdb server, ST-Link symbol
//! reads outside a session, and probe-rs symbol reads are served from the last flashed ELF
//! (`debug/offline.rs`); other debugger types answer `not_supported`.

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
use super::debugger_info::bound_debugger;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::artifacts::{self, ArtifactPolicy, ArtifactRef, Format, StagedArtifact, Stager};
use crate::debug::{self, Live, Server, Sessions};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};
use crate::ownership::Ownership;
use crate::ownership::runs::debugger_keys;
use crate::policy::{Action, BreakpointAt, Device, DeviceUse, SymbolAllowlist};
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
    let (name, debugger) = bound_debugger(ctx)?;
    let tool = ctx.tool;
    let executable = pinned_debugger_executable(ctx.loaded, name);
    let resources = debugger_keys(debugger, executable.as_deref());
    let settings = &ctx.loaded.config.debug;
    let allowlist = SymbolAllowlist {
        allow_all_symbols: settings.allow_all_symbols,
        allowed_symbols: &settings.allowed_symbols,
    };
    let symbol = ctx.args.get("symbol").and_then(Value::as_str).unwrap_or("");
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
        _ => Action::DebugContain,
    };
    let device = Some(Device::Debugger {
        name,
        grants: debugger.permissions,
    });
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
        && matches!(tool, ToolId::DebugSymbolValue | ToolId::DebugDumpSymbolIhex)
    {
        debug::offline::work(ctx, tool, name, debugger)?
    } else if matches!(debugger.kind, DebuggerType::Qemu | DebuggerType::Openocd)
        || stlink_server.is_some()
    {
        session_work(ctx, tool, name, debugger)?
    } else {
        let kind = debugger.kind;
        Work::Local(Box::new(move || {
            super::backend_not_built(
                tool.name(),
                kind,
                if kind == DebuggerType::Stlink {
                    "Typed debug sessions on ST-Link need ST-LINK_gdbserver, and none is pinned (debuggers.<name>.gdb_server_executable); without it ST-Link serves only debug_symbol_value and debug_dump_symbol_ihex.".to_owned()
                } else if kind == DebuggerType::ProbeRs {
                    "probe-rs serves no typed debug session here; it serves debug_symbol_value and debug_dump_symbol_ihex from the last flashed ELF.".to_owned()
                } else {
                    format!(
                        "Typed debug sessions need the OpenOCD backend (or the emulated board), not {}.",
                        kind.as_str()
                    )
                },
            )
        }))
    };
    Ok(Plan {
        action,
        device,
        also,
        resources,
        work,
    })
}

/// What a start does on its debugger beyond attaching: `reset_halt` resets the target, `load` also
/// writes the ELF into flash; an `artifact_id` uses the upload store.
fn start_uses<'a>(ctx: &Context<'_>, name: &'a str, debugger: &Debugger) -> Vec<DeviceUse<'a>> {
    let device = Device::Debugger {
        name,
        grants: debugger.permissions,
    };
    let mode = ctx.args.get("mode").and_then(Value::as_str);
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
            let file = map.get("file")?.as_str()?;
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
fn wait_of(args: &Value, ceiling: Duration) -> Duration {
    match args.get("timeout_s").and_then(Value::as_f64) {
        Some(secs) => Duration::try_from_secs_f64(secs.max(0.1))
            .unwrap_or(ceiling)
            .min(ceiling),
        None => ceiling,
    }
}

fn session_work<'a>(
    ctx: &'a Context<'a>,
    tool: ToolId,
    name: &str,
    debugger: &Debugger,
) -> Result<Work<'a>, Box<Outcome>> {
    let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    let sessions = Arc::clone(ctx.debug);
    let args = ctx.args.clone();
    if tool == ToolId::DebugStartSession {
        let config = &ctx.loaded.config;
        let backend = debugger.kind.as_str();
        let gdb = match &ctx.loaded.executables.gdb {
            Some(ExecutableState::Pinned { path }) => path.clone(),
            _ => {
                return Ok(missing_program(
                    ArtifactPolicy::from_config(config),
                    args,
                    Outcome::refused(
                        tool,
                        ErrorType::DebuggerNotFound,
                        "Debug sessions need gdb (gdb-multiarch or arm-none-eabi-gdb), and none was found.",
                    )
                    .with("backend", backend)
                    .with_remediation(["Install it with scripts/setup-debian.sh, or name it in `debug.gdb_executable`."])
                    .not_contacted(),
                ));
            }
        };
        let server = if debugger.kind == DebuggerType::Openocd {
            let Some(executable) = pinned_debugger_executable(ctx.loaded, name) else {
                return Ok(missing_program(
                    ArtifactPolicy::from_config(config),
                    args,
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
        let mode = args
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("attach")
            .to_owned();
        // The argument may shorten the entry's timeout, never lengthen it.
        let timeout = wait_of(&args, timeout);
        let start = Start {
            server,
            policy: ArtifactPolicy::from_config(config),
            args,
            mode,
            timeout,
            lock_keys: debugger_keys(
                debugger,
                pinned_debugger_executable(ctx.loaded, name).as_deref(),
            ),
            label: format!("debug_session:{name}"),
            audit: crate::audit::Audit::for_config(ctx.loaded),
            ownership: Arc::clone(ctx.ownership),
            sessions,
        };
        return Ok(Work::Driver(DriverJob {
            deadline: timeout * 2 + MARGIN,
            if_abandoned: Contact::Possible,
            run: Box::new(move |_cancel| start.run()),
        }));
    }
    let limits = ops::Limits {
        max_dump: ctx.loaded.config.debug.max_dump_size_bytes,
        // Checked now, answered inside the work: policy decides first.
        output: (tool == ToolId::DebugDumpSymbolIhex).then(|| {
            debug::output::check(
                tool.name(),
                &ctx.loaded.config,
                args.get("output_path")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
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
        run: Box::new(move |_cancel| ops::run(tool, &sessions, &args, timeout, &limits)),
    }))
}

/// The debug server a session starts against.
enum ServerKind {
    /// The emulated board's stub, which `agentic-hil sim start` keeps running.
    Qemu(QemuProbe),
    /// An OpenOCD this session starts and ends.
    OpenOcd {
        openocd: OpenOcd,
        gdb: std::path::PathBuf,
    },
    /// An ST-LINK_gdbserver this session starts and ends.
    Stlink {
        server: StlinkGdbServer,
        gdb: std::path::PathBuf,
    },
}

/// The server side of a start, before the device lock is taken.
enum Pending<'a> {
    /// The board answered; its stub needs nothing started.
    Board(Box<Reached>),
    /// OpenOCD starts once the lock is held.
    OpenOcd(&'a OpenOcd, &'a std::path::PathBuf),
    /// ST-LINK_gdbserver starts once the lock is held.
    Stlink(&'a StlinkGdbServer, &'a std::path::PathBuf),
}

/// How gdb reaches a started server.
struct Reached {
    gdb: std::path::PathBuf,
    remote: String,
    reset_halt: Vec<String>,
    server: Server,
}

/// What `debug_start_session` needs, owned for the blocking job.
/// The ELF a start names, resolved and staged; a refusal proves nothing started. It runs before the
/// toolchain is looked for, so the agent first hears about what it can fix itself.
fn stage_session_elf(policy: &ArtifactPolicy, args: &Value) -> Result<StagedArtifact, Box<Acted>> {
    const TOOL: ToolId = ToolId::DebugStartSession;
    let refused = |outcome: Outcome, why: &'static str| {
        Box::new(Acted {
            outcome,
            contact: Some(Contact::none(why)),
        })
    };
    let request = match (
        args.get("image_path").and_then(Value::as_str),
        args.get("artifact_id").and_then(Value::as_str),
    ) {
        (Some(path), None) => ArtifactRef::Path(path),
        (None, Some(id)) => ArtifactRef::Id(id),
        _ => {
            return Err(refused(
                *invalid(TOOL, "Give exactly one of image_path or artifact_id."),
                "refused before anything started",
            ));
        }
    };
    let staged = Stager::process()
        .and_then(|stager| artifacts::resolve(policy, stager, request))
        .map_err(|refusal| {
            refused(
                refusal.to_outcome(TOOL.name()),
                "the image was refused before anything started",
            )
        })?;
    if staged.format() != Some(Format::Elf) {
        return Err(refused(
            Outcome::refused(
                TOOL,
                ErrorType::ArtifactValidationFailed,
                "Debug sessions require an ELF artifact with debug symbols.",
            )
            .with("artifact", staged.report().clone()),
            "the image was refused before anything started",
        ));
    }
    Ok(staged)
}

/// A start that cannot run because `outcome`'s program is missing: the image is still checked
/// first.
fn missing_program<'a>(policy: ArtifactPolicy, args: Value, outcome: Outcome) -> Work<'a> {
    Work::Local(Box::new(move || {
        if let Err(refused) = stage_session_elf(&policy, &args) {
            return *refused;
        }
        Acted {
            outcome,
            contact: Some(Contact::none("nothing was started")),
        }
    }))
}

struct Start {
    server: ServerKind,
    policy: ArtifactPolicy,
    args: Value,
    mode: String,
    timeout: Duration,
    lock_keys: Vec<String>,
    label: String,
    audit: crate::audit::Audit,
    ownership: Arc<Ownership>,
    sessions: Arc<Sessions>,
}

impl Start {
    fn run(self) -> Acted {
        const TOOL: ToolId = ToolId::DebugStartSession;
        let refused = |outcome: Outcome, why: &'static str| Acted {
            outcome,
            contact: Some(Contact::none(why)),
        };
        if let Some(live) = self.sessions.get() {
            let session = debug::lock(&live).describe();
            return refused(
                Outcome::refused(
                    TOOL,
                    ErrorType::SessionAlreadyActive,
                    "A debug session is already active.",
                )
                .with("session", session)
                .with_next_step("Use the open session, or call debug_stop_session first."),
                "the open session was left as it was",
            );
        }
        let staged = match stage_session_elf(&self.policy, &self.args) {
            Ok(staged) => staged,
            Err(refusal) => return *refusal,
        };
        let header = std::fs::read(staged.path())
            .map(|bytes| bytes.into_iter().take(8).collect::<Vec<u8>>())
            .unwrap_or_default();
        let budget = Budget::new(self.timeout);
        let backend = self.server.backend();
        // The emulated board must answer before anything is claimed; OpenOCD starts under the lock.
        let pending = match &self.server {
            ServerKind::Qemu(probe) => match probe.open_gdb(&budget) {
                Ok(target) => Pending::Board(Box::new(Reached {
                    gdb: target.gdb,
                    remote: target.remote,
                    reset_halt: target.reset_halt,
                    server: Server::Qemu {
                        qmp_socket: probe.paths().qmp_socket(),
                    },
                })),
                Err(error) => {
                    return Acted {
                        outcome: Outcome::refused(
                            TOOL,
                            ErrorType::TargetNotDetected,
                            "No emulated board answers, so no debug session was started.",
                        )
                        .with("backend", "qemu")
                        .with_remediation(["The operator starts the board with `agentic-hil sim start`, then call this tool again."]),
                        contact: Some(error.contact()),
                    };
                }
            },
            ServerKind::OpenOcd { openocd, gdb } => Pending::OpenOcd(openocd, gdb),
            ServerKind::Stlink { server, gdb } => Pending::Stlink(server, gdb),
        };
        if let Pending::Board(target) = &pending
            && (target.remote.is_empty()
                || target
                    .remote
                    .chars()
                    .any(|c| c.is_whitespace() || matches!(c, '"' | '\\' | '\'')))
        {
            return refused(
                Outcome::refused(
                    TOOL,
                    ErrorType::NotSupported,
                    "The board's socket path has characters gdb cannot take as a remote; move its board_dir.",
                )
                .with("backend", "qemu"),
                "refused before gdb started",
            );
        }
        // Declared before the server and gdb, so on every early return they go first and the
        // device is given back only once nothing of ours drives it.
        let locks = match super::take_session_locks(
            &self.ownership,
            &self.lock_keys,
            &self.label,
            TOOL.name(),
            "the device lock was refused before gdb started",
        ) {
            Ok(locks) => locks,
            Err(refused) => return *refused,
        };
        let session_id = format!("debug-{}", crate::serial::log_stamp());
        let log_name = format!("gdb-{session_id}.jsonl");
        let log_path = self.audit.log_path(&log_name);
        if let Err(err) = self.audit.append_event(
            &log_name,
            &json!({
                "event": "start",
                "session_id": session_id,
                "mode": self.mode,
                "backend": backend,
                "artifact": {"path": staged.display_path(), "sha256": staged.sha256()},
            }),
        ) {
            return refused(
                crate::audit::unavailable(TOOL.name(), &err),
                "the session log could not be written, so gdb was not started",
            );
        }
        let mut progress = Progress::new(&self.mode);
        let reached = match pending {
            Pending::Board(reached) => *reached,
            Pending::OpenOcd(openocd, gdb) => match start_openocd(
                openocd,
                gdb,
                self.mode != "attach",
                self.timeout,
                &mut progress,
            ) {
                Ok(reached) => reached,
                Err(acted) => {
                    return *acted;
                }
            },
            Pending::Stlink(server, gdb) => {
                match start_stlink(server, gdb, self.timeout, &mut progress) {
                    Ok(reached) => reached,
                    Err(acted) => {
                        return *acted;
                    }
                }
            }
        };
        let Reached {
            gdb: gdb_path,
            remote,
            reset_halt,
            server,
        } = reached;
        if let Server::OpenOcd {
            process: Some(process),
            ..
        }
        | Server::Stlink {
            process: Some(process),
            ..
        } = &server
        {
            // Best effort: the start event is already down, and the stop logs the server's output.
            let _ = self.audit.append_event(
                &log_name,
                &json!({
                    "event": "server_started",
                    "server_command": process.command_line(),
                    "gdb_port": process.port(),
                }),
            );
        }
        let mut gdb = match Gdb::spawn(&gdb_path) {
            Ok(gdb) => gdb,
            Err(error) => {
                drop(server);
                let outcome = Outcome::refused(
                    TOOL,
                    ErrorType::DebuggerNotFound,
                    format!("gdb could not be started: {error}."),
                )
                .with("backend", backend);
                return match backend {
                    "qemu" => refused(outcome, "gdb did not start"),
                    _ => progress.failed(outcome, false),
                };
            }
        };
        let step = self.timeout.min(STEP_MAX);
        let mut commands = vec![
            "-gdb-set mi-async on".to_owned(),
            "-gdb-set pagination off".to_owned(),
            "-gdb-set confirm off".to_owned(),
            format!(
                "-file-exec-and-symbols {}",
                quote(&staged.path().display().to_string())
            ),
            // gdb keeps quotes as part of a remote's name, so the socket path goes bare (checked above).
            format!("-target-select extended-remote {remote}"),
        ];
        // Reset into halt, and for `load` write the ELF and reset into halt again; gdb's register
        // cache is flushed after each reset, which gdb does not see happen.
        let mut reset = reset_halt
            .iter()
            .map(|reset| format!("-interpreter-exec console {}", quote(reset)))
            .collect::<Vec<_>>();
        reset.push(format!(
            "-interpreter-exec console {}",
            quote("maintenance flush register-cache")
        ));
        match self.mode.as_str() {
            "reset_halt" => commands.extend(reset),
            "load" => {
                commands.extend(reset.iter().cloned());
                commands.push("-target-download".to_owned());
                commands.extend(reset);
            }
            _ => {}
        }
        for command in &commands {
            progress.before(command);
            let (failed, timed_out) = match gdb.command(command, step) {
                Ok(reply) if reply.ok() => (None, false),
                Ok(reply) => (Some(reply.message()), false),
                Err(error) => (
                    Some(error.to_string()),
                    matches!(error, gdbmi::session::SessionError::Timeout { .. }),
                ),
            };
            if let Some(message) = failed {
                let connected = progress.connected;
                if connected {
                    if matches!(server, Server::OpenOcd { .. }) {
                        let _ = gdb.console(debug::DETACH_GUARD, step);
                    }
                    let _ = gdb.command("-target-disconnect", step);
                }
                drop(gdb);
                drop(server);
                let outcome = Outcome::refused(
                    TOOL,
                    ErrorType::DebuggerError,
                    format!(
                        "gdb refused a start step: {}.",
                        message.lines().next().unwrap_or_default()
                    ),
                )
                .with("backend", backend)
                .with("command", command.split(' ').next().unwrap_or_default());
                if backend == "qemu" {
                    return Acted {
                        outcome,
                        contact: Some(if connected {
                            Contact::Made
                        } else {
                            Contact::Possible
                        }),
                    };
                }
                return progress.failed(outcome, timed_out);
            }
            progress.after(command);
        }
        let server = match server {
            Server::OpenOcd { process, port, .. } => Server::OpenOcd {
                process,
                port,
                load_phase: progress.phase,
                firmware_load_status: progress.firmware,
            },
            Server::Stlink { process, port, .. } => Server::Stlink {
                process,
                port,
                load_phase: progress.phase,
                firmware_load_status: progress.firmware,
            },
            qemu @ Server::Qemu { .. } => qemu,
        };
        let live = Live {
            session_id,
            audit: self.audit.clone(),
            log_name,
            log_path,
            gdb_transcript: Vec::new(),
            mode: self.mode.clone(),
            started_at: ahil_config::time::now_millis(),
            status: "halted",
            gdb: Some(gdb),
            byte_order: debug::byte_order(&header),
            elf: staged,
            breakpoints: Vec::new(),
            next_breakpoint: 1,
            stop: None,
            server,
            locks,
            step,
            timeout: self.timeout,
        };
        let mut outcome = Outcome::ok(TOOL, "Debug session started and target is halted.")
            .with("backend", backend)
            .with("mode", self.mode.as_str())
            .with("artifact", live.elf.report().clone())
            .with("session", live.describe())
            .with("target_state", "halted");
        outcome.log_path = Some(live.log_path.clone());
        self.sessions.insert(live);
        Acted {
            outcome,
            contact: Some(Contact::Made),
        }
    }
}

/// Starts OpenOCD as the session's gdb server: `init; reset halt`, or `init; halt` for an attach.
fn start_openocd(
    openocd: &OpenOcd,
    gdb: &std::path::Path,
    reset_halt: bool,
    timeout: Duration,
    progress: &mut Progress,
) -> Result<Reached, Box<Acted>> {
    const TOOL: ToolId = ToolId::DebugStartSession;
    progress.phase = "server_spawned";
    match openocd.start_gdb_server(reset_halt, timeout) {
        Ok(process) => {
            progress.phase = "server_ready";
            let port = process.port();
            Ok(Reached {
                gdb: gdb.to_path_buf(),
                remote: process.remote(),
                reset_halt: vec!["monitor reset halt".to_owned()],
                server: Server::OpenOcd {
                    process: Some(process),
                    port,
                    load_phase: progress.phase,
                    firmware_load_status: progress.firmware,
                },
            })
        }
        Err(ServerError::Spawn(error)) => {
            progress.phase = "not_started";
            Err(Box::new(
                progress.failed(
                    Outcome::refused(
                        TOOL,
                        ErrorType::DebuggerNotFound,
                        format!("Debug server process could not be started ({error})."),
                    )
                    .with("backend", "openocd"),
                    false,
                ),
            ))
        }
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
            let class = ahil_drivers::openocd::classify(
                &text,
                openocd.interface_cfg(),
                openocd.target_cfg(),
                false,
            );
            let (error_type, _, causes) = ahil_drivers::probe_cli::public(class);
            let error_type = if class == "unknown_debugger_error" {
                "debugger_error"
            } else {
                error_type
            };
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

/// A debug server found listening beyond loopback (it was stopped before gdb connected).
fn exposed_server(
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
fn start_stlink(
    server: &StlinkGdbServer,
    gdb: &std::path::Path,
    timeout: Duration,
    progress: &mut Progress,
) -> Result<Reached, Box<Acted>> {
    const TOOL: ToolId = ToolId::DebugStartSession;
    progress.phase = "server_spawned";
    let failed = |outcome: Outcome,
                  class: &'static str,
                  tails: &ahil_drivers::openocd::gdbserver::Tails| {
        let causes: &[&str] = match class {
            "probe_not_found" | "target_not_detected" => ahil_drivers::probe_cli::public(class).2,
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
    match server.start(timeout) {
        Ok(process) => {
            progress.phase = "server_ready";
            let port = process.port();
            Ok(Reached {
                gdb: gdb.to_path_buf(),
                remote: process.remote(),
                reset_halt: vec!["monitor reset".to_owned(), "monitor halt".to_owned()],
                server: Server::Stlink {
                    process: Some(process),
                    port,
                    load_phase: progress.phase,
                    firmware_load_status: progress.firmware,
                },
            })
        }
        Err(ServerError::Spawn(error)) => {
            progress.phase = "not_started";
            Err(Box::new(progress.failed(
                Outcome::refused(
                    TOOL,
                    ErrorType::DebuggerNotFound,
                    format!("ST-LINK_gdbserver could not be started ({error})."),
                )
                .with("backend", "stlink"),
                false,
            )))
        }
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
                "target_not_detected" => "target_not_detected",
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
    fn backend(&self) -> &'static str {
        match self {
            Self::Qemu(_) => "qemu",
            Self::OpenOcd { .. } => "openocd",
            Self::Stlink { .. } => "stlink",
        }
    }
}

/// The last lines a server printed, for a result.
fn tail_lines(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(20)..]
        .iter()
        .map(|l| (*l).to_owned())
        .collect()
}

/// How far an OpenOCD session start got: what a failure may have done to the target follows from it.
struct Progress {
    attach: bool,
    phase: &'static str,
    firmware: &'static str,
    connected: bool,
}

impl Progress {
    fn new(mode: &str) -> Self {
        Self {
            attach: mode == "attach",
            phase: "not_started",
            firmware: "not_started",
            connected: false,
        }
    }

    fn before(&mut self, command: &str) {
        if command.starts_with("-target-select") {
            self.phase = "target_connect_started";
        } else if command == "-target-download" {
            self.phase = "download_started";
            self.firmware = "partial_or_unknown";
        } else if command.contains("reset") {
            self.phase = if self.firmware == "not_started" {
                "pre_load_reset_started"
            } else {
                "post_load_reset_started"
            };
        }
    }

    fn after(&mut self, command: &str) {
        if command.starts_with("-target-select") {
            self.phase = "target_connected";
            self.connected = true;
        } else if command == "-target-download" {
            self.phase = "download_confirmed";
            self.firmware = "committed";
        } else if command.contains("reset") {
            self.phase = if self.firmware == "not_started" {
                "pre_load_reset_confirmed"
            } else {
                "post_load_reset_confirmed"
            };
        }
    }

    /// A failed start with its effect: an attach that never reached the target changed nothing, a
    /// download that began left the flash partial, anything else (OpenOCD already ran `reset halt`,
    /// or gdb reached the core) is unknown.
    fn failed(&self, mut outcome: Outcome, timed_out: bool) -> Acted {
        outcome.set("load_phase", self.phase);
        outcome.set("firmware_load_status", self.firmware);
        let untouched = self.attach
            && matches!(
                self.phase,
                "not_started" | "server_spawned" | "server_ready"
            );
        if untouched {
            return Acted {
                outcome: outcome.not_started(true),
                contact: Some(Contact::none(
                    "the session only attaches, and gdb never reached the target",
                )),
            };
        }
        outcome.cleanup_required = Some(true);
        outcome.retry_safe = Some(false);
        if self.firmware != "not_started" {
            outcome.side_effect_committed = Some(true);
            outcome.side_effect_status = Some(if timed_out {
                SideEffectStatus::Unknown
            } else {
                SideEffectStatus::Partial
            });
            outcome.hardware_state = Some(HardwareState::Unknown);
            outcome.set("target_state", "unknown");
            outcome.set("command_timed_out", timed_out);
            return Acted {
                outcome,
                contact: Some(Contact::Made),
            };
        }
        outcome.side_effect_status = Some(SideEffectStatus::Unknown);
        Acted {
            outcome,
            contact: None,
        }
    }
}

/// The `value` of a `-data-evaluate-expression` answer.
pub fn evaluated(results: &[(String, gdbmi::Value)]) -> Option<String> {
    gdbmi::find(results, "value")
        .and_then(gdbmi::Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
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
