//! OpenOCD as a gdb server for one debug session: a loopback port reserved for it, the tcl and telnet
//! servers off, `init; halt` (or `init; reset halt`) run at start, and the whole process group killed
//! and reaped when the session lets go of it.
//!
//! If the process driving the session dies, a small keeper kills OpenOCD's group: a server left behind
//! would hold the probe, and SIGKILL leaves the core as it is (halted), where a polite shutdown might
//! let a gdb-detach handler resume it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::OpenOcd;
use crate::process;
use crate::process::{CancelFlag, GroupKeeper};

/// Bytes of each output stream kept for the log and for classifying an early exit.
const TAIL: usize = 65_536;
/// How often the port is tried while OpenOCD starts.
const POLL: Duration = Duration::from_millis(50);
/// Each try's own connect limit.
const CONNECT: Duration = Duration::from_millis(200);

/// How the server failed to come up.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No loopback port could be reserved, or OpenOCD could not be started.
    #[error("the debug server could not be started: {0}")]
    Spawn(io::Error),
    /// OpenOCD runs but did not open its gdb port in time (it was killed).
    #[error("the debug server did not open its gdb port within {0:?}")]
    NotReady(Duration, Tails),
    /// The server listens on an address other than loopback (it was stopped): a debug port must be
    /// reachable from this machine only.
    #[error("the debug server listens beyond the loopback interface: {}", addresses.join(", "))]
    Exposed {
        /// Where it listens, beyond loopback.
        addresses: Vec<String>,
        /// What it printed.
        output: Tails,
    },
    /// OpenOCD exited before its gdb port opened.
    #[error("the debug server exited (code {code:?}) before its gdb port opened")]
    Exited {
        /// Its exit code, if it exited by itself.
        code: Option<i32>,
        /// What it printed.
        output: Tails,
    },
}

/// The last bytes OpenOCD printed on each stream.
#[derive(Debug, Clone, Default)]
pub struct Tails {
    /// stdout's tail.
    pub stdout: String,
    /// stderr's tail (OpenOCD prints everything there).
    pub stderr: String,
}

impl Tails {
    /// stdout then stderr, as the classifier reads them.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

#[derive(Default)]
struct Tail(Mutex<VecDeque<u8>>);

impl Tail {
    fn push(&self, bytes: &[u8]) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.extend(bytes);
        let over = kept.len().saturating_sub(TAIL);
        kept.drain(..over);
    }

    fn text(&self) -> String {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes: Vec<u8> = kept.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A running OpenOCD serving gdb on `127.0.0.1:<port>`.
pub struct GdbServer {
    child: Child,
    pgid: Pid,
    port: u16,
    command_line: String,
    stdout: Arc<Tail>,
    stderr: Arc<Tail>,
    keeper: Option<GroupKeeper>,
}

/// Reserves a free loopback port: bound and listening, so nothing else takes it until it is released
/// right before OpenOCD binds it.
pub fn reserve_port() -> io::Result<(TcpListener, u16)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    Ok((listener, port))
}

impl OpenOcd {
    /// The entry's interface script, as OpenOCD is given it.
    pub fn interface_cfg(&self) -> &str {
        &self.interface_cfg
    }

    /// The entry's target script, as OpenOCD is given it.
    pub fn target_cfg(&self) -> &str {
        &self.target_cfg
    }

    /// The argv after the executable for a gdb server on `port`; `reset_halt` resets the core into
    /// halt at start instead of halting it where it runs.
    pub fn gdb_server_argv(&self, port: u16, reset_halt: bool) -> Vec<OsString> {
        self.board_argv([
            "bindto 127.0.0.1".to_owned(),
            format!("gdb_port {port}"),
            "tcl_port disabled".to_owned(),
            "telnet_port disabled".to_owned(),
            if reset_halt {
                "init; reset halt".to_owned()
            } else {
                "init; halt".to_owned()
            },
        ])
    }

