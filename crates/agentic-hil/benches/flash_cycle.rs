//! Flash + reset + `boot ok` on the emulated board through the whole stack (MCP client, server, gate,
//! qemu driver), median of 20, and the gate's own share of it. Run with
//! `cargo bench -p agentic-hil --bench flash_cycle` (needs qemu-system-arm and gdb-multiarch).
//!
//! Figures per call: `round trip` (client send to answer), `gate` (the envelope's elapsed_ms: from the
//! gate receiving the call to its answer, report and log written), `driver` (inside QEMU and gdb:
//! flash, verify, reset), `capture` (waiting for the firmware's `boot ok` on the UART, which is the
//! firmware's boot time plus polling), and `gate overhead` = gate − driver − capture (validation,
//! policy, locks, staging, audit).

// Millisecond counts far below 2^52, so the float conversions are exact.
#![allow(clippy::cast_precision_loss)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const RUNS: usize = 20;

struct Sample {
    round_trip: f64,
    gate: f64,
    driver: f64,
    capture: f64,
}

fn main() {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_agentic-hil"));
    let root = tempfile::tempdir().expect("a temp dir");
    let root_path = std::fs::canonicalize(root.path()).expect("temp dir resolves");
    let home = root_path.join("home");
    let workspace = root_path.join("ws");
    std::fs::create_dir_all(workspace.join("fw")).expect("workspace");
    std::fs::create_dir_all(&home).expect("home");
    let command = |args: &[&str]| {
        let mut cmd = Command::new(&binary);
        cmd.current_dir(&workspace)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .args(args);
        cmd
    };
    let init = command(&["init"]).output().expect("init runs");
    assert!(init.status.success(), "init succeeds");
    let state = home.join(".local/state/agentic-hil");
    let projects = home.join(".config/agentic-hil/projects");
    let project = std::fs::read_dir(&projects)
        .expect("init wrote a project")
        .flatten()
        .next()
        .expect("one project")
        .path();
    std::fs::write(
        project.join("config.yaml"),
        format!(
            "workspace_root: \"{}\"\nstate_root: \"{}\"\nversion: 3\n\
             debuggers:\n  board:\n    type: qemu\n    permissions: {{allow_flash: true, allow_reset: true}}\n\
             artifacts: {{allowed_roots: [fw]}}\n\
             com_ports:\n  uart: {{device: \"{}\", resource_id: bench-uart}}\n",
            workspace.display(),
            state.display(),
            state.join("sim/board/uart").display()
        ),
    )
    .expect("config written");
    let firmware = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    for name in ["ahil-fw-v1.elf", "ahil-fw-v2.elf"] {
        std::fs::copy(firmware.join(name), workspace.join("fw").join(name)).expect("firmware");
    }
    let started = command(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"])
        .output()
        .expect("sim start runs");
    assert!(
        started.status.success(),
        "sim start: {}",
        String::from_utf8_lossy(&started.stdout)
    );

    let samples = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let mut server = tokio::process::Command::from(command(&["mcp-stdio"]));
            server.kill_on_drop(true);
            let client =
                ().serve(TokioChildProcess::new(server).expect("server starts"))
                    .await
                    .expect("handshake");
            let mut samples = Vec::new();
            for run in 0..=RUNS {
                let image = if run % 2 == 0 {
                    "fw/ahil-fw-v2.elf"
                } else {
                    "fw/ahil-fw-v1.elf"
                };
                let args = json!({
                    "image_path": image,
                    "reset_after_flash": true,
                    "capture": {"port_id": "uart", "until": "boot ok", "wait_timeout_s": 5},
                });
                let Value::Object(map) = args else {
                    unreachable!("an object")
                };
                let clock = Instant::now();
                let result = client
                    .call_tool(CallToolRequestParams::new("flash_firmware").with_arguments(map))
                    .await
                    .expect("tools/call answers");
                let round_trip = clock.elapsed().as_secs_f64() * 1000.0;
                let doc = result.structured_content.unwrap_or_default();
                assert_eq!(doc["ok"], json!(true), "flash {run}: {doc}");
                // The first call warms the staging directory and the audit files.
                if run > 0 {
                    samples.push(Sample {
                        round_trip,
                        gate: doc["elapsed_ms"].as_f64().unwrap_or(0.0),
                        driver: doc["driver_elapsed_ms"].as_f64().unwrap_or(0.0),
                        capture: doc["capture"]["capture_ms"].as_f64().unwrap_or(0.0),
                    });
                }
            }
            let _ = client.cancel().await;
            samples
        });
    let _ = command(&["sim", "stop"]).output();

    let median = |pick: fn(&Sample) -> f64| {
        let mut values: Vec<f64> = samples.iter().map(pick).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let overhead = |s: &Sample| s.gate - s.driver - s.capture;
    println!("flash_firmware (ELF, verify, reset, capture `boot ok`), median of {RUNS}:");
    println!(
        "  round trip over MCP : {:7.1} ms",
        median(|s| s.round_trip)
    );
    println!("  gate (elapsed_ms)   : {:7.1} ms", median(|s| s.gate));
    println!("  inside qemu + gdb   : {:7.1} ms", median(|s| s.driver));
    println!("  capture (boot ok)   : {:7.1} ms", median(|s| s.capture));
    println!("  gate overhead       : {:7.1} ms", median(overhead));
    println!(
        "  MCP transport       : {:7.1} ms",
        median(|s| s.round_trip - s.gate)
    );
}
