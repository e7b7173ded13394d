//! A device is its physical identity: two projects on one bench (one HOME, so one set of device
//! locks) that name one serial port two ways, one by a symlink and one by the pty node it leads to,
//! exclude each other, whichever holds it first and whichever implementation (this one or the
//! reference 0.25) is on either side.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::raw::{EchoBoard, Mcp};
use support::{World, reference};

/// Another project beside the world's own, on the same bench.
fn second_workspace(world: &World) -> PathBuf {
    let dir = world
        .workspace
        .parent()
        .expect("the workspace has a parent")
        .join("node-fw");
    std::fs::create_dir_all(&dir).expect("second workspace");
    dir
}

/// A symlink to `node` outside both workspaces, as a stable name for the port.
fn link_to(world: &World, node: &str) -> String {
    let dir = world
        .home
        .parent()
        .expect("home has a parent")
        .join("links");
    std::fs::create_dir_all(&dir).expect("links dir");
    let link = dir.join("uart0");
    std::os::unix::fs::symlink(node, &link).expect("link to the pty");
    link.display().to_string()
}

/// A pty board whose `uart0` the world's project names by a link to it and a second project (its
/// workspace returned) by its node: the board, the link, the second workspace.
fn one_port_by_two_names(world: &World) -> (EchoBoard, String, PathBuf) {
    let board = EchoBoard::start();
    let link = link_to(world, &board.device);
    configure(world, &world.workspace, &link);
    let other = second_workspace(world);
    configure(world, &other, &board.device);
    (board, link, other)
}

/// `init` in `workspace`, then a `uart0` port on `device` with writes allowed.
fn configure(world: &World, workspace: &Path, device: &str) {
    let out = world
        .command()
        .current_dir(workspace)
        .arg("init")
        .output()
        .expect("init runs");
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let leaf = format!(
        "{}-",
        workspace.file_name().expect("named").to_string_lossy()
    );
    let projects = world.home.join(".config/agentic-hil/projects");
    let dir = std::fs::read_dir(&projects)
        .expect("projects dir")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&leaf))
        })
        .expect("this workspace's project directory");
    let path = dir.join("config.yaml");
    let text = std::fs::read_to_string(&path).expect("config");
    let ports = format!(
        "com_ports:\n  uart0:\n    device: \"{device}\"\n    identity_source: device\n    permissions:\n      allow_write: true\n"
    );
    assert!(text.contains("com_ports: {}"), "{text}");
    std::fs::write(&path, text.replacen("com_ports: {}", &ports, 1)).expect("write config");
}

fn ours() -> &'static Path {
    Path::new(World::binary())
}

const UART: &str = "uart0";

fn hold_by_run(mcp: &mut Mcp) -> Value {
    let held = mcp.call(
        "bench_run_start",
        &json!({"devices": [{"kind": "uart", "id": UART}], "label": "holder"}),
    );
    assert_eq!(held["isError"], false, "{held}");
    held["structuredContent"].clone()
}

/// The contender is refused by a device lock, before it opened anything: not by the kernel's
/// exclusive open, which would say `com_port_busy` and would stop only a second opener.
fn assert_refused_by_a_lock(result: &Value, who: &str) {
    let doc = &result["structuredContent"];
    assert_eq!(result["isError"], true, "{who} was let in: {result}");
    let error_type = doc["error_type"].as_str().unwrap_or_default();
    assert!(
        ["device_busy", "resource_busy"].contains(&error_type),
        "{who} was refused by something other than a device lock: {doc}"
    );
}

fn start_session(mcp: &mut Mcp) -> Value {
    mcp.call("com_session_start", &json!({"port_id": UART}))
}

