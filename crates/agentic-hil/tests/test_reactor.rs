//! Black-box, end to end: test plans run through the gate — attached over MCP and the CLI, detached as
//! worker processes — on a real QEMU board that `agentic-hil sim start` started in the test's own HOME.

mod support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::call;

type Client = RunningService<rmcp::RoleClient, ()>;

const GRANTS: &str =
    "      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true";

/// A world with the emulated board's debugger (`board`) and UART (`uart`, writable), the committed
/// firmware in `fw/`, and no board running yet.
fn world() -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let state = world.home.join(".local/state/agentic-hil");
    let uart = state.join("sim/board/uart");
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: sim\n  controller: stm32f405\n\
         debuggers:\n  board:\n    type: qemu\n    timeout_s: 10\n    permissions:\n{GRANTS}\n\
         artifacts:\n  allowed_roots: [fw]\n\
         debug:\n  allowed_symbols: [on_tick, counter, g_u32, g_i16]\n\
         com_ports:\n  uart:\n    device: \"{uart}\"\n    resource_id: sim-uart\n    permissions:\n      allow_write: true\n",
        ws = world.workspace.display(),
        state = state.display(),
        uart = uart.display(),
    );
    std::fs::write(world.config_path(), config).expect("the test config is written");
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    let build = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    for name in ["ahil-fw-v1.elf", "ahil-fw-v2.elf"] {
        std::fs::copy(build.join(name), fw.join(name)).expect("firmware copies");
    }
    world
}

/// A running board; stopped when dropped, whatever the test did.
struct Board<'a>(&'a World);

impl<'a> Board<'a> {
    fn start(world: &'a World) -> Self {
        let (doc, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
        assert_eq!(code, Some(0), "sim start: {doc}");
        Self(world)
    }
}

impl Drop for Board<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["sim", "stop"]);
    }
}

