//! The `qemu` debug backend: an emulated board (run by the supervisor in [`board`]) reached through
//! the sockets in its state directory. flash = load over the GDB stub and verify by reading back;
//! reset = QMP `system_reset` with the mode honoured; probe = the stub answers.
//!
//! Contact, as the gate needs it: every action first connects to QMP. If that socket is absent or
//! refuses, nothing was sent anywhere, and the error says so with `Contact::None` and the connect
//! error as proof. Once QMP answered, a failure is `Possible` until the stub connected or a reset was
//! sent, and `Made` after.
//!
//! QEMU quirks this relies on (see the sim-bench notes): connecting gdb halts the VM; detaching resumes
//! it, so we disconnect instead and restore the run state through QMP; `system_reset` keeps a paused VM
//! paused; writes to STM32 flash over the stub always succeed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Backend;
use crate::error::{Contact, DriverError};
use crate::gdbmi::{self, Session, SessionError};
use crate::probe::{
    Answers, Budget, CoreState, DebugProbe, FlashReport, FlashRequest, GdbTarget, ImageFormat,
    ProbeInfo, ProbeReport, ResetMode, ResetReport,
};

pub mod board;
pub mod image;
pub mod memory;
pub mod qmp;

pub use board::{Board, BoardConfig, BoardError, BoardState};
pub use qmp::{Qmp, QmpError, VmStatus};

/// Per-command limit for gdb and QMP steps (further capped by the caller's budget).
const STEP: Duration = Duration::from_secs(10);
/// Bytes per `-data-read-memory-bytes` when verifying.
const READ_CHUNK: usize = 16 * 1024;

/// The files of one board's state directory, shared by the supervisor (which creates them) and the
/// driver (which only connects to them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardPaths {
    dir: PathBuf,
}

impl BoardPaths {
    /// The layout under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// QEMU's GDB stub (unix socket).
    pub fn gdb_socket(&self) -> PathBuf {
        self.dir.join("gdb.sock")
    }

    /// QMP (unix socket).
    pub fn qmp_socket(&self) -> PathBuf {
        self.dir.join("qmp.sock")
    }

    /// The stable path of the UART: a symlink to QEMU's pty.
    pub fn uart(&self) -> PathBuf {
        self.dir.join("uart")
    }

    /// Everything the UART sent, whether or not anyone had the pty open.
    pub fn uart_log(&self) -> PathBuf {
        self.dir.join("uart.log")
    }

    /// QEMU's own stdout and stderr.
    pub fn qemu_log(&self) -> PathBuf {
        self.dir.join("qemu.log")
    }

    /// The QEMU process id (also its process group).
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("qemu.pid")
    }
}

/// The qemu backend for one board.
#[derive(Debug, Clone)]
pub struct QemuProbe {
    paths: BoardPaths,
    gdb: PathBuf,
    machine: String,
}

impl QemuProbe {
    /// A driver for the board whose state directory is `state_dir`, debugged with `gdb`
    /// (`gdb-multiarch`), emulating `machine` (for the probe's description).
    pub fn new(state_dir: impl Into<PathBuf>, gdb: impl Into<PathBuf>, machine: &str) -> Self {
        Self {
            paths: BoardPaths::new(state_dir),
            gdb: gdb.into(),
            machine: machine.to_owned(),
        }
    }

    /// The board's files.
    pub fn paths(&self) -> &BoardPaths {
        &self.paths
    }

    /// The probe id: `qemu:` and the state directory's name (never the absolute path, which would put
    /// the state root into results).
    pub fn probe_id(&self) -> String {
        let name = self
            .paths
            .dir()
            .file_name()
            .map_or_else(|| "board".into(), |name| name.to_string_lossy());
        format!("qemu:{name}")
    }

