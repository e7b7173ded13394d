//! The `debug_start_session` job: reach the debug server, take the debugger, start gdb, register the
//! session.

use super::servers::{start_openocd, start_stlink};
#[allow(clippy::wildcard_imports)]
use super::*;

/// The debug server a session starts against.
pub(super) enum ServerKind {
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
pub(super) enum Pending<'a> {
    /// The board answered; its stub needs nothing started.
    Board(Box<Reached>),
    /// OpenOCD starts once the lock is held.
    OpenOcd(&'a OpenOcd, &'a std::path::PathBuf),
    /// ST-LINK_gdbserver starts once the lock is held.
    Stlink(&'a StlinkGdbServer, &'a std::path::PathBuf),
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
        Work::Local(Box::new(move || Acted {
            outcome,
            contact: Some(Contact::none("nothing was started")),
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
    pub(super) label: String,
    pub(super) audit: crate::audit::Audit,
    pub(super) ownership: Arc<Ownership>,
    pub(super) sessions: Arc<Sessions>,
}

impl Start {
    /// The debug server to reach: the emulated board must answer before anything is claimed (and
    /// its socket path be one gdb takes as a remote); OpenOCD and ST-LINK start under the lock.
    pub(super) fn pending(&self, budget: &Budget) -> Result<Pending<'_>, Box<Acted>> {
        const TOOL: ToolId = ToolId::DebugStartSession;
        let refused = |outcome: Outcome, why: &'static str| Acted {
            outcome,
            contact: Some(Contact::none(why)),
        };
        // The emulated board must answer before anything is claimed; OpenOCD starts under the lock.
        let pending = match &self.server {
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

    /// The refusal while a session is open: one debug session per gate.
    pub(super) fn already_active(&self) -> Option<Acted> {
        let live = self.sessions.get()?;
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

    pub(super) fn run(self, staged: StagedArtifact) -> Acted {
        const TOOL: ToolId = ToolId::DebugStartSession;
        let refused = |outcome: Outcome, why: &'static str| Acted {
            outcome,
            contact: Some(Contact::none(why)),
        };
        if let Some(open) = self.already_active() {
            return open;
        }
        let header = std::fs::read(staged.path())
            .map(|bytes| bytes.into_iter().take(8).collect::<Vec<u8>>())
            .unwrap_or_default();
        let budget = Budget::new(self.timeout);
        let backend = self.server.backend();
        let pending = match self.pending(&budget) {
            Ok(pending) => pending,
            Err(acted) => return *acted,
        };
        // Declared before the server and gdb, so on every early return they go first and the
        // device is given back only once nothing of ours drives it.
        let locks = match crate::actions::take_session_locks(
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
        let gdb = match Gdb::spawn(&gdb_path) {
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
        let commands = start_commands(&self.mode, staged.path(), &remote, &reset_halt);
        let (gdb, server) =
            match run_start_commands(gdb, server, &commands, step, backend, &mut progress) {
                Ok(held) => held,
                Err(acted) => return *acted,
            };
        let server = progress.recorded_in(server);
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
        started(&self.sessions, live, backend)
    }
}

/// The gdb commands that open a session: settings, the ELF, the remote, and for `reset_halt` and
/// `load` the resets (and the download) the mode asks for.
pub(super) fn start_commands(
    mode: &str,
    elf: &std::path::Path,
    remote: &str,
    reset_halt: &[String],
) -> Vec<String> {
    let mut commands = vec![
        "-gdb-set mi-async on".to_owned(),
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
                ToolId::DebugStartSession,
                ErrorType::DebuggerError,
                format!(
                    "gdb refused a start step: {}.",
                    message.lines().next().unwrap_or_default()
                ),
            )
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

/// The answer to a start that reached a halted target, once its session is registered.
pub(super) fn started(sessions: &debug::Sessions, live: Live, backend: &str) -> Acted {
    let mut outcome = Outcome::ok(
        ToolId::DebugStartSession,
        "Debug session started and target is halted.",
    )
    .with("backend", backend)
    .with("mode", live.mode.as_str())
    .with("artifact", live.elf.report().clone())
    .with("session", live.describe())
    .with("target_state", "halted");
    outcome.log_path = Some(live.log_path.clone());
    sessions.insert(live);
    Acted {
        outcome,
        contact: Some(Contact::Made),
    }
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
    pub(super) fn recorded_in(&self, server: Server) -> Server {
        match server {
            Server::OpenOcd { process, port, .. } => Server::OpenOcd {
                process,
                port,
                load_phase: self.phase,
                firmware_load_status: self.firmware,
            },
            Server::Stlink { process, port, .. } => Server::Stlink {
                process,
                port,
                load_phase: self.phase,
                firmware_load_status: self.firmware,
            },
            qemu @ Server::Qemu { .. } => qemu,
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

    pub(super) fn before(&mut self, command: &str) {
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

    pub(super) fn after(&mut self, command: &str) {
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
