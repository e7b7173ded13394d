//! The emulated board's supervisor, beside the `qemu` backend that drives it: one QEMU process per
//! state directory, started paused, with its GDB stub and QMP on private unix sockets and its UART on
//! a pty behind a stable symlink (which the serial driver opens like any other port).
//!
//! Ownership: QEMU leads its own process group and the [`Board`] that started it owns that group; on
//! [`Board::stop`] or drop the group is killed and QEMU reaped, so a test or a supervisor that unwinds
//! leaves nothing behind. Another process (the CLI's `sim status | stop`) reaches the board through
//! the state directory only: QMP for status and a clean quit, and a group kill as the last resort once
//! `/proc` confirms the pid still belongs to this board.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{BoardPaths, Qmp, QmpError, VmStatus};
use rustix::process::{Pid, Signal, kill_process, kill_process_group, test_kill_process};

/// The default emulated machine: STM32F405, present in QEMU 7.2 and 10, flash kept across resets.
pub const DEFAULT_MACHINE: &str = "netduinoplus2";

/// How long QEMU may take to open its sockets (measured: 30–120 ms).
const STARTUP: Duration = Duration::from_secs(10);
/// How long a clean QMP `quit` may take before the group is killed.
const QUIT_GRACE: Duration = Duration::from_secs(3);

/// A supervisor failure.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    /// The QEMU executable could not be started.
    #[error(
        "qemu could not be started ({program}): {source}; install it with scripts/setup-debian.sh"
    )]
    Spawn {
        /// The executable.
        program: PathBuf,
        /// The OS's reason.
        source: io::Error,
    },
    /// QEMU exited during start-up.
    #[error("qemu exited during start-up ({status}): {log}")]
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// The end of its log.
        log: String,
    },
    /// QEMU did not open its QMP socket in time.
    #[error("qemu did not open its QMP socket within {0:?}")]
    StartTimeout(Duration),
    /// A board already runs in this state directory.
    #[error("a board already runs in {0}")]
    AlreadyRunning(PathBuf),
    /// QEMU's option syntax cannot carry this state directory (a comma splits options).
    #[error("the state directory path cannot be passed to qemu (no commas or newlines): {0}")]
    UnusablePath(PathBuf),
    /// QMP failed.
    #[error(transparent)]
    Qmp(#[from] QmpError),
    /// The host refused something (state directory, log file, symlink).
    #[error("host I/O failed: {0}")]
    Io(#[from] io::Error),
}

/// Where Debian installs QEMU; a board started without a pinned one uses this.
pub const SYSTEM_QEMU: &str = "/usr/bin/qemu-system-arm";

/// What to start.
#[derive(Debug, Clone)]
pub struct BoardConfig {
    /// The `qemu-system-arm` executable.
    pub qemu: PathBuf,
    /// The QEMU machine (`netduinoplus2`).
    pub machine: String,
    /// The image to boot from (`-kernel`); `None` starts a blank board that must be flashed before it
    /// runs (a blank Cortex-M locks up and QEMU aborts).
    pub image: Option<PathBuf>,
    /// The state directory (created private if missing).
    pub state_dir: PathBuf,
}

impl BoardConfig {
    /// The system's `/usr/bin/qemu-system-arm` (never one from PATH), the default machine, no image.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            qemu: PathBuf::from(SYSTEM_QEMU),
            machine: DEFAULT_MACHINE.to_owned(),
            image: None,
            state_dir: state_dir.into(),
        }
    }

    /// Boot from `image`.
    #[must_use]
    pub fn with_image(mut self, image: impl Into<PathBuf>) -> Self {
        self.image = Some(image.into());
        self
    }

    /// The QEMU command line (for logs and for the `/proc` ownership check).
    pub fn args(&self) -> Vec<String> {
        let paths = BoardPaths::new(&self.state_dir);
        let mut args = vec![
            "-M".to_owned(),
            self.machine.clone(),
            "-display".into(),
            "none".into(),
            "-monitor".into(),
            "none".into(),
            "-nodefaults".into(),
            "-S".into(),
            "-gdb".into(),
            format!("unix:{},server=on,wait=off", paths.gdb_socket().display()),
            "-qmp".into(),
            format!("unix:{},server=on,wait=off", paths.qmp_socket().display()),
            "-chardev".into(),
            format!(
                "pty,id=uart0,path={},logfile={}",
                paths.uart().display(),
                paths.uart_log().display()
            ),
            "-serial".into(),
            "chardev:uart0".into(),
        ];
        if let Some(image) = &self.image {
            args.push("-kernel".into());
            args.push(image.display().to_string());
        }
        args
    }
}

