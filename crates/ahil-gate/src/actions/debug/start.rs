//! The `debug_start_session` job: reach the debug server, take the debugger, start gdb, register the
//! session.

use super::servers::{start_openocd, start_stlink};
#[allow(clippy::wildcard_imports)]
use super::*;
use crate::debug::Loopback;
use crate::session_lifecycle::{
    self, Begun, Host, Registry, SessionClass, SessionKind, SessionLog,
};
use ahil_drivers::openocd::gdbserver::GdbServer;
use ahil_drivers::process::CancelFlag;
use std::borrow::Cow;

/// The debug server a session starts against; its name is the backend's in results.
#[derive(strum::IntoStaticStr)]
pub(super) enum ServerKind {
    /// The emulated board's stub, which `agentic-hil sim start` keeps running.
    #[strum(serialize = "qemu")]
    Qemu(QemuProbe),
    /// An OpenOCD this session starts and ends.
    #[strum(serialize = "openocd")]
    OpenOcd {
        openocd: OpenOcd,
        gdb: std::path::PathBuf,
    },
    /// An ST-LINK_gdbserver this session starts and ends.
    #[strum(serialize = "stlink")]
    Stlink {
        server: StlinkGdbServer,
        gdb: std::path::PathBuf,
    },
}

/// The server side of a start, before the device lock is taken.
pub(super) enum Pending {
    /// The board answered; its stub needs nothing started.
    Board(Box<Reached>),
    /// OpenOCD starts once the lock is held.
    OpenOcd(OpenOcd, std::path::PathBuf),
    /// ST-LINK_gdbserver starts once the lock is held.
    Stlink(StlinkGdbServer, std::path::PathBuf),
}

/// How gdb reaches a started server.
pub(super) struct Reached {
    pub(super) gdb: std::path::PathBuf,
    pub(super) remote: String,
    pub(super) reset_halt: Vec<String>,
    pub(super) server: Server,
}

/// A start that cannot run because `outcome`'s program is missing: the ELF is still staged (and
/// checked) first.
pub(super) fn missing_program(elf: ArtifactUse, outcome: Outcome) -> Work<'static> {
    crate::actions::after_artifact(
        elf,
        Work::Local(Box::new(move || {
            Acted::new(outcome, Contact::none("nothing was started"))
        })),
    )
}

/// What `debug_start_session` needs, owned for the blocking job; the ELF comes staged from the
/// pipeline.
pub(super) struct Start {
    pub(super) server: ServerKind,
    pub(super) mode: String,
    pub(super) timeout: Duration,
    pub(super) lock_keys: Vec<String>,
    /// The debugger's name in the configuration.
    pub(super) debugger: String,
    pub(super) host: Host<Sessions>,
}

