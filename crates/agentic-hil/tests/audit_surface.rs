//! The audit trail through the real binary: report tools, the error catalogue resources, redaction
//! of MCP results and terminal output, and the two evidence commands.

mod support;

use std::io::{BufRead, BufReader, Write};

use ahil_gate::audit::project_digest;
use serde_json::{Value, json};
use support::World;
use support::raw::spawn_stdio;

const SECRET: &str = "pl4nted-s3cret-value";

/// Sends `requests` (initialize first) and returns the answers by id.
fn mcp(world: &World, requests: &[Value]) -> Vec<Value> {
    mcp_with_env(world, requests, &[])
}

fn mcp_with_env(world: &World, requests: &[Value], env: &[(&str, &str)]) -> Vec<Value> {
    let mut command = world.command();
    command.envs(env.iter().copied());
    let mut child = spawn_stdio(&mut command);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: &Value| {
        let mut line = serde_json::to_vec(v).expect("json");
        line.push(b'\n');
        stdin.write_all(&line).expect("write");
    };
    send(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    );
    send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    for request in requests {
        send(request);
    }
    let mut answers = Vec::new();
    while answers.len() < requests.len() + 1 {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).expect("read") > 0,
            "server closed early"
        );
        let msg: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
        if msg.get("id").is_some() {
            answers.push(msg);
        }
    }
    drop(stdin);
    let _ = child.wait();
    // rmcp answers concurrently: order by id (0 is initialize).
    answers.sort_by_key(|a| a["id"].as_i64().unwrap_or(-1));
    answers.remove(0);
    answers
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}})
}

fn provisioned() -> World {
    let world = World::new();
    assert!(world.run(&["init"]).status.success());
    world
}

fn project_reports(world: &World) -> std::path::PathBuf {
    let digest = project_digest(&world.config_path(), &world.workspace);
    world
        .home
        .join(".local/state/agentic-hil/projects")
        .join(&digest[..24])
        .join("reports")
}

#[test]
fn the_report_tools_answer_report_not_found_with_catalogue_advice_before_any_call() {
    let world = provisioned();
    let answers = mcp(
        &world,
        &[call(1, "get_last_report"), call(2, "classify_last_error")],
    );
    for answer in answers {
        let doc = &answer["result"]["structuredContent"];
        assert_eq!(answer["result"]["isError"], true);
        assert_eq!(doc["error_type"], "report_not_found");
        assert!(
            doc["remediation"].as_array().is_some_and(|r| !r.is_empty()),
            "{doc}"
        );
    }
}

#[test]
fn the_error_catalogue_is_served_as_resources() {
    let world = provisioned();
    let answers = mcp(
        &world,
        &[
            json!({"jsonrpc":"2.0","id":1,"method":"resources/list"}),
            json!({"jsonrpc":"2.0","id":2,"method":"resources/templates/list"}),
            json!({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"agentic-hil://reference/errors/audit_unavailable"}}),
            json!({"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"agentic-hil://reference/errors/nope"}}),
        ],
    );
    assert_eq!(
        answers[0]["result"]["resources"][0]["uri"],
        "agentic-hil://reference/errors"
    );
    assert_eq!(
        answers[1]["result"]["resourceTemplates"][0]["uriTemplate"],
        "agentic-hil://reference/errors/{error_type}"
    );
    let text = answers[2]["result"]["contents"][0]["text"]
        .as_str()
        .expect("text");
    let entry: Value = serde_json::from_str(text).expect("json");
    assert_eq!(entry["error_type"], "audit_unavailable");
    assert_eq!(answers[3]["error"]["code"], -32002);
}

#[test]
fn a_credential_in_a_stored_report_never_reaches_the_mcp_client() {
    let world = provisioned();
    let reports = project_reports(&world);
    std::fs::create_dir_all(&reports).expect("reports dir");
    // Planted as if an older writer had stored it raw: the MCP edge must still mask it.
    let planted = json!({"version": 1, "last_report": {"ok": false, "tool": "flash_firmware",
        "error_type": "debugger_error", "summary": "failed",
        "stdout": format!("clone https://ci:{SECRET}@git.example/fw\nAuthorization: Bearer {SECRET}"),
        "stderr": [format!("API_TOKEN={SECRET}")], "api_key": SECRET,
        "note": format!("kept at {}/x.json", reports.display())},
        "last_failure": null});
    std::fs::write(reports.join("report-state.json"), planted.to_string()).expect("plant");
    let answers = mcp(&world, &[call(1, "get_last_report")]);
    let text = answers[0].to_string();
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("[redacted]"));
    let state = world.home.join(".local/state").display().to_string();
    assert!(
        !text.contains(&state),
        "an absolute state path leaked: {text}"
    );
}