    /// Connect to QMP; an unreachable socket is proof that nothing was sent.
    fn qmp(&self, budget: &Budget) -> Result<Qmp, DriverError> {
        Qmp::connect(&self.paths.qmp_socket(), budget.step(STEP)).map_err(|error| match error {
            QmpError::Unreachable(io) => DriverError::Backend {
                detail: "the simulated board is not running (start it with `agentic-hil sim start`)"
                    .into(),
                contact: Contact::none(format!(
                    "connecting to the board's QMP socket failed ({io}); nothing was sent to the board"
                )),
                exit_code: None,
                output: String::new(),
            },
            other => qmp_failure(&other, Contact::Possible),
        })
    }

    /// Start gdb and connect it to the stub. The VM is halted from here on.
    fn attach(&self, budget: &Budget, log: &mut Vec<String>) -> Result<Session, DriverError> {
        let socket = bare_path(&self.paths.gdb_socket())?;
        let mut session = Session::spawn(&self.gdb)
            .map_err(|error| DriverError::DebuggerNotFound {
                detail: format!("{}: {error}", self.gdb.display()),
                contact: Contact::none("gdb did not start, so it never connected to the board"),
            })?
            .cancel_on(budget.cancel_flag().clone());
        let steps = [
            "-gdb-set mi-async on".to_owned(),
            "-gdb-set confirm off".to_owned(),
            format!("-target-select extended-remote {socket}"),
        ];
        for step in &steps {
            let reply = session
                .command(step, budget.step(STEP))
                .map_err(|error| session_failure(&error, Contact::Possible, &session))?;
            if !reply.ok() {
                log.extend(session.transcript().iter().cloned());
                return Err(DriverError::Backend {
                    detail: format!("gdb could not reach the board's stub: {}", reply.message()),
                    contact: Contact::Possible,
                    exit_code: None,
                    output: session.transcript().join("\n"),
                });
            }
        }
        Ok(session)
    }

    /// Leave the stub without detaching (detach would resume the VM) and end gdb.
    fn release(session: Session, budget: &Budget, log: &mut Vec<String>) {
        let mut session = session;
        let _ = session.command("-target-disconnect", budget.step(STEP));
        log.extend(session.transcript().iter().cloned());
        session.close(budget.step(Duration::from_secs(2)));
    }

    /// Perform `mode` over QMP. The VM ends paused (halt, init) or running (run).
    fn reset_over_qmp(&self, mode: ResetMode, budget: &Budget) -> Result<CoreState, DriverError> {
        let mut qmp = self.qmp(budget)?;
        let halted = matches!(mode, ResetMode::Halt | ResetMode::Init);
        let result = (|| {
            if halted {
                qmp.stop()?;
            }
            qmp.system_reset()?;
            if !halted && !qmp.status()?.running {
                qmp.cont()?;
            }
            Ok::<_, QmpError>(())
        })();
        result.map_err(|error| qmp_failure(&error, Contact::Made))?;
        Ok(if halted {
            CoreState::Halted
        } else {
            CoreState::Running
        })
    }

    fn load_and_verify(
        session: &mut Session,
        request: &FlashRequest,
        segments: &[image::Segment],
        budget: &Budget,
    ) -> Result<bool, DriverError> {
        let path = bare_path(&request.image)?;
        let load = match request.format {
            ImageFormat::Elf | ImageFormat::Hex => format!("load {path}"),
            ImageFormat::Bin { base } => format!("restore {path} binary {base:#x}"),
        };
        budget.stage("download");
        let reply = session
            .console(&load, budget.step(Duration::from_mins(2)))
            .map_err(|error| session_failure(&error, Contact::Made, session))?;
        if !reply.ok() {
            return Err(DriverError::Backend {
                detail: format!("loading the image failed: {}", reply.message()),
                contact: Contact::Made,
                exit_code: None,
                output: session.transcript().join("\n"),
            });
        }
        if !request.verify {
            return Ok(false);
        }
        budget.stage("verify");
        for segment in segments {
            for (index, chunk) in segment.bytes.chunks(READ_CHUNK).enumerate() {
                let address = segment.address + (index * READ_CHUNK) as u64;
                let reply = session
                    .command(
                        &format!("-data-read-memory-bytes {address:#x} {}", chunk.len()),
                        budget.step(STEP),
                    )
                    .map_err(|error| session_failure(&error, Contact::Made, session))?;
                if !reply.ok() {
                    return Err(DriverError::Backend {
                        detail: format!("reading the image back failed: {}", reply.message()),
                        contact: Contact::Made,
                        exit_code: None,
                        output: session.transcript().join("\n"),
                    });
                }
                let read = gdbmi::memory_bytes(&reply.results);
                if read.as_deref() != Some(chunk) {
                    return Err(DriverError::Backend {
                        detail: format!(
                            "verify failed: the {} bytes at {address:#010x} differ from the image",
                            chunk.len()
                        ),
                        contact: Contact::Made,
                        exit_code: None,
                        output: session.transcript().join("\n"),
                    });
                }
            }
        }
        Ok(true)
    }
}

