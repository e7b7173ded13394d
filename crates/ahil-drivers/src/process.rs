//! Running a backend child: its own process group, a deadline, bounded capture, and no survivors.
//!
//! Every child (debugger CLIs, gdb, bridges, qemu) goes through here. The child is made the leader of a
//! new process group, so whatever it forks stays in that group; when the leader exits, times out, is
//! cancelled, or the runner unwinds, the *whole group* is SIGKILLed and the leader reaped. A backend that
//! leaves a server or a helper running behind it (OpenOCD with a gdb port, a `sh -c '... &'`) therefore
//! cannot outlive the call that started it.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// Default cap on bytes kept per stream. Backends are chatty when they fail; a megabyte keeps every
/// diagnostic we have ever seen while bounding what a runaway child can make us hold.
pub const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;

/// How long to wait for the output pipes to close after the group was killed. A grandchild that left
/// the group (setsid) can keep a pipe open forever; we stop waiting rather than hang the gate.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How long a SIGKILLed group may take to disappear before the call returns anyway.
pub const GROUP_GONE_LIMIT: Duration = Duration::from_secs(1);

/// Called with each complete line of a child's stdout as it arrives (the line is captured as well).
#[derive(Clone)]
pub struct LineHook(Arc<dyn Fn(&str) + Send + Sync>);

impl LineHook {
    pub fn new(hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(hook))
    }
}

impl std::fmt::Debug for LineHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineHook")
    }
}

/// A child to run.
#[derive(Debug, Clone)]
pub struct Command {
    program: PathBuf,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    deadline: Duration,
    output_cap: usize,
    cancel: Option<CancelFlag>,
    on_stdout_line: Option<LineHook>,
}