/// The debug server to reach: the emulated board must answer before anything is claimed (and its
/// socket path be one gdb takes as a remote); OpenOCD and ST-LINK start under the lock.
pub(super) fn pending_server(server: ServerKind, budget: &Budget) -> Result<Pending, Box<Acted>> {
    const TOOL: ToolId = ToolId::DebugStartSession;
    let refused = |outcome: Outcome, why: &'static str| Acted::new(outcome, Contact::none(why));
    let pending = match server {
        ServerKind::Qemu(probe) => match probe.open_gdb(budget) {
            Ok(target) => Pending::Board(Box::new(Reached {
                gdb: target.gdb,
                remote: target.remote,
                reset_halt: target.reset_halt,
                server: Server::Qemu {
                    qmp_socket: probe.paths().qmp_socket(),
                },
            })),
            Err(error) => {
                return Err(Box::new(Acted {
                outcome: Outcome::refused(
                    TOOL,
                    ErrorType::TargetNotDetected,
                    "No emulated board answers, so no debug session was started.",
                )
                .with("backend", "qemu")
                .with_remediation(["The operator starts the board with `agentic-hil sim start`, then call this tool again."]),
                contact: Some(error.contact()),
            }));
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
        return Err(Box::new(refused(
        Outcome::refused(
            TOOL,
            ErrorType::NotSupported,
            "The board's socket path has characters gdb cannot take as a remote; move its board_dir.",
        )
        .with("backend", "qemu"),
        "refused before gdb started",
    )));
    }
    Ok(pending)
}

impl Start {
    /// The refusal while a session is open: one debug session per gate.
    pub(super) fn already_active(&self) -> Option<Acted> {
        let live = self.host.sessions.get()?;
        let session = debug::lock(&live).describe();
        Some(Acted {
            outcome: Outcome::refused(
                ToolId::DebugStartSession,
                ErrorType::SessionAlreadyActive,
                "A debug session is already active.",
            )
            .with("session", session)
            .with_next_step("Use the open session, or call debug_stop_session first."),
            contact: Some(Contact::none("the open session was left as it was")),
        })
    }

    /// Runs the start; `cancel` is the call's, which its waits watch only while the start runs.
    pub(super) fn run(self, staged: StagedArtifact, cancel: CancelFlag) -> Acted {
        if let Some(open) = self.already_active() {
            return open;
        }
        let header = std::fs::read(staged.path())
            .map(|bytes| bytes.into_iter().take(8).collect::<Vec<u8>>())
            .unwrap_or_default();
        let Self {
            server,
            mode,
            timeout,
            lock_keys,
            debugger,
            host,
            ..
        } = self;
        let backend = server.backend();
        let budget = Budget::new(timeout).with_cancel(cancel.clone());
        let pending = match pending_server(server, &budget) {
            Ok(pending) => pending,
            Err(acted) => return *acted,
        };
        let opening = Opening {
            pending: Some(pending),
            progress: Progress::new(&mode),
            session_id: format!("debug-{}", crate::serial::log_stamp()),
            mode,
            timeout,
            lock_keys,
            debugger,
            host,
            staged,
            header,
            backend,
            cancel,
        };
        let (call, host) = (opening.cancel.clone(), opening.host.clone());
        session_lifecycle::start(opening, &host, &call)
    }
}

/// A start past its checks (the image staged, the board answering): the debugger as a session
/// kind.
struct Opening {
    /// Taken by the open.
    pending: Option<Pending>,
    progress: Progress,
    session_id: String,
    mode: String,
    timeout: Duration,
    lock_keys: Vec<String>,
    debugger: String,
    host: Host<Sessions>,
    staged: StagedArtifact,
    header: Vec<u8>,
    backend: &'static str,
    /// The start call's cancel: raised by the client's `notifications/cancelled`, and by the
    /// pipeline when the call ends, so the session's gdb must not keep watching it.
    cancel: CancelFlag,
}

/// gdb on a halted target, and the server it talks to.
struct Attached {
    gdb: Gdb,
    server: Server,
}

impl SessionKind for Opening {
    type Device = Attached;
    const CLASS: SessionClass = SessionClass::Debug;

    fn holds(&self) -> (Cow<'_, str>, &[String]) {
        (Cow::from(&self.debugger), &self.lock_keys)
    }

    fn start_fields(&self) -> Value {
        json!({
            "session_id": self.session_id,
            "mode": self.mode,
            "backend": self.backend,
            "artifact": {"path": self.staged.display_path(), "sha256": self.staged.sha256()},
        })
    }

    // The log is named by the session's id, which already carries the start's stamp.
    fn log_name(&self) -> String {
        format!("{}-{}.jsonl", Self::CLASS.log_prefix(), self.session_id)
    }

    fn open(&mut self, log: &SessionLog) -> Result<Attached, Box<Acted>> {
        self.attach(log).map_err(|refused| {
            if self.cancel.is_cancelled() {
                Box::new(interrupted(*refused))
            } else {
                refused
            }
        })
    }

    fn register(self, device: Attached, begun: Begun) -> Option<Acted> {
        let live = Live {
            session_id: self.session_id,
            log: begun.log,
            gdb_transcript: Vec::new(),
            mode: self.mode,
            started_at: ahil_config::time::now_millis(),
            status: "halted",
            gdb: Some(device.gdb),
            byte_order: debug::byte_order(&self.header),
            elf: self.staged,
            breakpoints: Vec::new(),
            next_breakpoint: 1,
            stop: None,
            server: device.server,
            locks: begun.locks,
            step: self.timeout.min(STEP_MAX),
            timeout: self.timeout,
        };
        let mut outcome = Outcome::ok(
            Self::CLASS.start_tool(),
            "Debug session started and target is halted.",
        )
        .with("backend", self.backend)
        .with("mode", live.mode.as_str())
        .with("artifact", live.elf.report().clone())
        .with("session", live.describe())
        .with("target_state", "halted");
        outcome.log_path = Some(live.log.path.clone());
        self.host.sessions.register(live).ok()?;
        Some(Acted::new(outcome, Contact::Made))
    }
}

impl Opening {
    /// Reaches the server, starts gdb and runs the start commands, watching the call's cancel.
    fn attach(&mut self, log: &SessionLog) -> Result<Attached, Box<Acted>> {
        let progress = &mut self.progress;
        let reached = match self.pending.take() {
            Some(Pending::Board(reached)) => *reached,
            Some(Pending::OpenOcd(openocd, gdb)) => start_openocd(
                &openocd,
                &gdb,
                self.mode != "attach",
                self.timeout,
                progress,
                &self.cancel,
            )?,
            Some(Pending::Stlink(server, gdb)) => {
                start_stlink(&server, &gdb, self.timeout, progress, &self.cancel)?
            }
            None => return Err(Box::new(opened_twice())),
        };
        let Reached {
            gdb: gdb_path,
            remote,
            reset_halt,
            server,
        } = reached;
        if let Some(process) = server.loopback().and_then(|s| s.process.as_ref()) {
            // Best effort: the start event is already down, and the stop logs the server's output.
            let _ = log.append(&json!({
                "event": "server_started",
                "server_command": process.command_line(),
                "gdb_port": process.port(),
            }));
        }
        let mut gdb = Gdb::spawn(&gdb_path).map_err(|error| {
            // gdb is there (checked before the server started) and would not start.
            let outcome = Outcome::refused(
                Self::CLASS.start_tool(),
                ErrorType::GdbStartFailed,
                "gdb could not be started for GDB/MI, so the debug server was stopped.",
            )
            .with("backend_error", error.to_string())
            .with("backend", self.backend);
            Box::new(match self.backend {
                "qemu" => Acted::new(outcome, Contact::none("gdb did not start")),
                _ => progress.failed(outcome, false),
            })
        })?;
        let step = self.timeout.min(STEP_MAX);
        let commands = start_commands(&self.mode, self.staged.path(), &remote, &reset_halt);
        // gdb's connect and first stop end at once when the client cancels the start; the session
        // that outlives the start stops watching its flag, which the call's end raises.
        gdb.watch_cancel(Some(self.cancel.clone()));
        let (mut gdb, server) =
            run_start_commands(gdb, server, &commands, step, self.backend, progress)?;
        gdb.watch_cancel(None);
        Ok(Attached {
            gdb,
            server: progress.recorded_in(server),
        })
    }
}

/// A start its client cancelled, settled as the timeout of the step it was in: the driver's account
/// of contact and effect stands, said as `interrupted`.
fn interrupted(mut acted: Acted) -> Acted {
    acted.outcome.interrupt(
        "The client cancelled the start; gdb and its server were stopped, as at a timeout.",
    );
    acted
}

/// A start past its checks (`staged` as its ELF), for the lifecycle's tests: on the emulated board
/// in `board` through the gdb named with it, else through the OpenOCD at `openocd`.
#[cfg(test)]
pub(in crate::actions) fn test_kind(
    openocd: &std::path::Path,
    board: Option<(&std::path::Path, &std::path::Path)>,
    lock_keys: Vec<String>,
    staged: StagedArtifact,
    host: &Host<Sessions>,
) -> impl SessionKind + use<> {
    let timeout = Duration::from_secs(2);
    let (pending, backend) = if let Some((dir, gdb)) = board {
        let probe = QemuProbe::new(dir, gdb, "netduinoplus2");
        let pending = pending_server(ServerKind::Qemu(probe), &Budget::new(timeout));
        let Ok(pending) = pending else {
            panic!("the board answers");
        };
        (pending, "qemu")
    } else {
        let settings = CliSettings {
            executable: openocd.to_path_buf(),
            probe_id: None,
            timeout,
        };
        let openocd = OpenOcd::new(settings, "interface/stlink.cfg", "target/stm32f4x.cfg");
        // A gdb never reached: the server is refused first.
        let gdb = "/nonexistent/ahil-lifecycle-gdb".into();
        (Pending::OpenOcd(openocd, gdb), "openocd")
    };
    Opening {
        pending: Some(pending),
        progress: Progress::new("attach"),
        session_id: format!("debug-{}", crate::serial::log_stamp()),
        mode: "attach".to_owned(),
        timeout,
        lock_keys,
        debugger: "probe".to_owned(),
        host: host.clone(),
        staged,
        header: Vec::new(),
        backend,
        cancel: CancelFlag::default(),
    }
}

/// An open asked twice of one start: a fault in this gate, refused before anything started.
fn opened_twice() -> Acted {
    Acted {
        outcome: Outcome::refused(
            ToolId::DebugStartSession,
            ErrorType::InternalError,
            "The debug start was asked to open its server twice; nothing was started.",
        ),
        contact: Some(Contact::none("nothing was started")),
    }
}

/// The first start command: the session's interrupts need asynchronous MI.
const ASYNC_MI: &str = "-gdb-set mi-async on";

/// The gdb commands that open a session: settings, the ELF, the remote, and for `reset_halt` and
/// `load` the resets (and the download) the mode asks for.
pub(super) fn start_commands(
    mode: &str,
    elf: &std::path::Path,
    remote: &str,
    reset_halt: &[String],
) -> Vec<String> {
    let mut commands = vec![
        ASYNC_MI.to_owned(),
        "-gdb-set pagination off".to_owned(),
        "-gdb-set confirm off".to_owned(),
        format!(
            "-file-exec-and-symbols {}",
            quote(&elf.display().to_string())
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
    match mode {
        "reset_halt" => commands.extend(reset),
        "load" => {
            commands.extend(reset.iter().cloned());
            commands.push("-target-download".to_owned());
            commands.extend(reset);
        }
        _ => {}
    }
    commands
}

/// Runs the start commands in order; on a refused one gdb leaves the target (halted) and both gdb
/// and its server are stopped before the answer, so the caller's device locks go last.
pub(super) fn run_start_commands(
    mut gdb: Gdb,
    server: Server,
    commands: &[String],
    step: Duration,
    backend: &'static str,
    progress: &mut Progress,
) -> Result<(Gdb, Server), Box<Acted>> {
    for command in commands {
        progress.before(command);
        let (failed, timed_out, answered) = match gdb.command(command, step) {
            Ok(reply) if reply.ok() => (None, false, true),
            Ok(reply) => (Some(reply.message()), false, true),
            Err(error) => (
                Some(error.to_string()),
                // A cancelled wait is settled as the timeout it cut short.
                matches!(
                    error,
                    gdbmi::session::SessionError::Timeout { .. }
                        | gdbmi::session::SessionError::Cancelled { .. }
                ),
                false,
            ),
        };
        if let Some(message) = failed {
            let connected = progress.connected;
            if connected {
                if matches!(server, Server::OpenOcd(_)) {
                    let _ = gdb.console(debug::DETACH_GUARD, step);
                }
                let _ = gdb.command("-target-disconnect", step);
            }
            drop(gdb);
            drop(server);
            let first_line = message.lines().next().unwrap_or_default();
            // A session interrupts a running core only through asynchronous MI: a gdb that says
            // no to it can never run one, whatever is retried (the reference's own type for it).
            let outcome = if answered && command == ASYNC_MI {
                Outcome::refused(
                    ToolId::DebugStartSession,
                    ErrorType::GdbAsyncUnsupported,
                    "gdb refused `-gdb-set mi-async on`, and a debug session needs asynchronous MI to interrupt a running target.",
                )
                .with("backend_error", first_line)
            } else {
                Outcome::refused(
                    ToolId::DebugStartSession,
                    ErrorType::DebuggerError,
                    format!("gdb refused a start step: {first_line}."),
                )
            }
            .with("backend", backend)
            .with("command", command.split(' ').next().unwrap_or_default());
            if backend == "qemu" {
                return Err(Box::new(Acted {
                    outcome,
                    contact: Some(if connected {
                        Contact::Made
                    } else {
                        Contact::Possible
                    }),
                }));
            }
            return Err(Box::new(progress.failed(outcome, timed_out)));
        }
        progress.after(command);
    }
    Ok((gdb, server))
}

/// How far an OpenOCD session start got: what a failure may have done to the target follows from it.
pub(super) struct Progress {
    pub(super) attach: bool,
    pub(super) phase: &'static str,
    pub(super) firmware: &'static str,
    pub(super) connected: bool,
}

impl Progress {
    /// `server` with the load phase and firmware status this start reached, for the session to
    /// report.
    pub(super) fn recorded_in(&self, mut server: Server) -> Server {
        if let Server::OpenOcd(started) | Server::Stlink(started) = &mut server {
            started.load_phase = self.phase;
            started.firmware_load_status = self.firmware;
        }
        server
    }

    /// Where a start stands once `process` serves gdb: `server` wraps it as its kind, and
    /// `reset_halt` are the console commands that reset and halt the core through it.
    pub(super) fn served(
        &mut self,
        gdb: &std::path::Path,
        process: GdbServer,
        reset_halt: &[&str],
        server: fn(Loopback) -> Server,
    ) -> Reached {
        self.phase = "server_ready";
        Reached {
            gdb: gdb.to_path_buf(),
            remote: process.remote(),
            reset_halt: reset_halt
                .iter()
                .map(|&command| command.to_owned())
                .collect(),
            server: server(Loopback {
                port: process.port(),
                process: Some(process),
                load_phase: self.phase,
                firmware_load_status: self.firmware,
            }),
        }
    }

    pub(super) fn new(mode: &str) -> Self {
        Self {
            attach: mode == "attach",
            phase: "not_started",
            firmware: "not_started",
            connected: false,
        }
    }

    /// `command` is about to be sent to gdb.
    pub(super) fn before(&mut self, command: &str) {
        self.mark(command, false);
    }

    /// gdb answered `command` with success.
    pub(super) fn after(&mut self, command: &str) {
        self.mark(command, true);
    }

    /// Moves the phase for the commands that change what is known of the target: the connect, the
    /// download and a reset (before or after the load), each started and then confirmed.
    fn mark(&mut self, command: &str, confirmed: bool) {
        let (started, done) = if command.starts_with("-target-select") {
            self.connected |= confirmed;
            ("target_connect_started", "target_connected")
        } else if command == "-target-download" {
            self.firmware = if confirmed {
                "committed"
            } else {
                "partial_or_unknown"
            };
            ("download_started", "download_confirmed")
        } else if !command.contains("reset") {
            return;
        } else if self.firmware == "not_started" {
            ("pre_load_reset_started", "pre_load_reset_confirmed")
        } else {
            ("post_load_reset_started", "post_load_reset_confirmed")
        };
        self.phase = if confirmed { done } else { started };
    }

    /// A failed start with its effect: an attach that never reached the target changed nothing, a
    /// download that began left the flash partial, anything else (OpenOCD already ran `reset halt`,
    /// or gdb reached the core) is unknown.
    pub(super) fn failed(&self, mut outcome: Outcome, timed_out: bool) -> Acted {
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