    /// Starts OpenOCD as a gdb server and waits up to `limit` for its port; a raised `cancel` ends
    /// the wait as its limit would.
    pub fn start_gdb_server(
        &self,
        reset_halt: bool,
        limit: Duration,
        cancel: Option<&CancelFlag>,
    ) -> Result<GdbServer, ServerError> {
        spawn_unless(
            &self.settings.executable,
            |port| self.gdb_server_argv(port, reset_halt),
            limit,
            cancel,
        )
    }
}

/// Starts `executable` with the argv `argv_for` builds around a reserved loopback port, in its own
/// process group under a keeper, and waits up to `limit` for the port to accept a connection. Any gdb
/// server that takes its port on the command line can run this way (OpenOCD, ST-LINK_gdbserver).
pub fn spawn(
    executable: &std::path::Path,
    argv_for: impl FnOnce(u16) -> Vec<OsString>,
    limit: Duration,
) -> Result<GdbServer, ServerError> {
    spawn_unless(executable, argv_for, limit, None)
}

/// [`spawn`], whose wait for the port also ends (as at its limit, the server stopped) once `cancel`
/// is raised: a session start its client cancelled does not wait out a slow server.
pub fn spawn_unless(
    executable: &std::path::Path,
    argv_for: impl FnOnce(u16) -> Vec<OsString>,
    limit: Duration,
    cancel: Option<&CancelFlag>,
) -> Result<GdbServer, ServerError> {
    let (reserved, port) = reserve_port().map_err(ServerError::Spawn)?;
    let mut command = process::piped_tool(executable, Stdio::null()).map_err(ServerError::Spawn)?;
    let argv = argv_for(port);
    command.args(&argv);
    let command_line = process::Command::new(executable).args(argv).display_line();
    drop(reserved);
    let mut child = command.spawn().map_err(ServerError::Spawn)?;
    let pgid = process::group_of(&mut child).map_err(ServerError::Spawn)?;
    let stdout = Arc::new(Tail::default());
    let stderr = Arc::new(Tail::default());
    if let Some(pipe) = child.stdout.take() {
        drain(pipe, Arc::clone(&stdout));
    }
    if let Some(pipe) = child.stderr.take() {
        drain(pipe, Arc::clone(&stderr));
    }
    let keeper =
        GroupKeeper::watch(&mut child, pgid, "ahil-openocd-keeper").map_err(ServerError::Spawn)?;
    let mut server = GdbServer {
        child,
        pgid,
        port,
        command_line,
        stdout,
        stderr,
        keeper: Some(keeper),
    };
    server.wait_ready(limit, cancel)?;
    Ok(server)
}

fn drain(mut pipe: impl Read + Send + 'static, tail: Arc<Tail>) {
    thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        loop {
            match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => tail.push(&buffer[..n]),
            }
        }
    });
}

impl GdbServer {
    fn wait_ready(
        &mut self,
        limit: Duration,
        cancel: Option<&CancelFlag>,
    ) -> Result<(), ServerError> {
        let limit = limit.max(Duration::from_millis(100));
        let deadline = Instant::now() + limit;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Give the readers a moment to take the last words it printed.
                thread::sleep(POLL);
                return Err(ServerError::Exited {
                    code: status.code(),
                    output: self.tails(),
                });
            }
            if TcpStream::connect_timeout(&address, CONNECT).is_ok() {
                return self.check_loopback_only();
            }
            if Instant::now() >= deadline || cancel.is_some_and(CancelFlag::is_cancelled) {
                return Err(ServerError::NotReady(limit, self.tails()));
            }
            thread::sleep(POLL);
        }
    }

    /// Checked, not trusted: ST-LINK_gdbserver takes no option that limits where it listens.
    fn check_loopback_only(&self) -> Result<(), ServerError> {
        let exposed = crate::listeners::exposed(self.pgid.as_raw_nonzero().get());
        if exposed.is_empty() {
            return Ok(());
        }
        Err(ServerError::Exposed {
            addresses: exposed.iter().map(ToString::to_string).collect(),
            output: self.tails(),
        })
    }

    /// The loopback port gdb connects to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// gdb's remote for `-target-select extended-remote`.
    pub fn remote(&self) -> String {
        format!("localhost:{}", self.port)
    }

    /// The command line, for the session log.
    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// What OpenOCD printed so far (the last 64 KiB of each stream).
    pub fn tails(&self) -> Tails {
        Tails {
            stdout: self.stdout.text(),
            stderr: self.stderr.text(),
        }
    }

    /// Whether OpenOCD still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the group and reaps OpenOCD; true once it is gone.
    pub fn stop(mut self) -> bool {
        self.end()
    }

    fn end(&mut self) -> bool {
        // The keeper first: once OpenOCD is reaped its group id may be reused.
        drop(self.keeper.take());
        let _ = kill_process_group(self.pgid, Signal::KILL);
        let _ = self.child.kill();
        self.child.wait().is_ok()
            && crate::process::wait_until_group_gone(
                self.pgid.as_raw_nonzero().get(),
                crate::process::GROUP_GONE_LIMIT,
            )
    }
}

