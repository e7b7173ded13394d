//! Black-box, end to end: test plans run through the gate — attached over MCP and the CLI, detached as
//! worker processes — on a real QEMU board that `agentic-hil sim start` started in the test's own HOME.

#[path = "../support/mod.rs"]
mod support;

mod corpus;
mod detached;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::call;
use support::sim_board::{copy_firmware, initialised, qemu_board, sim_config, state_root};

type Client = RunningService<rmcp::RoleClient, ()>;

const GRANTS: &str =
    "      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true";

/// A world with the emulated board's debugger (`board`) and UART (`uart`, writable), the committed
/// firmware in `fw/`, and no board running yet.
fn world() -> World {
    let world = initialised();
    let uart = state_root(&world).join("sim/board/uart");
    let rest = format!(
        "debug:\n  allowed_symbols: [on_tick, counter, g_u32, g_i16, g_sample]\n\
         com_ports:\n  uart:\n    device: \"{}\"\n    resource_id: sim-uart\n    permissions:\n      allow_write: true\n",
        uart.display()
    );
    let config = sim_config(&world, &qemu_board(&format!("{GRANTS}\n")), &rest);
    std::fs::write(world.config_path(), config).expect("the test config is written");
    copy_firmware(&world, &["ahil-fw-v1.elf", "ahil-fw-v2.elf"]);
    world
}

fn write_plan(world: &World, name: &str, text: &str) -> String {
    world.write_plan(name, text)
}

/// Writes the plan and runs it with `test-reactor --json`: its document and exit code.
fn run_plan_cli(world: &World, name: &str, text: &str) -> (Value, Option<i32>) {
    let plan = write_plan(world, name, text);
    world.run_json(&["test-reactor", "--test-config", &plan])
}

fn runs_dir(world: &World) -> PathBuf {
    world
        .home
        .join(".local/state/agentic-hil/coordination/runs")
}

/// Polls test_reactor_status until `state` is one of `wanted`, for at most `limit`.
async fn wait_for_state(client: &Client, run: &str, wanted: &[&str], limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let (doc, _) = call(client, "test_reactor_status", json!({"run": run})).await;
        if doc["state"].as_str().is_some_and(|s| wanted.contains(&s)) {
            return doc;
        }
        assert!(
            Instant::now() < deadline,
            "{run} never reached {wanted:?}: {doc}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `test_reactor_run` of `plan`, attached: (the result, isError).
async fn run_plan(client: &Client, plan: &str) -> (Value, bool) {
    call(
        client,
        "test_reactor_run",
        json!({"test_config_path": plan}),
    )
    .await
}

fn step_results(doc: &Value) -> Vec<(String, bool)> {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["action"].as_str().unwrap_or_default().to_owned(),
                s["result"]["ok"] == json!(true),
            )
        })
        .collect()
}

const EVERY_STEP: &str = r#"version: 5
name: every-step
steps:
  - {device: uart, action: uart_open, clear_buffer: true}
  - {action: flash, image_path: fw/ahil-fw-v2.elf, reset_after_flash: true}
  - {device: uart, action: uart_expect, pattern: "ahil-fw 2\\.0 \\w+", timeout_s: 10}
  - {device: uart, action: uart_write, text: "hello\r"}
  - {device: uart, action: uart_read, comparator: {equals: "echo: hello"}, timeout_s: 5}
  - {device: uart, action: uart_read, comparator: {pattern: "tick (\\d+)", range: {min: 0, max: 1000000}}, timeout_s: 5}
  - {device: uart, action: uart_write, hex: "76 65 72 73 69 6f 6e 0d"}
  - {device: uart, action: uart_expect, text: "ahil-fw 2.0", timeout_s: 5}
  - {device: uart, action: uart_read, timeout_s: 0.1}
  - {device: uart, action: delay, duration_ms: 300}
  - action: repeat
    count: 2
    steps:
      - {device: uart, action: uart_expect, text: "tick", timeout_s: 5}
  - {device: board, action: reset, mode: run}
  - {device: uart, action: uart_expect, text: "boot ok", timeout_s: 10}
  - {device: uart, action: uart_close}
  - {device: board, action: debug_start, image_path: fw/ahil-fw-v2.elf, mode: attach}
  - {device: board, action: run_until_breakpoint, location: {function: on_tick}, timeout_s: 5}
  - {device: board, action: read_symbol, symbol: g_u32, size_bytes: 4, comparator: {equals: 0xDEADBEEF}}
  - {device: board, action: read_symbol, symbol: g_i16, comparator: {range: {min: -2000, max: 0}, signed: true}}
  - {device: board, action: dump_memory, symbol: g_u32, output_path: fw/dumps/g_u32.hex}
  - {device: board, action: debug_stop}