/// Whether a board runs in a state directory, as another process sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardState {
    /// No QEMU answers there.
    NotRunning,
    /// QEMU answers QMP.
    Running {
        /// QEMU's pid (and process group), from the pid file.
        pid: Option<i32>,
        /// The VM's run state.
        status: VmStatus,
    },
}

/// A running board, owned by this process.
#[derive(Debug)]
pub struct Board {
    child: Child,
    pid: Pid,
    paths: BoardPaths,
    config: BoardConfig,
    reaped: bool,
}

/// Makes the child get SIGKILL when the thread that spawned it ends, so a supervisor killed with
/// SIGKILL cannot leave QEMU running. The module's one audited unsafe call.
///
/// Every caller keeps the `Board` on the thread that started it (the `sim supervise` main thread, a
/// test's own thread), which is what the kernel's parent-death signal follows.
#[allow(unsafe_code)]
fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, where only async-signal-safe calls
    // are allowed. It makes two raw syscalls through rustix (prctl, getppid) and allocates nothing,
    // takes no lock and touches no memory shared with the parent.
    let parent = rustix::process::getpid();
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The parent may have died before the prctl landed: then nobody would signal us.
            if rustix::process::getppid() != Some(parent) {
                return Err(io::Error::other("the supervisor exited during the start"));
            }
            Ok(())
        });
    }
}

