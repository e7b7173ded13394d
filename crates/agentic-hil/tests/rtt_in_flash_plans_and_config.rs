//! Black-box, end to end on the emulated board (`agentic-hil sim start` in the test's own HOME),
//! through the built binary as an MCP server: RTT beyond its session tools. A flash's `capture` on
//! an RTT channel, a test plan's `rtt_expect` step, and `project_config_set` on the `rtt.*` keys
//! and `allow_rtt_write`. The firmware (firmware/src/fw.c) writes "rtt boot <version> <board>" to
//! up channel 0 at every reset and echoes its down channel 0.

mod support;

use serde_json::{Value, json};
use support::World;
use support::sim_board::{SimBoard, sim_world};
use support::{call, ok, refused};

const RTT: &str = "    rtt:\n      scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
                   \x20       - {name: terminal, direction: up, index: 0}\n\
                   \x20       - {name: terminal_in, direction: down, index: 0}\n";

const BOOT_V2: &str = "rtt boot ahil-fw 2.0 netduinoplus2\n";

/// A world with a `qemu` debugger `board` (its `rtt` section `rtt`, then `grants` beside flash and
/// reset), both firmware versions in `fw/`.
fn world(rtt: &str, grants: &str) -> World {
    sim_world(
        &format!(
            "  board:\n    type: qemu\n    timeout_s: 10\n{rtt}    permissions:\n\
             \x20     allow_flash: true\n      allow_reset: true\n{grants}"
        ),
        "permissions:\n  allow_config_permissions_write: true\n  allow_config_description_write: true\n",
        &["ahil-fw-v1.elf", "ahil-fw-v2.elf"],
    )
}

fn flash_capturing(capture: &Value) -> Value {
    json!({"image_path": "fw/ahil-fw-v2.elf", "reset_after_flash": true, "capture": capture})
}

#[tokio::test]
async fn a_flash_with_an_rtt_capture_returns_the_new_firmwares_boot_line() {
    let world = world(RTT, "");
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;

    let doc = ok(
        &client,
        "flash_firmware",
        flash_capturing(
            &json!({"rtt_channel": "terminal", "until": BOOT_V2, "wait_timeout_s": 10}),
        ),
    )
    .await;
    let capture = &doc["capture"];
    assert_eq!(capture["until_matched"], true, "{doc}");
    assert_eq!(capture["rtt_channel"], "terminal", "{doc}");
    // The block is found again after the reset: the first bytes are the new firmware's boot line,
    // not the old firmware's ticks.
    assert_eq!(capture["text"], BOOT_V2, "{doc}");
    assert_eq!(capture["control_block_address"], "0x20000070", "{doc}");
    support::assert_capture_log(&world.workspace, capture);

    // Without until: everything the window holds, the boot line first, then ticks.
    let doc = ok(
        &client,
        "flash_firmware",
        flash_capturing(&json!({"rtt_channel": "terminal", "wait_timeout_s": 0.5})),
    )
    .await;
    let text = doc["capture"]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with(BOOT_V2), "{doc}");
    assert!(doc["capture"].get("until_matched").is_none(), "{doc}");

    // An RTT session on the debugger reads the same ring: the capture is refused, nothing flashed.
    ok(&client, "rtt_session_start", json!({})).await;
    let busy = refused(
        &client,
        "flash_firmware",
        flash_capturing(&json!({"rtt_channel": "terminal"})),
        "resource_busy",
    )
    .await;
    assert_eq!(busy["target_contacted"], false, "{busy}");
    ok(&client, "rtt_session_stop", json!({})).await;
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_rtt_capture_is_refused_before_the_flash_without_an_rtt_section_or_an_up_channel_of_it()
{
    // No board runs: a refusal that reached it would fail otherwise.
    let bare = world("", "");
    let client = support::connect(&bare).await;
    let doc = refused(
        &client,
        "flash_firmware",
        flash_capturing(&json!({"rtt_channel": "terminal"})),
        "rtt_not_configured",
    )
    .await;
    assert_eq!(doc["target_contacted"], false, "{doc}");
    client.cancel().await.expect("client closes");

    let configured = world(RTT, "");
    let client = support::connect(&configured).await;
    for channel in ["console", "terminal_in"] {
        let doc = refused(
            &client,
            "flash_firmware",
            flash_capturing(&json!({"rtt_channel": channel})),
            "rtt_not_configured",
        )
        .await;
        assert_eq!(doc["configured_channels"], json!(["terminal"]), "{doc}");
        assert_eq!(doc["field"], "capture.rtt_channel", "{doc}");
    }
    // Exactly one of port_id and rtt_channel.
    refused(
        &client,
        "flash_firmware",
        flash_capturing(&json!({"rtt_channel": "terminal", "port_id": "uart"})),
        "invalid_argument",
    )
    .await;
    client.cancel().await.expect("client closes");
}

