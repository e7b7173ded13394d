//! The debug-probe driver trait: what the gate asks of any backend that can reach a target's debug port.
//!
//! One trait for OpenOCD, pyOCD, STM32CubeProgrammer (CLIs run per call), probe-rs (native, in a child
//! process) and the QEMU board (sockets of a long-lived emulator). Each method is one driver action: it
//! runs within the caller's [`Budget`], reports progress through it, and on failure returns a
//! [`DriverError`] whose [`Contact`] says what the backend *knows* about having touched the target:
//! `None` only with the backend's own proof (nothing was connected, the socket was absent, the CLI
//! refused its arguments before opening the probe), `Made` once the target answered, `Possible` in
//! between. The gate turns that into retry safety and incidents; a driver never decides policy.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::DriverError;
use crate::process::CancelFlag;
use crate::version::Backend;

/// How a reset leaves the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResetMode {
    /// Reset and let the firmware run.
    Run,
    /// Reset and halt at the reset vector, before the first instruction.
    Halt,
    /// Reset, halt, and run the backend's init scripts (OpenOCD `reset init`: clocks, flash wait
    /// states). Backends without init scripts treat it as [`ResetMode::Halt`].
    Init,
}

impl ResetMode {
    /// The name the tools and reports use (`run`, `halt`, `init`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Halt => "halt",
            Self::Init => "init",
        }
    }

    /// Parse a tool argument.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "run" => Some(Self::Run),
            "halt" => Some(Self::Halt),
            "init" => Some(Self::Init),
            _ => None,
        }
    }
}

impl fmt::Display for ResetMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The format of a firmware image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// ELF: load addresses come from the program headers.
    Elf,
    /// Intel HEX: addresses come from the records.
    Hex,
    /// Raw binary, written at `base`.
    Bin {
        /// Where the first byte goes (the flash base, for example 0x0800_0000 on STM32).
        base: u64,
    },
}

/// One image to program. The gate hands over its staged private copy, never the agent's path.
#[derive(Debug, Clone)]
pub struct FlashRequest {
    /// The staged image.
    pub image: PathBuf,
    /// Its format (the gate has already checked it).
    pub format: ImageFormat,
    /// Read back and compare after programming.
    pub verify: bool,
    /// Reset after programming, and how; `None` leaves the core as programming left it.
    pub reset: Option<ResetMode>,
}

pub use ahil_job::{Progress, stage_sink, with_stage_sink};

/// The caller's limits for one action: a deadline, a cancel flag, and where to report progress.
#[derive(Clone)]
pub struct Budget {
    deadline: Instant,
    cancel: CancelFlag,
    progress: Option<Progress>,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("left", &self.left())
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Budget {
    /// A budget of `limit` from now.
    pub fn new(limit: Duration) -> Self {
        Self {
            deadline: Instant::now() + limit,
            cancel: CancelFlag::default(),
            progress: None,
        }
    }

    /// Share this cancel flag with the caller.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancelFlag) -> Self {
        self.cancel = cancel;
        self
    }

    /// Report stages to `progress`.
    #[must_use]
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Time left (zero once expired).
    pub fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The smaller of `step` and the time left: a per-step limit that never outlives the budget.
    pub fn step(&self, step: Duration) -> Duration {
        step.min(self.left())
    }

    /// The shared cancel flag.
    pub fn cancel_flag(&self) -> &CancelFlag {
        &self.cancel
    }

    /// Whether the caller gave up.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Tell the caller which stage the action reached: this budget's own callback, else the one the
    /// thread runs under ([`with_stage_sink`]).
    pub fn stage(&self, stage: &str) {
        if let Some(progress) = self.stage_reporter() {
            progress(stage);
        }
    }

    /// Where this budget's stages go, resolved on the calling thread, for a helper thread to report
    /// to (a reader hearing a child's stage lines as they come); `None` when nobody listens.
    pub fn stage_reporter(&self) -> Option<Progress> {
        self.progress.clone().or_else(ahil_job::stage_sink)
    }
}

