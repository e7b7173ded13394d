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

pub fn run(workspace: &Path, env: &Environment, options: &Options<'_>) -> ExitCode {
    let sink = Sink::for_environment(workspace, env);
    let (bench, sink) = match ahil_config::load_authoritative(workspace, env) {
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
                return Some(read);
            }
            let bytes = read
                .detail("data")
                .and_then(|d| d.get("hex"))
                .and_then(Value::as_str)
                .map(hex_bytes)
                .unwrap_or_default();
            if bytes.is_empty() && at_eof {
                return None;
            }
            if stdout
                .write_all(&bytes)
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