#[test]
fn report_state_repair_moves_a_damaged_state_aside_and_says_so_on_the_terminal() {
    let world = provisioned();
    let reports = project_reports(&world);
    std::fs::create_dir_all(&reports).expect("reports dir");
    std::fs::write(reports.join("report-state.json"), b"{not json").expect("damage");
    let answers = mcp(&world, &[call(1, "get_last_report")]);
    assert_eq!(
        answers[0]["result"]["structuredContent"]["error_type"],
        "report_state_damaged"
    );
    let (doc, code) = world.run_json(&["report-state-repair"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["repaired"], true);
    let aside = reports.join(doc["moved_to"].as_str().expect("name"));
    assert_eq!(std::fs::read(aside).expect("kept"), b"{not json");
    assert!(
        !doc.to_string().contains(&*world.home.to_string_lossy()),
        "{doc}"
    );
    let answers = mcp(&world, &[call(1, "get_last_report")]);
    assert_eq!(
        answers[0]["result"]["structuredContent"]["error_type"],
        "report_not_found"
    );
}

#[test]
fn run_evidence_output_on_the_terminal_carries_no_credential() {
    let world = World::new();
    let report = json!({"ok": false, "tool": "test_reactor", "summary": "failed",
        "error_type": "step_failed", "password": SECRET,
        "steps": [{"name": "uart", "ok": false, "stdout": format!("token={SECRET}")}]});
    std::fs::write(world.workspace.join("run.json"), report.to_string()).expect("report");
    for json in [true, false] {
        let mut args = vec!["run-evidence", "--report", "run.json", "--out", "evidence"];
        if json {
            args.push("--json");
        }
        let out = world.run(&args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains(SECRET), "{all}");
        assert!(out.status.success() || !json, "{all}");
    }
    for file in ["evidence/run-summary.json", "evidence/job-summary.md"] {
        let text = std::fs::read_to_string(world.workspace.join(file)).expect("written");
        assert!(!text.contains(SECRET), "{file}: {text}");
    }
}

fn with_fake_openocd(world: &World, script: &str) {
    let openocd = world.write_fake_tool("openocd", script);
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("read");
    let text = text.replacen(
        "executable: null",
        &format!("executable: \"{}\"", openocd.display()),
        1,
    );
    std::fs::write(&path, text).expect("write");
}

#[test]
fn credentials_of_the_servers_environment_printed_by_a_backend_never_reach_the_client() {
    // A backend never gets the server's environment (the child environment is an allowlist), so
    // the fake prints the credential it knows another way, as one read from its own files would.
    for (script, ok) in [
        (
            "#!/bin/sh\necho \"Open On-Chip Debugger 0.12.0 password=SECRET\"\n",
            true,
        ),
        (
            "#!/bin/sh\necho \"Error: https://ci:SECRET@git.example Authorization: Bearer SECRET\" >&2\nexit 1\n",
            false,
        ),
    ] {
        let world = provisioned();
        with_fake_openocd(&world, &script.replace("SECRET", SECRET));
        let answers = mcp_with_env(
            &world,
            &[call(1, "debugger_info")],
            &[("API_TOKEN", SECRET)],
        );
        let text = answers[0].to_string();
        assert_eq!(
            answers[0]["result"]["structuredContent"]["ok"], ok,
            "{text}"
        );
        assert!(!text.contains(SECRET), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
