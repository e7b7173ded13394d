//! A gdb child speaking MI: tokens, one outstanding command at a time, a deadline per command, and a
//! transcript for the log. The child leads its own process group; dropping the session kills the group
//! and reaps the child, so a gdb hung on a dead stub cannot outlive the call.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::{Record, ResultClass, StreamKind, Value, parse_line};
use crate::process::CancelFlag;

/// Lines kept in the transcript; a long download's progress records would otherwise grow it unbounded.
const TRANSCRIPT_LINES: usize = 2000;

/// How a command failed to get its answer.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// gdb could not be started.
    #[error("gdb could not be started: {0}")]
    Spawn(io::Error),
    /// No result record arrived before the deadline.
    #[error("gdb gave no answer to `{command}` within {limit:?}")]
    Timeout {
        /// The command sent.
        command: String,
        /// The deadline.
        limit: Duration,
    },
    /// gdb exited (or closed its output) before answering.
    #[error("gdb exited before answering `{command}`")]
    Exited {
        /// The command sent.
        command: String,
    },
    /// Writing to gdb failed.
    #[error("writing to gdb failed: {0}")]
    Io(io::Error),
    /// The caller cancelled the action while gdb worked; gdb's group was killed.
    #[error("the action was cancelled while gdb ran `{command}`")]
    Cancelled {
        /// The command sent.
        command: String,
    },
}

/// How often a wait for gdb looks at its cancel flag: short beside any gdb step, long beside a poll.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The answer to one command.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The result class.
    pub class: ResultClass,
    /// The result record's fields.
    pub results: Vec<(String, Value)>,
    /// Console and target stream text that arrived while the command ran (monitor output, `compare-sections`).
    pub console: String,
    /// Log stream text (`&"…"`: warnings and error details).
    pub log: String,
    /// Async records that arrived while the command ran.
    pub events: Vec<Record>,
}

impl Reply {
    /// Whether the class is `done`, `running` or `connected`.
    pub fn ok(&self) -> bool {
        matches!(
            self.class,
            ResultClass::Done | ResultClass::Running | ResultClass::Connected
        )
    }

    /// The `msg` of an `^error`, or the log text.
    pub fn message(&self) -> String {
        super::find(&self.results, "msg")
            .and_then(Value::as_str)
            .map_or_else(|| self.log.trim().to_owned(), str::to_owned)
    }
}

/// The options every gdb of ours starts with: no init file (`-nx`, so no `~/.gdbinit` or
/// `./.gdbinit`), and auto-load off before any file is loaded. An ELF names scripts for gdb to run in
/// its `.debug_gdb_scripts` section (inline Python too, or a file gdb looks up in its working
/// directory, the workspace), and the image is the agent's; without this only gdb's
/// `auto-load safe-path` would refuse them, which is the build's or a wrapper's setting, not ours.
pub const GDB_START_OPTIONS: [&str; 3] = ["-nx", "-iex", "set auto-load off"];

/// A running `gdb --interpreter=mi3`.
pub struct Session {
    child: Child,
    pgid: Pid,
    stdin: ChildStdin,
    /// See [`spawn_keeper`]: ends gdb with SIGKILL if this process dies.
    keeper: Option<Child>,
    /// The only write end of the keeper's lifeline; dropping it (or dying) releases the keeper.
    _lifeline: Option<io::PipeWriter>,
    lines: Receiver<String>,
    next_token: u64,
    transcript: Vec<String>,
    cancel: Option<CancelFlag>,
}