fn write_plan(world: &World, name: &str, text: &str) -> String {
    let rel = format!("plans/{name}");
    let path = world.workspace.join(&rel);
    std::fs::create_dir_all(path.parent().expect("plans dir")).expect("plans dir");
    std::fs::write(&path, text).expect("plan written");
    rel
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
    let _board = Board::start(&world);
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
    let _board = Board::start(&world);
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
    let _board = Board::start(&world);
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

const LONG_DELAY: &str = "version: 5\nname: long\nsteps:\n - {device: uart, action: delay, duration_ms: 600000}\n - {device: board, action: reset}\n";

#[tokio::test]
async fn a_detached_run_is_followed_to_completion_over_mcp() {
    let world = world();
    let _board = Board::start(&world);
    let plan = write_plan(
        &world,
        "short.yaml",
        "version: 5\nname: short\nsteps:\n\
         - {device: uart, action: uart_open}\n\
         - {device: board, action: reset, mode: run}\n\
         - {device: uart, action: uart_expect, text: \"boot ok\", timeout_s: 10}\n\
         - {device: uart, action: delay, duration_ms: 700}\n",
    );
    let client = support::connect(&world).await;
    let (doc, is_error) = call(
        &client,
        "test_reactor_run",
        json!({"test_config_path": plan, "detach": true}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["tool"], "test_reactor_start", "{doc}");
    assert_eq!(doc["detached"], true, "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    assert!(
        matches!(doc["state"].as_str(), Some("running" | "finished")),
        "{doc}"
    );

    // While it runs, its devices are held by the worker, not this server.
    let done = wait_for_state(&client, &run, &["finished"], Duration::from_secs(30)).await;
    assert_eq!(done["run_ok"], true, "{done}");
    assert!(
        done["summary"]
            .as_str()
            .is_some_and(|s| s.contains("passed")),
        "{done}"
    );
    let log = std::fs::read_to_string(runs_dir(&world).join(format!("{run}.log")))
        .expect("the worker log");
    assert!(
        log.contains("\"ok\": true"),
        "the worker printed its report: {log}"
    );
    client.cancel().await.expect("client closes");
}

/// A2: the worker the server starts is its own executable, never a program found by name.
#[tokio::test]
async fn a_detached_worker_is_the_servers_own_binary_even_with_a_lookalike_first_on_path() {
    use rmcp::ServiceExt;
    let world = world();
    let plan = write_plan(&world, "long.yaml", LONG_DELAY);
    let marker = world.home.join("lookalike-ran");
    let lookalike = world.write_fake_tool(
        "agentic-hil",
        &format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            World::binary()
        ),
    );
    let dir = lookalike.parent().expect("tools dir");
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    cmd.env("PATH", path).arg("mcp-stdio");
    let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
        .expect("the server starts");
    let client = ().serve(transport).await.expect("handshake");
    let (doc, is_error) = call(
        &client,
        "test_reactor_run",
        json!({"test_config_path": plan, "detach": true}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    let record: Value = serde_json::from_slice(
        &std::fs::read(runs_dir(&world).join(format!("{run}.json"))).expect("the run record"),
    )
    .expect("JSON");
    let pid = record["pid"].as_u64().expect("the worker's pid");
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("the worker runs");
    let ours = std::fs::canonicalize(World::binary()).expect("our binary");
    let (stop, _) = call(&client, "test_reactor_stop", json!({"run": run})).await;
    assert_eq!(stop["stop_requested"], true, "{stop}");
    wait_for_state(&client, &run, &["stopped"], Duration::from_secs(10)).await;
    client.cancel().await.expect("client closes");
    assert_eq!(exe, ours, "the worker is another program");
    assert!(!marker.exists(), "a program found on PATH was started");
}

/// A detached worker is this binary again, and gets the child environment plus only the
/// configuration-discovery variables: what the agent's `.mcp.json` put in the server's environment
/// beyond those (PYTHONPATH, LD_LIBRARY_PATH, PATH) does not reach it.
#[tokio::test]
async fn a_detached_worker_gets_the_child_environment_not_the_servers() {
    use rmcp::ServiceExt;
    let world = world();
    let plan = write_plan(&world, "long.yaml", LONG_DELAY);
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    let planted = world.workspace.join("pylib");
    cmd.env("PYTHONPATH", &planted)
        .env("LD_LIBRARY_PATH", &planted)
        .env("PATH", format!("{}:/usr/bin:/bin", planted.display()))
        .arg("mcp-stdio");
    let transport = rmcp::transport::TokioChildProcess::new(tokio::process::Command::from(cmd))
        .expect("the server starts");
    let client = ().serve(transport).await.expect("handshake");
    let (doc, is_error) = call(
        &client,
        "test_reactor_run",
        json!({"test_config_path": plan, "detach": true}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    let record: Value = serde_json::from_slice(
        &std::fs::read(runs_dir(&world).join(format!("{run}.json"))).expect("the run record"),
    )
    .expect("JSON");
    let pid = record["pid"].as_u64().expect("the worker's pid");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).expect("the worker runs");
    let (stop, _) = call(&client, "test_reactor_stop", json!({"run": run})).await;
    assert_eq!(stop["stop_requested"], true, "{stop}");
    wait_for_state(&client, &run, &["stopped"], Duration::from_secs(10)).await;
    client.cancel().await.expect("client closes");
    let vars: Vec<String> = environ
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    let names: Vec<&str> = vars.iter().filter_map(|v| v.split('=').next()).collect();
    assert!(!names.contains(&"PYTHONPATH"), "{vars:?}");
    assert!(!names.contains(&"LD_LIBRARY_PATH"), "{vars:?}");
    assert!(
        vars.contains(
            &"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned()
        ),
        "{vars:?}"
    );
    assert!(
        vars.contains(&format!(
            "XDG_CONFIG_HOME={}",
            world.home.join(".config").display()
        )),
        "the worker finds the server's configuration: {vars:?}"
    );
}

#[tokio::test]
async fn a_stop_ends_a_detached_run_in_the_middle_of_a_long_delay() {
    let world = world();
    let plan = write_plan(&world, "long.yaml", LONG_DELAY);
    let (doc, code) = world.run_json(&["test-reactor", "--test-config", &plan, "--detach"]);
    assert_eq!(code, Some(0), "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    assert_eq!(doc["state"], "running", "{doc}");

    let client = support::connect(&world).await;
    let (busy, is_error) = call(&client, "com_session_start", json!({"port_id": "uart"})).await;
    assert!(
        is_error && busy["error_type"] == "device_busy",
        "the worker holds the uart: {busy}"
    );
    let (refused, is_error) = run_plan(&client, &plan).await;
    assert!(
        is_error && refused["error_type"] == "device_busy",
        "{refused}"
    );

    let asked = Instant::now();
    let (stop, is_error) = call(&client, "test_reactor_stop", json!({"run": run})).await;
    assert!(!is_error, "{stop}");
    assert_eq!(stop["stop_requested"], true, "{stop}");
    let (status, _) = call(&client, "test_reactor_status", json!({"run": run})).await;
    assert!(status["stop_requested_at"].is_string(), "{status}");
    let done = wait_for_state(&client, &run, &["stopped"], Duration::from_secs(10)).await;
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "the delay ended early"
    );
    assert_eq!(done["run_ok"], false, "{done}");
    assert_eq!(done["error_type"], "run_stopped", "{done}");
    assert_eq!(done["stopped_after_step"], 1, "{done}");
    let report_path = done["canonical_report_path"].as_str().expect("a report");
    let report: Value = serde_json::from_slice(
        &std::fs::read(
            world
                .home
                .join(".local/state/agentic-hil")
                .join(report_path.trim_start_matches("<state_root>/")),
        )
        .expect("the stopped run's report"),
    )
    .expect("JSON");
    assert_eq!(report["stopped"], true, "{report}");
    assert_eq!(
        report["steps"][0]["result"]["interrupted_by_stop"], true,
        "{report}"
    );

    // The worker let go of the uart.
    let (doc, is_error) = call(&client, "com_session_start", json!({"port_id": "uart"})).await;
    assert!(is_error, "no board runs, but the lock is free: {doc}");
    assert_ne!(doc["error_type"], "device_busy", "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_worker_killed_with_sigkill_is_reported_worker_gone() {
    let world = world();
    let plan = write_plan(&world, "long.yaml", LONG_DELAY);
    let (doc, code) = world.run_json(&["test-reactor", "--test-config", &plan, "--detach"]);
    assert_eq!(code, Some(0), "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    let record: Value = serde_json::from_slice(
        &std::fs::read(runs_dir(&world).join(format!("{run}.json"))).expect("the record"),
    )
    .expect("JSON");
    let pid = record["pid"].as_i64().expect("the worker's pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());

    let client = support::connect(&world).await;
    let status = wait_for_state(&client, &run, &["worker_gone"], Duration::from_secs(5)).await;
    assert!(status["next_step"].is_string(), "{status}");
    let (stop, is_error) = call(&client, "test_reactor_stop", json!({"run": run})).await;
    assert!(is_error, "{stop}");
    assert_eq!(stop["error_type"], "run_worker_gone", "{stop}");
    let (listed, _) = call(&client, "test_reactor_status", json!({})).await;
    assert_eq!(listed["runs"][0]["state"], "worker_gone", "{listed}");
    // Its devices died with it.
    let (doc, _) = call(&client, "com_session_start", json!({"port_id": "uart"})).await;
    assert_ne!(doc["error_type"], "device_busy", "{doc}");
    client.cancel().await.expect("client closes");
}

fn corpus(kind: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../ahil-config/tests/plans")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the plan corpus")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
}

fn copy_in(world: &World, file: &Path) -> String {
    let name = file
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let rel = format!("plans/{name}");
    let target = world.workspace.join(&rel);
    std::fs::create_dir_all(target.parent().expect("plans dir")).expect("plans dir");
    std::fs::copy(file, &target).expect("plan copied");
    rel
}

#[tokio::test]
async fn the_reactor_accepts_every_valid_corpus_plan_and_refuses_every_invalid_one_at_its_path() {
    let world = world();
    let client = support::connect(&world).await;
    for file in corpus("valid") {
        let plan = copy_in(&world, &file);
        let (doc, _) = run_plan(&client, &plan).await;
        // The plan loads; this bench has none of its devices or images, so preflight refuses it
        // with the step's path, before any step.
        assert!(
            !doc["error_type"]
                .as_str()
                .unwrap_or_default()
                .starts_with("test_config_"),
            "{}: {doc}",
            file.display()
        );
        assert!(
            doc["validation_error"]["field"]
                .as_str()
                .is_some_and(|f| f.starts_with("steps[")),
            "{doc}"
        );
        assert_eq!(doc["steps"], json!([]), "{doc}");
    }
    for file in corpus("invalid") {
        // Some invalid plans are not UTF-8 on purpose; their header line is.
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("plan bytes")).into_owned();
        let expect = text
            .lines()
            .find_map(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} names its expected refusal", file.display()));
        let (error_type, field) = expect.split_once(' ').unwrap_or((expect, ""));
        let plan = copy_in(&world, &file);
        let (doc, is_error) = run_plan(&client, &plan).await;
        assert!(is_error, "{doc}");
        assert_eq!(doc["error_type"], error_type, "{}: {doc}", file.display());
        if !field.is_empty() {
            assert_eq!(doc["field"], field, "{}: {doc}", file.display());
        }
        assert_eq!(doc["side_effect_committed"], false, "{doc}");
    }

    // A plan declares its own devices, so an open bench run refuses it before it loads.
    let plan = write_plan(
        &world,
        "delay.yaml",
        "version: 5\nsteps:\n - {device: uart, action: delay, duration_ms: 1}\n",
    );
    let (doc, is_error) = call(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "uart", "id": "uart"}]}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let (doc, is_error) = run_plan(&client, &plan).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "run_already_active", "{doc}");
    call(&client, "bench_run_stop", json!({})).await;
    let (doc, is_error) = run_plan(&client, &plan).await;
    assert!(!is_error, "after bench_run_stop the plan runs: {doc}");
    client.cancel().await.expect("client closes");
}

/// The world's configuration plus two CAN buses behind the bridge simulator: `ecu` (answers a
/// request on 0x7E0 with 0x7E8) and `listen` (listen-only).
fn world_with_can() -> World {
    let world = world();
    let mut yaml = String::from("can_buses:\n");
    for (name, extra) in [("ecu", ""), ("listen", "    listen_only: true\n")] {
        let bridge = world.write_fake_tool(
            &format!("bridge-{name}"),
            &format!(
                "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 0\n",
                support::can_bridge_simulator().display()
            ),
        );
        let _ = write!(
            yaml,
            "  {name}:\n    adapter: process\n    channel: sim-{name}\n    executable: \"{}\"\n    timeout_s: 2\n    permissions:\n      allow_write: true\n{extra}",
            bridge.display()
        );
    }
    let config = std::fs::read_to_string(world.config_path()).expect("config");
    std::fs::write(world.config_path(), format!("{config}{yaml}")).expect("config with buses");
    world
}

#[tokio::test]
async fn can_steps_send_read_and_judge_frames_on_the_bridge_simulator() {
    let world = world_with_can();
    let plan = write_plan(
        &world,
        "can.yaml",
        "version: 5\nname: can\nsteps:\n\
         - {device: ecu, action: can_open}\n\
         - {device: ecu, action: can_send, frame_id: 0x7E0, data_hex: \"10 01\"}\n\
         - {device: ecu, action: can_read, comparator: {id: 0x7E8, equals: \"50 01\"}, timeout_s: 5}\n\
         - {device: ecu, action: can_send, frame_id: \"2016\", data_hex: \"10 01\"}\n\
         - {device: ecu, action: can_read, comparator: {id: 0x7E8, pattern: \"^50(..)$\", range: {min: 1, max: 1}}, timeout_s: 5}\n\
         - {device: ecu, action: can_read, max_frames: 4, wait_timeout_s: 0}\n\
         - {device: ecu, action: can_close}\n\
         - {device: ecu, action: can_open}\n",
    );
    let client = support::connect(&world).await;
    let (doc, is_error) = run_plan(&client, &plan).await;
    assert!(!is_error, "{doc}");
    assert!(step_results(&doc).iter().all(|(_, ok)| *ok), "{doc}");
    assert_eq!(doc["steps"][2]["result"]["frame"]["id"], 0x7e8, "{doc}");
    assert_eq!(doc["steps"][4]["result"]["captured_value"], 1.0, "{doc}");
    assert_eq!(
        doc["cleanup"][0]["action"], "can_close",
        "the open bus is closed: {doc}"
    );
    assert_eq!(doc["cleanup"][0]["bus_id"], "ecu", "{doc}");

    let unmet = write_plan(
        &world,
        "unmet.yaml",
        "version: 5\nsteps:\n\
         - {device: ecu, action: can_open}\n\
         - {device: ecu, action: can_send, frame_id: 0x7E0, data_hex: \"10 01\"}\n\
         - {device: ecu, action: can_read, comparator: {id: 0x7E8, equals: \"7F\"}, timeout_s: 1}\n",
    );
    let (doc, is_error) = run_plan(&client, &unmet).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["step_error_type"], "comparator_unmet", "{doc}");
    assert!(
        doc["steps"][2]["result"]["frames_tail"]
            .as_array()
            .is_some_and(|t| t.iter().any(|f| f["id"] == 0x7e8)),
        "the answer that did not match is shown: {doc}"
    );

    let listen = write_plan(
        &world,
        "listen.yaml",
        "version: 5\nsteps:\n - {device: listen, action: can_open}\n - {device: listen, action: can_send, frame_id: 1}\n",
    );
    let (doc, _) = run_plan(&client, &listen).await;
    assert_eq!(doc["error_type"], "can_listen_only_mode", "{doc}");
    assert_eq!(
        doc["steps"],
        json!([]),
        "refused before the bus was opened: {doc}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_attached_run_reports_each_step_as_mcp_progress() {
    let world = world();
    let plan = write_plan(
        &world,
        "progress.yaml",
        "version: 5\nname: progress\nsteps:\n\
         - {device: uart, action: delay, duration_ms: 20}\n\
         - {action: repeat, count: 2, steps: [{device: board, action: delay, duration_ms: 20}]}\n\
         - {device: uart, action: delay, duration_ms: 20}\n",
    );
    let (client, collector) = support::call_with_progress(
        &world,
        "test_reactor_run",
        &json!({"test_config_path": plan}),
    )
    .await;

    let seen = collector.0.lock().expect("collector").clone();
    let messages: Vec<String> = seen.iter().filter_map(|p| p.message.clone()).collect();
    assert_eq!(
        seen.len(),
        5,
        "three steps and two iterations of one: {messages:?}"
    );
    // rmcp's client numbers progress tokens itself; every notification carries the request's one.
    assert!(
        seen.iter()
            .all(|p| p.progress_token == seen[0].progress_token),
        "{:?}",
        seen.iter()
            .map(|p| p.progress_token.clone())
            .collect::<Vec<_>>()
    );
    assert!(
        seen.windows(2).all(|w| w[0].progress < w[1].progress),
        "progress only grows"
    );
    assert_eq!(messages[0], "step 1 of 3: delay (uart)", "{messages:?}");
    assert_eq!(
        messages[2], "step 2 of 3: repeat, iteration 1, step 1: delay",
        "{messages:?}"
    );
    client.cancel().await.expect("client closes");
}

#[test]
fn run_records_are_read_across_implementations() {
    let reference = support::reference();
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let plan = write_plan(
        &world,
        "delay.yaml",
        "version: 5\nname: d\nsteps:\n  - {action: delay, device: dut, duration_ms: 10}\n",
    );
    let status_of = |program: &Path, run: &str| -> Value {
        let mut cmd = std::process::Command::new(program);
        world.scrub(&mut cmd);
        let out = cmd
            .args(["test-reactor-status", "--run", run, "--json"])
            .output()
            .expect("status runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
            panic!(
                "one JSON document ({err}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    };

    let (ours, code) = world.run_json(&["test-reactor", "--test-config", &plan]);
    assert_eq!(code, Some(0), "{ours}");
    let run = ours["run"].as_str().expect("a handle");
    let theirs = status_of(&reference, run);
    assert_eq!(
        theirs["state"], "finished",
        "the reference reads our record: {theirs}"
    );
    assert_eq!(theirs["run_ok"], true, "{theirs}");

    let mut cmd = std::process::Command::new(&reference);
    world.scrub(&mut cmd);
    let out = cmd
        .args(["test-reactor", "--test-config", &plan, "--json"])
        .output()
        .expect("the reference runs the plan");
    let theirs: Value = serde_json::from_slice(&out.stdout).expect("the reference's report");
    let run = theirs["run"].as_str().expect("a handle");
    let ours = status_of(Path::new(World::binary()), run);
    assert_eq!(
        ours["state"], "finished",
        "we read the reference's record: {ours}"
    );
    assert_eq!(ours["run_ok"], true, "{ours}");
    assert_eq!(
        theirs["tool"], "test_reactor_run",
        "both name the run's tool alike"
    );
}
