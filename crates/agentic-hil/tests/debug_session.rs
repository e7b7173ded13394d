//! Black-box, end to end: debug sessions through the gate on a real QEMU board that `agentic-hil sim
//! start` started in the test's own HOME, driven by the built binary as an MCP server.

mod support;

use serde_json::{Value, json};
use support::World;
use support::debugging::run_to_the_tick_breakpoint;
use support::processes::{gdbs_under, running_under};
use support::sim_board::{SimBoard, qemu_board, sim_world};
use support::{call, ok};

const GRANTS: &str =
    "      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n";

/// A world with a `qemu` debugger, the given `debug:` section and the committed firmware in `fw/`.
fn world(debug: &str) -> World {
    sim_world(
        &qemu_board(GRANTS),
        debug,
        &[
            "ahil-fw-v1.elf",
            "ahil-fw-v1.hex",
            "ahil-fw-v2.elf",
            "ahil-fw-v1-nodebug.elf",
        ],
    )
}

/// The board running, and a client whose debug session attached to it.
async fn attached(world: &World) -> (SimBoard<'_>, support::Client) {
    let board = SimBoard::start(world);
    let client = support::connect(world).await;
    ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    (board, client)
}

/// SIGKILLs each of `pids`: no cleanup code of theirs runs.
fn kill_all(pids: &[u32]) {
    for pid in pids {
        let status = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "process {pid} is killed");
    }
}

/// The data records of an Intel HEX text as (absolute address, bytes), checksums verified.
fn read_ihex(text: &str) -> Vec<(u64, Vec<u8>)> {
    let mut base = 0u64;
    let mut records = Vec::new();
    for line in text.lines() {
        let hex = line
            .strip_prefix(':')
            .expect("a record starts with a colon");
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digits"))
            .collect();
        assert_eq!(
            bytes.iter().fold(0u8, |s, b| s.wrapping_add(*b)),
            0,
            "checksum of {line}"
        );
        let data = &bytes[4..bytes.len() - 1];
        let offset = u64::from(bytes[1]) << 8 | u64::from(bytes[2]);
        match bytes[3] {
            0 => records.push((base + offset, data.to_vec())),
            4 => base = (u64::from(data[0]) << 8 | u64::from(data[1])) << 16,
            _ => {}
        }
    }
    records
}