"#;

#[tokio::test]
async fn every_board_step_type_runs_end_to_end_through_the_gate() {
    let world = world();
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    let plan = write_plan(&world, "every-step.yaml", EVERY_STEP);
    let client = support::connect(&world).await;

    let (doc, is_error) = run_plan(&client, &plan).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["tool"], "test_reactor_run", "{doc}");
    let results = step_results(&doc);
    assert_eq!(results.len(), 20, "{doc}");
    assert!(results.iter().all(|(_, ok)| *ok), "{results:?}");
    assert_eq!(
        doc["cleanup"],
        json!([]),
        "every session was closed by its own step"
    );
    assert_eq!(doc["steps"][10]["result"]["iterations_run"], 2, "{doc}");
    assert_eq!(doc["steps"][10]["result"]["exit_reason"], "count", "{doc}");
    assert_eq!(
        doc["steps"][15]["result"]["stop"]["frame"]["function"], "on_tick",
        "{doc}"
    );
    assert_eq!(
        doc["steps"][16]["result"]["comparator"]["observed"],
        "3735928559"
    );
    assert!(
        doc["steps"][5]["result"]["captured_value"].is_number(),
        "{doc}"
    );
    assert!(
        world.workspace.join("fw/dumps/g_u32.hex").is_file(),
        "the dump was written"
    );
    let run = doc["run"].as_str().expect("a run handle").to_owned();
    assert!(run.starts_with("run-") && run.len() == 20, "{run}");
    assert_eq!(doc["test_config_sha256"].as_str().map(str::len), Some(64));
    let canonical = doc["canonical_report_path"]
        .as_str()
        .expect("canonical report");
    assert!(
        canonical.starts_with("<state_root>/projects/")
            && canonical.ends_with(&format!("reports/runs/{run}.json")),
        "{canonical}"
    );
    let shown = doc.to_string();
    assert!(
        !shown.contains(&world.home.display().to_string()),
        "no path under HOME: {shown}"
    );

    // The per-run report is kept under the state root and the trusted last report is this run.
    let kept = world
        .home
        .join(".local/state/agentic-hil")
        .join(canonical.trim_start_matches("<state_root>/"));
    let kept: Value =
        serde_json::from_slice(&std::fs::read(&kept).expect("the run's own report")).expect("JSON");
    assert_eq!(kept["run"], run.as_str());
    assert_eq!(kept["audit_ok"], true, "promoted, not pending: {kept}");
    let (last, _) = call(&client, "get_last_report", json!({})).await;
    assert_eq!(last["report"]["tool"], "test_reactor_run", "{last}");

    let status = wait_for_state(&client, &run, &["finished"], Duration::from_secs(1)).await;
    assert_eq!(status["run_ok"], true, "{status}");
    assert!(
        status.get("pid").is_none() && status.get("version").is_none(),
        "{status}"
    );
    let (listed, _) = call(&client, "test_reactor_status", json!({})).await;
    assert_eq!(listed["runs"][0]["run"], run.as_str(), "{listed}");
    assert_eq!(listed["active_runs"], json!([]), "{listed}");
    let (stopped, is_error) = call(&client, "test_reactor_stop", json!({"run": run})).await;
    assert!(!is_error, "{stopped}");
    assert_eq!(stopped["stop_requested"], false, "already ended: {stopped}");

    // The run released everything: the debugger and the UART are free for single calls.
    let (doc, is_error) = call(&client, "com_session_start", json!({"port_id": "uart"})).await;
    assert!(!is_error, "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_plan_runs_on_the_bench_a_description_reload_installed() {
    let world = world();
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    // The server starts while the UART is still described under its old identity.
    let config = world.config_path();
    let current = std::fs::read_to_string(&config).expect("config");
    let uart = world
        .home
        .join(".local/state/agentic-hil/sim/board/uart")
        .display()
        .to_string();
    let old = current.replace(
        &format!("device: \"{uart}\"\n    resource_id: sim-uart\n"),
        &format!("device: \"{uart}-old\"\n    resource_id: sim-uart-old\n"),
    );
    assert_ne!(old, current, "the UART entry was rewritten");
    std::fs::write(&config, &old).expect("old description");
    let client = support::connect(&world).await;

    // The operator describes the UART as it is now; the agent reloads the description.
    std::fs::write(&config, &current).expect("new description");
    let (reload, is_error) = call(&client, "project_config_reload_description", json!({})).await;
    assert!(!is_error, "{reload}");
    assert_eq!(reload["description_changed"], json!(true), "{reload}");

    let plan = write_plan(
        &world,
        "after-reload.yaml",
        "version: 5\nsteps:\n\
         - {device: uart, action: uart_open}\n\
         - {device: uart, action: uart_expect, text: \"tick\", timeout_s: 5}\n\
         - {device: uart, action: uart_close}\n",
    );
    let (doc, is_error) = run_plan(&client, &plan).await;
    assert!(!is_error, "the run uses the reloaded UART: {doc}");
    assert!(step_results(&doc).iter().all(|(_, ok)| *ok), "{doc}");
}

