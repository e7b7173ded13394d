//! `agentic-hil com-stdio --port-id <id>`: a configured serial port on this terminal, for a person.
//!
//! Everything goes through the gate as `com_session_start`, `com_write` and `com_read`, so policy,
//! identity checks, the device lock and the session log apply exactly as over MCP. Device output is
//! written to stdout as raw bytes; a failure is one JSON line on stderr and exit status 1.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use ahil_config::Environment;
use ahil_gate::audit::{Scrubbed, Sink};
use ahil_gate::{Bench, Outcome};
use serde_json::{Value, json};

/// How long a read waits for device output while stdin is open; it returns at the first byte.
const IDLE_READ_S: f64 = 1.0;
/// The most stdin bytes sent in one write.
const STDIN_CHUNK: usize = 4096;

/// Options of the command.
pub struct Options<'a> {
    pub port_id: &'a str,
    pub max_read_bytes: Option<u64>,
    pub eof_idle_timeout_s: f64,
}

// Out of line: see `mcp::serve`.
#[inline(never)]
pub fn run(workspace: &Path, env: &Environment, options: &Options<'_>) -> ExitCode {
    let sink = Sink::for_environment(workspace, env);
    let (bench, sink) = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => {
            let sink = sink.with_config(&loaded);
            (Bench::provisioned(loaded, env.clone()), sink)
        }
        Err(err) => {
            return fail_value(
                &sink,
                &json!({
                    "ok": false,
                    "tool": "com_stdio",
                    "error_type": err.error_type(),
                    "summary": err.summary(),
                }),
            );
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            return fail_value(
                &sink,
                &json!({"ok": false, "tool": "com_stdio", "error_type": "backend_error", "summary": err.to_string()}),
            );
        }
    };
    runtime.block_on(bridge(&bench, &sink, options))
}

async fn bridge(bench: &Bench, sink: &Sink, options: &Options<'_>) -> ExitCode {
    let port = json!(options.port_id);
    let started = bench
        .call(
            "com_session_start",
            json!({"port_id": port, "clear_buffer": true}),
        )
        .await;
    if !ahil_gate::overall_success(&started) {
        return fail(sink, &started);
    }
    let eof = AtomicBool::new(false);
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    // stdin blocks, so it is read on its own thread; the channel closes at EOF or on a read error.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; STDIN_CHUNK];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let writer = async {
        while let Some(chunk) = rx.recv().await {
            let hex = chunk
                .iter()
                .fold(String::with_capacity(chunk.len() * 2), |mut hex, b| {
                    use std::fmt::Write as _;
                    let _ = write!(hex, "{b:02x}");
                    hex
                });
            let wrote = bench
                .call("com_write", json!({"port_id": port, "hex": hex}))
                .await;
            if !ahil_gate::overall_success(&wrote) {
                eof.store(true, Ordering::SeqCst);
                return Some(wrote);
            }
        }
        eof.store(true, Ordering::SeqCst);
        None
    };
    let reader = async {
        let mut stdout = std::io::stdout().lock();
        let mut lines = Lines::default();
        loop {
            let at_eof = eof.load(Ordering::SeqCst);
            let mut args = json!({
                "port_id": port,
                "wait_timeout_s": if at_eof { options.eof_idle_timeout_s } else { IDLE_READ_S },
            });
            if let Some(max) = options.max_read_bytes {
                args["max_bytes"] = json!(max);
            }
            let read = bench.call("com_read", args).await;
            if !ahil_gate::overall_success(&read) {
                let _ = stdout.write_all(&lines.flush(sink));
                return Some(read);
            }
            let bytes = read
                .detail("data")
                .and_then(|d| d.get("hex"))
                .and_then(Value::as_str)
                .map(hex_bytes)
                .unwrap_or_default();
            // A quiet read shows what is held back (a prompt has no newline).
            let shown = if bytes.is_empty() {
                lines.flush(sink)
            } else {
                lines.push(sink, &bytes)
            };
            if bytes.is_empty() && at_eof {
                let _ = stdout.write_all(&shown).and_then(|()| stdout.flush());
                return None;
            }
            if stdout
                .write_all(&shown)
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return None;
            }
        }
    };
    let (wrote, read) = tokio::join!(writer, reader);
    let stopped = bench
        .call("com_session_stop", json!({"port_id": port}))
        .await;
    if let Some(failed) = wrote.or(read) {
        return fail(sink, &failed);
    }
    if !ahil_gate::overall_success(&stopped) {
        return fail(sink, &stopped);
    }
    ExitCode::SUCCESS
}

/// The most device output held back waiting for a line's end.
const MAX_PENDING: usize = 4096;

/// Device output on its way to the terminal passes the output step a line at a time, so a
/// credential the firmware prints is masked even when it arrives across two reads. A line that is
/// not UTF-8 is shown as it came.
#[derive(Default)]
struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    /// The complete lines of what has arrived, scrubbed; the rest waits.
    fn push(&mut self, sink: &Sink, bytes: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(bytes);
        let cut = if self.pending.len() > MAX_PENDING {
            self.pending.len()
        } else {
            self.pending
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |at| at + 1)
        };
        let ready: Vec<u8> = self.pending.drain(..cut).collect();
        scrub_lines(sink, &ready)
    }

    /// Everything held back, scrubbed.
    fn flush(&mut self, sink: &Sink) -> Vec<u8> {
        let ready = std::mem::take(&mut self.pending);
        scrub_lines(sink, &ready)
    }
}

fn scrub_lines(sink: &Sink, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if let Ok(text) = std::str::from_utf8(line) {
            out.extend_from_slice(sink.scrub_text(text).as_bytes());
        } else {
            // A stray byte does not hide a credential: the step reads the line one character a
            // byte (Latin-1), and every byte it did not mask goes out as it came.
            let text: String = line.iter().map(|&b| char::from(b)).collect();
            out.extend(
                sink.scrub_text(&text)
                    .chars()
                    .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')),
            );
        }
    }
    out
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    hex.as_bytes()
        .chunks(2)
        .filter_map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
        })
        .collect()
}

/// One JSON line on stderr, after the output step.
fn fail(sink: &Sink, outcome: &Outcome) -> ExitCode {
    fail_value(sink, &outcome.to_value())
}

fn fail_value(sink: &Sink, document: &Value) -> ExitCode {
    write_failure(&sink.scrub(document))
}

/// stderr's only writer: it takes nothing but a scrubbed document.
fn write_failure(document: &Scrubbed) -> ExitCode {
    let line =
        serde_json::to_string(document.as_value()).unwrap_or_else(|_| "{\"ok\":false}".to_owned());
    let _ = writeln!(std::io::stderr(), "{line}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_printed_across_two_reads_is_masked_before_the_terminal_shows_it() {
        let sink = Sink::new(None);
        let mut lines = Lines::default();
        assert_eq!(lines.push(&sink, b"boot ok\nwifi pass"), b"boot ok\n");
        assert_eq!(
            lines.push(&sink, b"word=hunter2 up\nlogin: "),
            b"wifi password=[redacted] up\n"
        );
        assert_eq!(lines.flush(&sink), b"login: ");
    }

    #[test]
    fn bytes_that_are_not_text_are_shown_as_they_came_but_for_a_credential() {
        let sink = Sink::new(None);
        let mut lines = Lines::default();
        assert_eq!(
            lines.push(&sink, b"\xff\xfe token=hunter2 \xc3\xa9\xfe\n"),
            b"\xff\xfe token=[redacted] \xc3\xa9\xfe\n"
        );
        assert_eq!(lines.push(&sink, b"\x00\x80 ok\n"), b"\x00\x80 ok\n");
    }
}
