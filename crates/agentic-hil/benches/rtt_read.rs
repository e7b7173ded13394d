//! `rtt_read until` latency on the emulated board, from the firmware's write to the answer, beside
//! its floor. The start is a tick line's appearance: a read-only observer in this process watches
//! the up channel's `WrOff` word in the board's RAM (every 50 µs) and stamps each advance, which is
//! the firmware's write on the host clock, with no stimulus path in the figure (an `rtt_write` echo
//! would add an audited, fsynced write and the firmware's own down-channel poll). `ours`: an
//! `rtt_read` with `until: "\n"` through the MCP server waits for the next tick line; `floor`: the
//! same read of the drivers' RTT link in-process (the same poller at the same 10 ms interval), no
//! server, no gate. Both are dominated by the poll interval (a write waits for the next poll:
//! 5 ms on average). Prints `row\trtt_read_ms\t<who>\t<median>`; not a test, nothing is asserted.
//! `cargo bench -p agentic-hil --bench rtt_read` (needs qemu-system-arm and gdb-multiarch; reading
//! QEMU's memory needs ptrace rights over it, which `sim start`'s child has under Yama scope 1 only
//! for the server, so run this as a user with `ptrace_scope` 0 or as root). `AHIL_BIN` names
//! another build of the binary to measure.

#![allow(clippy::cast_precision_loss, reason = "figures for people to read")]

#[allow(dead_code, reason = "the reference is not measured here")]
mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ahil_sim::rtt::link::{Link, Locate, Options};
use ahil_sim::rtt::{ControlBlock, Memory};
use ahil_sim::{BoardPaths, QemuMemory};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const ROUNDS: usize = 30;
const SCAN: Locate = Locate::Scan {
    start: 0x2000_0000,
    size: 4096,
};
const STEP: Duration = Duration::from_secs(5);

