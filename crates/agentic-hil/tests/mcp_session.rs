//! Black-box: the built binary as an MCP server, driven by rmcp's own client over stdio.

mod support;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use support::{World, connect};

fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("test arguments are objects"),
    }
}

#[tokio::test]
async fn a_provisioned_server_lists_its_tools_and_describes_the_configuration() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert!(code.is_some(), "init exits normally");

    let client = connect(&world).await;
    let info = client.peer_info().expect("server info after the handshake");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("agentic-hil")
    );

    let tools = client.list_all_tools().await.expect("tools/list answers");
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.contains(&"project_config_describe".to_string()),
        "{names:?}"
    );
    assert!(names.contains(&"debugger_info".to_string()), "{names:?}");
    let listing = serde_json::to_string(&tools).expect("tools serialize");
    assert!(!listing.contains("$ref"), "tool schemas are flat");

    let result = client
        .call_tool(CallToolRequestParams::new("project_config_describe"))
        .await
        .expect("tools/call answers");
    assert_eq!(result.is_error, Some(false));
    let doc = result
        .structured_content
        .expect("the envelope is structured content");
    support::check_result("project_config_describe", &doc);
    assert_eq!(doc["ok"], json!(true));
    assert_eq!(doc["tool"], json!("project_config_describe"));
    assert_eq!(doc["config_version"], json!(3));
    assert_eq!(doc["config_status"]["state"], json!("unchanged"));
    let text = serde_json::to_string(&doc).expect("serialize");
    assert!(
        !text.contains(&world.home.display().to_string()),
        "no absolute path under HOME leaks: {text}"
    );

    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_malformed_call_is_refused_as_invalid_argument_naming_the_argument() {
    let world = World::new();
    world.run_json(&["init"]);
    let client = connect(&world).await;

    let result = client
        .call_tool(
            CallToolRequestParams::new("project_config_describe")
                .with_arguments(args(json!({"verbose": true}))),
        )
        .await
        .expect("a bad argument is a tool result, not a protocol error");
    assert_eq!(result.is_error, Some(true));
    let doc = result.structured_content.expect("structured envelope");
    support::check_result("project_config_describe", &doc);
    assert_eq!(doc["error_type"], json!("invalid_argument"));
    assert_eq!(doc["field"], json!("verbose"));
    let text_block = serde_json::to_string(&result.content).expect("content serializes");
    assert!(
        text_block.contains("invalid_argument"),
        "the text block carries the envelope too"
    );

    let unknown = client
        .call_tool(CallToolRequestParams::new("open_the_pod_bay_doors"))
        .await
        .expect("an unknown tool is a tool result");
    assert_eq!(unknown.is_error, Some(true));
    let doc = unknown.structured_content.expect("structured envelope");
    support::check_result("open_the_pod_bay_doors", &doc);
    assert_eq!(doc["error_type"], json!("unknown_tool"));

    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn an_unprovisioned_server_starts_and_says_how_to_create_a_configuration() {
    let world = World::new();
    let client = connect(&world).await;
    let tools = client.list_all_tools().await.expect("tools/list answers");
    assert!(!tools.is_empty());

    let result = client
        .call_tool(CallToolRequestParams::new("project_config_describe"))
        .await
        .expect("tools/call answers");
    assert_eq!(result.is_error, Some(true));
    let doc = result.structured_content.expect("structured envelope");
    support::check_result("project_config_describe", &doc);
    assert_eq!(doc["error_type"], json!("config_file_not_found"));
    let text = serde_json::to_string(&doc).expect("serialize");
    assert!(text.contains("agentic-hil init"), "{text}");

    // Once the operator writes a configuration, the same server binds to it without a restart.
    world.run_json(&["init"]);
    let result = client
        .call_tool(CallToolRequestParams::new("project_config_describe"))
        .await
        .expect("tools/call answers");
    assert_eq!(
        result.is_error,
        Some(false),
        "{:?}",
        result.structured_content
    );

    client.cancel().await.expect("the session closes");
}

#[test]
fn a_broken_configuration_stops_the_server_with_the_refusal_on_stderr_only() {
    let world = World::new();
    world.run_json(&["init"]);
    let path = world.config_path();
    let mut text = std::fs::read_to_string(&path).expect("read config");
    text.push_str("\nsurprise_key: 1\n");
    std::fs::write(&path, text).expect("write config");

    let out = world
        .command()
        .arg("mcp-stdio")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "stdout stays clean for JSON-RPC");
    let doc: Value = serde_json::from_slice(&out.stderr).expect("stderr carries one JSON refusal");
    assert_eq!(doc["error_type"], json!("config_invalid"));
    assert_eq!(doc["field"], json!("surprise_key"));
}

const FAKE_OPENOCD: &str = "#!/bin/sh\necho 'Open On-Chip Debugger 0.12.0' >&2\nexit 0\n";

fn bind_debugger(world: &World) {
    world.bind_fake_openocd(FAKE_OPENOCD);
}

