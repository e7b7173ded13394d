//! Black-box, end to end: RTT sessions through the gate on a real QEMU board that `agentic-hil sim
//! start` started in the test's own HOME, driven by the built binary as an MCP server. The firmware
//! (firmware/src/fw.c) writes a boot line and a tick line per 200 ms to up channel 0 and echoes its
//! down channel 0; its defmt image (firmware/src/defmt.c) also writes defmt frames to up channel 1.

mod support;

use serde_json::{Value, json};
use support::World;
use support::sim_board::{SimBoard, sim_world};
use support::{call, ok};

const RTT: &str = "    rtt:\n      scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
                   \x20       - {name: terminal, direction: up, index: 0}\n\
                   \x20       - {name: terminal_in, direction: down, index: 0}\n";

/// A world whose configuration names `debuggers` (the YAML under the key), with the committed
/// firmware in `fw/`.
fn configured(debuggers: &str) -> World {
    sim_world(debuggers, "", &["ahil-fw-v1.elf", "ahil-fw-defmt.elf"])
}

/// A world with a `qemu` debugger named `board`, its `rtt:` section and extra grants given.
fn world(rtt: &str, grants: &str) -> World {
    configured(&format!(
        "  board:\n    type: qemu\n    timeout_s: 10\n{rtt}    permissions:\n\
         \x20     allow_flash: true\n      allow_reset: true\n{grants}"
    ))
}

fn read_until(text: &str) -> Value {
    json!({"channel": "terminal", "until": text, "wait_timeout_s": 10})
}

/// The firmware's RTT boot line, read on the terminal channel.
async fn read_boot_line(client: &support::Client) -> Value {
    ok(
        client,
        "rtt_read",
        read_until("rtt boot ahil-fw 1.0 netduinoplus2\n"),
    )
    .await
}

/// The `_meta` of an `rtt_read` answer (outside the structured content `call` gives).
async fn read_meta(client: &support::Client, args: Value) -> Value {
    let mut request = rmcp::model::CallToolRequestParams::new("rtt_read".to_owned());
    if let Value::Object(map) = args {
        request = request.with_arguments(map);
    }
    let result = client.call_tool(request).await.expect("tools/call answers");
    let whole = serde_json::to_value(&result).expect("the result serializes");
    whole["_meta"].clone()
}

async fn refused(client: &support::Client, tool: &str, args: Value, error_type: &str) -> Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool}: {doc}");
    assert_eq!(doc["error_type"], error_type, "{tool}: {doc}");
    doc
}

#[tokio::test]
async fn an_rtt_session_reads_the_boot_and_tick_lines_echoes_a_write_and_holds_the_board_meanwhile()
{
    let world = world(RTT, "      allow_rtt_write: true\n");
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    let second = support::connect(&world).await;

    let doc = ok(&client, "rtt_channels_list", json!({})).await;
    assert_eq!(doc["channels"][0]["name"], "terminal", "{doc}");
    assert_eq!(doc["session_active"], false, "{doc}");

    let doc = ok(&client, "rtt_session_start", json!({})).await;
    assert_eq!(doc["already_active"], false, "{doc}");
    assert_eq!(
        doc["session"]["control_block_address"], "0x20000070",
        "the scan finds the ELF's _SEGGER_RTT: {doc}"
    );

    // The boot line was written before the session began; it is kept for the first read.
    let doc = read_boot_line(&client).await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    assert_eq!(doc["channel"], "terminal", "{doc}");
    // What the firmware wrote is marked as device output, never instructions.
    let meta = read_meta(&client, read_until("rtt tick 1\n")).await;
    let untrusted = &meta["agentic_hil/untrusted_content"];
    assert_eq!(untrusted["source"], "device", "{meta}");
    assert_eq!(untrusted["rtt_channel"], "terminal", "{meta}");
    let doc = ok(&client, "rtt_read", read_until("rtt tick 3\n")).await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    assert!(
        doc["data"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("rtt tick 2\n")),
        "the ticks come in order, each once: {doc}"
    );

    // The session holds the debugger's lock: another agent cannot flash the board under it.
    let busy = refused(
        &second,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
        "device_busy",
    )
    .await;
    assert_eq!(busy["target_contacted"], false, "{busy}");

    let doc = ok(
        &client,
        "rtt_write",
        json!({"channel": "terminal_in", "text": "hello rtt"}),
    )
    .await;
    assert_eq!(doc["bytes_written"], 9, "{doc}");
    let doc = ok(&client, "rtt_read", read_until("hello rtt")).await;
    assert_eq!(doc["until_matched"], true, "the firmware echoes it: {doc}");
    // A write is capped by the rtt section's max_write_bytes (256 by default), as com_write is.
    let doc = refused(
        &client,
        "rtt_write",
        json!({"channel": "terminal_in", "text": "x".repeat(257)}),
        "invalid_argument",
    )
    .await;
    assert_eq!(doc["max_write_bytes"], 256, "{doc}");
    let doc = ok(&client, "rtt_read", json!({"channel": "terminal"})).await;
    assert!(
        !doc["data"]["text"]
            .as_str()
            .is_some_and(|t| t.contains('x')),
        "nothing of the refused write arrived: {doc}"
    );

    // A reset by the session's own agent: the firmware rebuilds its block and the session reads on.
    let doc = ok(&client, "reset_target", json!({"mode": "run"})).await;
    assert_eq!(doc["ok"], true, "{doc}");
    let doc = read_boot_line(&client).await;
    assert_eq!(
        doc["until_matched"], true,
        "the boot line after the reset: {doc}"
    );
    let doc = ok(&client, "rtt_read", read_until("rtt tick 1\n")).await;
    assert_eq!(doc["until_matched"], true, "{doc}");

    let doc = ok(&client, "rtt_session_stop", json!({})).await;
    assert_eq!(doc["was_active"], true, "{doc}");
    refused(
        &client,
        "rtt_read",
        json!({"channel": "terminal"}),
        "session_not_active",
    )
    .await;
    // The lock is given back with the session.
    let doc = ok(
        &second,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf"}),
    )
    .await;
    assert_eq!(doc["ok"], true, "{doc}");
    client.cancel().await.expect("client closes");
    second.cancel().await.expect("client closes");
}

