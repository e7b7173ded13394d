//! A connection to one server: spawn it (or take a connected pair of streams), call tools, and end
//! the sessions it opened when it is closed or dropped.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::sessions::Sessions;
use crate::transport::{Failure, Transport};
use crate::{ClientError, DebugMode, Envelope, FlashOptions, ReadOptions, ResetMode};

/// Names the server binary; else `agentic-hil` is looked up on PATH.
pub const BINARY_ENV_VAR: &str = "AGENTIC_HIL_BIN";
const PROTOCOL_VERSION: &str = "2025-06-18";
// The refusal document is short; a chatty stderr must not grow without bound.
const STDERR_KEEP: usize = 64 * 1024;
const DEFAULT_TIMEOUT: Duration = Duration::from_mins(2);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Checks one result (`structuredContent`) of a call of the named tool: `Err` says what is wrong.
/// A test suite passes one that validates against the tool's published outputSchema.
pub type ResultCheck = fn(tool: &str, result: &Value) -> Result<(), String>;

/// How to start a server: which binary, in which workspace, with which environment.
#[derive(Debug, Clone)]
pub struct Launch {
    program: Option<PathBuf>,
    workspace: PathBuf,
    env: Vec<(OsString, OsString)>,
    clear_env: bool,
    timeout: Duration,
    check: Option<ResultCheck>,
}

impl Launch {
    /// The server for `workspace` (its configuration is found from there and from HOME).
    pub fn new(workspace: impl AsRef<Path>) -> Self {
        Self {
            program: None,
            workspace: workspace.as_ref().to_path_buf(),
            env: Vec::new(),
            clear_env: false,
            timeout: DEFAULT_TIMEOUT,
            check: None,
        }
    }

    /// The binary to run instead of `AGENTIC_HIL_BIN` or PATH.
    #[must_use]
    pub fn program(mut self, program: impl AsRef<Path>) -> Self {
        self.program = Some(program.as_ref().to_path_buf());
        self
    }

    /// Starts the server with only the variables given here, not this process's.
    #[must_use]
    pub fn env_clear(mut self) -> Self {
        self.clear_env = true;
        self
    }

    #[must_use]
    pub fn env(self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs([(key, value)])
    }

    #[must_use]
    pub fn envs<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The longest wait for one answer (120 s unless set).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs `check` on every result; a result it rejects is [`ClientError::ResultRejected`].
    #[must_use]
    pub fn check_results(mut self, check: ResultCheck) -> Self {
        self.check = Some(check);
        self
    }

    /// Starts `agentic-hil mcp-stdio` and completes the MCP handshake.
    pub fn spawn(self) -> Result<Client, ClientError> {
        let program = match self.program.clone() {
            Some(program) => program,
            None => self.find_binary()?,
        };
        let mut command = Command::new(&program);
        if self.clear_env {
            command.env_clear();
        }
        command
            .arg("mcp-stdio")
            .current_dir(&self.workspace)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group: a terminal's Ctrl-C reaches the test, which then closes the server
            // in order instead of the server dying mid-session.
            .process_group(0);
        let mut child = command
            .spawn()
            .map_err(|source| ClientError::Spawn { program, source })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ClientError::Protocol(
                "the server's pipes were not opened".into(),
            ));
        };
        let kept = Arc::new(Mutex::new(Vec::new()));
        let drain = std::thread::spawn({
            let kept = Arc::clone(&kept);
            move || keep_stderr(stderr, &kept)
        });
        let mut client = Client {
            transport: Transport::new(stdout, stdin),
            process: Some(Process {
                child,
                stderr: kept,
                drain: Some(drain),
            }),
            sessions: Sessions::default(),
            timeout: self.timeout,
            check: self.check,
        };
        client.initialize()?;
        Ok(client)
    }

    fn find_binary(&self) -> Result<PathBuf, ClientError> {
        let given = |key: &str| {
            self.env
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .or_else(|| {
                    if self.clear_env {
                        None
                    } else {
                        std::env::var_os(key)
                    }
                })
        };
        if let Some(explicit) = given(BINARY_ENV_VAR).filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(explicit));
        }
        let path = given("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join("agentic-hil"))
            .find(|candidate| candidate.is_file())
            .ok_or(ClientError::BinaryNotFound)
    }
}

struct Process {
    child: Child,
    stderr: Arc<Mutex<Vec<u8>>>,
    drain: Option<JoinHandle<()>>,
}