impl Board {
    /// Start QEMU paused with `config`; returns once QMP answers and the UART link exists.
    pub fn start(config: BoardConfig) -> Result<Self, BoardError> {
        let paths = BoardPaths::new(&config.state_dir);
        let text = paths.dir().to_string_lossy();
        if text.contains(',') || text.contains('\n') {
            return Err(BoardError::UnusablePath(paths.dir().to_path_buf()));
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(paths.dir())?;
        if matches!(status(paths.dir()), BoardState::Running { .. }) {
            return Err(BoardError::AlreadyRunning(paths.dir().to_path_buf()));
        }
        for stale in [
            paths.gdb_socket(),
            paths.qmp_socket(),
            paths.uart(),
            paths.pid_file(),
        ] {
            remove_if_present(&stale)?;
        }
        let log = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
            .open(paths.qemu_log())?;
        crate::process::require_absolute(&config.qemu).map_err(|source| BoardError::Spawn {
            program: config.qemu.clone(),
            source,
        })?;
        let mut command = std::process::Command::new(&config.qemu);
        crate::process::isolate(&mut command)
            .args(config.args())
            .current_dir(paths.dir())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        die_with_parent(&mut command);
        let mut child = command.spawn().map_err(|source| BoardError::Spawn {
            program: config.qemu.clone(),
            source,
        })?;
        let pid = crate::process::group_of(&mut child).map_err(BoardError::Io)?;
        // A blank board that is let run locks up and QEMU aborts (SIGABRT); no core file for that.
        // The board is still paused (-S), so nothing can abort before this lands.
        let _ = rustix::process::prlimit(
            Some(pid),
            rustix::process::Resource::Core,
            rustix::process::Rlimit {
                current: Some(0),
                maximum: Some(0),
            },
        );
        let mut board = Self {
            child,
            pid,
            paths,
            config,
            reaped: false,
        };
        fs::write(
            board.paths.pid_file(),
            format!("{}\n", pid.as_raw_nonzero()),
        )?;
        board.wait_ready()?;
        Ok(board)
    }

    fn wait_ready(&mut self) -> Result<(), BoardError> {
        let deadline = Instant::now() + STARTUP;
        let mut qmp = loop {
            if let Some(status) = self.child.try_wait()? {
                self.reaped = true;
                return Err(BoardError::Exited {
                    status,
                    log: tail(&self.paths.qemu_log()),
                });
            }
            match Qmp::connect(&self.paths.qmp_socket(), Duration::from_secs(2)) {
                Ok(qmp) => break qmp,
                Err(QmpError::Unreachable(_)) if Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(5));
                }
                Err(QmpError::Unreachable(_)) => return Err(BoardError::StartTimeout(STARTUP)),
                Err(other) => return Err(other.into()),
            }
        };
        // QEMU 7.2 ignores `path=`; link the pty ourselves so the UART path is stable everywhere.
        if fs::symlink_metadata(self.paths.uart()).is_err()
            && let Some(pty) = qmp.chardev_pty("uart0")?
        {
            symlink(pty, self.paths.uart())?;
        }
        Ok(())
    }

    /// The board's files.
    pub fn paths(&self) -> &BoardPaths {
        &self.paths
    }

    /// What it was started with.
    pub fn config(&self) -> &BoardConfig {
        &self.config
    }

    /// QEMU's pid, which is also its process group.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw_nonzero().get()
    }

    /// A fresh QMP connection (QEMU serves one client at a time: drop it soon).
    pub fn qmp(&self) -> Result<Qmp, BoardError> {
        Ok(Qmp::connect(
            &self.paths.qmp_socket(),
            Duration::from_secs(5),
        )?)
    }

    /// Let the guest run (the board starts paused).
    pub fn run(&self) -> Result<(), BoardError> {
        Ok(self.qmp()?.cont()?)
    }

    /// The VM's run state.
    pub fn status(&self) -> Result<VmStatus, BoardError> {
        Ok(self.qmp()?.status()?)
    }

    /// Whether QEMU is still alive (reaps it if it died).
    pub fn is_alive(&mut self) -> bool {
        if self.reaped {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(_)) => {
                self.reaped = true;
                false
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// Load a new image by restarting QEMU with it (the alternative to a load over the stub). The
    /// board comes back paused, as from [`Board::start`].
    pub fn restart_with(self, image: impl Into<PathBuf>) -> Result<Self, BoardError> {
        let config = self.config.clone().with_image(image);
        self.stop()?;
        Self::start(config)
    }

    /// Block until QEMU exits (a guest `-no-reboot` shutdown, QMP `quit` from [`stop`], a crash), then
    /// clean up as [`Board::stop`] does. A supervisor process that hosts the board sits here.
    pub fn wait(mut self) -> Result<ExitStatus, BoardError> {
        let status = self.child.wait()?;
        self.reaped = true;
        self.shutdown();
        Ok(status)
    }

    /// Quit QEMU cleanly (QMP `quit`), kill its group if it lingers, reap it, and remove the sockets.
    pub fn stop(mut self) -> Result<Option<ExitStatus>, BoardError> {
        let status = self.shutdown();
        Ok(status)
    }

    fn shutdown(&mut self) -> Option<ExitStatus> {
        let mut exit = None;
        if !self.reaped {
            if let Ok(mut qmp) = Qmp::connect(&self.paths.qmp_socket(), Duration::from_secs(1)) {
                let _ = qmp.quit();
            }
            let deadline = Instant::now() + QUIT_GRACE;
            while Instant::now() < deadline {
                if let Ok(Some(status)) = self.child.try_wait() {
                    exit = Some(status);
                    self.reaped = true;
                    break;
                }
                thread::sleep(Duration::from_millis(5));
            }
        }
        // Whatever QEMU did, its group goes; kill before reaping so the id cannot be recycled.
        let _ = kill_process_group(self.pid, Signal::KILL);
        if !self.reaped {
            let _ = self.child.kill();
            exit = self.child.wait().ok();
            self.reaped = true;
        }
        for file in [
            self.paths.gdb_socket(),
            self.paths.qmp_socket(),
            self.paths.uart(),
            self.paths.pid_file(),
        ] {
            let _ = remove_if_present(&file);
        }
        exit
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        // Kill the group before reaping the leader, so the group id cannot have been recycled.
        let _ = kill_process_group(self.pid, Signal::KILL);
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
        let _ = remove_if_present(&self.paths.pid_file());
    }
}

/// Whether a board runs in `state_dir` (for a process that did not start it).
pub fn status(state_dir: &Path) -> BoardState {
    let paths = BoardPaths::new(state_dir);
    let Ok(mut qmp) = Qmp::connect(&paths.qmp_socket(), Duration::from_secs(2)) else {
        return BoardState::NotRunning;
    };
    match qmp.status() {
        Ok(status) => BoardState::Running {
            pid: read_pid(&paths),
            status,
        },
        Err(_) => BoardState::NotRunning,
    }
}

/// Stop the board in `state_dir` from another process: QMP `quit`, then, if QEMU lingers and `/proc`
/// shows the recorded pid is still this board's QEMU, SIGKILL its group. Returns whether a board ran.
pub fn stop(state_dir: &Path) -> Result<bool, BoardError> {
    let paths = BoardPaths::new(state_dir);
    let pid = read_pid(&paths).and_then(Pid::from_raw);
    let quit = match Qmp::connect(&paths.qmp_socket(), Duration::from_secs(2)) {
        Ok(mut qmp) => qmp.quit().is_ok(),
        Err(_) => false,
    };
    let Some(pid) = pid else {
        return Ok(quit);
    };
    let deadline = Instant::now() + QUIT_GRACE;
    while Instant::now() < deadline && owns(&paths, pid) {
        thread::sleep(Duration::from_millis(10));
    }
    if owns(&paths, pid) {
        let _ = kill_process_group(pid, Signal::KILL);
        let _ = kill_process(pid, Signal::KILL);
    }
    let was_running = quit || test_kill_process(pid).is_ok();
    for file in [
        paths.gdb_socket(),
        paths.qmp_socket(),
        paths.uart(),
        paths.pid_file(),
    ] {
        remove_if_present(&file)?;
    }
    Ok(was_running)
}

/// Whether `pid` is alive and is the QEMU of this state directory (its command line names our QMP
/// socket), so a recycled pid is never signalled.
pub(super) fn owns(paths: &BoardPaths, pid: Pid) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{}/cmdline", pid.as_raw_nonzero())) else {
        return false;
    };
    let needle = paths.qmp_socket().display().to_string();
    let state =
        fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).unwrap_or_default();
    // A zombie (state Z) has an empty cmdline anyway; checking both keeps the rule obvious.
    let zombie = state
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    !zombie
        && cmdline
            .split(|b| *b == 0)
            .any(|arg| String::from_utf8_lossy(arg).contains(&needle))
}