impl Command {
    /// A command with a 60 s deadline and the default output cap.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            deadline: Duration::from_mins(1),
            output_cap: DEFAULT_OUTPUT_CAP,
            cancel: None,
            on_stdout_line: None,
        }
    }

    /// Hear each stdout line while the child runs (a worker's stage lines, for live progress).
    #[must_use]
    pub fn on_stdout_line(mut self, hook: LineHook) -> Self {
        self.on_stdout_line = Some(hook);
        self
    }

    /// Append one argument.
    #[must_use]
    pub fn arg(self, arg: impl Into<OsString>) -> Self {
        self.args([arg])
    }

    /// Append arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Run in this directory.
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Set one environment variable for the child.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The wall-clock budget; at expiry the whole group is killed.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The most bytes kept per stream; the rest is read and dropped so the child never blocks on a pipe.
    #[must_use]
    pub fn output_cap(mut self, cap: usize) -> Self {
        self.output_cap = cap;
        self
    }

    /// Kill the group as soon as this flag is raised (the gate raises it when the call is abandoned).
    #[must_use]
    pub fn cancel_on(mut self, flag: CancelFlag) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// The program this command runs.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The command line as one display string, for logs: arguments with whitespace, `"` or `\` are
    /// double-quoted with `\` and `"` escaped.
    pub fn display_line(&self) -> String {
        std::iter::once(self.program.as_os_str())
            .chain(self.args.iter().map(OsString::as_os_str))
            .map(|part| quote_for_log(&part.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn quote_for_log(part: &str) -> String {
    if part.is_empty()
        || part
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '\\')
    {
        format!("\"{}\"", part.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        part.to_owned()
    }
}

pub use ahil_job::{CancelFlag, CancelOnDrop};

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited by itself with this code.
    Code(i32),
    /// Ended by a signal it did not get from us.
    Signal(i32),
    /// Killed by us at the deadline.
    TimedOut,
    /// Killed by us because the call was cancelled.
    Cancelled,
}

/// The result of a finished child.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How it ended.
    pub exit: Exit,
    /// Captured stdout, at most the cap.
    pub stdout: Vec<u8>,
    /// Captured stderr, at most the cap.
    pub stderr: Vec<u8>,
    /// Whether stdout went over the cap.
    pub stdout_truncated: bool,
    /// Whether stderr went over the cap.
    pub stderr_truncated: bool,
    /// Wall time from spawn to reap.
    pub elapsed: Duration,
    /// The process group the child led (its pid).
    pub pgid: i32,
}

impl Finished {
    /// Whether the child exited by itself with code 0.
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    /// stdout decoded as UTF-8 with replacement.
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// stderr decoded as UTF-8 with replacement.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// The shell every keeper runs: a fixed system path, never the `sh` the server's PATH names.
pub const SHELL: &str = "/bin/sh";

/// The PATH every child gets: the system's own directories, fixed here. The server's PATH comes from
/// its launcher's environment (an agent's `.mcp.json` can set it), so it never reaches a child, and a
/// script's `#!/usr/bin/env python3` finds the system's interpreter, not one the workspace planted.
pub const CHILD_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment every child starts from, whatever the server's own holds: a fixed PATH, a fixed
/// UTF-8 locale (backends' output is parsed), and the account's home as HOME. Nothing else is inherited, so `PYTHONPATH`, `LD_PRELOAD`, `PYTHONSTARTUP`,
/// `GDBHISTFILE` and the like never reach a child.
pub fn child_environment() -> Vec<(OsString, OsString)> {
    let mut env = vec![
        (OsString::from("PATH"), OsString::from(CHILD_PATH)),
        (OsString::from("LANG"), OsString::from("C.UTF-8")),
    ];
    // The account's home, never the HOME the server was given: that one is the agent's to choose
    // (any folder outside the workspace, `/tmp` among them), and a backend reads its `~/.openocd`
    // and imports its Python user site.
    if let Some(home) = ahil_wire::home::account_home() {
        env.push((OsString::from("HOME"), home.as_os_str().to_owned()));
    }
    // The test seams (a probe-rs worker told to hang, say) exist only in test builds, which read
    // them in the server itself too; any other build passes none.
    if ahil_wire::TEST_SEAMS {
        env.extend(
            std::env::vars_os().filter(|(key, _)| key.to_string_lossy().starts_with("AHIL_TEST_")),
        );
    }
    env
}

/// Clears `command`'s environment and gives it [`child_environment`]; what a backend adds on top is
/// set after this.
pub fn isolate(command: &mut std::process::Command) -> &mut std::process::Command {
    command.env_clear();
    for (key, value) in child_environment() {
        command.env(key, value);
    }
    command
}

/// The directory a pinned tool is run in: its own, where vendor tools look for what they ship beside
/// them; none for a program named without one.
pub fn own_directory(executable: &Path) -> Option<&Path> {
    executable.parent().filter(|d| !d.as_os_str().is_empty())
}

/// A `std::process::Command` for a pinned tool that lives on while the caller talks to it: the
/// child environment, its own directory and its own process group, stdout and stderr piped.
pub fn piped_tool(executable: &Path, stdin: Stdio) -> io::Result<std::process::Command> {
    require_absolute(executable)?;
    let mut command = std::process::Command::new(executable);
    isolate(&mut command)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = own_directory(executable) {
        command.current_dir(dir);
    }
    Ok(command)
}

/// What this binary, started again as a helper of itself (a detached test-plan worker, a board
/// supervisor), reads to find the same configuration and log settings the server found: the
/// server's own values of these are passed on, nothing else of its environment.
pub const OWN_BINARY_VARS: [&str; 4] = [
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "AGENTIC_HIL_CONFIG",
    "AGENTIC_HIL_LOG",
];

/// [`isolate`] for this binary started again as a helper: the child environment plus
/// [`OWN_BINARY_VARS`] as the server has them.
pub fn isolate_own_binary(command: &mut std::process::Command) -> &mut std::process::Command {
    isolate(command);
    for key in OWN_BINARY_VARS {
        if let Some(value) = std::env::var_os(key) {
            command.env(key, value);
        }
    }
    command
}

/// A program is run only by an absolute path pinned at startup: a bare name would be looked up in
/// the PATH of the moment, which is not the operator's.
pub fn require_absolute(program: &Path) -> io::Result<()> {
    if program.is_absolute() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "refusing to run {}: a program is run only by its absolute pinned path",
                program.display()
            ),
        ))
    }
}

/// Why the host refused to execute a program that is there, as the reference names it:
/// `permission_denied` (no execute bit, or a `noexec` mount) or `not_an_executable_image` (not a
/// program this machine runs). `None` for every other failure to start (no such file, no pipes),
/// which stays `debugger_not_found`.
pub fn not_executable_reason(error: &io::Error) -> Option<&'static str> {
    if error.kind() == io::ErrorKind::PermissionDenied {
        Some("permission_denied")
    } else if error.raw_os_error() == Some(libc::ENOEXEC) {
        Some("not_an_executable_image")
    } else {
        None
    }
}