/// The emulated board answers with typed reports: it reads the core's state itself, where a CLI
/// backend can only show what its child printed.
#[derive(Debug, Clone, Copy)]
pub struct QemuAnswers;

impl Answers for QemuAnswers {
    type Listed = Vec<ProbeInfo>;
    type Probed = ProbeReport;
    type Flashed = FlashReport;
    type Reset = ResetReport;
}

impl DebugProbe for QemuProbe {
    type Answers = QemuAnswers;

    fn kind(&self) -> Backend {
        Backend::Qemu
    }

    fn list_probes(&self, budget: &Budget) -> Result<Vec<ProbeInfo>, DriverError> {
        // A board that is not running is simply not listed; listing proves nothing either way.
        let Ok(mut qmp) = Qmp::connect(&self.paths.qmp_socket(), budget.step(STEP)) else {
            return Ok(Vec::new());
        };
        let status = qmp.status().map_err(|error| {
            qmp_failure(
                &error,
                Contact::none("only query-status was sent; it does not touch the guest"),
            )
        })?;
        Ok(vec![ProbeInfo {
            id: self.probe_id(),
            description: format!("QEMU {} ({})", self.machine, status.status),
        }])
    }

    fn probe(&self, budget: &Budget) -> Result<ProbeReport, DriverError> {
        budget.stage("connect");
        let before = self
            .qmp(budget)?
            .status()
            .map_err(|error| qmp_failure(&error, Contact::Possible))?;
        let mut log = Vec::new();
        let mut session = self.attach(budget, &mut log)?;
        let reply = session
            .command("-data-evaluate-expression $pc", budget.step(STEP))
            .map_err(|error| session_failure(&error, Contact::Made, &session))?;
        let pc = reply
            .results
            .iter()
            .find(|(name, _)| name == "value")
            .and_then(|(_, value)| value.as_str())
            .unwrap_or("?")
            .to_owned();
        Self::release(session, budget, &mut log);
        if before.running {
            self.qmp(budget)?
                .cont()
                .map_err(|error| qmp_failure(&error, Contact::Made))?;
        }
        Ok(ProbeReport {
            probe: ProbeInfo {
                id: self.probe_id(),
                description: format!("QEMU {}", self.machine),
            },
            target: format!("cortex-m, pc={pc}"),
            state: if before.running {
                CoreState::Running
            } else {
                CoreState::Halted
            },
            log: log.join("\n"),
        })
    }

    fn flash(&self, request: &FlashRequest, budget: &Budget) -> Result<FlashReport, DriverError> {
        let bytes = std::fs::read(&request.image).map_err(|error| DriverError::Backend {
            detail: format!("the staged image could not be read: {error}"),
            contact: Contact::none("the image was read before anything connected to the board"),
            exit_code: None,
            output: String::new(),
        })?;
        let segments =
            image::segments(&bytes, request.format).map_err(|detail| DriverError::Backend {
                detail: format!("the image is not loadable: {detail}"),
                contact: Contact::none(
                    "the image was parsed before anything connected to the board",
                ),
                exit_code: None,
                output: String::new(),
            })?;
        budget.stage("connect");
        // Proof of life (and of no contact when absent) before gdb goes near the stub.
        drop(self.qmp(budget)?);
        cancelled(
            budget,
            Contact::none("cancelled before gdb connected to the board"),
        )?;
        let mut log = Vec::new();
        let mut session = self.attach(budget, &mut log)?;
        cancelled(budget, Contact::Made)?;
        let verified = Self::load_and_verify(&mut session, request, &segments, budget)?;
        Self::release(session, budget, &mut log);
        let state = match request.reset {
            Some(mode) => {
                budget.stage("reset");
                // The image is on the board already: a board that vanished before the reset was
                // still touched by this flash, whatever the reset step can prove on its own.
                self.reset_over_qmp(mode, budget)
                    .map_err(|error| with_contact(error, Contact::Made))?
            }
            None => CoreState::Halted,
        };
        Ok(FlashReport {
            bytes: segments.iter().map(|s| s.bytes.len() as u64).sum(),
            regions: segments
                .iter()
                .map(|s| (s.address, s.bytes.len() as u64))
                .collect(),
            verified,
            reset: request.reset,
            state,
            log: log.join("\n"),
        })
    }