#[tokio::test]
async fn two_servers_contending_for_one_board_get_device_busy_naming_the_holder() {
    let world = World::new();
    world.run_json(&["init"]);
    bind_debugger(&world);
    let first = connect(&world).await;
    let second = connect(&world).await;
    let start = |label: &str| {
        CallToolRequestParams::new("bench_run_start").with_arguments(args(
            json!({"devices": [{"kind": "debugger"}], "label": label}),
        ))
    };

    let held = first.call_tool(start("first")).await.expect("answers");
    assert_eq!(held.is_error, Some(false), "{:?}", held.structured_content);
    let doc = held.structured_content.expect("envelope");
    support::check_result("bench_run_start", &doc);
    assert_eq!(doc["declared_devices"], json!(["probe:board7"]));

    let refused = second.call_tool(start("second")).await.expect("answers");
    assert_eq!(refused.is_error, Some(true));
    let doc = refused.structured_content.expect("envelope");
    support::check_result("bench_run_start", &doc);
    assert_eq!(doc["error_type"], json!("device_busy"));
    assert_eq!(doc["holder"]["label"], json!("first"));
    assert!(
        doc["summary"]
            .as_str()
            .is_some_and(|s| s.contains("running first")),
        "{doc}"
    );

    let stopped = first
        .call_tool(CallToolRequestParams::new("bench_run_stop"))
        .await
        .expect("answers");
    assert_eq!(
        stopped.structured_content.expect("envelope")["released_devices"],
        json!(["probe:board7"])
    );
    let taken = second.call_tool(start("second")).await.expect("answers");
    assert_eq!(
        taken.is_error,
        Some(false),
        "{:?}",
        taken.structured_content
    );

    // Ending the session releases the run's devices too.
    second.cancel().await.expect("closes");
    let again = first.call_tool(start("again")).await.expect("answers");
    assert_eq!(
        again.is_error,
        Some(false),
        "{:?}",
        again.structured_content
    );
    first.cancel().await.expect("closes");
}

/// The device locks are the account's, wherever an agent's `.mcp.json` points HOME: a server started
/// with another HOME (its configuration still found through XDG_CONFIG_HOME) meets the holds of a
/// server started with the account's own, for a run and for a one-shot call alike.
#[tokio::test]
async fn a_server_given_another_home_still_meets_the_device_locks_of_the_account() {
    let world = World::new();
    world.run_json(&["init"]);
    bind_debugger(&world);
    let first = connect(&world).await;
    let elsewhere = tempfile::tempdir().expect("another home, outside the workspace");
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("HOME", elsewhere.path());
    let second = support::connect_command(cmd).await;

    let held = first
        .call_tool(
            CallToolRequestParams::new("bench_run_start").with_arguments(args(
                json!({"devices": [{"kind": "debugger"}], "label": "first"}),
            )),
        )
        .await
        .expect("answers");
    assert_eq!(held.is_error, Some(false), "{:?}", held.structured_content);
    for (tool, arguments) in [
        (
            "bench_run_start",
            json!({"devices": [{"kind": "debugger"}], "label": "second"}),
        ),
        ("probe_target", json!({})),
    ] {
        let refused = second
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args(arguments)))
            .await
            .expect("answers");
        let doc = refused.structured_content.expect("envelope");
        assert_eq!(doc["error_type"], json!("device_busy"), "{tool}: {doc}");
        assert_eq!(doc["holder"]["label"], json!("first"), "{tool}: {doc}");
    }
    assert!(
        !elsewhere.path().join(".agentic-hil").exists(),
        "no lock root was made under the other HOME"
    );
    second.cancel().await.expect("closes");
    first.cancel().await.expect("closes");
}

/// `~` in the operator's configuration is the account's home, wherever the agent points HOME: a
/// `state_root: ~/…` keeps the evidence, incidents and quarantines of a server started with another
/// HOME where every other server of the project keeps them.
#[tokio::test]
async fn a_state_root_written_with_a_tilde_stays_the_accounts_whatever_home_the_server_is_given() {
    let world = World::new();
    world.run_json(&["init"]);
    bind_debugger(&world);
    let config = world.config_path();
    let text: String = std::fs::read_to_string(&config)
        .expect("config")
        .lines()
        .map(|line| {
            if line.starts_with("state_root:") {
                "state_root: \"~/.local/state/agentic-hil\"\n".to_owned()
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    std::fs::write(&config, text).expect("state_root under ~");
    let elsewhere = tempfile::tempdir().expect("another home, outside the workspace");
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    cmd.env("HOME", elsewhere.path());
    let client = support::connect_command(cmd).await;
    // The fake answers without OpenOCD's markers: a refusal, and a report all the same.
    let (doc, _) = support::call(&client, "probe_target", json!({})).await;
    assert_eq!(doc["tool"], "probe_target", "{doc}");
    client.cancel().await.expect("closes");
    assert!(
        !elsewhere.path().join(".local").exists(),
        "the state root followed HOME"
    );
    let reports = world.home.join(".local/state/agentic-hil");
    let written = walk(&reports);
    assert!(
        written
            .iter()
            .any(|p| p.to_string_lossy().contains("probe_target")),
        "the call's report is in the account's state root: {written:?}"
    );
}

/// Every file below `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[tokio::test]
async fn a_run_naming_an_unknown_device_locks_nothing() {
    let world = World::new();
    world.run_json(&["init"]);
    bind_debugger(&world);
    let client = connect(&world).await;
    let result = client
        .call_tool(
            CallToolRequestParams::new("bench_run_start").with_arguments(args(
                json!({"devices": [{"kind": "debugger"}, {"kind": "uart", "id": "nope"}]}),
            )),
        )
        .await
        .expect("answers");
    let doc = result.structured_content.expect("envelope");
    support::check_result("bench_run_start", &doc);
    assert_eq!(doc["error_type"], json!("unknown_device"));
    let status = client
        .call_tool(CallToolRequestParams::new("bench_run_status"))
        .await
        .expect("answers")
        .structured_content
        .expect("envelope");
    support::check_result("bench_run_status", &status);
    assert_eq!(status["run_active"], json!(false));
    assert_eq!(status["held_devices"], json!([]));
    client.cancel().await.expect("closes");
}
