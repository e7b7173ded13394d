//! Newline-delimited JSON-RPC over any pair of byte streams; a reader thread turns the server's
//! lines into messages so every wait can have a deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Why a request got no result.
pub(crate) enum Failure {
    /// The server's stdout ended.
    Closed,
    Timeout,
    Rpc {
        code: i64,
        message: String,
    },
    Write(std::io::Error),
}

pub(crate) struct Transport {
    writer: Option<Box<dyn Write + Send>>,
    answers: Receiver<Value>,
    next_id: u64,
}

impl Transport {
    pub(crate) fn new(
        reader: impl Read + Send + 'static,
        writer: impl Write + Send + 'static,
    ) -> Self {
        let (sender, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                // Anything that is not JSON is not for us (stdout belongs to JSON-RPC alone).
                if let Ok(message) = serde_json::from_str::<Value>(&line)
                    && sender.send(message).is_err()
                {
                    break;
                }
            }
        });
        Self {
            writer: Some(Box::new(writer)),
            answers,
            next_id: 0,
        }
    }

    pub(crate) fn notify(&mut self, method: &str) -> Result<(), Failure> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    /// One request and its result, waiting at most `timeout`.
    pub(crate) fn request(
        &mut self,
        method: &str,
        params: &Value,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut message = match self.answers.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => return Err(Failure::Timeout),
                Err(RecvTimeoutError::Disconnected) => return Err(Failure::Closed),
            };
            // Notifications and answers to abandoned requests are not this answer.
            if message.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(Failure::Rpc {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                });
            }
            return Ok(message.get_mut("result").map_or(Value::Null, Value::take));
        }
    }

    /// Ends the server's input: the server closes its sessions and exits.
    pub(crate) fn close(&mut self) {
        self.writer = None;
    }

    fn send(&mut self, message: &Value) -> Result<(), Failure> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(Failure::Closed);
        };
        let mut line = message.to_string();
        line.push('\n');
        writer
            .write_all(line.as_bytes())
            .and_then(|()| writer.flush())
            .map_err(|error| {
                if error.kind() == std::io::ErrorKind::BrokenPipe {
                    Failure::Closed
                } else {
                    Failure::Write(error)
                }
            })
    }
}