/// The catalogue's "No session" sentences: stop, status and the breakpoint list answer ok with
/// `active: false`; every tool that needs a session's gdb answers `session_not_active`.
#[tokio::test]
async fn without_a_session_each_debug_tool_answers_as_its_catalogue_sentence_says() {
    let world = world("debug:\n  allowed_symbols: [on_tick, counter]\n");
    let client = support::connect(&world).await;
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    assert_eq!(doc["status"], "stopped", "{doc}");
    let doc = ok(&client, "debug_list_breakpoints", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    assert_eq!(doc["breakpoints"], json!([]), "{doc}");
    for (tool, args) in [
        ("debug_set_breakpoint", json!({"location": "on_tick"})),
        ("debug_clear_breakpoints", json!({})),
        ("debug_continue", json!({})),
        ("debug_halt", json!({})),
        ("debug_get_stop_reason", json!({})),
    ] {
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{tool} without a session: {doc}");
        assert_eq!(doc["error_type"], "session_not_active", "{tool}: {doc}");
    }
}

#[tokio::test]
async fn a_session_breaks_on_on_tick_reads_and_dumps_growing_globals_and_stops_with_the_core_halted()
 {
    let world = world("debug:\n  allowed_symbols: [on_tick, counter, g_u8, g_i16, g_u32, magic]\n");
    let board = SimBoard::start(&world);
    let client = support::connect(&world).await;

    let (doc, is_error) = call(&client, "debug_get_stop_reason", json!({})).await;
    assert!(is_error, "no session yet: {doc}");
    assert_eq!(doc["error_type"], "session_not_active", "{doc}");

    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    assert_eq!(doc["session"]["status"], "halted", "{doc}");
    assert_ne!(board.vm_status(), json!("running"), "started halted");
    let (doc, is_error) = call(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    assert!(
        is_error && doc["error_type"] == "session_already_active",
        "{doc}"
    );

    for (tool, args) in [
        ("flash_firmware", json!({"image_path": "fw/ahil-fw-v1.hex"})),
        ("reset_target", json!({"mode": "halt"})),
    ] {
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{tool} during a session: {doc}");
        assert_eq!(doc["error_type"], "resource_busy", "{tool}: {doc}");
        assert_eq!(doc["target_contacted"], false, "{tool}: {doc}");
    }

    let doc = ok(
        &client,
        "debug_set_breakpoint",
        json!({"location": "on_tick"}),
    )
    .await;
    assert_eq!(doc["breakpoint"]["id"], 1, "{doc}");
    let listed = ok(&client, "debug_list_breakpoints", json!({})).await;
    assert_eq!(
        listed["breakpoints"][0]["gdb_location"], "on_tick",
        "{listed}"
    );

    let mut counters = Vec::new();
    for _ in 0..2 {
        let doc = ok(&client, "debug_continue", json!({"timeout_s": 5})).await;
        assert_eq!(doc["stop_reason"], "breakpoint_hit", "{doc}");
        assert_eq!(doc["stop"]["frame"]["function"], "on_tick", "{doc}");
        let value = ok(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
        assert_eq!(value["size_bytes"], 4, "{value}");
        counters.push(
            value["value_unsigned"]
                .as_u64()
                .expect("a 4-byte counter decodes"),
        );
    }
    assert!(counters[1] > counters[0], "the counter grows: {counters:?}");

    let doc = ok(&client, "debug_symbol_value", json!({"symbol": "g_i16"})).await;
    assert_eq!(doc["hex"], "2efb", "memory order: {doc}");
    assert_eq!(doc["value_signed"], -1234, "{doc}");
    assert_eq!(doc["byte_order"], "little", "{doc}");
    let doc = ok(&client, "debug_symbol_value", json!({"symbol": "g_u32"})).await;
    assert_eq!(doc["value_unsigned"], 0xDEAD_BEEF_u64, "{doc}");
    let doc = ok(&client, "debug_symbol_value", json!({"symbol": "g_u8"})).await;
    assert_eq!(doc["value_unsigned"], 0xA5, "{doc}");
    assert_eq!(doc["value_signed"], -91, "{doc}");
    let doc = ok(&client, "debug_symbol_info", json!({"symbol": "magic"})).await;
    assert!(
        doc["address"]
            .as_str()
            .is_some_and(|a| a.starts_with("0x2")),
        "in RAM: {doc}"
    );
    let (doc, is_error) = call(&client, "debug_symbol_value", json!({"symbol": "g_float"})).await;
    assert!(
        is_error && doc["error_type"] == "permission_denied",
        "not allowlisted: {doc}"
    );

    let dumped = ok(
        &client,
        "debug_dump_symbol_ihex",
        json!({"symbol": "g_u32", "output_path": "fw/dumps/g_u32.hex"}),
    )
    .await;
    assert_eq!(dumped["output"]["path"], "fw/dumps/g_u32.hex", "{dumped}");
    let text = std::fs::read_to_string(world.workspace.join("fw/dumps/g_u32.hex"))
        .expect("the dump is written");
    let address = dumped["address_value"].as_u64().expect("an address");
    assert_eq!(
        read_ihex(&text),
        vec![(address, vec![0xef, 0xbe, 0xad, 0xde])],
        "{text}"
    );
    let (doc, is_error) = call(
        &client,
        "debug_dump_symbol_ihex",
        json!({"symbol": "g_u32", "output_path": "elsewhere/g_u32.hex"}),
    )
    .await;
    assert!(
        is_error && doc["error_type"] == "output_validation_failed",
        "outside the roots: {doc}"
    );

    let doc = ok(&client, "debug_get_stop_reason", json!({})).await;
    assert_eq!(doc["stop_reason"], "breakpoint_hit", "{doc}");
    let doc = ok(&client, "debug_clear_breakpoints", json!({})).await;
    assert_eq!(doc["cleared"], 1, "{doc}");

    // Without a breakpoint the core runs until the wait ends, then it is halted again.
    let (doc, is_error) = call(&client, "debug_continue", json!({"timeout_s": 0.5})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "timeout", "{doc}");
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert_eq!(doc["stop_reason"], "halted", "{doc}");
    let doc = ok(&client, "debug_halt", json!({})).await;
    assert_eq!(doc["halt_confirmed"], true, "{doc}");

    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["safe_state_confirmed"], true, "{doc}");
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert_ne!(
        board.vm_status(),
        json!("running"),
        "stop left the core halted"
    );
    assert!(
        gdbs_under(&world.home).is_empty(),
        "gdb ended with the session"
    );
    let log_path = doc["log_path"]
        .as_str()
        .expect("the stop names the session log");
    let log = std::fs::read_to_string(world.workspace.join(log_path))
        .expect("the session log is in the workspace");
    for event in [
        "\"start\"",
        "\"debug_continue\"",
        "\"debug_symbol_value\"",
        "\"stop\"",
        "-target-disconnect",
    ] {
        assert!(log.contains(event), "{event} in the session log: {log}");
    }
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");

    // The probe is free again.
    ok(&client, "reset_target", json!({"mode": "halt"})).await;
    client.cancel().await.expect("client closes");
}

/// A call that opens the probe beside the session's own connection is refused before contact, at
/// once: `probe_target` used to wait out its deadline on the emulated board's one gdb stub, answer
/// `timeout` with the state unknown, and try a recovery reset on the core the session holds.
#[tokio::test]
async fn probing_flashing_or_resetting_during_a_session_is_refused_at_once_and_the_session_goes_on()
{
    let world = world("debug:\n  allowed_symbols: [on_tick, counter]\n");
    let (_board, client) = attached(&world).await;
    for (tool, args) in [
        ("probe_target", json!({})),
        ("flash_firmware", json!({"image_path": "fw/ahil-fw-v1.elf"})),
        ("reset_target", json!({})),
    ] {
        let asked = std::time::Instant::now();
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{tool} during a session: {doc}");
        assert_eq!(doc["error_type"], "resource_busy", "{tool}: {doc}");
        assert_eq!(doc["held_by"], "debug_session", "{tool}: {doc}");
        assert_eq!(doc["target_contacted"], false, "{tool}: {doc}");
        assert_ne!(doc["cleanup_required"], true, "{tool}: {doc}");
        assert!(doc.get("recovery").is_none(), "{tool}: {doc}");
        assert!(
            asked.elapsed() < std::time::Duration::from_secs(3),
            "{tool} answered after {:?}",
            asked.elapsed()
        );
    }
    let status = ok(&client, "hardware_lease_status", json!({})).await;
    assert_ne!(status["incident_stands"], true, "{status}");
    run_to_the_tick_breakpoint(&client).await;
    ok(&client, "debug_stop_session", json!({})).await;
    ok(&client, "probe_target", json!({})).await;
}

#[tokio::test]
async fn an_empty_allowlist_denies_every_symbol_and_breakpoint_before_the_board_is_reached() {
    let world = world("");
    let client = support::connect(&world).await;
    for (tool, args) in [
        ("debug_symbol_value", json!({"symbol": "counter"})),
        ("debug_symbol_info", json!({"symbol": "counter"})),
        (
            "debug_set_breakpoint",
            json!({"location": {"function": "on_tick"}}),
        ),
        (
            "debug_set_breakpoint",
            json!({"location": {"file": "fw.c", "line": 9}}),
        ),
    ] {
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{tool}: {doc}");
        assert_eq!(doc["error_type"], "permission_denied", "{tool}: {doc}");
        assert_eq!(doc["target_contacted"], false, "{tool}: {doc}");
    }
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_server_that_exits_mid_session_leaves_no_gdb_and_the_core_halted() {
    let world = world("debug:\n  allow_all_symbols: true\n");
    let board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1.elf", "mode": "reset_halt"}),
    )
    .await;
    assert!(!gdbs_under(&world.home).is_empty(), "the session runs gdb");
    client.cancel().await.expect("client closes");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gdbs_under(&world.home).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        gdbs_under(&world.home).is_empty(),
        "gdb ended with the server"
    );
    assert_ne!(
        board.vm_status(),
        json!("running"),
        "the server's exit left the core halted"
    );
    // The session was closed in order at the end of stdin, so its lease ended cleanly.
    let mut status = Value::Null;
    while std::time::Instant::now() < deadline {
        status = world.run_json(&["lease-status"]).0;
        if status["record"]["state"] == json!("released") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(status["record"]["state"], json!("released"), "{status}");
    assert_eq!(status["blocked"], json!(false), "{status}");
}

#[tokio::test]
async fn a_gdb_killed_mid_session_leaves_the_core_halted_and_the_stop_proves_it() {
    let world = world("debug:\n  allow_all_symbols: true\n");
    let (board, client) = attached(&world).await;
    let gdbs = gdbs_under(&world.home);
    assert!(!gdbs.is_empty(), "the session runs gdb");
    kill_all(&gdbs);
    let (doc, is_error) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert!(is_error, "a dead gdb answers no value: {doc}");
    assert_ne!(
        board.vm_status(),
        json!("running"),
        "the stub keeps the core halted"
    );
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert_eq!(doc["halt_confirmed_by"], "qmp", "{doc}");
    assert_eq!(doc["gdb_disconnected"], false, "{doc}");
    assert_ne!(board.vm_status(), json!("running"));
    ok(&client, "reset_target", json!({"mode": "halt"})).await;
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_load_session_writes_the_new_elf_and_starts_halted_at_reset() {
    let world = world("debug:\n  allow_all_symbols: true\n");
    let board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    // The version is read from the board, not from the ELF gdb was given.
    ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v2.elf"}),
    )
    .await;
    let doc = ok(
        &client,
        "debug_symbol_value",
        json!({"symbol": "fw_version"}),
    )
    .await;
    assert_eq!(doc["hex"], "312e3000", "the board still runs 1.0: {doc}");
    ok(&client, "debug_stop_session", json!({})).await;

    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v2.elf", "mode": "load"}),
    )
    .await;
    assert_eq!(doc["mode"], "load", "{doc}");
    assert_ne!(board.vm_status(), json!("running"), "halted after the load");
    let doc = ok(
        &client,
        "debug_symbol_value",
        json!({"symbol": "fw_version"}),
    )
    .await;
    assert_eq!(doc["hex"], "322e3000", "the board holds version 2.0: {doc}");
    assert!(doc.get("value_unsigned").is_some(), "4 bytes decode: {doc}");
    ok(&client, "debug_stop_session", json!({})).await;
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_core_that_faulted_is_reported_as_an_exception_and_never_resumed() {
    let uart = "    device: \"UART\"\n    resource_id: sim-uart\n    permissions:\n      allow_write: true\n";
    let world = world("debug:\n  allow_all_symbols: true\n");
    let state = world.home.join(".local/state/agentic-hil");
    let config = std::fs::read_to_string(world.config_path()).expect("config reads");
    let uart = uart.replace("UART", &state.join("sim/board/uart").display().to_string());
    std::fs::write(
        world.config_path(),
        format!("{config}com_ports:\n  uart:\n{uart}"),
    )
    .expect("config writes");
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    ok(&client, "com_session_start", json!({"port_id": "uart"})).await;
    ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    ok(
        &client,
        "com_write",
        json!({"port_id": "uart", "text": "fault\r\n"}),
    )
    .await;

    // The handler spins, so the wait ends and the halt lands in it.
    let (doc, is_error) = call(&client, "debug_continue", json!({"timeout_s": 1})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert_eq!(doc["stop_reason"], "exception", "{doc}");
    assert_eq!(doc["stop"]["exception_type"], "hardfault", "{doc}");

    let (doc, is_error) = call(&client, "debug_continue", json!({"timeout_s": 1})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "target_exception", "{doc}");
    assert_eq!(
        doc["summary"], "The target stopped abnormally: exception.",
        "{doc}"
    );
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    ok(&client, "com_session_stop", json!({"port_id": "uart"})).await;
    client.cancel().await.expect("client closes");
}

/// The stop's last refusal (the emulator no longer confirms the halt once gdb is gone) keeps the
/// session for cleanup and says so as the two earlier refusals do.
#[tokio::test]
async fn a_stop_whose_halt_the_emulator_no_longer_confirms_keeps_the_session_and_requires_cleanup()
{
    let world = world("debug:\n  allow_all_symbols: true\n");
    let (_board, client) = attached(&world).await;
    let emulators = running_under(&world.home, "qemu-system-arm");
    assert!(!emulators.is_empty(), "the board runs QEMU");
    kill_all(&emulators);
    let (doc, is_error) = call(&client, "debug_stop_session", json!({"timeout_s": 1})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "halt_not_confirmed", "{doc}");
    assert_eq!(doc["status"], "cleanup_required", "{doc}");
    assert_eq!(doc["cleanup_required"], true, "{doc}");
    assert_eq!(doc["hardware_state"], "unknown", "{doc}");
    client.cancel().await.expect("client closes");
}

#[test]
fn a_server_killed_mid_session_leaves_no_gdb_and_the_core_halted() {
    use std::io::{BufRead, BufReader, Write};
    let world = world("debug:\n  allow_all_symbols: true\n");
    let board = SimBoard::start(&world);
    let mut server = support::raw::spawn_stdio(&mut world.command());
    let mut stdin = server.stdin.take().expect("stdin");
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"debug_start_session","arguments":{"image_path":"fw/ahil-fw-v1.elf","mode":"reset_halt"}}}"#,
    ] {
        writeln!(stdin, "{line}").expect("send");
    }
    stdin.flush().expect("flush");
    let mut reader = BufReader::new(server.stdout.take().expect("stdout"));
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).expect("read") > 0,
            "server answered"
        );
        let msg: Value = serde_json::from_str(&line).expect("JSON-RPC");
        if msg["id"] == 2 {
            assert_eq!(msg["result"]["isError"], false, "{msg}");
            break;
        }
    }
    assert!(!gdbs_under(&world.home).is_empty(), "the session runs gdb");
    // SIGKILL: no cleanup code of the server runs. gdb must not get to quit (quitting detaches,
    // which would resume the core); its keeper kills it instead.
    server.kill().expect("SIGKILL the server");
    server.wait().expect("reaped");
    drop(stdin);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gdbs_under(&world.home).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        gdbs_under(&world.home).is_empty(),
        "gdb ended with the server"
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_ne!(
        board.vm_status(),
        json!("running"),
        "the killed server left the core halted"
    );
}

#[tokio::test]
async fn an_image_without_debug_info_reads_symbols_from_its_symbol_table() {
    let world = world("debug:\n  allow_all_symbols: true\n");
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v1-nodebug.elf", "mode": "attach"}),
    )
    .await;
    let value = ok(&client, "debug_symbol_value", json!({"symbol": "g_u32"})).await;
    assert_eq!(value["resolved_from"], json!("elf_symbol_table"), "{value}");
    assert_eq!(value["size_bytes"], json!(4), "{value}");
    assert_eq!(value["value_unsigned"], json!(0xDEAD_BEEF_u32), "{value}");
    let signed = ok(&client, "debug_symbol_value", json!({"symbol": "g_i16"})).await;
    assert_eq!(signed["value_signed"], json!(-1234), "{signed}");
    let (missing, is_error) = call(
        &client,
        "debug_symbol_value",
        json!({"symbol": "no_such_thing"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(
        missing["symbol_table_lookup"],
        json!("not_found"),
        "{missing}"
    );
    ok(&client, "debug_stop_session", json!({})).await;
    client.cancel().await.expect("client closes");
}
