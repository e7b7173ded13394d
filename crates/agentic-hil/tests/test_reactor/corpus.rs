//! The plan corpus, CAN steps, progress, and run records read across implementations.

use super::*;

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