/// A probe (adapter) the backend can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeInfo {
    /// The backend's identifier (serial number, USB path, or the board's state directory).
    pub id: String,
    /// A short human description (`ST-LINK/V2-1`, `QEMU netduinoplus2`).
    pub description: String,
}

/// The state of the core as the backend saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreState {
    /// Executing.
    Running,
    /// Halted (by the debugger, a breakpoint, or a reset into halt).
    Halted,
    /// Not known (the backend does not report it).
    Unknown,
}

impl CoreState {
    /// `running`, `halted`, `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Halted => "halted",
            Self::Unknown => "unknown",
        }
    }
}

/// What `probe` found.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    /// The probe that answered.
    pub probe: ProbeInfo,
    /// The target's own answer (an IDCODE, `armv7e-m`, the program counter).
    pub target: String,
    /// The core's state when the probe ended (the probe leaves it as it found it).
    pub state: CoreState,
    /// The backend's transcript, for the log.
    pub log: String,
}

/// What `flash` did.
#[derive(Debug, Clone)]
pub struct FlashReport {
    /// Bytes programmed.
    pub bytes: u64,
    /// Regions programmed, as (address, length).
    pub regions: Vec<(u64, u64)>,
    /// Whether the read-back matched (false when not asked to verify).
    pub verified: bool,
    /// The reset performed afterwards.
    pub reset: Option<ResetMode>,
    /// The core's state when flash returned.
    pub state: CoreState,
    /// The backend's transcript, for the log.
    pub log: String,
}

/// What `reset` did.
#[derive(Debug, Clone)]
pub struct ResetReport {
    /// The mode performed.
    pub mode: ResetMode,
    /// The core's state afterwards.
    pub state: CoreState,
    /// The backend's transcript, for the log.
    pub log: String,
}

/// How a debug session's gdb reaches the target, and the backend's quirks it must honour.
///
/// `server` keeps a backend process (OpenOCD's gdb port, a probe-rs gdb server) alive for as long as
/// the session holds this value; dropping it ends that server and its process group.
pub struct GdbTarget {
    /// The gdb to run (`gdb-multiarch`, `arm-none-eabi-gdb`).
    pub gdb: PathBuf,
    /// What follows `-target-select extended-remote`: a socket path, `host:port`, or `| command`.
    pub remote: String,
    /// Console commands that reset the core into halt (OpenOCD: `monitor reset halt`; QEMU:
    /// `monitor system_reset`). gdb's register cache must be flushed after them.
    pub reset_halt: Vec<String>,
    /// Whether detaching lets the core run (QEMU resumes on detach; OpenOCD keeps it halted only with
    /// its gdb-detach event configured). A session that must leave the core halted disconnects instead.
    pub detach_resumes: bool,
    /// Keeps the backend's gdb server alive while the session runs.
    pub server: Option<Box<dyn std::any::Any + Send>>,
}

impl fmt::Debug for GdbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GdbTarget")
            .field("gdb", &self.gdb)
            .field("remote", &self.remote)
            .field("reset_halt", &self.reset_halt)
            .field("detach_resumes", &self.detach_resumes)
            .field("server", &self.server.is_some())
            .finish()
    }
}

/// What a kind of backend answers to each call. The CLI backends share one set
/// ([`crate::probe_cli::CliAnswers`]); the emulated board answers with its own reports.
pub trait Answers {
    /// What listing answers.
    type Listed;
    /// What a probe of the target answers.
    type Probed;
    /// What a flash answers.
    type Flashed;
    /// What a reset answers.
    type Reset;
}

