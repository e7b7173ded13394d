//! Detached runs: followed, stopped, killed, and started as the server's own binary.

use super::*;

/// `test_reactor_run` of `plan` with `detach: true`: the answer and whether it is an error.
async fn run_detached(client: &Client, plan: &str) -> (Value, bool) {
    call(
        client,
        "test_reactor_run",
        json!({"test_config_path": plan, "detach": true}),
    )
    .await
}

/// The pid its record gives the detached worker of `run`.
fn worker_pid(world: &World, run: &str) -> u64 {
    let record: Value = serde_json::from_slice(
        &std::fs::read(runs_dir(world).join(format!("{run}.json"))).expect("the run record"),
    )
    .expect("JSON");
    record["pid"].as_u64().expect("the worker's pid")
}

const LONG_DELAY: &str = "version: 5\nname: long\nsteps:\n - {device: uart, action: delay, duration_ms: 600000}\n - {device: board, action: reset}\n";

#[tokio::test]
async fn a_detached_run_is_followed_to_completion_over_mcp() {
    let world = world();
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
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
    let (doc, is_error) = run_detached(&client, &plan).await;
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
    // The worker marks the run finished, then prints its report as it exits: the log may lag the
    // state by as long as a loaded machine takes to schedule that print.
    let path = runs_dir(&world).join(format!("{run}.log"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        let log = std::fs::read_to_string(&path).expect("the worker log");
        if log.contains("\"ok\": true") || std::time::Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        log.contains("\"ok\": true"),
        "the worker printed its report: {log}"
    );
    client.cancel().await.expect("client closes");
}

/// A2: the worker the server starts is its own executable, never a program found by name.
#[tokio::test]
async fn a_detached_worker_is_the_servers_own_binary_even_with_a_lookalike_first_on_path() {
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
    cmd.env("PATH", path);
    let client = support::connect_command(cmd).await;
    let (doc, is_error) = run_detached(&client, &plan).await;
    assert!(!is_error, "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    let pid = worker_pid(&world, &run);
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
    let world = world();
    let plan = write_plan(&world, "long.yaml", LONG_DELAY);
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    let planted = world.workspace.join("pylib");
    cmd.env("PYTHONPATH", &planted)
        .env("LD_LIBRARY_PATH", &planted)
        .env("PATH", format!("{}:/usr/bin:/bin", planted.display()));
    let client = support::connect_command(cmd).await;
    let (doc, is_error) = run_detached(&client, &plan).await;
    assert!(!is_error, "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    let pid = worker_pid(&world, &run);
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
    let pid = worker_pid(&world, &run);
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

/// A client that polls the run record and reads the report as soon as the state is terminal never
/// finds the report missing, staged, or a previous run's: the worker writes it (fsynced, through the
/// audit trail) before the record's state turns `finished`.
#[test]
fn whenever_the_record_of_a_detached_run_is_terminal_its_report_is_already_complete() {
    let world = world();
    let plan = write_plan(
        &world,
        "short.yaml",
        "version: 5\nname: short\nsteps:\n - {device: uart, action: delay, duration_ms: 300}\n",
    );
    let (doc, code) = world.run_json(&["test-reactor", "--test-config", &plan, "--detach"]);
    assert_eq!(code, Some(0), "{doc}");
    let run = doc["run"].as_str().expect("a handle").to_owned();
    let record_path = runs_dir(&world).join(format!("{run}.json"));
    let state_root = world.home.join(".local/state/agentic-hil");
    // As tight as a client can poll: any window between the terminal record and the report shows.
    let deadline = Instant::now() + Duration::from_mins(1);
    let record = loop {
        assert!(Instant::now() < deadline, "{run} never ended");
        let Ok(bytes) = std::fs::read(&record_path) else {
            continue;
        };
        let Ok(record) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        if matches!(record["state"].as_str(), Some("finished" | "stopped")) {
            break record;
        }
    };
    // Read at once, before anything else: this is what the polling client would read.
    let canonical = record["canonical_report_path"]
        .as_str()
        .expect("the record names the run's report")
        .trim_start_matches("<state_root>/");
    let report = std::fs::read(state_root.join(canonical));
    let view = std::fs::read(
        world
            .workspace
            .join(record["report_path"].as_str().expect("the workspace view")),
    );
    let report: Value = serde_json::from_slice(&report.expect("the run's report exists"))
        .expect("the run's report is whole JSON");
    assert_eq!(report["run_handle"], run.as_str(), "{report}");
    assert!(
        report.get("canonical_write_pending").is_none(),
        "the report is still staged: {report}"
    );
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(record["run_ok"], true, "{record}");
    let view: Value = serde_json::from_slice(&view.expect("the workspace view exists"))
        .expect("the view is whole JSON");
    assert_eq!(view["run_handle"], run.as_str(), "{view}");
}

/// A plan that loads but names a device the configuration lacks is judged before the answer, so
/// a detached start is refused by the call itself: no handle, no worker, no record.
#[tokio::test]
async fn a_detached_plan_naming_an_unknown_device_is_refused_by_the_call_and_starts_no_worker() {
    let world = world();
    let plan = write_plan(
        &world,
        "unknown-device.yaml",
        "version: 5\nsteps:\n  - {device: uart9, action: uart_open}\n",
    );
    let client = support::connect(&world).await;
    let (doc, is_error) = run_detached(&client, &plan).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "unknown_device", "{doc}");
    assert_eq!(doc["validation_error"]["field"], "steps[0].device", "{doc}");
    assert!(doc["run"].is_null(), "no handle was given: {doc}");
    let records = std::fs::read_dir(runs_dir(&world)).map_or(0, Iterator::count);
    assert_eq!(records, 0, "no worker was started, so no run record exists");
    client.cancel().await.expect("client closes");
}
