//! A user-level registration starts the server wherever the host session was opened. Outside a
//! project (HOME, `/`) it still connects, lists its tools and answers every call with
//! `workspace_is_home` and the next step, instead of exiting so that the host shows only "failed to
//! connect"; in a directory with no configuration it answers `config_file_not_found`.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::World;
use support::raw::Mcp;

fn server_in(world: &World, dir: &Path) -> Mcp {
    Mcp::start_in(world, Path::new(World::binary()), dir)
}

fn tool_names(server: &mut Mcp) -> Vec<String> {
    server.request("tools/list", &json!({}))["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

fn assert_refused(result: &Value, error_type: &str) {
    assert_eq!(result["isError"], json!(true), "{result:#}");
    let envelope = &result["structuredContent"];
    assert_eq!(envelope["error_type"], json!(error_type), "{envelope:#}");
    assert!(
        envelope["next_step"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "a next step: {envelope:#}"
    );
}

#[test]
fn the_server_started_in_home_lists_its_tools_and_answers_every_call_with_workspace_is_home() {
    let world = World::new();
    let mut server = server_in(&world, &world.home);
    let names = tool_names(&mut server);
    assert!(
        names.iter().any(|n| n == "project_config_describe"),
        "{names:?}"
    );
    for tool in &names {
        assert_refused(&server.call(tool, &json!({})), "workspace_is_home");
    }
    // Not even the first configuration is created: it would bind the whole home directory.
    assert_refused(
        &server.call("project_config_create", &json!({})),
        "workspace_is_home",
    );
    assert!(!world.home.join(".config/agentic-hil").exists());
    assert_eq!(
        server.close(),
        Some(0),
        "it ends cleanly when the host goes"
    );
}

#[test]
fn the_server_started_in_the_root_directory_answers_workspace_is_home() {
    let world = World::new();
    let mut server = server_in(&world, Path::new("/"));
    assert!(!tool_names(&mut server).is_empty());
    assert_refused(
        &server.call("project_config_describe", &json!({})),
        "workspace_is_home",
    );
    assert_eq!(server.close(), Some(0));
}

#[test]
fn the_server_started_in_a_directory_without_a_configuration_answers_config_file_not_found() {
    let world = World::new();
    let mut server = server_in(&world, &world.workspace);
    assert!(!tool_names(&mut server).is_empty());
    assert_refused(
        &server.call("project_config_describe", &json!({})),
        "config_file_not_found",
    );
    assert_eq!(server.close(), Some(0));
}
