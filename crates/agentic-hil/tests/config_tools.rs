//! Black-box: configuration over MCP (`project_config_set`, `project_config_reload_description`,
//! `project_config_describe`) and the operator's `grant` / `revoke` / `config-reload`.

mod support;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use support::sim_board::{SIM_TARGET, provisioned_board, qemu_board, sim_world, state_root};
use support::{World, connect};

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        unreachable!("test arguments are objects")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .expect("tools/call answers");
    let doc = result.structured_content.expect("structured content");
    support::check_result(tool, &doc);
    assert_eq!(
        result.is_error,
        Some(doc["ok"] != json!(true)),
        "isError follows ok: {doc}"
    );
    doc
}

async fn set(client: &Client, changes: Value) -> Value {
    call(client, "project_config_set", json!({"changes": changes})).await
}

fn config_text(world: &World) -> String {
    std::fs::read_to_string(world.config_path()).expect("config readable")
}

#[tokio::test]
async fn set_writes_a_description_key_with_one_change_line_and_provenance() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let doc = set(&client, json!([{"key": "target.name", "value": "bench-7"}])).await;
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(doc["written"], json!(true));
    assert_eq!(doc["reload_required"], json!(true));
    assert_eq!(doc["changes"][0]["previous_value"], json!("example-target"));
    assert_eq!(
        doc["provenance"]["last_modified_via"],
        json!("mcp:project_config_set")
    );
    assert_eq!(
        doc["provenance"]["last_modified_keys"],
        json!(["target.name"])
    );
    let text = config_text(&world);
    assert_eq!(
        text.matches("# Changed by an agent via mcp:project_config_set")
            .count(),
        1
    );
    assert!(text.contains("name: \"bench-7\""), "{text}");

    let again = set(&client, json!([{"key": "target.name", "value": "bench-8"}])).await;
    assert_eq!(again["provenance"]["modification_count"], json!(2));
    assert_eq!(config_text(&world).matches("# Changed by").count(), 1);
    client.cancel().await.expect("closes");
}

/// `reload_required` is the file against what the server enforces, as `config_status` says: a
/// call that changes nothing after one that did still needs the reload (the reference's answer).
#[tokio::test]
async fn a_set_that_changes_nothing_after_one_that_did_still_says_reload_required() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let first = set(&client, json!([{"key": "target.name", "value": "bench-7"}])).await;
    assert_eq!(first["reload_required"], json!(true), "{first}");
    let same = set(&client, json!([{"key": "target.name", "value": "bench-7"}])).await;
    assert_eq!(same["written"], json!(false), "{same}");
    assert_eq!(same["reload_required"], json!(true), "{same}");
    assert_eq!(
        same["config_status"]["reload_required"],
        json!(true),
        "{same}"
    );
    client.cancel().await.expect("closes");
}