pub(super) fn read_pid(paths: &BoardPaths) -> Option<i32> {
    fs::read_to_string(paths.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|pid| *pid > 1)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// The last lines of a log, for an error message.
fn tail(path: &Path) -> String {
    let text = File::open(path)
        .and_then(|mut file| {
            let mut text = String::new();
            io::Read::read_to_string(&mut file, &mut text).map(|_| text)
        })
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_starts_paused_with_private_sockets_and_a_logged_pty() {
        let args = BoardConfig::new("/s").with_image("/fw.elf").args();
        let line = args.join(" ");
        assert!(args.contains(&"-S".to_owned()));
        assert!(line.contains("-gdb unix:/s/gdb.sock,server=on,wait=off"));
        assert!(line.contains("-qmp unix:/s/qmp.sock,server=on,wait=off"));
        assert!(line.contains("pty,id=uart0,path=/s/uart,logfile=/s/uart.log"));
        assert!(line.ends_with("-kernel /fw.elf"));
        assert!(
            !BoardConfig::new("/s")
                .args()
                .contains(&"-kernel".to_owned())
        );
    }

    #[test]
    fn a_missing_qemu_is_a_spawn_error_naming_the_install_script() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = BoardConfig::new(dir.path().join("sim"));
        config.qemu = dir.path().join("no-such-qemu");
        let error = Board::start(config).expect_err("no qemu");
        assert!(matches!(error, BoardError::Spawn { .. }), "{error:?}");
        assert!(error.to_string().contains("setup-debian.sh"));
    }

    #[test]
    fn a_state_directory_with_a_comma_is_refused_before_qemu_starts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let error = Board::start(BoardConfig::new(dir.path().join("a,b"))).expect_err("comma");
        assert!(matches!(error, BoardError::UnusablePath(_)), "{error:?}");
    }

    #[test]
    fn status_and_stop_of_an_empty_directory_find_no_board() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(status(dir.path()), BoardState::NotRunning);
        assert!(!stop(dir.path()).expect("stop"));
    }
}