async fn config_set(client: &support::Client, key: &str, value: Value) -> (Value, bool) {
    call(
        client,
        "project_config_set",
        json!({"changes": [{"key": key, "value": value}]}),
    )
    .await
}

#[tokio::test]
async fn config_set_closes_allow_rtt_write_for_the_next_server_and_never_opens_it() {
    const GRANT: &str = "debuggers.board.permissions.allow_rtt_write";
    let world = world(RTT, "      allow_rtt_write: true\n");
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    ok(&client, "rtt_session_start", json!({})).await;
    ok(
        &client,
        "rtt_write",
        json!({"channel": "terminal_in", "text": "x"}),
    )
    .await;
    ok(&client, "rtt_session_stop", json!({})).await;

    // The rtt section's scalars are the bench description; its grant only closes.
    let (doc, is_error) =
        config_set(&client, "debuggers.board.rtt.max_write_bytes", json!(8)).await;
    assert!(!is_error, "{doc}");
    let (doc, is_error) = config_set(&client, GRANT, json!(false)).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["permissions_changed"], json!([GRANT]), "{doc}");
    let (doc, is_error) = config_set(&client, GRANT, json!(true)).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "permission_widening_denied", "{doc}");
    assert_eq!(doc["permission"], GRANT, "{doc}");
    let text = std::fs::read_to_string(world.config_path()).expect("the config");
    assert!(text.contains("allow_rtt_write: false"), "{text}");
    client.cancel().await.expect("client closes");

    // The next server enforces the file: the write is refused, the cap is the new one.
    let client = support::connect(&world).await;
    let doc = ok(&client, "rtt_channels_list", json!({})).await;
    assert_eq!(doc["max_write_bytes"], 8, "{doc}");
    ok(&client, "rtt_session_start", json!({})).await;
    let doc = refused(
        &client,
        "rtt_write",
        json!({"channel": "terminal_in", "text": "x"}),
        "permission_denied",
    )
    .await;
    assert_eq!(doc["permission"], GRANT, "{doc}");
    ok(&client, "rtt_session_stop", json!({})).await;
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn describe_lists_the_rtt_keys_only_where_the_file_has_an_rtt_section() {
    let with = world(RTT, "");
    let client = support::connect(&with).await;
    let doc = ok(&client, "project_config_describe", json!({})).await;
    let keys = doc["writable_keys"].to_string();
    for key in [
        "debuggers.board.rtt.control_block",
        "debuggers.board.permissions.allow_rtt_write",
    ] {
        assert!(keys.contains(key), "{key}: {doc}");
    }
    client.cancel().await.expect("client closes");
    let without = world("", "");
    let client = support::connect(&without).await;
    let doc = ok(&client, "project_config_describe", json!({})).await;
    assert!(!doc["writable_keys"].to_string().contains("rtt"), "{doc}");
    client.cancel().await.expect("client closes");
}

const RTT_PLAN: &str = r#"version: 5
name: rtt-plan
steps:
  - {action: flash, image_path: fw/ahil-fw-v2.elf, reset_after_flash: true}
  - {device: board, action: rtt_expect, channel: terminal, text: "rtt boot ahil-fw 2.0 netduinoplus2", timeout_s: 10}
  - {device: board, action: rtt_expect, channel: terminal, pattern: "rtt tick [0-9]+", timeout_s: 5}
  - {device: board, action: reset, mode: run}
  - {device: board, action: rtt_expect, channel: terminal, text: "rtt boot ahil-fw 2.0", timeout_s: 10}
