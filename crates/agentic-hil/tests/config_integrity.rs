//! Black-box: what an MCP configuration write can never do. It cannot choose a program, cannot
//! carry a device's grants to another device, and cannot leave a file the next start refuses.

mod support;

use serde_json::{Value, json};
use support::World;
use support::raw::{EchoBoard, Mcp, configure_uart};

fn set(server: &mut Mcp, changes: &Value) -> Value {
    server.envelope("project_config_set", &json!({"changes": changes}))
}

fn config_bytes(world: &World) -> Vec<u8> {
    std::fs::read(world.config_path()).expect("config readable")
}

/// One write in its own session, closed again so the configuration may change afterwards.
fn write_to(server: &mut Mcp, port: &str) -> Value {
    let port = json!({"port_id": port});
    let started = server.envelope("com_session_start", &port);
    assert_eq!(
        started["ok"],
        json!(true),
        "reading needs no grant: {started}"
    );
    let written = server.envelope(
        "com_write",
        &json!({"port_id": port["port_id"], "text": "ping\n"}),
    );
    let stopped = server.envelope("com_session_stop", &port);
    assert_eq!(stopped["ok"], json!(true), "{stopped}");
    written
}

#[test]
fn a_retargeted_port_cannot_write_until_the_operator_grants_it() {
    let world = World::new();
    let (declared, other) = (EchoBoard::start(), EchoBoard::start());
    configure_uart(&world, &declared.device);
    let mut server = Mcp::ours(&world);
    let first = write_to(&mut server, "uart0");
    assert_eq!(
        first["ok"],
        json!(true),
        "the declared port writes: {first}"
    );

    let moved = set(
        &mut server,
        &json!([{"key": "com_ports.uart0.device", "value": other.device}]),
    );
    assert_eq!(moved["ok"], json!(true), "{moved}");
    assert_eq!(moved["redirected_entries"], json!(["com_ports.uart0"]));
    assert_eq!(
        moved["permissions_changed"],
        json!(["com_ports.uart0.permissions.allow_write"])
    );
    assert_eq!(
        moved["permission_changes"],
        json!([{"key": "com_ports.uart0.permissions.allow_write", "previous_value": true, "value": false}])
    );
    let reload = server.envelope("project_config_reload_description", &json!({}));
    assert_eq!(reload["ok"], json!(true), "{reload}");
    assert_eq!(reload["redirected_entries"], json!(["com_ports.uart0"]));
    let refused = write_to(&mut server, "uart0");
    assert_eq!(
        refused["error_type"],
        json!("permission_denied"),
        "a port pointed at another device has no grant: {refused}"
    );
    assert_eq!(server.close(), Some(0));

    // After a restart the file is in force, and it says false until the operator grants.
    let mut restarted = Mcp::ours(&world);
    let still = write_to(&mut restarted, "uart0");
    assert_eq!(still["error_type"], json!("permission_denied"), "{still}");
    assert_eq!(restarted.close(), Some(0));

    let (granted, code) = world.run_json(&["grant", "com_ports.uart0.allow_write"]);
    assert_eq!(code, Some(0), "{granted}");
    let mut granted_server = Mcp::ours(&world);
    let written = write_to(&mut granted_server, "uart0");
    assert_eq!(
        written["ok"],
        json!(true),
        "the operator's grant opens it: {written}"
    );
}

#[test]
fn a_port_renamed_to_a_link_of_the_same_node_keeps_its_grant() {
    let world = World::new();
    let board = EchoBoard::start();
    configure_uart(&world, &board.device);
    let link = world.home.join("by-id-uart");
    std::os::unix::fs::symlink(&board.device, &link).expect("stable link");
    let mut server = Mcp::ours(&world);
    let renamed = set(
        &mut server,
        &json!([{"key": "com_ports.uart0.device", "value": link.display().to_string()}]),
    );
    assert_eq!(renamed["ok"], json!(true), "{renamed}");
    assert_eq!(renamed["redirected_entries"], json!([]), "{renamed}");
    let reload = server.envelope("project_config_reload_description", &json!({}));
    assert_eq!(reload["redirected_entries"], json!([]), "{reload}");
    let written = write_to(&mut server, "uart0");
    assert_eq!(
        written["ok"],
        json!(true),
        "same device, same grant: {written}"
    );
}