/// Run `command` to completion, the deadline, or cancellation. Blocking: async callers use
/// `spawn_blocking`. An `Err` means the child could not be started (not found, not executable, no
/// pipes); every started child yields `Ok`.
pub fn run(command: &Command) -> io::Result<Finished> {
    require_absolute(&command.program)?;
    let mut std_command = std::process::Command::new(&command.program);
    isolate(&mut std_command)
        .args(&command.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &command.cwd {
        std_command.current_dir(dir);
    }
    for (key, value) in &command.env {
        std_command.env(key, value);
    }
    let started = Instant::now();
    let mut child = spawn_retrying_busy_text(&mut std_command)?;
    let pgid = i32::try_from(child.id()).map_err(|_| io::Error::other("child pid out of range"))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let mut group = GroupGuard::new(child, pgid);

    let (done_tx, done_rx) = mpsc::channel();
    let out = Capture::spawn_reader(
        stdout,
        command.output_cap,
        command.on_stdout_line.clone(),
        done_tx.clone(),
    );
    let err = Capture::spawn_reader(stderr, command.output_cap, None, done_tx);

    let exit = group.wait_until(started + command.deadline, command.cancel.as_ref())?;
    // Whatever the leader did, nothing of its group survives the call: background children of a
    // script would otherwise keep running and keep our pipes open. SIGKILL lands asynchronously, so
    // a group that still had members is waited for: when the call returns, none of them runs.
    let signalled = group.kill_group();
    drop(group);
    if signalled && !wait_until_group_gone(pgid, GROUP_GONE_LIMIT) {
        tracing::warn!(
            pgid,
            "a killed process group still had live members after the wait"
        );
    }

    let drain_until = Instant::now() + DRAIN_GRACE;
    for _ in 0..2 {
        let left = drain_until.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    let (stdout, stdout_truncated) = out.snapshot();
    let (stderr, stderr_truncated) = err.snapshot();
    Ok(Finished {
        exit,
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        elapsed: started.elapsed(),
        pgid,
    })
}

/// Spawn, retrying briefly on ETXTBSY: a script written moments ago can still be open for writing in
/// a child another thread forked meanwhile (the classic fork/exec race), which clears within
/// milliseconds. Every spawner of a script (the CAN bridge too) goes through here.
pub(crate) fn spawn_retrying_busy_text(command: &mut std::process::Command) -> io::Result<Child> {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(error) if error.raw_os_error() == Some(libc::ETXTBSY) && attempts < 10 => {
                attempts += 1;
                thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Owns the child; on drop (including unwinding) the group is killed and the leader reaped.
struct GroupGuard {
    child: Child,
    pgid: i32,
    reaped: bool,
}

impl GroupGuard {
    fn new(child: Child, pgid: i32) -> Self {
        Self {
            child,
            pgid,
            reaped: false,
        }
    }

    fn wait_until(&mut self, deadline: Instant, cancel: Option<&CancelFlag>) -> io::Result<Exit> {
        let mut pause = Duration::from_millis(1);
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.reaped = true;
                return Ok(match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(signal)) => Exit::Signal(signal),
                    (None, None) => Exit::Signal(0),
                });
            }
            let ended_by_us = if cancel.is_some_and(CancelFlag::is_cancelled) {
                Some(Exit::Cancelled)
            } else if Instant::now() >= deadline {
                Some(Exit::TimedOut)
            } else {
                None
            };
            if let Some(exit) = ended_by_us {
                // Kill while the leader is still unreaped: its pid cannot be reused, so the signal
                // cannot reach a stranger's group.
                let _ = self.kill_group();
                self.child.wait()?;
                self.reaped = true;
                return Ok(exit);
            }
            thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Whether the group still had a member (a zombie counts) to signal.
    fn kill_group(&self) -> bool {
        // ESRCH (the group is already empty) is the normal case after a clean exit.
        kill_process_group(self.pgid).is_ok()
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.kill_group();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The live (not zombie) processes of group `group_id`; `None` without a readable `/proc`.
pub fn group_members(group_id: i32) -> Option<Vec<i32>> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The command name may hold spaces and parentheses: the fields start after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        if group == Some(group_id) && state != Some("Z") && state != Some("X") {
            members.push(pid);
        }
    }
    Some(members)
}

/// Waits up to `limit` until no live process is left in group `pgid`; false if one still runs then.
/// A machine without `/proc` is taken at the kill's word.
pub fn wait_until_group_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        match group_members(pgid) {
            None => return true,
            Some(live) if live.is_empty() => return true,
            Some(_) if Instant::now() >= deadline => return false,
            Some(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// SIGKILL every process in group `pgid`.
///
/// After the leader has been reaped its pid could in principle be recycled, but Linux does not hand out
/// a pid that is still in use as a process-group id, so while any member of our group lives the id is
/// still ours; once none lives the call fails with ESRCH. Reuse would need the pid space to wrap in the
/// microseconds between reap and kill.
fn kill_process_group(pgid: i32) -> io::Result<()> {
    // Group ids 0 and 1 would mean "our own group" and init's; a negative id is meaningless here.
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to signal process group <= 1",
        ));
    }
    let group = rustix::process::Pid::from_raw(pgid)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no process group 0"))?;
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL)
        .map_err(io::Error::from)
}

