//! The emulated board of a `qemu` debugger, for the CLI's `agentic-hil sim start | stop | status`.
//! Those run as the operator-only tools of `actions/sim_board.rs`; only [`board_spec`] and
//! [`supervise`] are public, for the hidden `sim supervise` child `sim_start` leaves running (the
//! binary re-executed, so its entry point must be reachable from `main`).
//!
//! The binary never depends on drivers; it reaches the drivers' board supervisor
//! (`ahil_drivers::qemu::board`) through this module. A board outlives the command that starts it:
//! `start` re-executes the binary as a small supervisor (its hidden `sim supervise` subcommand) in its
//! own session, which owns QEMU's process group and sits in [`Board::wait`]; `status` and `stop` reach it through the board directory from any process.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use ahil_config::{DebuggerType, LoadedConfig};
use ahil_drivers::qemu::{Board, BoardConfig, BoardState};

/// How long `start` waits for the supervisor's board to answer QMP.
const READY: Duration = Duration::from_secs(15);

/// The board a configuration describes.
#[derive(Debug, Clone)]
pub struct BoardSpec {
    /// The `debuggers` entry.
    pub debugger: String,
    /// The pinned `qemu-system-arm`.
    pub qemu: PathBuf,
    /// The QEMU machine.
    pub machine: String,
    /// The board's state directory (outside the workspace).
    pub dir: PathBuf,
}

/// Why a sim command cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SimCommandError {
    /// The configuration has no `qemu` debugger (or several and none was named).
    #[error("{0}")]
    NoBoard(String),
    /// The board did not come up.
    #[error("{0}")]
    Start(String),
    /// The supervisor's board failed.
    #[error(transparent)]
    Sim(#[from] ahil_drivers::qemu::BoardError),
    /// The host refused.
    #[error("host I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The `qemu` debugger of `loaded`: `name` when given, else the only one.
pub fn board_spec(loaded: &LoadedConfig, name: Option<&str>) -> Result<BoardSpec, SimCommandError> {
    let config = &loaded.config;
    let qemu: Vec<&String> = config
        .debuggers
        .iter()
        .filter(|(_, d)| d.kind == DebuggerType::Qemu)
        .map(|(n, _)| n)
        .collect();
    let chosen = match (name, qemu.as_slice()) {
        (Some(name), _) => qemu
            .iter()
            .find(|n| n.as_str() == name)
            .map(|n| n.as_str())
            .ok_or_else(|| {
                SimCommandError::NoBoard(format!("debuggers.{name} is not a `type: qemu` entry."))
            })?,
        (None, [only]) => only.as_str(),
        (None, []) => {
            return Err(SimCommandError::NoBoard(
                "No `type: qemu` debugger is configured; add one to emulate a board.".into(),
            ));
        }
        (None, _) => {
            return Err(SimCommandError::NoBoard(
                "Several `type: qemu` debuggers are configured; name one with --debugger.".into(),
            ));
        }
    };
    let entry = &config.debuggers[chosen];
    let qemu = loaded.executables.debugger(chosen).ok_or_else(|| {
        SimCommandError::NoBoard(format!(
            "debuggers.{chosen}.executable: qemu-system-arm was not found; install it with scripts/setup-debian.sh."
        ))
    })?;
    let dir = config.board_dir(chosen).ok_or_else(|| {
        SimCommandError::NoBoard(format!("debuggers.{chosen} has no board directory."))
    })?;
    Ok(BoardSpec {
        debugger: chosen.to_owned(),
        qemu: qemu.to_path_buf(),
        machine: entry.qemu_machine().to_owned(),
        dir,
    })
}

/// What `status` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// No board answers in the directory.
    Stopped,
    /// QEMU answers QMP.
    Running {
        /// QEMU's pid.
        pid: Option<i32>,
        /// `running`, `paused`, …
        vm: String,
    },
}

/// Whether the board of `spec` runs.
pub(crate) fn status(spec: &BoardSpec) -> Status {
    match ahil_drivers::qemu::board::status(&spec.dir) {
        BoardState::NotRunning => Status::Stopped,
        BoardState::Running { pid, status } => Status::Running {
            pid,
            vm: status.status,
        },
    }
}

/// Stop the board of `spec`; `Ok(false)` when none ran.
pub(crate) fn stop(spec: &BoardSpec) -> Result<bool, SimCommandError> {
    Ok(ahil_drivers::qemu::board::stop(&spec.dir)?)
}

/// The supervisor's log, beside QEMU's own.
pub(crate) fn supervisor_log(spec: &BoardSpec) -> PathBuf {
    spec.dir.join("supervisor.log")
}

/// Start the board detached: `program` (this binary) is run with `supervise_args` in its own process
/// group, its stdio on the supervisor log, and this returns once QMP answers (and, when `runs`, once
/// the supervisor has let the guest run).
pub(crate) fn start_detached(
    spec: &BoardSpec,
    program: &Path,
    supervise_args: &[String],
    runs: bool,
) -> Result<Status, SimCommandError> {
    if let Status::Running { .. } = status(spec) {
        return Err(SimCommandError::Start(
            "A board already runs for this debugger; `agentic-hil sim stop` first.".into(),
        ));
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode_private()
        .create(&spec.dir)?;
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(supervisor_log(spec))?;
    let mut child =
        ahil_drivers::process::isolate_own_binary(&mut std::process::Command::new(program))
            .args(supervise_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()?;
    let deadline = Instant::now() + READY;
    loop {
        if let Status::Running { pid, vm } = status(spec)
            && (!runs || vm != "prelaunch")
        {
            // The supervisor stays; its exit is reaped by init once this command ends.
            return Ok(Status::Running { pid, vm });
        }
        if let Some(exit) = child.try_wait()? {
            let text = std::fs::read_to_string(supervisor_log(spec)).unwrap_or_default();
            let last: Vec<&str> = text.lines().rev().take(3).collect();
            return Err(SimCommandError::Start(format!(
                "The board supervisor exited ({exit}): {}",
                last.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        if Instant::now() >= deadline {
            let _ = rustix::process::kill_process_group(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::KILL,
            );
            let _ = child.wait();
            let _ = ahil_drivers::qemu::board::stop(&spec.dir);
            return Err(SimCommandError::Start(format!(
                "The board did not answer within {} s.",
                READY.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The supervisor itself: start QEMU with `image`, let it run, and wait until it exits.
pub fn supervise(spec: &BoardSpec, image: Option<&Path>) -> Result<(), SimCommandError> {
    let mut config = BoardConfig::new(&spec.dir);
    config.qemu.clone_from(&spec.qemu);
    config.machine.clone_from(&spec.machine);
    if let Some(image) = image {
        config = config.with_image(image);
    }
    let board = Board::start(config)?;
    if image.is_some() {
        board.run()?;
    }
    let status = board.wait()?;
    eprintln!("qemu exited: {status}");
    Ok(())
}

trait PrivateDir {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateDir for std::fs::DirBuilder {
    fn mode_private(&mut self) -> &mut Self {
        std::os::unix::fs::DirBuilderExt::mode(self, 0o700)
    }
}