fn keep_stderr(mut stderr: impl Read, kept: &Mutex<Vec<u8>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(n) = stderr.read(&mut buffer) {
        if n == 0 {
            break;
        }
        if let Ok(mut kept) = kept.lock()
            && kept.len() < STDERR_KEEP
        {
            kept.extend_from_slice(&buffer[..n]);
        }
    }
}

/// The refusal document among stderr's lines (tracing may share the stream), the last one first.
fn refusal_in(stderr: &str) -> Option<Envelope> {
    stderr.lines().rev().find_map(|line| {
        let doc: Value = serde_json::from_str(line.trim()).ok()?;
        doc.get("error_type")?;
        Some(Envelope::new(doc, true))
    })
}

/// One MCP session with one server.
pub struct Client {
    transport: Transport,
    process: Option<Process>,
    sessions: Sessions,
    timeout: Duration,
    check: Option<ResultCheck>,
}

impl Client {
    /// Starts `agentic-hil mcp-stdio` in `workspace`, with `env` on top of this process's
    /// environment; the binary is `AGENTIC_HIL_BIN` or `agentic-hil` on PATH.
    pub fn spawn<K, V>(
        workspace: impl AsRef<Path>,
        env: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ClientError>
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Launch::new(workspace).envs(env).spawn()
    }

    /// A server already running at the other end of `reader` and `writer` (a socket, a pipe pair).
    pub fn connect(
        reader: impl Read + Send + 'static,
        writer: impl std::io::Write + Send + 'static,
    ) -> Result<Self, ClientError> {
        let mut client = Self {
            transport: Transport::new(reader, writer),
            process: None,
            sessions: Sessions::default(),
            timeout: DEFAULT_TIMEOUT,
            check: None,
        };
        client.initialize()?;
        Ok(client)
    }