#[test]
fn a_key_that_names_a_program_is_refused_over_mcp_and_described_as_the_operators() {
    let world = World::new();
    assert!(world.run(&["init"]).status.success());
    let before = config_bytes(&world);
    let mut server = Mcp::ours(&world);
    for key in [
        "debuggers.dut.executable",
        "debuggers.dut.gdb_server_executable",
        "debuggers.dut.interface_cfg",
        "debug.gdb_executable",
        "can_buses.bus.executable",
    ] {
        let refused = set(&mut server, &json!([{"key": key, "value": "/usr/bin/env"}]));
        assert_eq!(
            refused["error_type"],
            json!("operator_only_key"),
            "{key}: {refused}"
        );
        assert_eq!(refused["keys"], json!([key]));
        assert!(
            refused["operator_command"]
                .as_str()
                .is_some_and(|c| c.contains("agentic-hil config-reload")),
            "{refused}"
        );
        assert!(
            refused["remediation"].is_array(),
            "advice merged: {refused}"
        );
    }
    assert_eq!(config_bytes(&world), before, "nothing was written");

    let described = server.envelope("project_config_describe", &json!({}));
    let listed = |field: &str| -> Vec<String> {
        described[field]
            .as_array()
            .expect(field)
            .iter()
            .filter_map(|k| k["key"].as_str().map(str::to_owned))
            .collect()
    };
    let locked = described["locked_keys"].as_array().expect("locked_keys");
    let executable = locked
        .iter()
        .find(|k| k["key"] == json!("debuggers.dut.executable"))
        .expect("the executable is listed as locked");
    assert_eq!(executable["locked_by"], json!("operator"), "{executable}");
    assert!(!listed("writable_keys").contains(&"debug.gdb_executable".to_owned()));
    assert!(listed("writable_keys").contains(&"debuggers.dut.probe_id".to_owned()));
}

#[test]
fn a_reload_never_repins_a_program_the_file_changed() {
    let world = World::new();
    assert!(world.run(&["init"]).status.success());
    let mut server = Mcp::ours(&world);
    // Only the operator can change this key now; the reload still must not act on it.
    let path = world.config_path();
    let text = String::from_utf8(config_bytes(&world)).expect("utf-8");
    let edited = text.replacen("executable: null", "executable: \"/usr/bin/env\"", 1);
    assert_ne!(edited, text, "the starter names the executable key");
    std::fs::write(&path, edited).expect("the operator's edit");

    let reload = server.envelope("project_config_reload_description", &json!({}));
    assert_eq!(reload["ok"], json!(true), "{reload}");
    assert!(
        reload["restart_required_for"]
            .as_array()
            .expect("list")
            .contains(&json!("debuggers.dut.executable")),
        "{reload}"
    );
    let described = server.envelope("project_config_describe", &json!({}));
    let executable = described["locked_keys"]
        .as_array()
        .expect("locked_keys")
        .iter()
        .find(|k| k["key"] == json!("debuggers.dut.executable"))
        .cloned()
        .expect("listed");
    assert_eq!(
        executable["value_in_force"],
        Value::Null,
        "the program in force is the one pinned at startup: {executable}"
    );
    assert_eq!(
        executable["current_value"], "/usr/bin/env",
        "the file's value is shown beside it: {executable}"
    );
}

#[test]
fn a_write_the_next_start_would_refuse_is_refused_and_the_server_still_starts() {
    let world = World::new();
    assert!(world.run(&["init"]).status.success());
    let before = config_bytes(&world);
    let mut server = Mcp::ours(&world);
    // A process-bridge bus with no program reads as a document; the start refuses it when it pins.
    let refused = set(
        &mut server,
        &json!([
            {"key": "can_buses.bridge.adapter", "value": "process"},
            {"key": "can_buses.bridge.channel", "value": "bridge0"},
        ]),
    );
    assert_eq!(refused["ok"], json!(false), "{refused}");
    assert_eq!(refused["error_type"], json!("config_invalid"), "{refused}");
    assert_eq!(config_bytes(&world), before, "the file keeps every byte");
    assert_eq!(server.close(), Some(0));

    let mut next = Mcp::ours(&world);
    let described = next.envelope("project_config_describe", &json!({}));
    assert_eq!(
        described["ok"],
        json!(true),
        "the bench still starts: {described}"
    );
}
