//! The process bridge, protocol v2: a child speaking one JSON object per line on stdin and stdout.
//!
//! Requests are `{"id", "method", "params"}` with ids counting up from 1; answers are exactly
//! `{"id", "result"}` or `{"id", "error"}`. Lines that are not such objects are ignored and answers
//! to ids we did not ask are dropped, so a chatty bridge cannot confuse one answer for another.
//! Requests may overlap (a send while the pump's read waits): each waits for its own id, so a bridge
//! that answers concurrently is used concurrently and a sequential one simply answers in turn. The
//! child leads its own process group; close (and drop) kill the group and reap the child.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Map, Value, json};

use super::{Adapter, CanError, Closed, Frame, OpenRequest, Opened};
use crate::process::{self, GroupKeeper};

/// The protocol version spoken.
pub const PROTOCOL_VERSION: u64 = 2;
/// Captured stderr kept per bridge; failures quote its last [`TAIL`] characters.
const STDERR_KEPT: usize = 65_536;
const TAIL: usize = 2_000;
/// How long a report on a dead bridge waits for the rest of its stderr.
const STDERR_DRAIN_LIMIT: Duration = Duration::from_millis(500);
/// How long `close` may take before the group is killed anyway.
const CLOSE_LIMIT: Duration = Duration::from_secs(1);
/// A line longer than this is not a protocol line; it is skipped rather than buffered without bound.
const MAX_LINE: usize = 4 << 20;

/// Requests waiting for their answer, by id.
#[derive(Default)]
struct Waiting {
    by_id: HashMap<u64, Sender<Value>>,
    /// The bridge's stdout ended: no answer will come.
    ended: bool,
}

/// The write side: ids are allocated and lines written under one lock, so ids go out in order.
struct Writer {
    stdin: Option<ChildStdin>,
    last_id: u64,
}

