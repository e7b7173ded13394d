//! Black-box, end to end on the emulated board: how an RTT session lives beside the agent's own
//! flash, reset and debug session (decision 0015, "Beside flash, reset and debug").

mod support;

use serde_json::{Value, json};
use support::World;
use support::debugging::run_to_the_tick_breakpoint;
use support::ok;
use support::sim_board::{SimBoard, sim_world};

fn world() -> World {
    sim_world(
        "  board:\n    type: qemu\n    timeout_s: 10\n\
         \x20   rtt:\n      scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
         \x20       - {name: terminal, direction: up, index: 0}\n\
         \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n",
        "debug:\n  allow_all_symbols: true\n",
        &["ahil-fw-v1.elf", "ahil-fw-v2.elf"],
    )
}

fn read_until(text: &str) -> Value {
    json!({"channel": "terminal", "until": text, "wait_timeout_s": 10})
}

/// Drains what the session has buffered, then reads for `seconds`: the bytes the firmware wrote then.
async fn written_within(client: &support::Client, seconds: f64) -> String {
    ok(
        client,
        "rtt_read",
        json!({"channel": "terminal", "wait_timeout_s": 0}),
    )
    .await;
    let doc = ok(
        client,
        "rtt_read",
        json!({"channel": "terminal", "wait_timeout_s": seconds}),
    )
    .await;
    doc["data"]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn an_rtt_session_follows_its_own_agents_reflash_and_reads_on_beside_its_debug_session() {
    let world = world();
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    ok(&client, "rtt_session_start", json!({})).await;
    let doc = ok(&client, "rtt_read", read_until("rtt tick 1\n")).await;
    assert_eq!(doc["until_matched"], true, "{doc}");

    // The session's own agent flashes another image: the block is found again after the reset.
    ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v2.elf", "reset_after_flash": true}),
    )
    .await;
    let doc = ok(
        &client,
        "rtt_read",
        read_until("rtt boot ahil-fw 2.0 netduinoplus2\n"),
    )
    .await;
    assert_eq!(doc["until_matched"], true, "the new image's boot: {doc}");

    // A debug session beside it: the core halts, so nothing new arrives, and the session stays.
    let doc = ok(
        &client,
        "debug_start_session",
        json!({"image_path": "fw/ahil-fw-v2.elf"}),
    )
    .await;
    assert_eq!(doc["session"]["status"], "halted", "{doc}");
    let halted = written_within(&client, 0.6).await;
    assert_eq!(halted, "", "a halted core writes nothing");
    run_to_the_tick_breakpoint(&client).await;
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["status"], "stopped", "{doc}");
    let status = ok(&client, "rtt_channels_list", json!({})).await;
    assert_eq!(status["session_active"], true, "{status}");

    // Reset to run after the debug session: the RTT session reads the new boot and the ticks.
    ok(&client, "reset_target", json!({"mode": "run"})).await;
    let doc = ok(
        &client,
        "rtt_read",
        read_until("rtt boot ahil-fw 2.0 netduinoplus2\n"),
    )
    .await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    let doc = ok(&client, "rtt_read", read_until("rtt tick 1\n")).await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    let doc = ok(&client, "rtt_session_stop", json!({})).await;
    assert_eq!(doc["was_active"], true, "{doc}");
    client.cancel().await.expect("client closes");
}
