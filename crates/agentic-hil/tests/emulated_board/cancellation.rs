//! MCP cancellation on the emulated board: a flash cancelled while it connects and one cancelled in
//! the middle of its download are both stopped, recorded as `interrupted` and settled.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Bench, support};
use support::gdb_relay::GdbRelay;

/// Sends a flash of `image` with a progress token; `freeze` waits for the point to stop the flash at,
/// stops it there and returns how to let it go on. Then cancels the call, lets the flash go on, and
/// probes the board. Returns the cancelled call's report (MCP drops the answer to a cancelled
/// request) and the stages the flash reported after its freeze.
fn cancel_a_flash(
    bench: &Bench,
    image: &str,
    freeze: &mut dyn FnMut(&mut support::raw::Mcp) -> Box<dyn FnOnce()>,
) -> (Value, Vec<String>) {
    let mut server = support::raw::Mcp::ours(&bench.world);
    server.send(&json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "flash_firmware", "_meta": {"progressToken": "flash-41"},
                   "arguments": {"image_path": image, "reset_after_flash": true}}}));
    let thaw = freeze(&mut server);
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 41, "reason": "the user changed their mind"}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    thaw();

    // The next call waits for the cancelled one to settle, then finds the board usable.
    server.send(&json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "probe_target", "arguments": {}}}));
    let mut later = Vec::new();
    let probe = loop {
        let message = server.next_message();
        assert_ne!(
            message["id"],
            json!(41),
            "the flash was answered: {message}"
        );
        if message["id"] == json!(42) {
            break message["result"]["structuredContent"].clone();
        }
        if message["params"]["progressToken"] == json!("flash-41")
            && let Some(text) = message["params"]["message"].as_str()
        {
            later.push(text.trim_start_matches("flash_firmware: ").to_owned());
        }
    };
    assert_eq!(probe["ok"], json!(true), "{probe}");
    let failure: Value = serde_json::from_slice(
        &std::fs::read(
            bench
                .world
                .workspace
                .join(".agentic-hil/reports/last-failure.json"),
        )
        .expect("the cancelled call's report"),
    )
    .expect("JSON");
    (failure, later)
}

/// Reads the server's messages until the flash reports `stage`.
fn wait_for_stage(server: &mut support::raw::Mcp, stage: &str) {
    let wanted = json!(format!("flash_firmware: {stage}"));
    loop {
        let message = server.next_message();
        assert_ne!(message["id"], json!(41), "the flash ended first: {message}");
        if message["params"]["message"] == wanted {
            return;
        }
    }
}

/// A cancelled flash is stopped as at a timeout, recorded as `interrupted`, and settled by the
/// driver's own account of contact: unknown goes through the recovery policy.
fn assert_interrupted_and_settled(bench: &Bench, failure: &Value) {
    assert_eq!(failure["tool"], json!("flash_firmware"), "{failure}");
    assert_eq!(failure["error_type"], json!("interrupted"), "{failure}");
    assert_eq!(failure["cancelled"], json!(true), "{failure}");
    match failure["hardware_state"].as_str() {
        Some("unknown") => {
            assert_eq!(failure["retry_safe"], json!(false), "{failure}");
            assert_eq!(
                failure["recovery"]["outcome"],
                json!("recovered"),
                "{failure}"
            );
        }
        Some("unchanged") => assert_eq!(failure["target_contacted"], json!(false), "{failure}"),
        other => panic!("an interrupted flash settles as unknown or unchanged, not {other:?}"),
    }
    let (status, _) = bench.world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], json!(false), "{status}");
}

/// MCP cancellation reaches the driver job: a flash cancelled while it connects (the board frozen
/// once the flash reports its first stage, so the cancel always lands inside the job) has its gdb
/// group killed and is settled.
#[test]
fn a_flash_cancelled_in_flight_is_interrupted_and_the_bench_settled() {
    let bench = Bench::full();
    let qemu = bench.qemu_pid().to_string();
    let (failure, _) = cancel_a_flash(&bench, "fw/ahil-fw-v2.elf", &mut |server| {
        wait_for_stage(server, "connect");
        let stopped = Command::new("kill").args(["-STOP", &qemu]).status();
        assert!(stopped.is_ok_and(|s| s.success()), "qemu is stopped");
        let qemu = qemu.clone();
        Box::new(move || {
            let resumed = Command::new("kill").args(["-CONT", &qemu]).status();
            assert!(resumed.is_ok_and(|s| s.success()), "qemu resumes");
        })
    });
    assert_interrupted_and_settled(&bench, &failure);
}

/// The same in the middle of the download: the board's gdb socket is put behind a relay that holds
/// gdb's memory writes once the first has reached the board, so the cancel lands after part of a
/// 768 KiB image is written and before the rest is.
#[test]
fn a_flash_cancelled_mid_download_is_interrupted_and_the_bench_settled() {
    let bench = Bench::full();
    let fw = bench.world.workspace.join("fw");
    let mut image = std::fs::read(fw.join("ahil-fw-v2.bin")).expect("the v2 image");
    image.resize(768 * 1024, 0xA5);
    std::fs::write(fw.join("large.bin"), &image).expect("the large image");
    let relay = GdbRelay::insert(
        &bench
            .world
            .home
            .join(".local/state/agentic-hil/sim/board/gdb.sock"),
        &[b"$X", b"$M"],
        2,
    );
    let (failure, later) = cancel_a_flash(&bench, "fw/large.bin", &mut |_| {
        relay.wait_for_a_held_write();
        let relay = relay.clone();
        Box::new(move || relay.release())
    });
    assert!(
        !later.iter().any(|stage| stage == "verify"),
        "the download went on to verify: {later:?}"
    );
    assert_interrupted_and_settled(&bench, &failure);
}