impl Session {
    /// Start `gdb` (for example `gdb-multiarch`) with `-q --interpreter=mi3` and [`GDB_START_OPTIONS`]
    /// in its own process group.
    pub fn spawn(gdb: &Path) -> Result<Self, SessionError> {
        crate::process::require_absolute(gdb).map_err(SessionError::Spawn)?;
        let mut child = crate::process::isolate(&mut std::process::Command::new(gdb))
            .args(["--interpreter=mi3", "-q"])
            .args(GDB_START_OPTIONS)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(SessionError::Spawn)?;
        let pgid = i32::try_from(child.id())
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| SessionError::Spawn(io::Error::other("child pid out of range")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SessionError::Spawn(io::Error::other("no pipes to gdb")));
        };
        let (keeper, lifeline) = match spawn_keeper(&stdin, pgid) {
            Ok((keeper, lifeline)) => (Some(keeper), Some(lifeline)),
            Err(err) => {
                let _ = kill_process_group(pgid, Signal::KILL);
                let _ = child.kill();
                let _ = child.wait();
                return Err(SessionError::Spawn(err));
            }
        };
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            // Byte lines, decoded lossily: a stub can relay any bytes and a bad one must not end the read.
            let mut reader = BufReader::new(stdout);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buffer);
                        let line = line.trim_end_matches(['\n', '\r']).to_owned();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Self {
            child,
            pgid,
            stdin,
            keeper,
            _lifeline: lifeline,
            lines,
            next_token: 100,
            transcript: Vec::new(),
            cancel: None,
        })
    }

    /// Ends every wait for gdb early, killing gdb's group, once `flag` is raised: a flash whose
    /// caller cancelled stops in the middle of a download instead of after it.
    #[must_use]
    pub fn cancel_on(mut self, flag: CancelFlag) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Watches `flag` from now on, or nothing with `None`: a session that outlives the call that
    /// opened it must stop watching that call's flag, which is raised when the call ends.
    pub fn watch_cancel(&mut self, flag: Option<CancelFlag>) {
        self.cancel = flag;
    }

    /// The next line from gdb, within `deadline`: `Timeout` past it, `Exited` when gdb's output
    /// closed, `Cancelled` (gdb's group killed) as soon as the cancel flag is raised.
    fn next_line(&mut self, deadline: Instant) -> Result<String, Waited> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let slice = if self.cancel.is_some() {
                left.min(CANCEL_POLL)
            } else {
                left
            };
            match self.lines.recv_timeout(slice) {
                Ok(raw) => return Ok(raw),
                Err(RecvTimeoutError::Disconnected) => return Err(Waited::Exited),
                Err(RecvTimeoutError::Timeout) => {
                    if self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled) {
                        let _ = kill_process_group(self.pgid, Signal::KILL);
                        return Err(Waited::Cancelled);
                    }
                    if Instant::now() >= deadline {
                        return Err(Waited::Timeout);
                    }
                }
            }
        }
    }

    /// The process group gdb leads.
    pub fn pgid(&self) -> i32 {
        self.pgid.as_raw_nonzero().get()
    }

    /// Send one MI command (without token) and wait up to `limit` for its result record.
    pub fn command(&mut self, command: &str, limit: Duration) -> Result<Reply, SessionError> {
        let token = self.next_token;
        self.next_token += 1;
        let line = format!("{token}{command}\n");
        self.note(format!("-> {token}{command}"));
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|error| {
                if error.kind() == io::ErrorKind::BrokenPipe {
                    SessionError::Exited {
                        command: command.to_owned(),
                    }
                } else {
                    SessionError::Io(error)
                }
            })?;
        let deadline = Instant::now() + limit;
        let mut console = String::new();
        let mut log = String::new();
        let mut events = Vec::new();
        loop {
            let raw = self
                .next_line(deadline)
                .map_err(|waited| waited.into_error(command, limit))?;
            self.note(format!("<- {raw}"));
            // A line that is not MI (a stray message from a pipe child) is kept in the log, not fatal.
            let Ok(record) = parse_line(&raw) else {
                log.push_str(&raw);
                log.push('\n');
                continue;
            };
            match record {
                Record::Result {
                    token: Some(answered),
                    class,
                    results,
                } if answered == token => {
                    return Ok(Reply {
                        class,
                        results,
                        console,
                        log,
                        events,
                    });
                }
                Record::Stream { kind, text } => match kind {
                    StreamKind::Console | StreamKind::Target => console.push_str(&text),
                    StreamKind::Log => log.push_str(&text),
                },
                record @ Record::Async { .. } => events.push(record),
                Record::Result { .. } | Record::Prompt => {}
            }
        }
    }

    /// Wait up to `limit` for an async record that satisfies `wanted` (for example `*stopped` after
    /// `-exec-continue`), skipping everything else. Records that arrived during an earlier command are
    /// in that command's [`Reply::events`]; look there first.
    pub fn wait_for(
        &mut self,
        wanted: impl Fn(&Record) -> bool,
        limit: Duration,
    ) -> Result<Record, SessionError> {
        let deadline = Instant::now() + limit;
        loop {
            let raw = self
                .next_line(deadline)
                .map_err(|waited| waited.into_error("(waiting for an async record)", limit))?;
            self.note(format!("<- {raw}"));
            if let Ok(record) = parse_line(&raw)
                && wanted(&record)
            {
                return Ok(record);
            }
        }
    }

    /// A console command through `-interpreter-exec console`.
    pub fn console(&mut self, command: &str, limit: Duration) -> Result<Reply, SessionError> {
        self.command(
            &format!("-interpreter-exec console {}", super::quote(command)),
            limit,
        )
    }

    /// Everything sent and received so far (bounded), one line per record.
    pub fn transcript(&self) -> &[String] {
        &self.transcript
    }

    fn note(&mut self, line: String) {
        if self.transcript.len() < TRANSCRIPT_LINES {
            self.transcript.push(line);
        }
    }

    /// Ask gdb to exit, then kill its group whatever it did.
    pub fn close(mut self, limit: Duration) {
        let _ = self.command("-gdb-exit", limit);
    }
}