#[tokio::test]
async fn rtt_calls_are_refused_without_an_rtt_section_on_an_unknown_channel_and_without_the_grant()
{
    let bare = world("", "");
    let client = support::connect(&bare).await;
    for tool in ["rtt_channels_list", "rtt_session_start"] {
        let doc = refused(&client, tool, json!({}), "rtt_not_configured").await;
        assert_eq!(doc["target_contacted"], false, "{doc}");
    }
    client.cancel().await.expect("client closes");

    let ungranted = world(RTT, "");
    let client = support::connect(&ungranted).await;
    let doc = refused(
        &client,
        "rtt_read",
        json!({"channel": "console"}),
        "rtt_not_configured",
    )
    .await;
    assert_eq!(doc["configured_channels"], json!(["terminal"]), "{doc}");
    // A down channel is written, never read.
    refused(
        &client,
        "rtt_read",
        json!({"channel": "terminal_in"}),
        "rtt_not_configured",
    )
    .await;
    let doc = refused(
        &client,
        "rtt_write",
        json!({"channel": "terminal_in", "text": "x"}),
        "permission_denied",
    )
    .await;
    assert_eq!(
        doc["permission"], "debuggers.board.permissions.allow_rtt_write",
        "{doc}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_backend_without_rtt_answers_not_supported_before_touching_anything() {
    let world = configured(&format!(
        "  dut:\n    type: pyocd\n    executable: /bin/false\n{RTT}"
    ));
    let client = support::connect(&world).await;
    let doc = refused(&client, "rtt_session_start", json!({}), "not_supported").await;
    assert_eq!(doc["target_contacted"], false, "{doc}");
    assert_eq!(doc["backend"], "pyocd", "{doc}");
    client.cancel().await.expect("client closes");
}

/// The text channel, and the defmt image's up channel 1 as `format: defmt`.
const RTT_DEFMT: &str = "    rtt:\n      scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
                         \x20       - {name: terminal, direction: up, index: 0}\n\
                         \x20       - {name: log, direction: up, index: 1, format: defmt}\n";

fn read_log(until: &str) -> Value {
    json!({"channel": "log", "until": until, "wait_timeout_s": 10})
}

/// Stop the session and start one whose defmt table comes from `image`: its `session.defmt`.
async fn restart_with(client: &support::Client, image: &str) -> Value {
    ok(client, "rtt_session_stop", json!({})).await;
    let doc = ok(client, "rtt_session_start", json!({"image_path": image})).await;
    doc["session"]["defmt"].clone()
}

#[tokio::test]
async fn defmt_frames_from_the_flashed_elf_are_decoded_with_level_timestamp_and_arguments() {
    let world = world(RTT_DEFMT, "");
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    // The flash records the ELF; the session decodes with its .defmt table.
    let doc = ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-defmt.elf", "reset_after_flash": true}),
    )
    .await;
    assert_eq!(doc["ok"], true, "{doc}");
    let doc = ok(&client, "rtt_session_start", json!({})).await;
    let defmt = &doc["session"]["defmt"];
    assert_eq!(defmt["table"], true, "{doc}");
    assert_eq!(defmt["encoding"], "rzcobs", "{doc}");
    assert_eq!(defmt["elf"]["from"], "last_flash", "{doc}");

    let doc = ok(&client, "rtt_read", read_log("boot ahil-fw")).await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    let boot = &doc["frames"][0];
    assert_eq!(boot["decoded"], true, "{doc}");
    assert_eq!(boot["level"], "info", "{doc}");
    assert_eq!(boot["text"], "boot ahil-fw 1.0 netduinoplus2", "{doc}");
    assert!(boot["timestamp"].is_string(), "{doc}");
    assert!(
        doc["data"]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with(" INFO boot ahil-fw 1.0 netduinoplus2\n")),
        "{doc}"
    );
    // A later frame with its argument, and another level.
    let doc = ok(&client, "rtt_read", read_log("tick 2")).await;
    let frames = doc["frames"].as_array().expect("frames");
    let tick = frames.last().expect("the matching frame ends the read");
    assert_eq!(tick["text"], "tick 2", "{doc}");
    assert_eq!(tick["level"], "debug", "{doc}");
    let doc = ok(&client, "rtt_read", read_log("five more ticks")).await;
    let last = doc["frames"].as_array().and_then(|f| f.last()).cloned();
    assert_eq!(
        last,
        Some(
            json!({"decoded": true, "level": "warn", "timestamp": "1.000", "text": "five more ticks, now 5", "location": null})
        ),
        "{doc}"
    );
    // The text channel beside it is as it was.
    let doc = read_boot_line(&client).await;
    assert_eq!(doc["until_matched"], true, "{doc}");

    // An ELF named at the start is used instead; one without a table leaves the frames raw.
    let defmt = restart_with(&client, "fw/ahil-fw-v1.elf").await;
    assert_eq!(defmt["table"], false, "{defmt}");
    let doc = ok(
        &client,
        "rtt_read",
        json!({"channel": "log", "wait_timeout_s": 1}),
    )
    .await;
    assert!(doc.get("frames").is_none(), "{doc}");
    assert_eq!(doc["defmt"]["table"], false, "{doc}");
    assert!(
        doc["data"]["hex"]
            .as_str()
            .is_some_and(|h| h.ends_with("00")),
        "the raw frames, each ended by 0x00: {doc}"
    );
    let defmt = restart_with(&client, "fw/ahil-fw-defmt.elf").await;
    assert_eq!(defmt["elf"]["from"], "image_path", "{defmt}");
    let doc = ok(&client, "rtt_read", read_log("tick")).await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    ok(&client, "rtt_session_stop", json!({})).await;
    client.cancel().await.expect("client closes");
}

