//! Black-box, end to end: the built binary as an MCP server with a `type: probe-rs` debugger. Every
//! probe-rs action runs in the binary's own `probe-rs-worker` child. No test machine has a USB probe,
//! so these cover what must hold without one: listing, the no-probe and wrong-chip refusals (no
//! contact, retry safe), and a worker that hangs or crashes (the debug build's test seam) ending that
//! child while the server keeps answering.

mod support;

use serde_json::json;
use support::sim_board::{copy_firmware, sim_world};
use support::{Client, World, call};

/// A world whose one debugger is probe-rs for `chip`, with `entry` extra YAML (six-space indent).
fn world(chip: &str, entry: &str) -> World {
    sim_world(
        &format!(
            "  probe:\n    type: probe-rs\n    target_type: {chip}\n{entry}\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n"
        ),
        "",
        &[],
    )
}

/// The server, with the worker's test seam set to `seam` (hang, panic) when given.
async fn serve(world: &World, seam: Option<&str>) -> Client {
    let mut cmd = std::process::Command::new(World::binary());
    world.scrub(&mut cmd);
    if let Some(seam) = seam {
        cmd.env("AHIL_TEST_PROBE_RS_WORKER", seam);
    }
    support::connect_command(cmd).await
}

/// Worker processes whose request names `marker` (a probe serial unique to the test).
fn workers_naming(marker: &str) -> Vec<i32> {
    support::processes_with(&["probe-rs-worker", marker])
}

async fn still_answers(client: &Client) {
    let (doc, is_error) = call(client, "debugger_info", json!({})).await;
    assert!(!is_error, "the server still answers: {doc}");
    assert_eq!(doc["backend"], json!("probe-rs"));
}

