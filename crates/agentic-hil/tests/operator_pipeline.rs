//! Black-box: the operator's commands that touch hardware go through the gate's pipeline, as an
//! agent's tool calls do. `sim start | stop` and `adopt-hardware` hold the board's device locks (an
//! agent's run on the board refuses them before the board is touched); `sim status`, `doctor` and
//! `debugger-probes` before `init` only look, as `hardware_lease_status` does; each leaves an audit
//! record, and so do `lease-status` and `recover`.

mod support;

use std::path::{Path, PathBuf};

use serde_json::json;
use support::World;
use support::ok;
use support::sim_board::{SimBoard, qemu_board, sim_world};

/// A world with one `qemu` debugger and the committed firmware in `fw/`.
fn world() -> World {
    sim_world(
        &qemu_board("      allow_flash: true\n"),
        "",
        &["ahil-fw-v1.elf"],
    )
}

/// The board started (its `sim start` answer), and an agent's MCP server holding it in a run.
async fn board_held_by_an_agents_run(world: &World) -> (serde_json::Value, support::Client) {
    let (started, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
    assert_eq!(code, Some(0), "sim start: {started}");
    let client = support::connect(world).await;
    ok(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger"}], "label": "agent"}),
    )
    .await;
    (started, client)
}

fn alive(pid: i64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Every file under `dir`, with its text.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if entry.file_type().is_ok_and(|t| t.is_file())
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            // Regular files only: the board's FIFOs and sockets would block a read.
            found.push((path, text));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_stop_is_refused_device_busy_while_an_agents_run_holds_the_board_and_status_still_looks()
 {
    let world = world();
    let board = SimBoard::stopped_on_drop(&world);
    let (started, client) = board_held_by_an_agents_run(&world).await;
    let pid = started["pid"].as_i64().expect("sim start names QEMU's pid");
    let (doc, code) = world.run_json(&["sim", "stop"]);
    assert_ne!(code, Some(0), "sim stop under an agent's run: {doc}");
    assert_eq!(doc["error_type"], "device_busy", "sim stop: {doc}");
    assert_eq!(doc["target_contacted"], false, "sim stop: {doc}");
    assert!(alive(pid), "the agent's board still runs");
    let (doc, code) = world.run_json(&["sim", "status"]);
    assert_eq!(code, Some(0), "sim status under an agent's run: {doc}");
    assert_eq!(doc["running"], true, "sim status: {doc}");

    ok(&client, "bench_run_stop", json!({})).await;
    let (doc, code) = world.run_json(&["sim", "stop"]);
    assert_eq!(code, Some(0), "sim stop once the run ended: {doc}");
    assert_eq!(doc["was_running"], true, "{doc}");
    drop(board);
    client.cancel().await.expect("the server closes");
}

/// The trusted copy of the last report under the state root, as text.
fn last_report(world: &World) -> String {
    files_under(&world.home.join(".local/state/agentic-hil/projects"))
        .into_iter()
        .find(|(path, _)| path.ends_with("reports/report-state.json"))
        .map(|(_, text)| text)
        .unwrap_or_default()
}

#[test]
fn sim_commands_leave_an_audit_record_as_the_operator_cli() {
    let world = world();
    let board = SimBoard::stopped_on_drop(&world);
    for (args, tool) in [
        (
            &["sim", "start", "--image", "fw/ahil-fw-v1.elf"][..],
            "sim_start",
        ),
        (&["sim", "status"][..], "sim_status"),
        (&["sim", "stop"][..], "sim_stop"),
    ] {
        let (doc, code) = world.run_json(args);
        assert_eq!(code, Some(0), "{tool}: {doc}");
        assert_last_report_is(&world, tool);
        // The workspace's view of that report, mirrored from the trusted copy.
        let view = std::fs::read_to_string(
            world
                .workspace
                .join(".agentic-hil/reports/last-report.json"),
        )
        .unwrap_or_default();
        assert!(
            view.contains(tool),
            "the workspace's last report is {tool}'s: {view}"
        );
    }
    drop(board);
}

#[test]
fn an_mcp_server_answers_an_operator_only_tool_as_unknown() {
    let world = world();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = support::connect(&world).await;
        let listed = client.list_all_tools().await.expect("tools/list");
        for operator_only in [
            "sim_start",
            "sim_stop",
            "sim_status",
            "adopt_hardware",
            "debugger_probes_bootstrap",
            "agentic_hil_doctor",
        ] {
            assert!(
                listed.iter().all(|tool| tool.name != operator_only),
                "{operator_only} is not listed"
            );
            let (doc, is_error) = support::call(&client, operator_only, json!({})).await;
            assert!(is_error, "{doc}");
            assert_eq!(doc["error_type"], "unknown_tool", "{operator_only}: {doc}");
        }
        client.cancel().await.expect("the server closes");
    });
}