/// A running bridge.
pub struct Bridge {
    child: Mutex<Child>,
    pgid: Pid,
    writer: Mutex<Writer>,
    waiting: Arc<Mutex<Waiting>>,
    stderr: Arc<StderrLog>,
    /// A bridge may ignore EOF on stdin; the keeper ends it if this process dies without closing it.
    keeper: Mutex<Option<GroupKeeper>>,
    timeout: Duration,
    safe_state_confirmed: AtomicBool,
    reaped: AtomicBool,
    /// The argv, for logs.
    pub command: Vec<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves its data consistent, so a poisoned lock is still usable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Bridge {
    /// Start `executable` (its pinned absolute path, run as it is: a script names its interpreter in
    /// its shebang) in its directory, with the child environment, and open the channel.
    pub fn open(executable: &Path, request: &OpenRequest) -> Result<(Self, Opened), CanError> {
        let mut command = process::piped_tool(executable, Stdio::piped())
            .map_err(|e| CanError::ProcessStartFailed(e.to_string()))?;
        let mut child = crate::process::spawn_retrying_busy_text(&mut command)
            .map_err(|e| CanError::ProcessStartFailed(e.to_string()))?;
        let command_line = vec![executable.display().to_string()];
        let started = |e: io::Error| CanError::ProcessStartFailed(e.to_string());
        let pgid = process::group_of(&mut child).map_err(started)?;
        let keeper = GroupKeeper::watch(&mut child, pgid, "ahil-can-keeper").map_err(started)?;
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let waiting = Arc::new(Mutex::new(Waiting::default()));
        spawn_reader(stdout, Arc::clone(&waiting));
        let bridge = Self {
            child: Mutex::new(child),
            pgid,
            writer: Mutex::new(Writer { stdin, last_id: 0 }),
            waiting,
            stderr: spawn_stderr(stderr),
            keeper: Mutex::new(Some(keeper)),
            timeout: request.timeout,
            safe_state_confirmed: AtomicBool::new(false),
            reaped: AtomicBool::new(false),
            command: command_line,
        };
        let params = json!({
            "channel": request.channel,
            "bitrate": request.bitrate,
            "fd": request.fd,
            "data_bitrate": request.data_bitrate,
            "receive_own_messages": request.receive_own_messages,
            "listen_only": request.listen_only,
            // The session drains its own queue; the bridge must not drop frames on our behalf.
            "clear_rx_queue": false,
            "poll_interval_ms": u64::try_from(request.poll_interval.as_millis()).unwrap_or(u64::MAX),
        });
        let mut result = match bridge.request("open", &params, request.timeout) {
            Ok(result) => result,
            Err(error) => {
                // A channel that went on the bus is asked to leave it before the bridge is killed.
                if matches!(
                    error,
                    CanError::Refused {
                        channel_open: true,
                        ..
                    }
                ) {
                    bridge.close();
                } else {
                    bridge.terminate();
                }
                return Err(error);
            }
        };
        if let Err(detail) = check_open(&result) {
            bridge.close();
            return Err(CanError::ProtocolUnsupported(detail));
        }
        let echoed = result.get("listen_only") == Some(&Value::Bool(true));
        if request.listen_only && !echoed {
            let closed = bridge.close();
            return Err(CanError::ListenOnlyUnconfirmed(format!(
                "The bridge opened the channel without confirming listen-only{}; it was closed again.",
                if closed.safe_state_confirmed {
                    ""
                } else {
                    " and did not confirm a safe state when closed"
                }
            )));
        }
        result.insert("command".into(), json!(bridge.command));
        let backend = result
            .get("backend")
            .and_then(Value::as_str)
            .unwrap_or("process")
            .to_owned();
        Ok((
            bridge,
            Opened {
                backend,
                listen_only_confirmed: request.listen_only && echoed,
                report: result,
            },
        ))
    }

    fn stderr_tail(&self) -> String {
        let log = lock(&self.stderr.log);
        let text = &log.0;
        let start = text.len().saturating_sub(TAIL);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }

    /// The tail once the process has gone: its last words may still be in the pipe when stdout
    /// closes, so wait (briefly: a grandchild may hold the pipe open) for the reader to see EOF.
    fn stderr_tail_after_exit(&self) -> String {
        let log = lock(&self.stderr.log);
        drop(
            self.stderr
                .closed
                .wait_timeout_while(log, STDERR_DRAIN_LIMIT, |log| !log.1)
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.stderr_tail()
    }

    fn exited(&self) -> CanError {
        CanError::ProcessExited {
            stderr_tail: self.stderr_tail_after_exit(),
        }
    }

    /// One request and its answer's `result` object (with `ok: true`), or the failure.
    fn request(
        &self,
        method: &'static str,
        params: &Value,
        limit: Duration,
    ) -> Result<Map<String, Value>, CanError> {
        if self.reaped.load(Ordering::SeqCst) || matches!(lock(&self.child).try_wait(), Ok(Some(_)))
        {
            // The leader is reaped now: release the keeper before its group id can be recycled.
            drop(lock(&self.keeper).take());
            return Err(self.exited());
        }
        let (tx, rx) = mpsc::channel();
        let id = {
            let mut writer = lock(&self.writer);
            let id = writer.last_id + 1;
            {
                let mut waiting = lock(&self.waiting);
                if waiting.ended {
                    return Err(self.exited());
                }
                waiting.by_id.insert(id, tx);
            }
            let Some(stdin) = writer.stdin.as_mut() else {
                lock(&self.waiting).by_id.remove(&id);
                return Err(self.exited());
            };
            let mut line = json!({"id": id, "method": method, "params": params}).to_string();
            line.push('\n');
            if let Err(error) = stdin
                .write_all(line.as_bytes())
                .and_then(|()| stdin.flush())
            {
                lock(&self.waiting).by_id.remove(&id);
                if error.kind() == io::ErrorKind::BrokenPipe {
                    return Err(self.exited());
                }
                return Err(CanError::InvalidRequest(error.to_string()));
            }
            writer.last_id = id;
            id
        };
        match rx.recv_timeout(limit) {
            Ok(answer) => answer_result(method, answer),
            Err(RecvTimeoutError::Timeout) => {
                // A late answer to this id is dropped by the reader.
                lock(&self.waiting).by_id.remove(&id);
                Err(CanError::Timeout {
                    method,
                    limit,
                    stderr_tail: self.stderr_tail(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(CanError::ExitedMidRequest {
                method,
                stderr_tail: self.stderr_tail_after_exit(),
            }),
        }
    }

    /// Kill the group and reap the leader; answers whether the leader was reaped.
    fn terminate(&self) -> bool {
        let mut child = lock(&self.child);
        if self.reaped.load(Ordering::SeqCst) {
            return true;
        }
        // Closing stdin first lets a well-behaved bridge see EOF; the kill follows regardless.
        lock(&self.writer).stdin = None;
        // The keeper before the reap: a recycled group id must never be its target.
        drop(lock(&self.keeper).take());
        // Kill while the leader is unreaped, so the group id cannot have been recycled.
        let _ = kill_process_group(self.pgid, Signal::KILL);
        let _ = child.kill();
        let reaped = child.wait().is_ok();
        self.reaped.store(reaped, Ordering::SeqCst);
        // Verified, not assumed: no live process may remain in the bridge's group (a helper it forked).
        reaped
            && crate::process::wait_until_group_gone(
                self.pgid.as_raw_nonzero().get(),
                crate::process::GROUP_GONE_LIMIT,
            )
    }
}

/// The `result` of an answer with `ok: true`, or the bridge's refusal.
fn answer_result(method: &'static str, answer: Value) -> Result<Map<String, Value>, CanError> {
    let Value::Object(mut answer) = answer else {
        unreachable!("the reader only passes objects")
    };
    let invalid = |detail: &str| CanError::InvalidResponse {
        method,
        detail: detail.to_owned(),
    };
    if answer.len() != 2 {
        return Err(invalid("an answer has exactly an id and a result or error"));
    }
    if let Some(error) = answer.remove("error") {
        let Value::Object(body) = error else {
            return Err(invalid("error must be an object"));
        };
        return Err(refused(method, body));
    }
    let Some(Value::Object(result)) = answer.remove("result") else {
        return Err(invalid("result must be an object"));
    };
    match result.get("ok") {
        Some(Value::Bool(true)) => Ok(result),
        Some(Value::Bool(false)) => Err(refused(method, result)),
        _ => Err(invalid("result.ok must be a boolean")),
    }
}

fn refused(method: &'static str, body: Map<String, Value>) -> CanError {
    let summary = body
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or("no reason given")
        .chars()
        .take(500)
        .collect();
    CanError::Refused {
        method,
        summary,
        channel_open: body.get("channel_open") == Some(&Value::Bool(true)),
        body,
    }
}

/// Keys outside `allowed` or optional strings that are not strings make an answer non-conforming.
fn check_keys(result: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    if let Some(extra) = result.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!("unexpected key `{extra}`"));
    }
    for key in ["backend", "summary"] {
        if result.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("`{key}` must be a string"));
        }
    }
    Ok(())
}

/// [`check_keys`] for an answer that carries `protocol_version`, which must be ours.
fn check_versioned(result: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    check_keys(result, allowed)?;
    if result.get("protocol_version").and_then(Value::as_u64) != Some(PROTOCOL_VERSION) {
        return Err(format!("protocol_version must be {PROTOCOL_VERSION}"));
    }
    Ok(())
}

fn check_open(result: &Map<String, Value>) -> Result<(), String> {
    check_versioned(
        result,
        &[
            "ok",
            "protocol_version",
            "backend",
            "summary",
            "listen_only",
        ],
    )?;
    if result.get("listen_only").is_some_and(|v| !v.is_boolean()) {
        return Err("listen_only must be a boolean".into());
    }
    Ok(())
}

fn check_close(result: &Map<String, Value>) -> Result<(), String> {
    check_versioned(
        result,
        &[
            "ok",
            "protocol_version",
            "safe_state_confirmed",
            "safe_state",
            "backend",
            "summary",
        ],
    )?;
    if result.get("safe_state_confirmed") != Some(&Value::Bool(true)) {
        return Err("safe_state_confirmed must be true".into());
    }
    if result.get("safe_state").is_some_and(|v| !v.is_object()) {
        return Err("safe_state must be an object".into());
    }
    Ok(())
}

impl Adapter for Bridge {
    fn kind(&self) -> &'static str {
        "process"
    }

    fn send(&self, frame: &Frame) -> Result<Map<String, Value>, CanError> {
        let result = self.request("send", &json!({"frame": frame.to_json()}), self.timeout)?;
        check_keys(&result, &["ok", "backend", "summary"]).map_err(|detail| {
            CanError::InvalidResponse {
                method: "send",
                detail,
            }
        })?;
        Ok(result)
    }

    fn read(&self, max: usize, wait: Duration) -> Result<Vec<Frame>, CanError> {
        let wait = wait.min(self.timeout);
        let result = self.request(
            "read",
            &json!({"max_frames": max, "wait_timeout_s": wait.as_secs_f64()}),
            wait + Duration::from_secs(1),
        )?;
        let invalid = |detail: String| CanError::InvalidResponse {
            method: "read",
            detail,
        };
        check_keys(&result, &["ok", "backend", "summary", "frames"]).map_err(invalid)?;
        let frames = match result.get("frames") {
            None => return Ok(Vec::new()),
            Some(Value::Array(frames)) => frames,
            Some(_) => return Err(invalid("frames must be a list".into())),
        };
        if frames.len() > max {
            return Err(invalid(format!(
                "{} frames answer a read of at most {max}",
                frames.len()
            )));
        }
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                Frame::from_bridge(f).ok_or_else(|| invalid(format!("frame {i} is malformed")))
            })
            .collect()
    }

    fn close(&self) -> Closed {
        let mut report = Map::new();
        if !self.safe_state_confirmed.load(Ordering::SeqCst) && !self.reaped.load(Ordering::SeqCst)
        {
            match self.request("close", &json!({}), CLOSE_LIMIT) {
                Ok(result) => match check_close(&result) {
                    Ok(()) => {
                        self.safe_state_confirmed.store(true, Ordering::SeqCst);
                        report = result;
                    }
                    Err(detail) => {
                        report.insert("close_response".into(), Value::Object(result));
                        report.insert("close_problem".into(), detail.into());
                    }
                },
                Err(error) => {
                    report.insert("close_error".into(), error.to_string().into());
                }
            }
        }
        let reaped = self.terminate();
        Closed {
            safe_state_confirmed: self.safe_state_confirmed.load(Ordering::SeqCst),
            process_reaped: reaped,
            report,
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Answers from stdout, handed to the request waiting for their id: objects with an integer `id`
/// (not a bool, not a float). At end of output every waiting request learns that no answer will come.
fn spawn_reader(stdout: Option<std::process::ChildStdout>, waiting: Arc<Mutex<Waiting>>) {
    let Some(stdout) = stdout else {
        lock(&waiting).ended = true;
        return;
    };
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match (&mut reader)
                .take(MAX_LINE as u64)
                .read_until(b'\n', &mut buffer)
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if buffer.last() != Some(&b'\n') && buffer.len() >= MAX_LINE {
                // Skip the rest of an overlong line.
                let mut sink = Vec::new();
                if reader.read_until(b'\n', &mut sink).unwrap_or(0) == 0 {
                    break;
                }
                continue;
            }
            // serde_json refuses NaN and infinities, so a non-finite number never gets through.
            let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(&buffer) else {
                continue;
            };
            let id = match object.get("id") {
                Some(id) if !id.is_f64() => id.as_u64(),
                _ => None,
            };
            let Some(id) = id else { continue };
            if let Some(tx) = lock(&waiting).by_id.remove(&id) {
                let _ = tx.send(Value::Object(object));
            }
        }
        let mut waiting = lock(&waiting);
        waiting.ended = true;
        // Dropping the senders wakes every waiting request with "no answer will come".
        waiting.by_id.clear();
    });
}

/// Stderr as read so far (its last [`STDERR_KEPT`] characters) and whether the pipe has closed.
#[derive(Default)]
struct StderrLog {
    log: Mutex<(String, bool)>,
    closed: Condvar,
}

fn spawn_stderr(stderr: Option<std::process::ChildStderr>) -> Arc<StderrLog> {
    let kept = Arc::new(StderrLog::default());
    let Some(mut stderr) = stderr else {
        lock(&kept.log).1 = true;
        return kept;
    };
    let shared = Arc::clone(&kept);
    thread::spawn(move || {
        let mut chunk = [0_u8; 4096];
        loop {
            match stderr.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let text = &mut lock(&shared.log).0;
                    text.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    if text.len() > STDERR_KEPT {
                        let mut cut = text.len() - STDERR_KEPT;
                        while !text.is_char_boundary(cut) {
                            cut += 1;
                        }
                        text.drain(..cut);
                    }
                }
            }
        }
        lock(&shared.log).1 = true;
        shared.closed.notify_all();
    });
    kept
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;