/// A permission of an entry the file does not have is refused naming the entry: a mistyped name
/// must not answer "already closed", and a permission does not create a device.
#[tokio::test]
async fn a_permission_of_an_entry_the_file_lacks_is_refused_naming_the_entry() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let before = config_text(&world);
    let doc = set(
        &client,
        json!([{"key": "debuggers.dtu.permissions.allow_flash", "value": false}]),
    )
    .await;
    assert_eq!(doc["error_type"], json!("invalid_argument"), "{doc}");
    assert_eq!(doc["field"], json!("debuggers.dtu"), "{doc}");
    assert_eq!(config_text(&world), before, "nothing was written");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_permission_can_be_closed_but_an_open_request_is_refused_naming_it() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let widen = set(
        &client,
        json!([{"key": "debuggers.dut.permissions.allow_mass_erase", "value": true}]),
    )
    .await;
    assert_eq!(
        widen["error_type"],
        json!("permission_widening_denied"),
        "{widen}"
    );
    assert_eq!(
        widen["permission"],
        json!("debuggers.dut.permissions.allow_mass_erase")
    );
    assert!(widen["remediation"].is_array(), "advice merged: {widen}");
    assert!(
        !config_text(&world).contains("# Changed by"),
        "nothing written"
    );

    let narrow = set(
        &client,
        json!([{"key": "debuggers.dut.permissions.allow_flash", "value": false}]),
    )
    .await;
    assert_eq!(narrow["ok"], json!(true), "{narrow}");
    assert_eq!(
        narrow["permissions_changed"],
        json!(["debuggers.dut.permissions.allow_flash"])
    );
    assert_eq!(
        narrow["permission_changes"],
        json!([{"key": "debuggers.dut.permissions.allow_flash", "previous_value": true, "value": false}])
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn closing_the_permissions_grant_freezes_every_permission() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let close = set(
        &client,
        json!([{"key": "permissions.allow_config_permissions_write", "value": false}]),
    )
    .await;
    assert_eq!(close["ok"], json!(true), "{close}");
    assert_eq!(close["permissions_frozen"], json!(true));
    let describe = call(&client, "project_config_describe", json!({})).await;
    let locked = describe["locked_keys"].as_array().expect("locked_keys");
    assert!(
        locked.iter().any(
            |k| k["key"] == json!("debuggers.dut.permissions.allow_reset")
                && k["unlocked_by"] == json!("permissions.allow_config_permissions_write")
        ),
        "describe shows the freeze at once: {describe}"
    );
    let after = set(
        &client,
        json!([{"key": "debuggers.dut.permissions.allow_reset", "value": false}]),
    )
    .await;
    assert_eq!(after["error_type"], json!("permission_denied"), "{after}");
    assert_eq!(
        after["permission"],
        json!("permissions.allow_config_permissions_write")
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn a_description_write_needs_its_grant_and_the_refusal_names_it() {
    let world = World::provisioned();
    let (revoked, code) = world.run_json(&["revoke", "permissions.allow_config_description_write"]);
    assert_eq!(code, Some(0), "{revoked}");
    let client = connect(&world).await;
    let doc = set(&client, json!([{"key": "target.name", "value": "x"}])).await;
    assert_eq!(doc["error_type"], json!("permission_denied"), "{doc}");
    assert_eq!(
        doc["permission"],
        json!("permissions.allow_config_description_write")
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn an_unknown_or_repeated_key_is_an_invalid_argument_and_nothing_is_written() {
    let world = World::provisioned();
    let before = config_text(&world);
    let client = connect(&world).await;
    for changes in [
        json!([{"key": "state_root", "value": "/tmp"}]),
        json!([{"key": "target.name", "value": "a"}, {"key": "target.name", "value": "b"}]),
    ] {
        let doc = set(&client, changes).await;
        assert_eq!(doc["error_type"], json!("invalid_argument"), "{doc}");
    }
    let invalid = set(
        &client,
        json!([{"key": "com_ports.uart.baudrate", "value": "fast"}]),
    )
    .await;
    assert_eq!(
        invalid["error_type"],
        json!("invalid_argument"),
        "{invalid}"
    );
    assert_eq!(config_text(&world), before);
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn reload_picks_up_a_hand_edit_without_a_restart_and_new_devices_get_no_grant() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let listed = call(&client, "com_ports_list", json!({})).await;
    assert_eq!(listed["ports"], json!({}), "{listed}");

    let path = world.config_path();
    let text = config_text(&world).replace(
        "com_ports: {}\n",
        "com_ports:\n  uart:\n    device: \"/dev/ttyUSB7\"\n    serial_number: \"UART7\"\n    permissions:\n      allow_write: true\n",
    );
    std::fs::write(&path, text).expect("hand edit");

    let stale = call(&client, "project_config_describe", json!({})).await;
    assert_eq!(stale["config_status"]["state"], json!("changed"));

    let reload = call(&client, "project_config_reload_description", json!({})).await;
    assert_eq!(reload["ok"], json!(true), "{reload}");
    assert_eq!(reload["description_changed"], json!(true));
    assert_eq!(reload["description_changes"], json!(["com_ports.uart"]));
    assert_eq!(reload["permissions_reloaded"], json!(false));
    assert_eq!(
        reload["permission_differences"],
        json!(["com_ports.uart.permissions.allow_write"])
    );
    assert_eq!(
        reload["restart_required_for"],
        json!(["com_ports.uart.permissions.allow_write"])
    );
    assert_eq!(
        reload["permissions_in_force"]["com_ports"]["uart"]["allow_write"],
        json!(false)
    );

    let listed = call(&client, "com_ports_list", json!({})).await;
    assert_eq!(
        listed["ports"]["uart"]["device"],
        json!("/dev/ttyUSB7"),
        "{listed}"
    );
    let write = call(
        &client,
        "com_write",
        json!({"port_id": "uart", "text": "x"}),
    )
    .await;
    assert_eq!(write["error_type"], json!("permission_denied"), "{write}");
    client.cancel().await.expect("closes");
}

#[test]
fn grant_and_revoke_move_permissions_and_say_a_restart_is_needed() {
    let world = World::provisioned();
    let (granted, code) = world.run_json(&["grant", "debuggers.dut.allow_mass_erase"]);
    assert_eq!(code, Some(0), "{granted}");
    assert_eq!(
        granted["changed"],
        json!([{"key": "debuggers.dut.permissions.allow_mass_erase", "previous_value": false, "value": true}])
    );
    assert_eq!(granted["restart_required"], json!(true));
    assert_eq!(
        granted["provenance"]["last_modified_via"],
        json!("cli:grant")
    );
    let text = config_text(&world);
    assert!(text.contains("allow_mass_erase: true"), "{text}");

    let (again, code) = world.run_json(&["grant", "debuggers.dut.permissions.allow_mass_erase"]);
    assert_eq!(code, Some(0), "{again}");
    assert_eq!(again["changed"], json!([]));
    assert_eq!(again["restart_required"], json!(false));

    let (revoked, code) = world.run_json(&["revoke", "debuggers.dut.allow_mass_erase"]);
    assert_eq!(code, Some(0), "{revoked}");
    assert!(config_text(&world).contains("allow_mass_erase: false"));
}

#[test]
fn grant_refuses_a_description_key_and_lists_the_permission_keys_here() {
    let world = World::provisioned();
    let before = config_text(&world);
    let (doc, code) = world.run_json(&["grant", "target.name", "permissions.allow_recover"]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["error_type"], json!("invalid_argument"));
    assert_eq!(doc["rejected_keys"][0]["key"], json!("target.name"));
    assert!(
        doc["permission_keys_here"]
            .as_array()
            .is_some_and(|keys| keys.contains(&json!("debuggers.dut.permissions.allow_flash"))),
        "{doc}"
    );
    assert_eq!(config_text(&world), before, "all or nothing");
}

#[test]
fn config_reload_previews_the_description_and_writes_nothing() {
    let world = World::provisioned();
    let before = config_text(&world);
    let (doc, code) = world.run_json(&["config-reload"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["scope"], json!("preview"));
    assert_eq!(doc["would_reload"]["debuggers"], json!(["dut"]));
    assert_eq!(config_text(&world), before);
}

#[tokio::test]
async fn grant_is_not_a_tool() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().all(|t| !t.name.contains("grant")));
    client.cancel().await.expect("closes");
}

/// Discovery that saw nothing is no proof of an empty bench, so no first configuration is written
/// off it (as the reference refuses); once the emulated board runs (started by another project of
/// the account, under the same state root), the first one is written and this server binds it.
#[tokio::test]
async fn create_writes_the_first_configuration_only_off_a_bench_it_saw_and_the_server_binds_it() {
    let bench = sim_world(
        &qemu_board("      allow_reset: true\n"),
        "",
        &["ahil-fw-v1.elf"],
    );
    let world = bench.another_workspace("agent-fw");
    let client = connect(&world).await;
    let describe = call(&client, "project_config_describe", json!({})).await;
    assert_eq!(describe["error_type"], json!("config_file_not_found"));
    let blind = call(&client, "project_config_create", json!({})).await;
    assert_eq!(
        blind["error_type"],
        json!("probe_inventory_incomplete"),
        "{blind}"
    );
    assert_eq!(blind["side_effect_status"], json!("not_started"), "{blind}");
    let projects = std::fs::read_dir(world.home.join(".config/agentic-hil/projects"))
        .expect("the bench project's folder")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("agent-fw-"))
        .count();
    assert_eq!(projects, 0, "nothing was written off an empty reading");
    let _board = support::RunningBoard::start(&bench, "fw/ahil-fw-v1.elf");
    let created = call(&client, "project_config_create", json!({})).await;
    assert_eq!(created["ok"], json!(true), "{created}");
    assert_eq!(created["hardware_discovery"]["debuggers"], json!(["board"]));
    assert_eq!(
        created["provenance"]["created_via"],
        json!("mcp:project_config_create")
    );
    let ran: Vec<&str> = created["hardware_discovery"]["ran"]
        .as_array()
        .expect("discovery says what ran")
        .iter()
        .filter_map(|r| r["source"].as_str())
        .collect();
    assert_eq!(ran, ["emulated_boards", "usb_serial"]);
    let text = config_text(&world);
    assert!(
        text.starts_with("# Changed by an agent via mcp:project_config_create"),
        "{text}"
    );
    let describe = call(&client, "project_config_describe", json!({})).await;
    assert_eq!(
        describe["ok"],
        json!(true),
        "the server bound the new file: {describe}"
    );
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn on_the_emulated_board_create_binds_its_probe_and_uart_and_keeps_known_grants() {
    let world = provisioned_board(
        &format!(
            "permissions:\n  allow_config_write: true\n  allow_config_description_write: true\n{SIM_TARGET}"
        ),
        "      allow_flash: true\n      allow_reset: true\n",
    );
    let state = state_root(&world);
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");

    let client = connect(&world).await;
    let created = call(&client, "project_config_create", json!({})).await;
    assert_eq!(created["ok"], json!(true), "{created}");
    assert_eq!(created["hardware_discovery"]["debuggers"], json!(["board"]));
    assert_eq!(created["hardware_discovery"]["skeleton"], json!(false));
    assert!(
        created["hardware_discovery"]["com_ports"]
            .as_array()
            .is_some_and(|p| p.contains(&json!("board_uart"))),
        "{created}"
    );
    assert_eq!(created["reload_required"], json!(true));

    let written = config_text(&world);
    assert!(written.contains("type: \"qemu\""), "{written}");
    assert!(written.contains(&format!(
        "device: \"{}\"",
        state.join("sim/board/uart").display()
    )));
    // Grants this server loaded for `board` are carried over; nothing it had closed is opened.
    assert!(
        written.contains("allow_debug_execution: false"),
        "{written}"
    );
    assert!(written.contains("allow_recover: false"), "{written}");

    let reload = call(&client, "project_config_reload_description", json!({})).await;
    assert_eq!(reload["ok"], json!(true), "{reload}");
    assert!(
        reload["description_changes"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("com_ports.board_uart"))),
        "{reload}"
    );
    let session = call(
        &client,
        "com_session_start",
        json!({"port_id": "board_uart"}),
    )
    .await;
    assert_eq!(session["ok"], json!(true), "the UART is bound: {session}");
    let stop = call(
        &client,
        "com_session_stop",
        json!({"port_id": "board_uart"}),
    )
    .await;
    assert_eq!(stop["ok"], json!(true), "{stop}");
    client.cancel().await.expect("closes");
}

#[tokio::test]
async fn adopt_proposes_the_boards_keys_and_writes_them_only_with_apply() {
    let world = provisioned_board("permissions:\n  allow_config_description_write: true\n", "");
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    let before = config_text(&world);

    let client = connect(&world).await;
    let plan = call(&client, "project_config_adopt_hardware", json!({})).await;
    assert_eq!(plan["ok"], json!(true), "{plan}");
    assert_eq!(plan["applied"], json!(false));
    assert_eq!(plan["com_port_id"], json!("board_uart"));
    assert_eq!(plan["creates_com_port"], json!(true));
    assert_eq!(
        support::carried_keys(&plan),
        [
            "target.controller",
            "com_ports.board_uart.device",
            "com_ports.board_uart.identity_source"
        ]
    );
    assert_eq!(config_text(&world), before, "a proposal writes nothing");

    let applied = call(
        &client,
        "project_config_adopt_hardware",
        json!({"apply": true}),
    )
    .await;
    assert_eq!(applied["ok"], json!(true), "{applied}");
    assert_eq!(applied["created_entries"], json!(["com_ports.board_uart"]));
    let text = config_text(&world);
    assert!(text.contains("controller: \"stm32f405\""), "{text}");
    assert!(
        text.contains("allow_write: false"),
        "a created port has no grant: {text}"
    );

    let reload = call(&client, "project_config_reload_description", json!({})).await;
    assert_eq!(reload["ok"], json!(true), "{reload}");
    let again = call(&client, "project_config_adopt_hardware", json!({})).await;
    assert_eq!(again["carried"], json!([]), "{again}");
    client.cancel().await.expect("closes");
}

#[test]
fn the_cli_adopts_the_board_as_the_operator_and_lists_its_probe() {
    let world = provisioned_board("", "");
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    let before = config_text(&world);
    let (dry, code) = world.run_json(&["adopt-hardware", "--dry-run"]);
    assert_eq!(code, Some(0), "{dry}");
    assert_eq!(dry["applied"], json!(false));
    assert_eq!(config_text(&world), before, "a dry run writes nothing");

    // The operator needs no description grant (this file holds none).
    let (done, code) = world.run_json(&["adopt-hardware", "--com-port", "uart"]);
    assert_eq!(code, Some(0), "{done}");
    assert_eq!(done["applied"], json!(true));
    assert_eq!(done["created_entries"], json!(["com_ports.uart"]));
    assert_eq!(
        done["provenance"]["last_modified_via"],
        json!("cli:adopt-hardware")
    );
    assert_eq!(
        done["provenance"]["last_modified_by"],
        json!("cli"),
        "no terminal on stdin"
    );

    let (probes, code) = world.run_json(&["debugger-probes"]);
    assert_eq!(code, Some(0), "{probes}");
    assert_eq!(
        probes["probes"][0]["probe_id"],
        json!("qemu:board"),
        "{probes}"
    );
}

#[test]
fn com_ports_lists_the_hosts_serial_ports_without_a_configuration() {
    let world = World::new();
    let (doc, code) = world.run_json(&["com-ports"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["tool"], json!("com_ports_available"));
    assert!(doc["ports"].is_array(), "{doc}");
}

#[tokio::test]
async fn writes_are_refused_while_a_run_holds_the_bench() {
    let world = provisioned_board("permissions:\n  allow_config_description_write: true\n", "");
    let _board = support::RunningBoard::start(&world, "fw/ahil-fw-v1.elf");
    let client = connect(&world).await;
    let run = call(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger"}]}),
    )
    .await;
    assert_eq!(run["ok"], json!(true), "{run}");
    let describe = call(&client, "project_config_describe", json!({})).await;
    assert_eq!(
        describe["writes_blocked_by_open_run"],
        json!(true),
        "{describe}"
    );
    let before = config_text(&world);
    let doc = set(&client, json!([{"key": "target.name", "value": "x"}])).await;
    assert_eq!(
        doc["error_type"],
        json!("config_write_in_open_run"),
        "{doc}"
    );
    let reload = call(&client, "project_config_reload_description", json!({})).await;
    assert_eq!(
        reload["error_type"],
        json!("config_reload_in_open_run"),
        "{reload}"
    );
    assert_eq!(config_text(&world), before);

    let (grant, code) = world.run_json(&["grant", "permissions.allow_recover"]);
    assert_eq!(code, Some(1), "{grant}");
    assert_eq!(grant["error_type"], json!("permission_change_in_open_run"));
    let stop = call(&client, "bench_run_stop", json!({})).await;
    assert_eq!(stop["ok"], json!(true), "{stop}");
    client.cancel().await.expect("closes");
}

fn run_program(world: &World, program: &std::path::Path, args: &[&str]) -> (Value, Option<i32>) {
    let mut cmd = std::process::Command::new(program);
    world.scrub(&mut cmd);
    let out = cmd.args(args).arg("--json").output().expect("runs");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} {args:?} printed no JSON ({e}): {}\n{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, out.status.code())
}

#[test]
fn grant_and_revoke_agree_with_the_reference_and_each_reads_the_others_writes() {
    let reference = support::reference();
    let ours = std::path::Path::new(World::binary());
    let world = World::provisioned();

    let (granted, code) = run_program(&world, ours, &["grant", "debuggers.dut.allow_mass_erase"]);
    assert_eq!(code, Some(0), "{granted}");
    let (preview, code) = run_program(&world, &reference, &["config-reload"]);
    assert_eq!(code, Some(0), "the reference reads our write: {preview}");
    let (revoked, code) = run_program(
        &world,
        &reference,
        &["revoke", "debuggers.dut.allow_mass_erase"],
    );
    assert_eq!(code, Some(0), "{revoked}");
    assert_eq!(
        revoked["changed"],
        json!([{"key": "debuggers.dut.permissions.allow_mass_erase", "previous_value": true, "value": false}]),
        "the reference sees the value our grant wrote"
    );
    let (again, code) = run_program(&world, ours, &["grant", "debuggers.dut.allow_mass_erase"]);
    assert_eq!(code, Some(0), "we read the reference's write: {again}");
    assert_eq!(again["changed"], granted["changed"]);
    for key in [
        "command",
        "changed",
        "unchanged",
        "provenance",
        "restart_required",
        "next_steps",
        "config_status",
    ] {
        assert!(
            again.get(key).is_some() && revoked.get(key).is_some(),
            "{key}"
        );
    }
    assert_eq!(again["provenance"]["last_modified_via"], json!("cli:grant"));
    assert_eq!(
        revoked["provenance"]["last_modified_by"],
        again["provenance"]["last_modified_by"]
    );

    let (ours_bad, _) = run_program(&world, ours, &["grant", "dut.allow_flash"]);
    let (theirs_bad, _) = run_program(&world, &reference, &["grant", "dut.allow_flash"]);
    assert_eq!(ours_bad["error_type"], theirs_bad["error_type"]);
    // Ours lists the grants only we have (`allow_rtt_write`, docs/COMPATIBILITY.md) besides the
    // reference's, in the same order.
    let ours_keys: Vec<&Value> = ours_bad["permission_keys_here"]
        .as_array()
        .expect("keys")
        .iter()
        .filter(|k| !k.as_str().is_some_and(|k| k.ends_with(".allow_rtt_write")))
        .collect();
    let theirs_keys: Vec<&Value> = theirs_bad["permission_keys_here"]
        .as_array()
        .expect("keys")
        .iter()
        .collect();
    assert_eq!(ours_keys, theirs_keys);
    assert!(
        ours_bad["permission_keys_here"]
            .as_array()
            .is_some_and(|k| k
                .iter()
                .any(|k| k == "debuggers.dut.permissions.allow_rtt_write")),
        "{ours_bad}"
    );
    assert_eq!(
        ours_bad["rejected_keys"][0]["key"],
        theirs_bad["rejected_keys"][0]["key"]
    );
}

/// The catalogue: "Bad YAML answers config_invalid"; the server still enforces what it loaded.
#[tokio::test]
async fn describe_of_a_file_that_no_longer_parses_is_config_invalid_and_lists_no_key() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let good = config_text(&world);
    std::fs::write(world.config_path(), "version: 3\n  broken: [\n").expect("break the file");
    let doc = call(&client, "project_config_describe", json!({})).await;
    assert_eq!(doc["error_type"], "config_invalid", "{doc}");
    assert!(doc["writable_keys"].is_null(), "{doc}");
    assert!(doc["permissions_in_force"].is_object(), "{doc}");
    std::fs::write(world.config_path(), good).expect("mend the file");
    let doc = call(&client, "project_config_describe", json!({})).await;
    assert_eq!(doc["ok"], true, "{doc}");
}

/// After a write and before a reload, the file's value is `current_value` and the one in force is
/// shown beside it.
#[tokio::test]
async fn describe_shows_the_files_value_and_the_value_in_force_when_they_differ() {
    let world = World::provisioned();
    let client = connect(&world).await;
    let doc = set(&client, json!([{"key": "target.name", "value": "bench-7"}])).await;
    assert_eq!(doc["ok"], true, "{doc}");
    let describe = call(&client, "project_config_describe", json!({})).await;
    let entry = describe["writable_keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["key"] == "target.name"))
        .expect("target.name is listed")
        .clone();
    assert_eq!(entry["current_value"], "bench-7", "{entry}");
    assert_eq!(entry["value_in_force"], "example-target", "{entry}");
    let unchanged = describe["writable_keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["key"] == "target.controller"))
        .expect("target.controller is listed");
    assert!(unchanged.get("value_in_force").is_none(), "{unchanged}");
}

/// The tool's schema text: a value that does not have its key's shape is an invalid argument,
/// before any grant is looked at; and a supply's permission takes `false` like every other one.
#[tokio::test]
async fn a_value_of_the_wrong_shape_is_an_invalid_argument_and_a_supply_grant_closes() {
    let world = World::provisioned();
    let text = config_text(&world);
    let ports = "com_ports:\n  uart:\n    device: \"/dev/ttyACM9\"\n    resource_id: t-uart\n    \
                 permissions:\n      allow_write: true\n  psu:\n    device: \"/dev/ttyUSB9\"\n    \
                 resource_id: t-psu\n    vid: 0x0416\n    pid: 0x5011\n";
    let supply = "power_supplies:\n  bench:\n    type: rs3005p\n    com_port: psu\n    powers: [dut]\n    \
                  idn_serial: \"SN1\"\n    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n    \
                  permissions: {allow_set: true, allow_output: true}\n";
    let edited = text.replacen("com_ports: {}", ports, 1) + supply;
    std::fs::write(world.config_path(), &edited).expect("the bench description");
    let client = connect(&world).await;
    for (key, value) in [
        ("com_ports.uart.baudrate", json!("fast")),
        ("com_ports.uart.baudrate", json!(0)),
        ("com_ports.uart.permissions.allow_write", json!("false")),
    ] {
        let doc = set(&client, json!([{"key": key, "value": value}])).await;
        assert_eq!(
            doc["error_type"], "invalid_argument",
            "{key}={value}: {doc}"
        );
        assert_eq!(doc["field"], "changes.0.value", "{doc}");
    }
    assert_eq!(config_text(&world), edited, "nothing was written");
    let doc = set(
        &client,
        json!([{"key": "power_supplies.bench.permissions.allow_output", "value": false}]),
    )
    .await;
    assert_eq!(doc["ok"], true, "{doc}");
    assert!(
        config_text(&world).contains("allow_output: false"),
        "the supply's grant is closed in the file"
    );
    let doc = set(
        &client,
        json!([{"key": "power_supplies.bench.permissions.allow_set", "value": true}]),
    )
    .await;
    assert_eq!(doc["error_type"], "permission_widening_denied", "{doc}");
}