    fn reset(&self, mode: ResetMode, budget: &Budget) -> Result<ResetReport, DriverError> {
        let state = self.reset_over_qmp(mode, budget)?;
        Ok(ResetReport {
            mode,
            state,
            log: format!("qmp: system_reset ({mode})"),
        })
    }

    fn open_gdb(&self, budget: &Budget) -> Result<GdbTarget, DriverError> {
        drop(self.qmp(budget)?);
        Ok(GdbTarget {
            gdb: self.gdb.clone(),
            remote: self.paths.gdb_socket().display().to_string(),
            reset_halt: vec!["monitor system_reset".into()],
            detach_resumes: true,
            server: None,
        })
    }
}

/// A path as gdb takes it in `target`, `load` and `restore`: bare, because some of those commands keep
/// quotes as part of the name. A path gdb would split or mangle is refused before anything starts.
fn bare_path(path: &Path) -> Result<String, DriverError> {
    let text = path.display().to_string();
    if text.is_empty()
        || text
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\\' | '\''))
    {
        return Err(DriverError::Backend {
            detail: format!("gdb cannot take this path as an argument: {text:?}"),
            contact: Contact::none("refused before gdb started"),
            exit_code: None,
            output: String::new(),
        });
    }
    Ok(text)
}

/// Stop at a safe point when the caller gave up.
fn cancelled(budget: &Budget, contact: Contact) -> Result<(), DriverError> {
    if budget.is_cancelled() {
        return Err(DriverError::Backend {
            detail: "the action was cancelled".into(),
            contact,
            exit_code: None,
            output: String::new(),
        });
    }
    Ok(())
}

/// The same failure, claiming `contact` instead.
fn with_contact(error: DriverError, contact: Contact) -> DriverError {
    match error {
        DriverError::Backend {
            detail,
            exit_code,
            output,
            ..
        } => DriverError::Backend {
            detail,
            contact,
            exit_code,
            output,
        },
        DriverError::Timeout { limit, output, .. } => DriverError::Timeout {
            limit,
            contact,
            output,
        },
        DriverError::DebuggerNotFound { detail, .. } => {
            DriverError::DebuggerNotFound { detail, contact }
        }
        io @ DriverError::Io(_) => io,
        DriverError::Classified(mut classified) => {
            classified.contact = contact;
            DriverError::Classified(classified)
        }
    }
}

fn qmp_failure(error: &QmpError, contact: Contact) -> DriverError {
    match error {
        QmpError::Timeout { limit, .. } => DriverError::Timeout {
            limit: *limit,
            contact,
            output: error.to_string(),
        },
        other => DriverError::Backend {
            detail: other.to_string(),
            contact,
            exit_code: None,
            output: String::new(),
        },
    }
}

fn session_failure(error: &SessionError, contact: Contact, session: &Session) -> DriverError {
    let output = session.transcript().join("\n");
    match error {
        SessionError::Timeout { limit, .. } => DriverError::Timeout {
            limit: *limit,
            contact,
            output,
        },
        other => DriverError::Backend {
            detail: other.to_string(),
            contact,
            exit_code: None,
            output,
        },
    }
}

#[cfg(test)]
#[path = "qemu_tests.rs"]
mod tests;