"#;

#[tokio::test]
async fn a_test_plan_with_rtt_steps_passes_on_the_emulated_board_and_closes_its_session() {
    let world = world(RTT, "");
    let _board = SimBoard::start(&world);
    let plan = world.write_plan("rtt.yaml", RTT_PLAN);
    let client = support::connect(&world).await;
    let (doc, is_error) = call(
        &client,
        "test_reactor_run",
        json!({"test_config_path": plan}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 5, "{doc}");
    for step in steps {
        assert_eq!(step["result"]["ok"], true, "{step}");
    }
    let expect = &steps[1];
    assert_eq!(expect["action"], "rtt_expect", "{expect}");
    assert_eq!(expect["route"], "board", "{expect}");
    assert_eq!(expect["result"]["channel"], "terminal", "{expect}");
    assert_eq!(expect["result"]["matched"], true, "{expect}");
    // The session the run opened is stopped at its end, and the next agent can flash.
    assert_eq!(doc["cleanup"][0]["action"], "rtt_stop", "{doc}");
    let doc = ok(&client, "rtt_channels_list", json!({})).await;
    assert_eq!(doc["session_active"], false, "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_plan_whose_rtt_step_names_an_unknown_channel_or_debugger_is_refused_before_any_step() {
    let world = world(RTT, "");
    let client = support::connect(&world).await;
    // No board runs: a plan that reached the flash would fail with another error.
    for (step, error_type, field) in [
        (
            "{device: board, action: rtt_expect, channel: nope, text: x, timeout_s: 1}",
            "rtt_not_configured",
            "steps[1].channel",
        ),
        (
            "{device: board, action: rtt_expect, channel: terminal_in, text: x, timeout_s: 1}",
            "rtt_not_configured",
            "steps[1].channel",
        ),
        (
            "{device: other, action: rtt_expect, channel: terminal, text: x, timeout_s: 1}",
            "unknown_device",
            "steps[1].device",
        ),
    ] {
        let plan = world.write_plan(
            "bad.yaml",
            &format!(
                "version: 5\nsteps:\n - {{action: flash, image_path: fw/ahil-fw-v2.elf}}\n - {step}\n"
            ),
        );
        let (doc, is_error) = call(
            &client,
            "test_reactor_run",
            json!({"test_config_path": plan}),
        )
        .await;
        assert!(is_error, "{doc}");
        assert_eq!(doc["error_type"], error_type, "{step}: {doc}");
        assert_eq!(doc["validation_error"]["field"], field, "{step}: {doc}");
        assert_eq!(doc["steps"], json!([]), "{step}: nothing ran: {doc}");
    }
    client.cancel().await.expect("client closes");
}

#[test]
fn a_flash_cancelled_while_its_capture_waits_ends_without_waiting_the_capture_out() {
    let world = world(RTT, "");
    let _board = SimBoard::start(&world);
    let mut server = support::raw::Mcp::ours(&world);
    let capture =
        json!({"rtt_channel": "terminal", "until": "never printed", "wait_timeout_s": 30});
    support::cancel_the_flash_once_its_capture_waits(&mut server, &flash_capturing(&capture));
    let (report, waited) = support::flash_report_after(&world.workspace, std::time::Instant::now());
    // The cancel came after the flash: the image is on the board, only the capture was cut short.
    assert_eq!(report["success_confirmed"], true, "{report}");
    support::assert_the_capture_was_cut_short(&world, &report);
    assert!(
        waited < std::time::Duration::from_secs(5),
        "the flash waited {waited:?} for its capture after the cancel: {report}"
    );
    // The capture let go of the channel: a session opens on it and reads the ticks at once.
    let asked = std::time::Instant::now();
    let started = server.envelope("rtt_session_start", &json!({}));
    assert_eq!(started["ok"], true, "{started}");
    let read = server.envelope(
        "rtt_read",
        &json!({"channel": "terminal", "until": "rtt tick", "wait_timeout_s": 5}),
    );
    assert_eq!(read["until_matched"], true, "{read}");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
}
