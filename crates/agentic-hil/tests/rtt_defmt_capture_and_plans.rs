//! Black-box, end to end on the emulated board (`agentic-hil sim start` in the test's own HOME),
//! through the built binary as an MCP server: defmt frames beyond `rtt_read`, and `rtt.from_elf`.
//! A flash's `capture` on a `format: defmt` channel, a test plan's `rtt_expect` on one, and the
//! control block found from the flashed ELF's `_SEGGER_RTT`. The defmt image
//! (firmware/src/defmt.c) writes an `info` boot frame, then `debug` ticks and a `warn` every fifth,
//! on up channel 1.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::World;
use support::sim_board::{SimBoard, sim_world};
use support::{call, ok, refused};

const BOOT: &str = "boot ahil-fw 1.0 netduinoplus2";

/// The text channel, and the defmt image's up channel 1 as `format: defmt`.
const RTT_DEFMT: &str = "    rtt:\n      scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
                         \x20       - {name: terminal, direction: up, index: 0}\n\
                         \x20       - {name: log, direction: up, index: 1, format: defmt}\n";

/// The control block from the ELF, not from the configuration.
const RTT_FROM_ELF: &str = "    rtt:\n      from_elf: true\n      channels:\n\
                            \x20       - {name: terminal, direction: up, index: 0}\n";

/// A world with a `qemu` debugger `board` (its `rtt` section `rtt`), the committed images in `fw/`.
fn world(rtt: &str) -> World {
    sim_world(
        &format!(
            "  board:\n    type: qemu\n    timeout_s: 10\n{rtt}    permissions:\n\
             \x20     allow_flash: true\n      allow_reset: true\n"
        ),
        "",
        &["ahil-fw-v1.elf", "ahil-fw-defmt.elf"],
    )
}

/// `fw/<name>`: a copy of `fw/<from>` with each `find` in its bytes replaced by `with` (same
/// length, so the ELF's layout is untouched).
fn patched(world: &World, from: &str, name: &str, find: &[u8], with: &[u8]) -> String {
    assert_eq!(find.len(), with.len());
    let fw = world.workspace.join("fw");
    let mut bytes = std::fs::read(fw.join(from)).expect("the image is there");
    let mut replaced = 0;
    for at in 0..bytes.len().saturating_sub(find.len()) {
        if &bytes[at..at + find.len()] == find {
            bytes[at..at + find.len()].copy_from_slice(with);
            replaced += 1;
        }
    }
    assert!(replaced > 0, "{from} holds {find:?}");
    std::fs::write(Path::new(&fw).join(name), bytes).expect("the patched image is written");
    format!("fw/{name}")
}

/// A `flash_firmware` that succeeds: its structured content and its `_meta`.
async fn flash_with_meta(client: &support::Client, args: Value) -> (Value, Value) {
    let mut request = rmcp::model::CallToolRequestParams::new("flash_firmware".to_owned());
    if let Value::Object(map) = args {
        request = request.with_arguments(map);
    }
    let result = client.call_tool(request).await.expect("tools/call answers");
    let whole = serde_json::to_value(&result).expect("the result serializes");
    assert_ne!(result.is_error, Some(true), "{whole}");
    (whole["structuredContent"].clone(), whole["_meta"].clone())
}

/// A good `flash_firmware` of `image` with `capture`.
async fn flash_capture(client: &support::Client, image: &str, capture: &Value) -> Value {
    ok(client, "flash_firmware", flash_capturing(image, capture)).await
}

fn flash_capturing(image: &str, capture: &Value) -> Value {
    json!({"image_path": image, "reset_after_flash": true, "capture": capture})
}