impl Drop for GdbServer {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::probe_cli::fake::{self, strings};

    fn openocd(probe_id: Option<&str>, executable: &Path) -> OpenOcd {
        OpenOcd::new(
            fake::settings(executable, probe_id, Duration::from_secs(5)),
            "interface/stlink.cfg",
            "target/stm32f4x.cfg",
        )
    }

    #[test]
    fn an_attach_serves_gdb_on_the_loopback_port_with_the_other_servers_off() {
        let argv = openocd(None, Path::new("openocd")).gdb_server_argv(40123, false);
        assert_eq!(
            strings(&argv),
            [
                "-f",
                "interface/stlink.cfg",
                "-f",
                "target/stm32f4x.cfg",
                "-c",
                "bindto 127.0.0.1",
                "-c",
                "gdb_port 40123",
                "-c",
                "tcl_port disabled",
                "-c",
                "telnet_port disabled",
                "-c",
                "init; halt",
            ]
        );
    }

    #[test]
    fn a_reset_halt_start_names_the_probe_and_resets_into_halt() {
        let argv = openocd(Some("066DFF535254"), Path::new("openocd")).gdb_server_argv(1, true);
        let argv = strings(&argv);
        assert_eq!(argv[2..4], ["-c", "adapter serial 066DFF535254"]);
        assert_eq!(argv.last().map(String::as_str), Some("init; reset halt"));
    }

    #[test]
    fn a_reserved_port_is_taken_until_released() {
        let (listener, port) = reserve_port().expect("a port");
        assert!(TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err());
        drop(listener);
        assert!(TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok());
    }

    #[test]
    fn a_server_that_exits_before_its_port_opens_is_reported_with_its_words() {
        let (_dir, exe) = fake::install_sh("openocd", "echo 'Error: open failed' >&2; exit 1");
        let error = openocd(None, &exe)
            .start_gdb_server(false, Duration::from_secs(5), None)
            .err()
            .expect("no server");
        match error {
            ServerError::Exited { code, output } => {
                assert_eq!(code, Some(1));
                assert!(output.stderr.contains("open failed"), "{output:?}");
            }
            other => panic!("expected an early exit, got {other:?}"),
        }
    }

    /// Starts a server that never opens its port, waiting up to `limit`, with `cancel` raised once
    /// the server runs; checks it was refused as not ready and is gone.
    fn never_ready(limit: Duration, cancel: Option<&CancelFlag>) {
        let (dir, exe) = fake::install_server_never_ready("openocd");
        if let Some(cancel) = cancel.cloned() {
            let pid_file = dir.path().join("pid");
            thread::spawn(move || {
                while !pid_file.exists() {
                    thread::sleep(POLL);
                }
                cancel.cancel();
            });
        }
        let error = openocd(None, &exe)
            .start_gdb_server(false, limit, cancel)
            .err()
            .expect("no server");
        fake::assert_not_ready_and_gone(&error, dir.path());
    }

    #[test]
    fn a_server_that_never_opens_its_port_is_killed_at_the_limit() {
        never_ready(Duration::from_millis(300), None);
    }

    /// Without the cancel, the wait would last its whole ten minutes.
    #[test]
    fn a_cancelled_wait_for_the_port_ends_as_at_the_limit_and_stops_the_server() {
        never_ready(Duration::from_mins(10), Some(&CancelFlag::default()));
    }
}