/// The last report names `tool`.
fn assert_last_report_is(world: &World, tool: &str) {
    let report = last_report(world);
    assert!(
        report.contains(&format!("\"tool\": \"{tool}\""))
            || report.contains(&format!("\"tool\":\"{tool}\"")),
        "the last report is {tool}'s: {report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopt_hardware_is_refused_device_busy_while_an_agents_run_holds_the_board_and_writes_nothing()
 {
    let world = world();
    let board = SimBoard::stopped_on_drop(&world);
    let before = std::fs::read_to_string(world.config_path()).expect("config");
    let (_, client) = board_held_by_an_agents_run(&world).await;
    let (doc, code) = world.run_json(&["adopt-hardware", "--com-port", "uart"]);
    assert_ne!(code, Some(0), "adopt-hardware under an agent's run: {doc}");
    assert_eq!(doc["error_type"], "device_busy", "adopt-hardware: {doc}");
    assert_eq!(doc["target_contacted"], false, "adopt-hardware: {doc}");
    let after = std::fs::read_to_string(world.config_path()).expect("config");
    assert_eq!(after, before, "a refused adoption writes nothing");

    ok(&client, "bench_run_stop", json!({})).await;
    let (doc, code) = world.run_json(&["adopt-hardware", "--com-port", "uart"]);
    assert_eq!(code, Some(0), "adopt-hardware once the run ended: {doc}");
    assert_eq!(doc["applied"], true, "{doc}");
    assert_last_report_is(&world, "adopt_hardware");
    drop(board);
    client.cancel().await.expect("the server closes");
}

#[test]
fn debugger_probes_before_init_runs_through_the_pipeline_and_leaves_a_report_where_init_will() {
    let world = World::new();
    let (doc, code) = world.run_json(&["debugger-probes"]);
    assert_eq!(code, Some(0), "debugger-probes before init: {doc}");
    assert_eq!(doc["source"], "bootstrap", "{doc}");
    assert_eq!(doc["tool"], "debugger_probes_bootstrap", "{doc}");
    assert_last_report_is(&world, "debugger_probes_bootstrap");
    let (doc, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init after a listing: {doc}");
    assert_eq!(
        doc["steps"]["config"]["skipped"],
        serde_json::Value::Null,
        "the bench before init was never written: {doc}"
    );
}

#[test]
fn lease_status_and_recover_each_leave_an_audit_record() {
    let world = world();
    for (args, tool) in [
        (&["lease-status"][..], "hardware_lease_status"),
        (&["recover", "--confirm-safe-state"][..], "hardware_recover"),
    ] {
        let (doc, _) = world.run_json(args);
        assert!(doc["ok"].is_boolean(), "{args:?}: {doc}");
        assert_last_report_is(&world, tool);
        world.run_json(&["sim", "status"]);
        assert_last_report_is(&world, "sim_status");
    }
}

#[test]
fn doctor_and_inits_check_answer_through_the_pipeline_and_leave_no_report() {
    let world = world();
    world.run_json(&["sim", "status"]);
    for args in [&["doctor"][..], &["init"][..]] {
        let (doc, _) = world.run_json(args);
        let check = if args == ["init"] {
            &doc["steps"]["doctor"]
        } else {
            &doc
        };
        assert!(check["ok"].is_boolean(), "{args:?}: {doc}");
        // Only the pipeline's answer stamps the configuration in force.
        if args == ["doctor"] {
            assert_eq!(doc["tool"], "agentic_hil_doctor", "{doc}");
            assert!(doc["config_in_force"].is_object(), "{doc}");
        }
        assert_last_report_is(&world, "sim_status");
    }
}
