//! CAN benchmark (not a test): through the bridge simulator (ahil-sim's `ahil-can-bridge-sim`) as an
//! `adapter: process` bus, over MCP stdio, for this binary and (when installed) the reference with the
//! same configuration and the same bridge.
//!
//! - read throughput: a burst of N frames (N inside `max_buffer_frames`) is triggered with one
//!   `can_send`, then `can_read` until all N are in; frames/s from the trigger to the last frame, and
//!   every sequence number must arrive exactly once (zero loss);
//! - `can_send` round trip: call to answer, median;
//! - request/response: `can_send` to the ECU plus `can_read` with `until_id` on its answer, median.
//!
//! Run with `cargo bench -p agentic-hil --bench can`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{World, reference_binary};

const BURST: u64 = 1000;
const BURST_ROUNDS: usize = 5;
const SENDS: usize = 200;
const EXCHANGES: usize = 100;

fn main() {
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_agentic-hil"));
    let world = world(&ours);
    run("agentic-hil (Rust)", &world, &ours);
    match reference_binary() {
        Some(reference) => run("agentic-hil 0.25.0 (reference)", &world, &reference),
        None => println!(
            "reference not installed: run scripts/setup-debian.sh (or set AHIL_REFERENCE_BIN)"
        ),
    }
}

/// The common world plus a bus `bench` whose adapter is the bridge simulator.
fn world(ours: &Path) -> World {
    let world = World::new(ours);
    let tools = world.home.join("tools");
    std::fs::create_dir_all(&tools).expect("tools dir");
    let bridge = tools.join("bridge");
    std::fs::write(
        &bridge,
        format!(
            "#!/bin/sh\nexec \"{}\" --period-ms 0\n",
            ahil_sim::executables::executable(ahil_sim::executables::CAN_BRIDGE).display()
        ),
    )
    .expect("bridge wrapper");
    let mut perms = std::fs::metadata(&bridge).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&bridge, perms).expect("chmod");
    let projects = world.home.join(".config/agentic-hil/projects");
    let config = std::fs::read_dir(&projects)
        .expect("projects")
        .next()
        .expect("one project")
        .expect("entry")
        .path()
        .join("config.yaml");
    let text = std::fs::read_to_string(&config).expect("config");
    let bus = format!(
        "can_buses:\n  bench:\n    adapter: process\n    channel: sim0\n    executable: \"{}\"\n    timeout_s: 5\n    max_buffer_frames: 1024\n    permissions:\n      allow_write: true",
        bridge.display()
    );
    std::fs::write(&config, text.replacen("can_buses: {}", &bus, 1)).expect("write config");
    world
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(world: &World, program: &Path) -> Self {
        let mut child = world
            .command(program)
            .arg("mcp-stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Self {
            child,
            stdin,
            stdout,
            next: 0,
        };
        server.rpc(
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("send");
        self.stdin.flush().expect("flush");
    }

    fn rpc(&mut self, method: &str, params: &Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "server closed");
            let answer: Value = serde_json::from_str(&line).unwrap_or_default();
            if answer["id"] == id {
                return answer["result"].clone();
            }
        }
    }

    /// One tool call; the envelope (structured content, or the JSON text block).
    fn call(&mut self, tool: &str, args: &Value) -> Value {
        let result = self.rpc("tools/call", &json!({"name": tool, "arguments": args}));
        if let Some(doc) = result.get("structuredContent") {
            return doc.clone();
        }
        result["content"][0]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(result)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.call("can_session_stop", &json!({"bus_id": "bench"}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run(name: &str, world: &World, program: &Path) {
    let mut server = Server::start(world, program);
    let started = server.call("can_session_start", &json!({"bus_id": "bench"}));
    if started["ok"] != true {
        println!("{name}: can_session_start failed: {started}");
        return;
    }

    let mut rates = Vec::new();
    for _ in 0..BURST_ROUNDS {
        let trigger =
            json!({"bus_id": "bench", "frame_id": 0x7df, "data_hex": format!("{BURST:04x}")});
        let clock = Instant::now();
        let sent = server.call("can_send", &trigger);
        assert_eq!(sent["ok"], true, "{name}: trigger: {sent}");
        let mut seen = vec![false; usize::try_from(BURST).expect("small")];
        let mut got = 0;
        let mut dropped = 0;
        while got < BURST && clock.elapsed() < Duration::from_secs(30) {
            let read = server.call("can_read", &json!({"bus_id": "bench", "wait_timeout_s": 1}));
            assert_eq!(read["ok"], true, "{name}: can_read: {read}");
            dropped = read["dropped_frames"].as_u64().unwrap_or(dropped);
            for frame in read["frames"].as_array().into_iter().flatten() {
                if frame["id"] != 0x200 {
                    continue;
                }
                let seq = frame["data_hex"]
                    .as_str()
                    .and_then(|h| usize::from_str_radix(h, 16).ok())
                    .expect("a sequence number");
                assert!(!seen[seq], "{name}: frame {seq} read twice");
                seen[seq] = true;
                got += 1;
            }
        }
        let elapsed = clock.elapsed();
        assert!(
            got == BURST && dropped == 0,
            "{name}: {got} of {BURST} frames, {dropped} dropped"
        );
        #[allow(clippy::cast_precision_loss)]
        rates.push(BURST as f64 / elapsed.as_secs_f64());
    }

    let mut sends = Vec::new();
    for i in 0..SENDS {
        let frame = json!({"bus_id": "bench", "frame_id": 0x123, "data_hex": format!("{i:04x}")});
        let clock = Instant::now();
        let sent = server.call("can_send", &frame);
        sends.push(ms(clock.elapsed()));
        assert_eq!(sent["ok"], true, "{name}: can_send: {sent}");
    }

    let mut exchanges = Vec::new();
    for _ in 0..EXCHANGES {
        let clock = Instant::now();
        let sent = server.call(
            "can_send",
            &json!({"bus_id": "bench", "frame_id": 0x7e0, "data_hex": "1001"}),
        );
        assert_eq!(sent["ok"], true, "{name}: request: {sent}");
        let read = server.call(
            "can_read",
            &json!({"bus_id": "bench", "until_id": 0x7e8, "wait_timeout_s": 5}),
        );
        exchanges.push(ms(clock.elapsed()));
        let answered = read["frames"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["id"] == 0x7e8));
        assert!(answered, "{name}: no ECU answer: {read}");
    }

    let who = if name.contains("reference") {
        "reference"
    } else {
        "ours"
    };
    println!("row\tcan_read_fps\t{who}\t{:.3}", median(rates.clone()));
    println!("row\tcan_send_ms\t{who}\t{:.3}", median(sends.clone()));
    println!(
        "row\tcan_reqresp_ms\t{who}\t{:.3}",
        median(exchanges.clone())
    );
    println!(
        "{name}: read {:.0} frames/s (median of {BURST_ROUNDS} bursts of {BURST}, zero loss), \
         can_send round trip median {:.2} ms ({SENDS} sends), request/response median {:.2} ms ({EXCHANGES})",
        median(rates),
        median(sends),
        median(exchanges),
    );
}