#[tokio::test]
async fn probe_rs_lists_probes_through_its_worker_without_touching_a_target() {
    let world = world("STM32F405RGTx", "");
    let client = serve(&world, None).await;
    let (doc, is_error) = call(&client, "debugger_probes_list", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["backend"], json!("probe-rs"));
    assert!(doc["probes"].is_array(), "{doc}");
    let usb_tree = std::path::Path::new("/sys/bus/usb/devices").is_dir();
    assert_eq!(doc["complete"], json!(usb_tree), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    still_answers(&client).await;
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn probe_rs_without_a_probe_is_adapter_not_found_and_retry_safe() {
    let world = world("STM32F405RGTx", "    probe_id: NO-SUCH-PROBE-1\n");
    let client = serve(&world, None).await;
    for (tool, args) in [
        ("probe_target", json!({})),
        ("reset_target", json!({"mode": "halt"})),
    ] {
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{doc}");
        assert_eq!(
            doc["error_type"],
            json!("adapter_not_found"),
            "{tool}: {doc}"
        );
        assert_eq!(doc["target_contacted"], json!(false), "{doc}");
        assert_eq!(doc["retry_safe"], json!(true), "{doc}");
    }
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn probe_rs_with_an_unknown_chip_is_refused_before_any_probe_opens() {
    let world = world("NOT_A_REAL_CHIP_42", "");
    let client = serve(&world, None).await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("target_type_invalid"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    assert_eq!(doc["retry_safe"], json!(true), "{doc}");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn probe_rs_refuses_reset_init_which_only_openocd_has() {
    let world = world("STM32F405RGTx", "");
    let client = serve(&world, None).await;
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("not_supported"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_hanging_probe_rs_worker_times_out_is_reaped_and_the_server_stays_up() {
    let marker = "HANG-MARKER-7731";
    let world = world(
        "STM32F405RGTx",
        &format!("    probe_id: {marker}\n    timeout_s: 2\n"),
    );
    let client = serve(&world, Some("hang")).await;
    let started = std::time::Instant::now();
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("timeout"), "{doc}");
    assert_eq!(doc["retry_safe"], json!(false), "{doc}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(
        workers_naming(marker).is_empty(),
        "the hung worker was reaped"
    );
    still_answers(&client).await;
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_crashing_probe_rs_worker_is_a_classified_failure_and_the_server_stays_up() {
    let world = world("STM32F405RGTx", "");
    let client = serve(&world, Some("panic")).await;
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "run"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("unknown_debugger_error"), "{doc}");
    assert_eq!(doc["retry_safe"], json!(false), "{doc}");
    let log = doc.to_string();
    assert!(log.contains("worker_crashed"), "{doc}");
    still_answers(&client).await;
    client.cancel().await.expect("the session closes");
}

#[test]
fn a_probe_rs_entry_naming_an_executable_is_refused_by_the_config() {
    let world = world("STM32F405RGTx", "    executable: /usr/bin/probe-rs\n");
    let out = world.run(&["doctor", "--json"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("debuggers.probe.executable"), "{text}");
}

#[tokio::test]
async fn probe_rs_offers_no_debug_session_and_reads_symbols_only_from_a_flashed_elf() {
    let world = world("STM32F405RGTx", "");
    let mut config = std::fs::read_to_string(world.config_path()).expect("config");
    config.push_str("debug:\n  allowed_symbols: [counter]\n");
    std::fs::write(world.config_path(), config).expect("config");
    let client = serve(&world, None).await;
    for (tool, args, error_type) in [
        (
            "debug_start_session",
            json!({"image_path": "fw/fw.elf"}),
            "not_supported",
        ),
        // Served without a session, but nothing was flashed through this probe yet.
        (
            "debug_symbol_value",
            json!({"symbol": "counter"}),
            "symbol_source_not_available",
        ),
        (
            "debug_symbol_info",
            json!({"symbol": "counter"}),
            "symbol_source_not_available",
        ),
    ] {
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{doc}");
        assert_eq!(doc["error_type"], json!(error_type), "{tool}: {doc}");
        assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    }
    client.cancel().await.expect("the session closes");
}

/// A pty that prints a boot line every 50 ms whether or not anyone listens (a board that boots
/// over and over); prints its device first.
const CHATTY_BOARD: &str = r#"
import os, sys, time, tty
m, s = os.openpty()
tty.setraw(m); tty.setraw(s)
os.set_blocking(m, False)
print(os.ttyname(s), flush=True)
end = time.time() + 120
while time.time() < end:
    try:
        os.write(m, b"boot ok\r\n")
    except OSError:
        pass
    time.sleep(0.05)
"#;

/// The chatty board, killed when the test ends however it ends.
struct ChattyBoard(std::process::Child);

impl Drop for ChattyBoard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// probe-rs's fake probe (the worker's debug-build `fake` seam) has a mocked core that cannot run a
/// flash algorithm, so no flash through it succeeds on this machine (no USB probe either): what can
/// be shown is that the capture takes the same serial path as every backend, opened before the
/// backend, read, logged and closed around its failure.
#[tokio::test]
async fn probe_rs_flash_with_capture_opens_reads_and_logs_its_port_around_the_fake_probes_failure()
{
    use std::io::BufRead;
    let mut board = ChattyBoard(
        std::process::Command::new("python3")
            .args(["-c", CHATTY_BOARD])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs"),
    );
    let mut device = String::new();
    std::io::BufReader::new(board.0.stdout.as_mut().expect("stdout"))
        .read_line(&mut device)
        .expect("the board names its pty");
    let world = world("STM32F405RGTx", "");
    let config = std::fs::read_to_string(world.config_path()).expect("config");
    let config = format!(
        "{config}com_ports:\n  console:\n    device: \"{}\"\n    resource_id: console\n",
        device.trim()
    );
    std::fs::write(world.config_path(), config).expect("config");
    copy_firmware(&world, &["ahil-fw-v1.elf"]);
    let client = serve(&world, Some("fake")).await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v1.elf", "reset_after_flash": true,
               "capture": {"port_id": "console", "until": "boot ok", "wait_timeout_s": 2}}),
    )
    .await;
    assert!(is_error, "the mocked core cannot program: {doc}");
    assert_eq!(doc["backend"], json!("probe-rs"), "{doc}");
    assert_eq!(doc["error_type"], json!("flash_failed"), "{doc}");
    let capture = &doc["capture"];
    assert_eq!(capture["port_id"], json!("console"), "{doc}");
    assert!(capture["bytes_read"].is_u64(), "{doc}");
    support::assert_capture_log(&world.workspace, capture);
    client.cancel().await.expect("the session closes");
}