#[test]
fn a_run_holding_a_port_by_its_link_refuses_servers_here_and_in_the_reference_naming_its_node() {
    let reference = reference();
    let world = World::new();
    let (board, link, other) = one_port_by_two_names(&world);

    let mut holder = Mcp::ours(&world);
    let run = hold_by_run(&mut holder);
    assert_eq!(
        run["declared_devices"],
        json!([format!("com:{link}")]),
        "people see the spelling their configuration uses"
    );
    for contender in [ours(), reference.as_path()] {
        let who = contender.display().to_string();
        let mut by_node = Mcp::start_in(&world, contender, &other);
        let refused = start_session(&mut by_node);
        assert_refused_by_a_lock(&refused, &who);
        if refused["structuredContent"]["error_type"] == "device_busy" {
            assert_eq!(
                refused["structuredContent"]["resource"],
                format!("com:{}", board.device),
                "{who}: {refused}"
            );
        }
    }

    let status = holder.envelope("bench_run_status", &json!({}));
    let held = status["held_devices"].as_array().expect("held devices");
    assert!(
        held.contains(&json!(format!("com:{}", board.device))),
        "the node is held for exclusion: {status}"
    );

    assert_eq!(holder.call("bench_run_stop", &json!({}))["isError"], false);
    let mut by_node = Mcp::start_in(&world, ours(), &other);
    let taken = start_session(&mut by_node);
    assert_eq!(taken["isError"], false, "after the run ended: {taken}");
    drop(by_node);
    drop(board);
}

#[test]
fn a_port_held_by_its_node_here_or_in_the_reference_refuses_a_server_naming_its_link() {
    let reference = reference();
    let world = World::new();
    let (board, link, other) = one_port_by_two_names(&world);

    for holder_program in [ours(), reference.as_path()] {
        let who = holder_program.display().to_string();
        let mut holder = Mcp::start_in(&world, holder_program, &other);
        hold_by_run(&mut holder);
        let mut by_link = Mcp::ours(&world);
        let refused = start_session(&mut by_link);
        assert_refused_by_a_lock(&refused, &format!("ours, while {who} holds the node"));
        let (status, _) = world.run_json(&["lease-status"]);
        assert_eq!(status["bench_held"], true, "{status}");
        let node_hold = status["device_holds"]
            .as_array()
            .expect("device holds")
            .iter()
            .find(|h| h["resource"] == format!("com:{}", board.device))
            .unwrap_or_else(|| panic!("the node's hold is shown: {status}"));
        assert_eq!(
            node_hold["configured_key"],
            format!("com:{link}"),
            "the hold names the entry people know it by"
        );
        let watched = world.run(&["watch", "--once", "--width", "110", "--height", "30"]);
        let frame = String::from_utf8_lossy(&watched.stdout);
        let row = frame
            .lines()
            .find(|l| l.contains(&format!("com:{link}")))
            .unwrap_or_else(|| panic!("watch lists the port by its configured name: {frame}"));
        assert!(row.contains("HELD"), "held through its node: {frame}");
        drop(holder);
        let taken = start_session(&mut by_link);
        assert_eq!(taken["isError"], false, "after {who} ended: {taken}");
        assert_eq!(
            by_link.call("com_session_stop", &json!({"port_id": UART}))["isError"],
            false
        );
    }
    drop(board);
}

#[test]
fn a_session_opened_by_its_link_refuses_a_session_naming_its_node_before_opening_the_port() {
    let world = World::new();
    let (board, link, other) = one_port_by_two_names(&world);

    let mut by_link = Mcp::ours(&world);
    let started = start_session(&mut by_link);
    assert_eq!(started["isError"], false, "{started}");
    let session = &started["structuredContent"]["session"];
    assert_eq!(
        session["device"], link,
        "people see the configured spelling"
    );
    assert_eq!(
        session["node"], board.device,
        "the session opened the node it locked, not whatever the link names by then"
    );
    let mut by_node = Mcp::start_in(&world, ours(), &other);
    let refused = start_session(&mut by_node);
    assert_refused_by_a_lock(&refused, "a session naming the node");
    let written = by_node.call("com_write", &json!({"port_id": UART, "text": "x\n"}));
    assert_refused_by_a_lock(&written, "a write naming the node");
    drop(by_link);
    drop(board);
}