/// Why a wait for gdb's next line ended without one.
enum Waited {
    Timeout,
    Exited,
    Cancelled,
}

impl Waited {
    fn into_error(self, command: &str, limit: Duration) -> SessionError {
        let command = command.to_owned();
        match self {
            Self::Timeout => SessionError::Timeout { command, limit },
            Self::Exited => SessionError::Exited { command },
            Self::Cancelled => SessionError::Cancelled { command },
        }
    }
}

/// If the process that drives gdb dies, gdb sees EOF on its stdin and quits, and quitting detaches,
/// which resumes a halted target: a crash would leave the board running. A small keeper process
/// holds a second write end of gdb's stdin (so gdb never sees that EOF) and reads a lifeline pipe
/// whose only write end this session holds; when the lifeline ends because the driver died, the
/// keeper kills gdb's group with SIGKILL, which leaves the target as it is. It waits half a second
/// first: a gdb server (OpenOCD, ST-LINK_gdbserver) has its own keeper, and must die before gdb's
/// connection closes, since a server may resume the core when its debugger leaves.
fn spawn_keeper(gdb_stdin: &ChildStdin, gdb_group: Pid) -> io::Result<(Child, io::PipeWriter)> {
    use std::os::fd::AsFd;
    let (lifeline_reader, lifeline_writer) = io::pipe()?;
    let held_stdin = gdb_stdin.as_fd().try_clone_to_owned()?;
    let keeper = crate::process::isolate(&mut std::process::Command::new(crate::process::SHELL))
        .args([
            "-c",
            "read _lifeline; sleep 0.5; kill -KILL -\"$1\" 2>/dev/null",
            "ahil-gdb-keeper",
            &gdb_group.as_raw_nonzero().get().to_string(),
        ])
        .stdin(Stdio::from(lifeline_reader))
        .stdout(Stdio::from(held_stdin))
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok((keeper, lifeline_writer))
}

impl Drop for Session {
    fn drop(&mut self) {
        // The keeper goes first: once gdb is reaped its group id may be reused, and a keeper
        // released later would kill whatever took it.
        if let Some(keeper) = self.keeper.as_mut() {
            let _ = keeper.kill();
            let _ = keeper.wait();
        }
        // Kill while the leader is unreaped, so the group id cannot have been recycled.
        let _ = kill_process_group(self.pgid, Signal::KILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