#[derive(Default)]
struct CaptureState {
    bytes: Vec<u8>,
    truncated: bool,
}

/// One stream's capture, filled by a reader thread.
struct Capture(Arc<Mutex<CaptureState>>);

trait Pipe: Read + Send + 'static {}
impl Pipe for ChildStdout {}
impl Pipe for ChildStderr {}

impl Capture {
    fn spawn_reader<P: Pipe>(
        pipe: Option<P>,
        cap: usize,
        hook: Option<LineHook>,
        done: mpsc::Sender<()>,
    ) -> Self {
        let state = Arc::new(Mutex::new(CaptureState::default()));
        let Some(mut pipe) = pipe else {
            let _ = done.send(());
            return Self(state);
        };
        let shared = Arc::clone(&state);
        thread::spawn(move || {
            let mut buffer = [0_u8; 8192];
            let mut lines = hook.map(|hook| LineSplitter::new(hook, cap));
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        if let Some(lines) = lines.as_mut() {
                            lines.feed(&buffer[..n]);
                        }
                        let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
                        let room = cap.saturating_sub(state.bytes.len());
                        let keep = n.min(room);
                        state.bytes.extend_from_slice(&buffer[..keep]);
                        if keep < n {
                            // Keep reading and dropping: a child blocked on a full pipe never exits.
                            state.truncated = true;
                        }
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = done.send(());
        });
        Self(state)
    }

    fn snapshot(&self) -> (Vec<u8>, bool) {
        let state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        (state.bytes.clone(), state.truncated)
    }
}

/// Hands complete lines to a hook; a line longer than the capture cap is dropped, not buffered.
struct LineSplitter {
    hook: LineHook,
    partial: Vec<u8>,
    cap: usize,
    overlong: bool,
}

impl LineSplitter {
    fn new(hook: LineHook, cap: usize) -> Self {
        Self {
            hook,
            partial: Vec::new(),
            cap,
            overlong: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte == b'\n' {
                if !self.overlong {
                    (self.hook.0)(String::from_utf8_lossy(&self.partial).trim_end_matches('\r'));
                }
                self.partial.clear();
                self.overlong = false;
            } else if self.partial.len() < self.cap {
                self.partial.push(byte);
            } else {
                self.overlong = true;
            }
        }
    }
}

/// Ends a long-lived child's process group if this process dies without ending it (SIGKILL included,
/// when no destructor runs). A tiny `sh`, in a group of its own, reads a lifeline pipe whose only
/// write end this value holds; the pipe closes when the value is dropped or this process dies, and
/// the keeper then SIGKILLs the group. Drop the keeper before reaping the group's leader: once the
/// leader is reaped its group id may be recycled, and a keeper released later would kill a stranger.
#[derive(Debug)]
pub struct GroupKeeper {
    keeper: Child,
    lifeline: Option<io::PipeWriter>,
}

impl GroupKeeper {
    /// Watches `group` (a live leader's pid); `name` is the keeper's argv[0] in `ps`.
    pub fn spawn(group: i32, name: &str) -> io::Result<Self> {
        let (reader, writer) = io::pipe()?;
        let keeper = isolate(&mut std::process::Command::new(SHELL))
            .args([
                "-c",
                "read _lifeline; kill -KILL -\"$1\" 2>/dev/null",
                name,
                &group.to_string(),
            ])
            .stdin(Stdio::from(reader))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        Ok(Self {
            keeper,
            lifeline: Some(writer),
        })
    }

    /// Watches the group `child` leads ([`group_of`]). When no keeper can start, the group is
    /// killed and the child reaped at once: a long-lived child is never left running unwatched.
    pub fn watch(child: &mut Child, group: rustix::process::Pid, name: &str) -> io::Result<Self> {
        Self::spawn(group.as_raw_nonzero().get(), name).inspect_err(|_| {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.kill();
            let _ = child.wait();
        })
    }
}

/// The process group `child` leads (it was spawned as a group leader). A pid that is no valid
/// group id leaves nothing to signal, so the child is killed and reaped instead.
pub fn group_of(child: &mut Child) -> io::Result<rustix::process::Pid> {
    let group = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    group.ok_or_else(|| {
        let _ = child.kill();
        let _ = child.wait();
        io::Error::other("child pid out of range")
    })
}

impl Drop for GroupKeeper {
    fn drop(&mut self) {
        // Killed, not released: closing the lifeline first would make it kill the group itself.
        let _ = self.keeper.kill();
        let _ = self.keeper.wait();
        self.lifeline.take();
    }
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