    fn initialize(&mut self) -> Result<(), ClientError> {
        self.request(
            "initialize",
            &json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                   "clientInfo": {"name": "ahil-client", "version": env!("CARGO_PKG_VERSION")}}),
            self.timeout,
        )?;
        self.transport
            .notify("notifications/initialized")
            .map_err(|failure| self.failed("notifications/initialized", failure, self.timeout))
    }

    fn request(
        &mut self,
        method: &str,
        params: &Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        self.transport
            .request(method, params, timeout)
            .map_err(|failure| self.failed(method, failure, timeout))
    }

    fn failed(&mut self, method: &str, failure: Failure, timeout: Duration) -> ClientError {
        match failure {
            Failure::Closed => self.exited(),
            Failure::Timeout => ClientError::Timeout {
                method: method.to_owned(),
                after: timeout,
            },
            Failure::Rpc { code, message } => ClientError::Rpc {
                method: method.to_owned(),
                code,
                message,
            },
            Failure::Write(error) => ClientError::Io(error),
        }
    }

    /// The server is gone: its exit code and what it said on stderr.
    fn exited(&mut self) -> ClientError {
        let Some(process) = self.process.as_mut() else {
            return ClientError::Exited {
                code: None,
                refusal: None,
            };
        };
        let code = wait_until(&mut process.child, EXIT_WAIT);
        // The server's own children may hold stderr open; do not wait on them for long.
        if let Some(drain) = process.drain.take() {
            let end = Instant::now() + Duration::from_secs(2);
            while !drain.is_finished() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(10));
            }
            if drain.is_finished() {
                let _ = drain.join();
            }
        }
        let text = process
            .stderr
            .lock()
            .map(|kept| String::from_utf8_lossy(&kept).into_owned())
            .unwrap_or_default();
        ClientError::Exited {
            code,
            refusal: refusal_in(&text),
        }
    }

    /// `tools/call`: the tool's result envelope. A refusal by the gate is an envelope, not an error;
    /// errors are a server that did not answer.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Envelope, ClientError> {
        let timeout = self.timeout;
        self.call_within(tool, arguments, timeout)
    }

    fn call_within(
        &mut self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Envelope, ClientError> {
        let params = Value::Object(serde_json::Map::from_iter([
            ("name".to_owned(), Value::from(tool)),
            ("arguments".to_owned(), arguments),
        ]));
        let mut result = self.request("tools/call", &params, timeout)?;
        let is_error = result.get("isError") == Some(&Value::Bool(true));
        let Some(doc) = result.get_mut("structuredContent").map(Value::take) else {
            return Err(ClientError::Protocol(format!(
                "{tool}: the answer carries no result envelope"
            )));
        };
        let checked = self.check.map_or(Ok(()), |check| check(tool, &doc));
        let envelope = Envelope::new(doc, is_error);
        // A session the result opened is still ended at close, even when the result is rejected.
        self.sessions.observe(tool, &params["arguments"], &envelope);
        checked.map_err(|problem| ClientError::ResultRejected {
            tool: tool.to_owned(),
            problem,
        })?;
        Ok(envelope)
    }

    /// The sessions this client opened and has not ended, as their stop calls.
    pub fn open_sessions(&self) -> Vec<String> {
        self.sessions
            .open()
            .iter()
            .map(crate::sessions::Open::describe)
            .collect()
    }

    /// Stops every session still open; an error names each stop that was not confirmed.
    pub fn end_sessions(&mut self) -> Result<(), ClientError> {
        let mut problems = Vec::new();
        for open in self.sessions.take() {
            match self.call_within(
                open.stop,
                Value::Object(open.arguments.clone()),
                STOP_TIMEOUT,
            ) {
                Ok(stopped) => {
                    if let Err(problem) = open.verdict(&stopped) {
                        problems.push(problem);
                    }
                }
                Err(error) => problems.push(format!("{}: {error}", open.describe())),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ClientError::CleanupUnconfirmed(problems))
        }
    }

    /// Ends the sessions, then the server; the server's exit code. An unconfirmed stop is an error
    /// even though the server was shut down.
    pub fn close(mut self) -> Result<Option<i32>, ClientError> {
        let ended = self.end_sessions();
        let code = self.shut_down();
        ended.map(|()| code)
    }

    fn shut_down(&mut self) -> Option<i32> {
        self.transport.close();
        let mut process = self.process.take()?;
        let code = wait_until(&mut process.child, EXIT_WAIT);
        if code.is_none() {
            let _ = process.child.kill();
            let _ = process.child.wait();
        }
        code
    }

    // Typed helpers for the common tools.

    pub fn probe_target(&mut self) -> Result<Envelope, ClientError> {
        self.call("probe_target", json!({}))
    }

    pub fn flash_firmware(
        &mut self,
        image_path: &str,
        options: &FlashOptions,
    ) -> Result<Envelope, ClientError> {
        self.call(
            "flash_firmware",
            arguments(options, "image_path", image_path),
        )
    }

    pub fn reset_target(&mut self, mode: ResetMode) -> Result<Envelope, ClientError> {
        self.call("reset_target", json!({"mode": mode}))
    }

    pub fn com_session_start(&mut self, port_id: &str) -> Result<Envelope, ClientError> {
        self.call("com_session_start", json!({"port_id": port_id}))
    }

    pub fn com_session_stop(&mut self, port_id: &str) -> Result<Envelope, ClientError> {
        self.call("com_session_stop", json!({"port_id": port_id}))
    }

    pub fn com_read(
        &mut self,
        port_id: &str,
        options: &ReadOptions,
    ) -> Result<Envelope, ClientError> {
        self.call("com_read", arguments(options, "port_id", port_id))
    }

    /// Sends `text` as is (add line endings yourself).
    pub fn com_write(&mut self, port_id: &str, text: &str) -> Result<Envelope, ClientError> {
        self.call("com_write", json!({"port_id": port_id, "text": text}))
    }

    pub fn debug_start_session(
        &mut self,
        image_path: &str,
        mode: DebugMode,
    ) -> Result<Envelope, ClientError> {
        self.call(
            "debug_start_session",
            json!({"image_path": image_path, "mode": mode}),
        )
    }

    pub fn debug_symbol_value(&mut self, symbol: &str) -> Result<Envelope, ClientError> {
        self.call("debug_symbol_value", json!({"symbol": symbol}))
    }

    pub fn debug_stop_session(&mut self) -> Result<Envelope, ClientError> {
        self.call("debug_stop_session", json!({}))
    }
}

impl Drop for Client {
    /// Ends what the test left open, then the server. Nobody can receive an error here, so an
    /// unconfirmed stop is said on stderr; call [`Client::close`] to have it as an error.
    fn drop(&mut self) {
        if !self.sessions.open().is_empty()
            && let Err(error) = self.end_sessions()
        {
            eprintln!("ahil-client: {error}");
        }
        self.shut_down();
    }
}

/// A tool's arguments: its `options` (an object; anything else is taken as none), and the one
/// argument it requires, `key`.
fn arguments(options: &impl serde::Serialize, key: &str, value: &str) -> Value {
    let mut arguments = match serde_json::to_value(options) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    };
    arguments[key] = json!(value);
    arguments
}

/// The child's exit code if it ends within `limit`.
fn wait_until(child: &mut Child, limit: Duration) -> Option<i32> {
    let end = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code(),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}