#[tokio::test]
async fn a_failing_step_ends_the_plan_closes_its_sessions_and_writes_junit_from_the_cli() {
    let world = world();
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    let plan = write_plan(
        &world,
        "fails.yaml",
        "version: 5\nname: fails\nsteps:\n\
         - {device: board, action: reset, mode: run}\n\
         - {device: uart, action: uart_open}\n\
         - {device: uart, action: uart_expect, text: \"never printed\", timeout_s: 1}\n\
         - {device: uart, action: uart_close}\n\
         - {device: board, action: reset, mode: halt}\n",
    );
    let out = world.run(&[
        "test-reactor",
        "--test-config",
        &plan,
        "--junit-xml",
        "out/junit.xml",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "a failed run exits 1");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false, "{doc}");
    assert_eq!(doc["failed_step"], 3, "{doc}");
    assert_eq!(doc["step_error_type"], "uart_expect_timeout", "{doc}");
    assert_eq!(doc["error_type"], "uart_expect_timeout", "{doc}");
    assert_eq!(
        step_results(&doc).len(),
        3,
        "later steps did not run: {doc}"
    );
    let tail = doc["steps"][2]["result"]["received_tail"]
        .as_str()
        .expect("a tail");
    assert!(tail.contains("tick"), "what the board did send: {tail}");
    assert_eq!(doc["cleanup"][0]["action"], "uart_close", "{doc}");
    assert_eq!(doc["cleanup"][0]["port_id"], "uart", "{doc}");
    assert_eq!(doc["cleanup_ok"], true, "{doc}");
    // The run held the board, so the default policy proves it after the failure: reset into halt, probe.
    assert_eq!(doc["recovery"]["attempted"], true, "{doc}");
    assert_eq!(doc["recovery"]["outcome"], "recovered", "{doc}");
    assert_eq!(
        doc["recovery"]["actions"],
        serde_json::json!(["reap_processes", "reset_halt", "probe_target"]),
        "{doc}"
    );
    assert_eq!(doc["junit_xml"], "out/junit.xml", "{doc}");
    let xml =
        std::fs::read_to_string(world.workspace.join("out/junit.xml")).expect("junit written");
    assert!(xml.contains("tests=\"5\" failures=\"1\""), "{xml}");
    assert!(
        xml.contains("<failure type=\"uart_expect_timeout\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<skipped").count(), 2, "{xml}");

    // run-evidence turns the run's report into CI evidence.
    let report = doc["report_path"].as_str().expect("a workspace report");
    let (evidence, code) =
        world.run_json(&["run-evidence", "--report", report, "--out", "evidence"]);
    assert_eq!(code, Some(0), "{evidence}");
    assert!(world.workspace.join("evidence/run-summary.json").is_file());

    // A failure inside a debug session: cleanup stops the session first, then the serial line.
    let plan = write_plan(
        &world,
        "fails-in-debug.yaml",
        "version: 5\nsteps:\n\
         - {device: uart, action: uart_open}\n\
         - {device: board, action: debug_start, image_path: fw/ahil-fw-v1.elf, mode: attach}\n\
         - {device: board, action: read_symbol, symbol: g_u32, comparator: {equals: 1}}\n\
         - {device: board, action: debug_stop}\n",
    );
    let (doc, code) = world.run_json(&["test-reactor", "--test-config", &plan]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["step_error_type"], "comparator_unmet", "{doc}");
    assert_eq!(
        doc["steps"][2]["result"]["comparator"]["observed"], "3735928559",
        "{doc}"
    );
    let cleanup: Vec<(Value, Value)> = doc["cleanup"]
        .as_array()
        .expect("cleanup")
        .iter()
        .map(|c| (c["action"].clone(), c["result"]["ok"].clone()))
        .collect();
    assert_eq!(
        cleanup,
        vec![
            (json!("debug_stop"), json!(true)),
            (json!("uart_close"), json!(true))
        ],
        "{doc}"
    );
    assert_eq!(doc["cleanup"][0]["debugger"], "board", "{doc}");
}

