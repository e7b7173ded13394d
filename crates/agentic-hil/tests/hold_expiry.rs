//! Black-box, end to end on the emulated board: holds that end by themselves (`holds:`, issue #29).
//! A run or a COM session left open past the operator's maximum is stopped by the server's own
//! timer, with no call from its agent, so a second server gets the board; the first agent's next
//! result says what was closed and why, once.

mod support;

use serde_json::{Value, json};
use support::sim_board::{
    SimBoard, copy_firmware, initialised, qemu_board, sim_config, state_root,
};
use support::{World, call, ok};

const GRANTS: &str = "      allow_flash: true\n      allow_reset: true\n";

/// A world on the emulated board whose UART is the COM port `uart`, with `holds` (a `holds:`
/// section, or nothing).
fn board_world(holds: &str) -> World {
    let world = initialised();
    let uart = state_root(&world).join("sim/board/uart");
    let rest = format!(
        "com_ports:\n  uart:\n    device: \"{}\"\n    resource_id: sim-uart\n{holds}",
        uart.display()
    );
    let config = sim_config(&world, &qemu_board(GRANTS), &rest);
    std::fs::write(world.config_path(), config).expect("the test config is written");
    copy_firmware(&world, &["ahil-fw-v1.elf", "ahil-fw-v2.elf"]);
    world
}

/// The one notice `doc` carries: a hold closed for `hold_expired`.
fn the_notice(doc: &Value) -> &Value {
    let notices = doc["holds_expired"]
        .as_array()
        .expect("a holds_expired notice");
    assert_eq!(notices.len(), 1, "{doc}");
    let notice = &notices[0];
    assert_eq!(notice["reason"], json!("hold_expired"), "{doc}");
    assert_eq!(notice["closed"], json!(true), "{doc}");
    notice
}

#[tokio::test]
async fn a_run_past_its_maximum_hold_is_stopped_by_the_gate_so_another_server_flashes_and_the_agent_is_told_once()
 {
    let world = board_world("holds:\n  max_run_s: 1\n");
    let _board = SimBoard::start(&world);
    let devices = json!([{"kind": "debugger", "id": "board"}]);
    let first = support::connect(&world).await;
    let started = ok(&first, "bench_run_start", json!({"devices": devices})).await;
    assert_eq!(started["max_hold_s"], json!(1), "{started}");
    assert!(started["hold_expires_at"].is_string(), "{started}");

    // The first agent never calls again: only the gate's own timer can free the board.
    let second = support::connect(&world).await;
    let (taken, is_error) = call(
        &second,
        "bench_run_start",
        json!({"devices": devices, "wait_s": 30}),
    )
    .await;
    assert!(!is_error, "the second server gets the board: {taken}");

    let (doc, is_error) = call(&first, "get_last_report", json!({})).await;
    assert!(!is_error, "{doc}");
    let notice = the_notice(&doc);
    assert_eq!(notice["hold"], json!("run"), "{notice}");
    assert_eq!(notice["closed_with"]["tool"], json!("bench_run_stop"));
    assert_eq!(notice["max_hold_s"], json!(1), "{notice}");
    let report = &doc["report"];
    assert_eq!(report["tool"], json!("bench_run_stop"), "{doc}");
    assert_eq!(report["closed_because"]["reason"], json!("hold_expired"));
    assert_eq!(report["run_was_active"], json!(true), "{report}");

    let flashed = ok(
        &second,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v2.elf"}),
    )
    .await;
    assert_eq!(flashed["verify"], json!(true), "{flashed}");
    ok(&second, "bench_run_stop", json!({})).await;

    let status = ok(&first, "bench_run_status", json!({})).await;
    assert_eq!(status["run_active"], json!(false), "{status}");
    assert!(status.get("holds_expired").is_none(), "told once: {status}");
    second.cancel().await.expect("client closes");
    first.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_com_session_past_its_maximum_hold_is_stopped_by_the_gate_and_its_port_is_free_for_another_server()
 {
    let world = board_world("holds:\n  max_session_s: 1\n");
    let _board = SimBoard::start(&world);
    let first = support::connect(&world).await;
    let started = ok(&first, "com_session_start", json!({"port_id": "uart"})).await;
    assert_eq!(started["max_hold_s"], json!(1), "{started}");

    let second = support::connect(&world).await;
    let (taken, is_error) = call(
        &second,
        "bench_run_start",
        json!({"devices": [{"kind": "uart", "id": "uart"}], "wait_s": 30}),
    )
    .await;
    assert!(!is_error, "the second server gets the port: {taken}");
    ok(&second, "bench_run_stop", json!({})).await;

    let (doc, _) = call(&first, "com_read", json!({"port_id": "uart"})).await;
    let notice = the_notice(&doc);
    assert_eq!(notice["hold"], json!("session"), "{notice}");
    assert_eq!(
        notice["closed_with"],
        json!({"tool": "com_session_stop", "arguments": {"port_id": "uart"}})
    );
    let (doc, _) = call(&first, "com_read", json!({"port_id": "uart"})).await;
    assert!(doc.get("holds_expired").is_none(), "told once: {doc}");
    second.cancel().await.expect("client closes");
    first.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_maximum_hold_is_the_operators_shown_by_describe_and_refused_to_project_config_set() {
    let world = board_world("holds:\n  max_run_s: 600\n");
    let client = support::connect(&world).await;
    let described = ok(&client, "project_config_describe", json!({})).await;
    assert_eq!(
        described["max_holds"],
        json!({"max_run_s": 600, "max_session_s": null, "set_by": "operator"}),
        "{described}"
    );
    let (doc, is_error) = call(
        &client,
        "project_config_set",
        json!({"changes": [{"key": "holds.max_run_s", "value": 999_999}]}),
    )
    .await;
    assert!(is_error, "{doc}");
    client.cancel().await.expect("client closes");

    let text = std::fs::read_to_string(world.config_path()).expect("config");
    std::fs::write(
        world.config_path(),
        text.replace("max_run_s: 600", "max_run_s: 0"),
    )
    .expect("config rewritten");
    let (doc, code) = world.run_json(&["doctor"]);
    assert_ne!(code, Some(0), "{doc}");
    let shown = doc.to_string();
    assert!(
        shown.contains("config_invalid") && shown.contains("holds.max_run_s"),
        "{doc}"
    );
}