/// An `rtt_read` cancelled while it waits, on a defmt channel and on a plain one: each is recorded as
/// `interrupted`, takes nothing, and holds up no later read.
#[test]
fn a_cancelled_defmt_read_takes_no_frame_and_holds_up_no_later_read() {
    let world = world(RTT_DEFMT, "");
    let _board = SimBoard::start(&world);
    let mut server = support::raw::Mcp::ours(&world);
    let flashed = server.envelope(
        "flash_firmware",
        &json!({"image_path": "fw/ahil-fw-defmt.elf", "reset_after_flash": true}),
    );
    assert_eq!(flashed["ok"], true, "{flashed}");
    let started = server.envelope("rtt_session_start", &json!({}));
    assert_eq!(started["session"]["defmt"]["table"], true, "{started}");
    support::cancel_a_read(&mut server, &world, "rtt_read", &read_log("never printed"));
    let asked = std::time::Instant::now();
    // The boot frame came before the cancelled read began waiting: it is still there to take.
    let read = server.envelope("rtt_read", &read_log("boot ahil-fw"));
    assert_eq!(read["until_matched"], true, "{read}");
    assert_eq!(
        read["frames"][0]["text"], "boot ahil-fw 1.0 netduinoplus2",
        "{read}"
    );
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(3),
        "the read waited {:?} behind the cancelled one",
        asked.elapsed()
    );
    // A plain channel's read is given up alike: the boot line it pulled while it waited stays queued.
    let terminal =
        |until: &str| json!({"channel": "terminal", "until": until, "wait_timeout_s": 10});
    support::cancel_a_read(&mut server, &world, "rtt_read", &terminal("never printed"));
    let read = server.envelope("rtt_read", &terminal("rtt boot ahil-fw"));
    assert_eq!(read["until_matched"], true, "{read}");
}