#[tokio::test]
async fn preflight_refuses_unknown_devices_and_missing_grants_before_any_step() {
    let world = world();
    let unknown = write_plan(
        &world,
        "unknown.yaml",
        "version: 5\nsteps:\n - {device: board, action: reset}\n - {device: nope, action: uart_open}\n",
    );
    let (doc, code) = world.run_json(&["test-reactor", "--test-config", &unknown]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], "unknown_device", "{doc}");
    assert_eq!(doc["validation_error"]["field"], "steps[1].device", "{doc}");
    assert_eq!(doc["failed_step"], 2, "{doc}");
    assert_eq!(doc["steps"], json!([]), "{doc}");

    let config = std::fs::read_to_string(world.config_path()).expect("config");
    std::fs::write(
        world.config_path(),
        config.replace("allow_write: true", "allow_write: false"),
    )
    .expect("config rewritten");
    let write = write_plan(
        &world,
        "write.yaml",
        "version: 5\nsteps:\n - {device: uart, action: uart_open}\n - {device: uart, action: uart_write, text: x}\n",
    );
    let (doc, _) = world.run_json(&["test-reactor", "--test-config", &write]);
    assert_eq!(doc["error_type"], "permission_denied", "{doc}");
    assert_eq!(
        doc["validation_error"]["permission"], "com_ports.uart.permissions.allow_write",
        "{doc}"
    );
    // The key that asks for the grant, as the reference names it.
    assert_eq!(doc["validation_error"]["field"], "steps[1].action", "{doc}");

    let (doc, _) = world.run_json(&[
        "test-reactor",
        "--test-config",
        &write,
        "--detach",
        "--junit-xml",
        "j.xml",
    ]);
    assert_eq!(
        doc["error_type"], "junit_xml_requires_synchronous_run",
        "{doc}"
    );
    let (doc, _) = world.run_json(&["test-reactor-status", "--run", "run-XYZ"]);
    assert_eq!(doc["error_type"], "invalid_argument", "{doc}");
    let (doc, _) = world.run_json(&["test-reactor-status", "--run", "run-0123456789abcdef"]);
    assert_eq!(doc["error_type"], "run_not_found", "{doc}");
}