#[tokio::test]
async fn a_flash_capturing_a_defmt_channel_returns_decoded_frames_and_matches_until_on_their_text()
{
    let world = world(RTT_DEFMT);
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    // The boot line's board name is in the table, not in the frame: only decoded text holds it.
    let (doc, meta) = flash_with_meta(
        &client,
        flash_capturing(
            "fw/ahil-fw-defmt.elf",
            &json!({"rtt_channel": "log", "until": BOOT, "wait_timeout_s": 10}),
        ),
    )
    .await;
    let untrusted = &meta["agentic_hil/untrusted_content"]["fields"];
    assert!(
        untrusted
            .as_array()
            .is_some_and(|f| f.contains(&json!("capture.frames"))),
        "the frames are the firmware's words too: {meta}"
    );
    let capture = &doc["capture"];
    assert_eq!(capture["until_matched"], true, "{doc}");
    assert_eq!(capture["matched"], BOOT, "{doc}");
    assert_eq!(capture["defmt"]["table"], true, "{doc}");
    assert_eq!(capture["defmt"]["elf"]["from"], "flashed", "{doc}");
    assert_eq!(
        capture["defmt"]["elf"]["path"], "fw/ahil-fw-defmt.elf",
        "{doc}"
    );
    let boot = &capture["frames"][0];
    assert_eq!(boot["decoded"], true, "{doc}");
    assert_eq!(boot["level"], "info", "{doc}");
    assert_eq!(boot["text"], BOOT, "{doc}");
    assert!(boot["timestamp"].is_string(), "{doc}");
    assert!(
        capture["text"]
            .as_str()
            .is_some_and(|t| t.ends_with(&format!(" INFO {BOOT}\n"))),
        "the frames as lines: {doc}"
    );
    // The log keeps the frames' raw bytes as received; the answer, their decoding.
    let log_path = capture["log_path"]
        .as_str()
        .expect("the capture names its log");
    assert!(!log_path.starts_with('/'), "{log_path}");
    let log = std::fs::read_to_string(world.workspace.join(log_path)).expect("the capture log");
    assert!(
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|l| l["direction"] == "rx" && l["channel"] == "log" && l["hex"].is_string()),
        "{log}"
    );

    // Without until: every frame the window holds, each a line, the boot frame first.
    let doc = flash_capture(
        &client,
        "fw/ahil-fw-defmt.elf",
        &json!({"rtt_channel": "log", "wait_timeout_s": 0.7}),
    )
    .await;
    let frames = doc["capture"]["frames"].as_array().expect("frames");
    assert_eq!(frames[0]["text"], BOOT, "{doc}");
    assert!(frames.len() >= 2, "a tick came within the window: {doc}");
    assert_eq!(frames[1]["level"], "debug", "{doc}");
    let lines = doc["capture"]["text"].as_str().unwrap_or_default();
    assert_eq!(lines.lines().count(), frames.len(), "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_frame_the_flashed_table_cannot_decode_is_returned_raw_and_marked_never_dropped() {
    let world = world(RTT_DEFMT);
    let _board = SimBoard::start(&world);
    // The tick's table entry gets a tag defmt does not own, so the table has no entry for the
    // tick frames the (unchanged) firmware still sends.
    let image = patched(
        &world,
        "ahil-fw-defmt.elf",
        "ahil-fw-defmt-no-tick.elf",
        b"\"tag\":\"defmt_debug\"",
        b"\"tag\":\"other_debug\"",
    );
    let client = support::connect(&world).await;
    let doc = flash_capture(
        &client,
        &image,
        &json!({"rtt_channel": "log", "until": "five more ticks", "wait_timeout_s": 10}),
    )
    .await;
    let capture = &doc["capture"];
    assert_eq!(
        capture["until_matched"], true,
        "the frames after still decode: {doc}"
    );
    let frames = capture["frames"].as_array().expect("frames");
    // Boot, ticks 1 to 4 undecoded, the warn of tick 5.
    assert_eq!(frames.len(), 6, "{doc}");
    assert_eq!(frames[0]["text"], BOOT, "{doc}");
    for tick in &frames[1..5] {
        assert_eq!(tick["decoded"], false, "{doc}");
        assert!(tick["hex"].as_str().is_some_and(|h| !h.is_empty()), "{doc}");
        assert_eq!(
            tick["error"], "the frame does not match the ELF's defmt table",
            "{doc}"
        );
    }
    assert_eq!(frames[5]["text"], "five more ticks, now 5", "{doc}");
    let text = capture["text"].as_str().unwrap_or_default();
    assert_eq!(text.matches("<undecoded defmt frame: ").count(), 4, "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_capture_on_a_defmt_channel_of_an_elf_without_a_table_returns_the_raw_bytes_and_says_why()
{
    let world = world(RTT_DEFMT);
    let _board = SimBoard::start(&world);
    // The same image, its .defmt section renamed: the frames arrive, no table decodes them.
    let image = patched(
        &world,
        "ahil-fw-defmt.elf",
        "ahil-fw-defmt-no-table.elf",
        b".defmt\0",
        b".nodef\0",
    );
    let client = support::connect(&world).await;
    let doc = flash_capture(
        &client,
        &image,
        &json!({"rtt_channel": "log", "wait_timeout_s": 0.5}),
    )
    .await;
    let capture = &doc["capture"];
    assert_eq!(capture["defmt"]["table"], false, "{doc}");
    assert!(
        capture["defmt"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains(".defmt")),
        "why the channel reads raw: {doc}"
    );
    assert!(capture.get("frames").is_none(), "{doc}");
    assert!(
        capture["data"]["hex"]
            .as_str()
            .is_some_and(|h| h.ends_with("00")),
        "the raw frames, each ended by 0x00: {doc}"
    );
    client.cancel().await.expect("client closes");
}

/// A plan that flashes the defmt image and expects `text` on its defmt channel.
fn defmt_plan(text: &str, timeout_s: u32) -> String {
    format!(
        "version: 5\nname: defmt\nsteps:\n\
         - {{device: board, action: flash, image_path: fw/ahil-fw-defmt.elf, reset_after_flash: true}}\n\
         - {{device: board, action: rtt_expect, channel: log, text: \"{text}\", timeout_s: {timeout_s}}}\n"
    )
}

#[tokio::test]
async fn a_plans_rtt_expect_on_a_defmt_channel_passes_on_the_decoded_text_and_reports_the_frames() {
    let world = world(RTT_DEFMT);
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    let plan = world.write_plan("defmt.yaml", &defmt_plan(BOOT, 10));
    let (doc, is_error) = call(
        &client,
        "test_reactor_run",
        json!({"test_config_path": plan}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let expect = &doc["steps"][1]["result"];
    assert_eq!(expect["ok"], true, "{doc}");
    assert_eq!(expect["matched"], true, "{doc}");
    assert_eq!(expect["channel"], "log", "{doc}");
    assert_eq!(expect["frames"][0]["text"], BOOT, "{doc}");
    assert_eq!(expect["frames"][0]["level"], "info", "{doc}");

    // Text no frame holds: the step fails in the report, with the decoded lines it did see.
    let plan = world.write_plan("absent.yaml", &defmt_plan("never logged", 1));
    let (doc, is_error) = call(
        &client,
        "test_reactor_run",
        json!({"test_config_path": plan}),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["step_error_type"], "rtt_expect_timeout", "{doc}");
    let expect = &doc["steps"][1]["result"];
    assert_eq!(expect["ok"], false, "{doc}");
    assert_eq!(expect["matched"], false, "{doc}");
    let tail = expect["received_tail"].as_str().unwrap_or_default();
    assert!(tail.contains(&format!(" INFO {BOOT}\n")), "{doc}");
    assert_eq!(expect["frames"][0]["text"], BOOT, "{doc}");
    assert_eq!(doc["cleanup"][0]["action"], "rtt_stop", "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn from_elf_finds_the_control_block_from_the_flashed_elf_and_refuses_an_elf_without_one() {
    let world = world(RTT_FROM_ELF);
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    // Nothing flashed yet: no ELF says where the block is.
    let doc = refused(
        &client,
        "rtt_session_start",
        json!({}),
        "symbol_source_not_available",
    )
    .await;
    assert_eq!(doc["target_contacted"], false, "{doc}");

    ok(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf", "reset_after_flash": true}),
    )
    .await;
    let doc = ok(&client, "rtt_session_start", json!({})).await;
    assert_eq!(
        doc["session"]["control_block_address"], "0x20000070",
        "_SEGGER_RTT's address: {doc}"
    );
    let doc = ok(
        &client,
        "rtt_read",
        json!({"channel": "terminal", "until": "rtt tick", "wait_timeout_s": 10}),
    )
    .await;
    assert_eq!(doc["until_matched"], true, "{doc}");
    ok(&client, "rtt_session_stop", json!({})).await;

    // A capture finds the block in the ELF it flashes.
    let doc = flash_capture(
        &client,
        "fw/ahil-fw-v1.elf",
        &json!({"rtt_channel": "terminal", "until": "rtt boot", "wait_timeout_s": 10}),
    )
    .await;
    assert_eq!(doc["capture"]["until_matched"], true, "{doc}");
    assert_eq!(
        doc["capture"]["control_block_address"], "0x20000070",
        "{doc}"
    );

    // The same firmware, its symbol renamed: the block is there, but the ELF does not say where.
    let image = patched(
        &world,
        "ahil-fw-v1.elf",
        "ahil-fw-unnamed-rtt.elf",
        b"_SEGGER_RTT\0",
        b"_SEGGER_XYZ\0",
    );
    let doc = flash_capture(
        &client,
        &image,
        &json!({"rtt_channel": "terminal", "wait_timeout_s": 1}),
    )
    .await;
    assert_eq!(
        doc["capture"]["error"]["error_type"], "rtt_control_block_not_found",
        "the image is on the board, the capture read nothing: {doc}"
    );
    let doc = refused(
        &client,
        "rtt_session_start",
        json!({}),
        "rtt_control_block_not_found",
    )
    .await;
    assert_eq!(doc["target_contacted"], false, "{doc}");
    assert!(
        doc["summary"]
            .as_str()
            .is_some_and(|s| s.contains("_SEGGER_RTT")),
        "{doc}"
    );
    client.cancel().await.expect("client closes");
}