/// Stamps every advance of up channel 0's `WrOff`, read only: it never publishes `RdOff`.
struct Observer {
    writes: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Observer {
    fn start(paths: &BoardPaths) -> Self {
        let mut memory = QemuMemory::open(paths, STEP).expect("the board's memory opens");
        let block = match SCAN {
            Locate::Scan { start, size } => ControlBlock::scan(&mut memory, start, size),
            Locate::At(address) => ControlBlock::read(&mut memory, address),
        }
        .expect("the firmware's control block");
        // The first up descriptor follows the 24-byte header; WrOff is its fourth word.
        let wr_off = block.address + 24 + 12;
        let (writes, stop) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(AtomicBool::new(false)),
        );
        let thread = std::thread::spawn({
            let (writes, stop) = (Arc::clone(&writes), Arc::clone(&stop));
            move || {
                let mut last = memory.read_u32(wr_off).unwrap_or(0);
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(now) = memory.read_u32(wr_off)
                        && now != last
                    {
                        last = now;
                        writes.lock().expect("observer lock").push(Instant::now());
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        });
        Self {
            writes,
            stop,
            thread: Some(thread),
        }
    }

    /// Milliseconds from the last write seen before `answered` to `answered`.
    fn latency(&self, answered: Instant) -> Option<f64> {
        let writes = self.writes.lock().expect("observer lock");
        let write = writes.iter().rev().find(|w| **w <= answered)?;
        Some(answered.duration_since(*write).as_secs_f64() * 1000.0)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The drivers' link alone: a tick line from its write to `take` answering.
fn floor(paths: &BoardPaths, observer: &Observer) -> f64 {
    let options = Options {
        locate: SCAN,
        up: vec![0],
        down: Vec::new(),
        ring_bytes: 65_536,
        interval: Duration::from_millis(10),
    };
    let link = Link::start(QemuMemory::opener(paths.clone(), STEP), &options, None)
        .expect("the link starts");
    let ring = link.ring(0).expect("up channel 0");
    ring.clear();
    let mut latencies = Vec::new();
    for _ in 0..ROUNDS {
        // The ring matches no pattern: a line is whole once a take hands out its newline.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut tick = Vec::new();
        while !tick.ends_with(b"\n") && Instant::now() < deadline {
            tick.extend(ring.take(4096, deadline).bytes);
        }
        let answered = Instant::now();
        if tick.ends_with(b"\n") {
            latencies.extend(observer.latency(answered));
        }
    }
    let _ = link.close(Duration::from_secs(2));
    median(latencies)
}

/// The same through the MCP server: `rtt_read until "\n"` answered.
async fn ours(world: &common::World, binary: &std::path::Path, observer: &Observer) -> f64 {
    let mut server = tokio::process::Command::from(world.command(binary));
    server.arg("mcp-stdio").kill_on_drop(true);
    let client =
        ().serve(TokioChildProcess::new(server).expect("server starts"))
            .await
            .expect("handshake");
    let call = |tool: &'static str, args: Value| {
        let Value::Object(map) = args else {
            unreachable!("an object")
        };
        client.call_tool(CallToolRequestParams::new(tool).with_arguments(map))
    };
    let started = call("rtt_session_start", json!({"clear_buffer": true}))
        .await
        .expect("rtt_session_start answers");
    assert!(started.is_error != Some(true), "{started:?}");
    let mut latencies = Vec::new();
    for _ in 0..ROUNDS {
        let answer = call(
            "rtt_read",
            json!({"channel": "terminal", "until": "\n", "wait_timeout_s": 5}),
        )
        .await
        .expect("rtt_read answers");
        let answered = Instant::now();
        let doc = answer.structured_content.unwrap_or_default();
        if doc["until_matched"] == true {
            latencies.extend(observer.latency(answered));
        }
    }
    let _ = call("rtt_session_stop", json!({})).await;
    let _ = client.cancel().await;
    median(latencies)
}

fn main() {
    let binary = std::env::var_os("AHIL_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_agentic-hil")),
        PathBuf::from,
    );
    let world = common::World::new(&binary);
    let state = world.home.join(".local/state/agentic-hil");
    std::fs::write(
        world.config_path(),
        format!(
            "workspace_root: \"{}\"\nstate_root: \"{}\"\nversion: 3\n\
             debuggers:\n  board:\n    type: qemu\n    permissions: {{allow_flash: true, allow_reset: true}}\n\
             \x20   rtt:\n      scan: {{start: \"0x20000000\", size: 4096}}\n\
             \x20     channels: [{{name: terminal, direction: up, index: 0}}]\n\
             artifacts: {{allowed_roots: [fw]}}\n",
            world.workspace.display(),
            state.display(),
        ),
    )
    .expect("config written");
    let firmware = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    std::fs::create_dir_all(world.workspace.join("fw")).expect("fw dir");
    std::fs::copy(
        firmware.join("ahil-fw-v1.elf"),
        world.workspace.join("fw/ahil-fw-v1.elf"),
    )
    .expect("firmware");
    let started = world
        .command(&binary)
        .args(["sim", "start", "--image", "fw/ahil-fw-v1.elf"])
        .output()
        .expect("sim start runs");
    assert!(
        started.status.success(),
        "sim start: {}",
        String::from_utf8_lossy(&started.stdout)
    );
    let paths = BoardPaths::new(state.join("sim/board"));
    let observer = Observer::start(&paths);
    let floor_ms = floor(&paths, &observer);
    let ours_ms = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(ours(&world, &binary, &observer));
    drop(observer);
    let _ = world.command(&binary).args(["sim", "stop"]).output();
    println!("row\trtt_read_ms\tfloor\t{floor_ms:.3}");
    println!("row\trtt_read_ms\tours\t{ours_ms:.3}");
    println!(
        "rtt_read until, tick line written to answer: ours median {ours_ms:.2} ms, floor (the link alone) {floor_ms:.2} ms ({ROUNDS} lines each, 10 ms polls)"
    );
}
