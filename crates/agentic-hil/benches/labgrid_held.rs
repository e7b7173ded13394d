//! A call on a labgrid place this server already holds, beside the same call on a bench without a
//! `labgrid:` section (its floor): an audited `com_write` inside a COM session inside a run that
//! holds the port's place, so the place is counted again and the coordinator is asked nothing.
//! Both servers run side by side against one real coordinator (labgrid 26.0.1 from
//! `target/labgrid-venv`), their calls interleaved so both see the same machine; median of 200
//! each. Skipped, with the reason printed, when the venv is missing. Run with
//! `cargo bench -p agentic-hil --bench labgrid_held`.

// Millisecond counts far below 2^52, so the float conversions are exact.
#![allow(clippy::cast_precision_loss)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use ahil_sim::PtyPeer;
use ahil_sim::labgrid::Lab;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const RUNS: usize = 200;

mod common;

/// A workspace `init` made, its configuration rewritten with one UART and `labgrid` (a section or
/// nothing).
fn bench(binary: &Path, uart: &str, labgrid: &str) -> common::World {
    let world = common::World::new(binary);
    std::fs::write(
        world.config_path(),
        format!(
            "workspace_root: \"{}\"\nstate_root: \"{}\"\nversion: 3\n\
             com_ports:\n  uart0:\n    device: \"{uart}\"\n    identity_source: device\n\
             \x20   permissions:\n      allow_write: true\n{labgrid}",
            world.workspace.display(),
            world.home.join(".local/state/agentic-hil").display(),
        ),
    )
    .expect("config written");
    world
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> (Value, f64) {
    let Value::Object(map) = args else {
        unreachable!("arguments are an object")
    };
    let clock = Instant::now();
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await
        .expect("tools/call answers");
    let ms = clock.elapsed().as_secs_f64() * 1000.0;
    let doc = result.structured_content.unwrap_or_default();
    assert_eq!(doc["ok"], json!(true), "{tool}: {doc}");
    (doc, ms)
}

/// A server on `bench` with a run over the UART and a COM session on it open.
async fn serve(binary: &Path, bench: &common::World) -> RunningService<RoleClient, ()> {
    let mut command = bench.command(binary);
    command.arg("mcp-stdio");
    let mut server = tokio::process::Command::from(command);
    server.kill_on_drop(true);
    let client =
        ().serve(TokioChildProcess::new(server).expect("server starts"))
            .await
            .expect("handshake");
    call(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "uart", "id": "uart0"}]}),
    )
    .await;
    call(&client, "com_session_start", json!({"port_id": "uart0"})).await;
    client
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let coordinator = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/labgrid-venv/bin/labgrid-coordinator");
    if !coordinator.is_file() {
        println!(
            "labgrid_held: skipped: target/labgrid-venv has no labgrid-coordinator (scripts/setup-debian.sh installs it)"
        );
        return;
    }
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_agentic-hil"));
    let lab_dir = tempfile::tempdir().expect("lab dir");
    let lab = Lab::start(lab_dir.path());
    lab.create_place("bench-1");
    let (floor_uart, held_uart) = (
        PtyPeer::open().expect("a pty"),
        PtyPeer::open().expect("a pty"),
    );
    let floor = bench(&binary, floor_uart.device(), "");
    let held = bench(
        &binary,
        held_uart.device(),
        &format!(
            "labgrid:\n  coordinator: \"{}\"\n  user: \"benchhost/agentic-hil\"\n  places:\n    com_ports:\n      uart0: bench-1\n",
            lab.address
        ),
    );
    let (floor_ms, held_ms) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let floor_client = serve(&binary, &floor).await;
            let held_client = serve(&binary, &held).await;
            assert_eq!(
                lab.holder("bench-1").as_deref(),
                Some("benchhost/agentic-hil"),
                "the run holds the place"
            );
            let write = || json!({"port_id": "uart0", "text": "w\n"});
            let (mut floors, mut helds) = (Vec::new(), Vec::new());
            // The first round warms the audit files of both.
            for run in 0..=RUNS {
                let (_, f) = call(&floor_client, "com_write", write()).await;
                let (_, h) = call(&held_client, "com_write", write()).await;
                if run > 0 {
                    floors.push(f);
                    helds.push(h);
                }
            }
            let _ = floor_client.cancel().await;
            let _ = held_client.cancel().await;
            (median(floors), median(helds))
        });
    println!(
        "audited com_write inside a run, median of {RUNS}: {floor_ms:.2} ms without labgrid, {held_ms:.2} ms on a place the run holds ({:+.2} ms)",
        held_ms - floor_ms
    );
    println!("row\tlabgrid_held_ms\tfloor\t{floor_ms:.3}");
    println!("row\tlabgrid_held_ms\tours\t{held_ms:.3}");
}