#[test]
fn a_recovery_that_cannot_reset_the_board_says_it_failed_at_reset_halt_and_why() {
    let world = world();
    // No board answers: the plan's reset fails, and so does the recovery's reset into halt.
    let (doc, code) = run_plan_cli(
        &world,
        "no-board.yaml",
        "version: 5\nname: no-board\nsteps:\n - {device: board, action: reset, mode: run}\n",
    );
    assert_eq!(code, Some(1), "{doc}");
    let recovery = &doc["recovery"];
    assert_eq!(recovery["attempted"], true, "{doc}");
    assert_eq!(recovery["outcome"], "failed", "{doc}");
    assert_eq!(recovery["failed_action"], "reset_halt", "{doc}");
    assert_eq!(
        recovery["actions"],
        serde_json::json!(["reap_processes", "reset_halt"]),
        "{doc}"
    );
    let summary = recovery["summary"].as_str().expect("a summary");
    assert!(
        summary.starts_with("Recovery failed at reset_halt (")
            && summary.ends_with(").")
            && !summary.contains("(unknown)"),
        "the failed call's error_type is named: {summary}"
    );
}

#[test]
fn a_junit_path_through_a_link_in_the_workspace_writes_nothing_outside_it() {
    // CI names the JUnit path, but the workspace is the agent's: a folder on the way may be a link
    // it planted, which would otherwise carry the XML over any file the operator can write.
    let world = world();
    let outside = tempfile::tempdir().expect("a folder outside the workspace");
    std::os::unix::fs::symlink(outside.path(), world.workspace.join("out")).expect("link");
    let plan = write_plan(
        &world,
        "no-board.yaml",
        "version: 5\nname: no-board\nsteps:\n - {device: board, action: reset, mode: run}\n",
    );
    let out = world.run(&[
        "test-reactor",
        "--test-config",
        &plan,
        "--junit-xml",
        "out/junit.xml",
        "--json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let written: Vec<_> = std::fs::read_dir(outside.path())
        .expect("outside")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(written.is_empty(), "written outside: {written:?}: {doc}");
    assert_eq!(
        doc["junit_xml_error"]["error_type"], "output_validation_failed",
        "{doc}"
    );
    assert!(doc.get("junit_xml").is_none(), "{doc}");
}

/// The agent's own COM and CAN sessions, opened before a plan that opens the same port and bus: the
/// plan uses them as they are, and its end closes only what it opened itself, as it already did for
/// an RTT session (they used to be closed with the plan's, and the agent's next read failed).
#[tokio::test]
async fn a_plan_borrows_the_agents_own_sessions_and_leaves_them_open_when_it_ends() {
    let board = support::raw::EchoBoard::start();
    let world = World::new();
    support::raw::configure_uart(&world, &board.device);
    let bridge = world.write_fake_tool(
        "bridge-ecu",
        &format!(
            "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 0\n",
            support::can_bridge_simulator().display()
        ),
    );
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config").replacen(
        "can_buses: {}",
        &format!(
            "can_buses:\n  ecu:\n    adapter: process\n    channel: sim-ecu\n    executable: \"{}\"\n    permissions:\n      allow_write: true",
            bridge.display()
        ),
        1,
    );
    std::fs::write(&path, text).expect("write config");
    let plan = write_plan(
        &world,
        "borrow.yaml",
        "version: 5\nname: borrow\nsteps:\n\
         \x20 - {device: uart0, action: uart_open, clear_buffer: false}\n\
         \x20 - {device: uart0, action: uart_write, text: \"ping\\r\"}\n\
         \x20 - {device: uart0, action: uart_expect, text: PING, timeout_s: 5}\n\
         \x20 - {device: ecu, action: can_open}\n\
         \x20 - {device: ecu, action: can_send, frame_id: 0x123, data_hex: \"01\"}\n",
    );
    let client = support::connect(&world).await;
    support::ok(&client, "com_session_start", json!({"port_id": "uart0"})).await;
    support::ok(&client, "can_session_start", json!({"bus_id": "ecu"})).await;
    let (doc, is_error) = run_plan(&client, &plan).await;
    assert!(!is_error, "{doc}");
    let written = support::ok(
        &client,
        "com_write",
        json!({"port_id": "uart0", "text": "after\r"}),
    )
    .await;
    assert_eq!(written["bytes_written"], 6, "{written}");
    let read = support::ok(
        &client,
        "com_read",
        json!({"port_id": "uart0", "until": "AFTER", "wait_timeout_s": 5}),
    )
    .await;
    assert_eq!(read["until_matched"], true, "{read}");
    support::ok(&client, "can_read", json!({"bus_id": "ecu"})).await;
    let stopped = support::ok(&client, "com_session_stop", json!({"port_id": "uart0"})).await;
    assert_eq!(stopped["was_active"], true, "{stopped}");
    let stopped = support::ok(&client, "can_session_stop", json!({"bus_id": "ecu"})).await;
    assert_eq!(stopped["was_active"], true, "{stopped}");
    client.cancel().await.expect("the session closes");
}

/// A client that cancels its attached `test_reactor_run` stops the plan as `test_reactor_stop`
/// would: the delay in progress ends early, no later step drives the port, and the run closes its
/// session and is recorded `stopped` (it used to run on, writing to the board, for a caller gone).
#[test]
fn a_cancelled_attached_run_stops_at_once_closes_its_sessions_and_runs_no_later_step() {
    let board = support::raw::EchoBoard::start();
    let world = World::new();
    support::raw::configure_uart(&world, &board.device);
    let plan = write_plan(
        &world,
        "cancelled.yaml",
        "version: 5\nname: cancelled\nsteps:\n\
         \x20 - {device: uart0, action: uart_open}\n\
         \x20 - {device: uart0, action: delay, duration_ms: 20000}\n\
         \x20 - {device: uart0, action: uart_write, text: \"late\\r\"}\n",
    );
    let mut server = support::raw::Mcp::ours(&world);
    server.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "test_reactor_run", "arguments": {"test_config_path": plan}}}));
    std::thread::sleep(Duration::from_millis(1500));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "the user changed their mind"}}),
    );
    let asked = Instant::now();
    let run = loop {
        let listed = server.envelope("test_reactor_status", &json!({}));
        let run = listed["runs"][0].clone();
        if run["state"] != "running" && run["state"] != "starting" {
            break run;
        }
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "the cancelled run goes on: {listed}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["state"], "stopped", "{run}");
    let status = server.envelope("test_reactor_status", &json!({"run": run["run"]}));
    assert_eq!(status["stopped_after_step"], 2, "{status}");
    let opened = server.envelope("com_session_start", &json!({"port_id": "uart0"}));
    assert_eq!(
        opened["already_active"], false,
        "the run closed its session: {opened}"
    );
}

/// The reference 0.25 answers the same step `symbol_width_not_numeric` (seen on its ST-Link
/// symbol read; it has no emulated board to run this plan on).
#[test]
fn a_comparator_on_a_symbol_of_no_integer_width_is_not_judged() {
    let world = world();
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    let (doc, code) = run_plan_cli(
        &world,
        "wide.yaml",
        "version: 5\nsteps:\n\
         - {device: board, action: debug_start, image_path: fw/ahil-fw-v1.elf, mode: attach}\n\
         - {device: board, action: read_symbol, symbol: g_sample, comparator: {equals: 7}}\n\
         - {device: board, action: debug_stop}\n",
    );
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["step_error_type"], "symbol_width_not_numeric", "{doc}");
    let step = &doc["steps"][1]["result"];
    assert_eq!(step["size_bytes"], 12, "{doc}");
    assert_eq!(step["integer_widths"], json!([1, 2, 4, 8]), "{doc}");
    assert_eq!(step["comparator"], json!({"equals": "7"}), "{doc}");
}
