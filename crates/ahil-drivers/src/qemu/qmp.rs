//! A QMP client (QEMU Machine Protocol, JSON lines over a unix socket): greeting, capabilities
//! negotiation, one command at a time, events skipped and kept.
//!
//! QEMU serves one QMP client at a time and queues the next, so callers connect per action and drop
//! the client when done; a held connection would stall every other caller until its deadline.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Longest QMP line we accept; QEMU's answers to our commands are a few hundred bytes.
const MAX_LINE: u64 = 1024 * 1024;

/// A QMP failure, split by what it proves about the board.
#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    /// The socket could not be connected: nothing was sent, so nothing reached the board.
    #[error("no QMP endpoint: {0}")]
    Unreachable(io::Error),
    /// QEMU did not answer in time.
    #[error("QMP gave no answer to {command} within {limit:?}")]
    Timeout {
        /// The command.
        command: String,
        /// The limit.
        limit: Duration,
    },
    /// The connection broke or QEMU answered something that is not QMP.
    #[error("QMP failed during {command}: {detail}")]
    Protocol {
        /// The command.
        command: String,
        /// What went wrong.
        detail: String,
    },
    /// QEMU refused the command (`{"error": …}`).
    #[error("QEMU refused {command}: {detail}")]
    Refused {
        /// The command.
        command: String,
        /// QEMU's `desc`.
        detail: String,
    },
}

/// The VM's run state from `query-status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmStatus {
    /// `running`, `paused`, `prelaunch`, `debug`, `shutdown`, `internal-error`, …
    pub status: String,
    /// Whether the guest CPU is executing.
    pub running: bool,
}

/// A connected, negotiated QMP session.
pub struct Qmp {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    deadline: Instant,
    limit: Duration,
    /// Events that arrived while waiting for answers (`RESET`, `STOP`, `RESUME`, `SHUTDOWN`).
    pub events: Vec<String>,
}

impl Qmp {
    /// Connect to `socket` and negotiate capabilities, all within `limit`.
    pub fn connect(socket: &Path, limit: Duration) -> Result<Self, QmpError> {
        let deadline = Instant::now() + limit;
        let stream = UnixStream::connect(socket).map_err(QmpError::Unreachable)?;
        let writer = stream.try_clone().map_err(|error| QmpError::Protocol {
            command: "connect".into(),
            detail: error.to_string(),
        })?;
        let mut qmp = Self {
            writer,
            reader: BufReader::new(stream),
            deadline,
            limit,
            events: Vec::new(),
        };
        let greeting = qmp.read_message("greeting")?;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Protocol {
                command: "greeting".into(),
                detail: "the peer is not QMP".into(),
            });
        }
        qmp.execute("qmp_capabilities", None)?;
        Ok(qmp)
    }

    /// Run `command` with optional `arguments`; the `return` value on success.
    pub fn execute(&mut self, command: &str, arguments: Option<Value>) -> Result<Value, QmpError> {
        let mut message = json!({ "execute": command });
        if let Some(arguments) = arguments {
            message["arguments"] = arguments;
        }
        let mut line = message.to_string();
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .map_err(|error| QmpError::Protocol {
                command: command.into(),
                detail: error.to_string(),
            })?;
        loop {
            let answer = self.read_message(command)?;
            if let Some(event) = answer.get("event").and_then(Value::as_str) {
                self.events.push(event.to_owned());
                continue;
            }
            if let Some(value) = answer.get("return") {
                return Ok(value.clone());
            }
            if let Some(error) = answer.get("error") {
                let detail = error
                    .get("desc")
                    .and_then(Value::as_str)
                    .unwrap_or("no description")
                    .to_owned();
                return Err(QmpError::Refused {
                    command: command.into(),
                    detail,
                });
            }
            return Err(QmpError::Protocol {
                command: command.into(),
                detail: "an answer with neither return nor error".into(),
            });
        }
    }

    /// `query-status`.
    pub fn status(&mut self) -> Result<VmStatus, QmpError> {
        let value = self.execute("query-status", None)?;
        let status = value
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        let running = value
            .get("running")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(VmStatus { status, running })
    }

    /// `system_reset`: the machine resets; a paused VM stays paused.
    pub fn system_reset(&mut self) -> Result<(), QmpError> {
        self.execute("system_reset", None).map(drop)
    }

    /// `stop`: pause the VM.
    pub fn stop(&mut self) -> Result<(), QmpError> {
        self.execute("stop", None).map(drop)
    }

    /// `cont`: run the VM.
    pub fn cont(&mut self) -> Result<(), QmpError> {
        self.execute("cont", None).map(drop)
    }

    /// `quit`: QEMU exits with status 0.
    pub fn quit(&mut self) -> Result<(), QmpError> {
        self.execute("quit", None).map(drop)
    }

    /// `query-chardev`: the pty behind `label` (QEMU 7.2 ignores `path=`, so the supervisor links it).
    pub fn chardev_pty(&mut self, label: &str) -> Result<Option<String>, QmpError> {
        let value = self.execute("query-chardev", None)?;
        Ok(value.as_array().and_then(|devices| {
            devices
                .iter()
                .find(|device| device.get("label").and_then(Value::as_str) == Some(label))
                .and_then(|device| device.get("filename").and_then(Value::as_str))
                .and_then(|filename| filename.strip_prefix("pty:"))
                .map(str::to_owned)
        }))
    }

    fn read_message(&mut self, command: &str) -> Result<Value, QmpError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timeout(command));
        }
        self.reader
            .get_ref()
            .set_read_timeout(Some(left))
            .map_err(|error| QmpError::Protocol {
                command: command.into(),
                detail: error.to_string(),
            })?;
        let mut line = Vec::new();
        let read = (&mut self.reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line);
        match read {
            Ok(0) => Err(QmpError::Protocol {
                command: command.into(),
                detail: "QEMU closed the connection".into(),
            }),
            Ok(_) => serde_json::from_slice(&line).map_err(|error| QmpError::Protocol {
                command: command.into(),
                detail: format!("not JSON: {error}"),
            }),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(self.timeout(command))
            }
            Err(error) => Err(QmpError::Protocol {
                command: command.into(),
                detail: error.to_string(),
            }),
        }
    }

    fn timeout(&self, command: &str) -> QmpError {
        QmpError::Timeout {
            command: command.into(),
            limit: self.limit,
        }
    }
}