/// A debug-probe backend: the emulated board and every CLI backend (OpenOCD, pyOCD,
/// STM32CubeProgrammer, esptool, probe-rs). Every method is blocking (async callers use
/// `spawn_blocking`), honours the budget, runs children in their own process groups, and reports
/// [`crate::Contact`] in its errors. Each backend answers with its own evidence: the emulated board's
/// typed reports, a CLI backend's transcripts ([`crate::probe_cli::CliProbe`]).
pub trait DebugProbe: Send + Sync {
    /// What each call answers.
    type Answers: Answers;

    /// Which toolchain this is; its names ([`Backend::config_name`], [`Backend::product`]) live there.
    fn kind(&self) -> Backend;

    /// The backend's name as the configuration spells it (`openocd`, `pyocd`, `qemu`).
    fn backend(&self) -> &'static str {
        self.kind().config_name()
    }

    /// The product name for summaries (`OpenOCD`, `QEMU`).
    fn product(&self) -> &'static str {
        self.kind().product()
    }

    /// The probes the backend can see. Listing never touches a target, so every error carries
    /// `Contact::None`.
    fn list_probes(
        &self,
        budget: &Budget,
    ) -> Result<<Self::Answers as Answers>::Listed, DriverError>;

    /// Connect to the target through the probe, identify it, and leave its state as found.
    fn probe(&self, budget: &Budget) -> Result<<Self::Answers as Answers>::Probed, DriverError>;

    /// Program an image, verify it when asked, then reset as asked.
    fn flash(
        &self,
        request: &FlashRequest,
        budget: &Budget,
    ) -> Result<<Self::Answers as Answers>::Flashed, DriverError>;

    /// Reset the target in `mode`.
    fn reset(
        &self,
        mode: ResetMode,
        budget: &Budget,
    ) -> Result<<Self::Answers as Answers>::Reset, DriverError>;

    /// Reset and halt at the reset vector (a debug session's starting point).
    fn reset_halt(
        &self,
        budget: &Budget,
    ) -> Result<<Self::Answers as Answers>::Reset, DriverError> {
        self.reset(ResetMode::Halt, budget)
    }

    /// Prepare a gdb connection for a debug session. Only the emulated board's stub is reached
    /// through the probe; the CLI backends' gdb servers are started by the session itself.
    fn open_gdb(&self, _budget: &Budget) -> Result<GdbTarget, DriverError> {
        Err(crate::probe_cli::not_supported(
            "Typed debug sessions are not available on this backend in this build.",
            serde_json::Map::new(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_budget_without_a_callback_reports_to_the_threads_sink_until_the_work_ends() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink: Progress = {
            let seen = Arc::clone(&seen);
            Arc::new(move |stage| seen.lock().expect("seen").push(stage.to_owned()))
        };
        with_stage_sink(sink, || {
            Budget::new(Duration::from_secs(1)).stage("download");
            // A budget's own callback wins over the thread's.
            Budget::new(Duration::from_secs(1))
                .with_progress(Arc::new(|_| {}))
                .stage("ignored");
        });
        Budget::new(Duration::from_secs(1)).stage("after");
        assert_eq!(*seen.lock().expect("seen"), ["download"]);
    }

    #[test]
    fn reset_modes_round_trip_through_their_names() {
        for mode in [ResetMode::Run, ResetMode::Halt, ResetMode::Init] {
            assert_eq!(ResetMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(ResetMode::parse("HALT"), None);
    }

    #[test]
    fn a_budget_step_never_outlives_the_budget() {
        let budget = Budget::new(Duration::from_millis(50));
        assert!(budget.step(Duration::from_secs(10)) <= Duration::from_millis(50));
        assert!(!budget.is_cancelled());
        budget.cancel_flag().cancel();
        assert!(budget.is_cancelled());
    }

    #[test]
    fn progress_reaches_the_caller_in_order() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let budget = Budget::new(Duration::from_secs(1)).with_progress(Arc::new(move |stage| {
            sink.lock().expect("test mutex").push(stage.to_owned());
        }));
        budget.stage("connect");
        budget.stage("download");
        assert_eq!(*seen.lock().expect("test mutex"), ["connect", "download"]);
    }
}
