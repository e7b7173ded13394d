//! Black-box on the emulated board: MCP cancellation reaches a debug session's long waits. A
//! `debug_continue` waiting for a stop that will not come is cancelled by its client; the wait ends
//! at once, the core is halted as after a timeout, the session stays usable and the bench is not
//! blocked. A `debug_start_session` cancelled while gdb connects ends as `interrupted` with nothing
//! left behind, and the session a later start opens does not watch the cancelled call's flag.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::World;
use support::gdb_relay::GdbRelay;
use support::raw::Mcp;
use support::sim_board::{SimBoard, sim_world};

/// The continue's own timeout: the cancelled call must end long before it.
const CONTINUE_TIMEOUT_S: u64 = 40;

fn world() -> World {
    sim_world(
        &format!(
            "  board:\n    type: qemu\n    timeout_s: {CONTINUE_TIMEOUT_S}\n    permissions:\n\
             \x20     allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n"
        ),
        "debug:\n  allow_all_symbols: true\n",
        &["ahil-fw-v1.elf"],
    )
}

fn last_failure(world: &World) -> Value {
    report(world, "last-failure.json").expect("the cancelled call's report")
}

fn report(world: &World, name: &str) -> Option<Value> {
    let path = world.workspace.join(".agentic-hil/reports").join(name);
    let bytes = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&bytes).expect("JSON"))
}

#[test]
fn a_cancelled_debug_continue_stops_waiting_halts_the_core_and_keeps_the_session() {
    let world = world();
    let _board = SimBoard::start(&world);
    let mut server = Mcp::ours(&world);
    let started = server.envelope(
        "debug_start_session",
        &json!({"image_path": "fw/ahil-fw-v1.elf"}),
    );
    assert_eq!(started["session"]["status"], "halted", "{started}");

    // No breakpoint is set, so the core runs until the wait ends.
    server.send(&json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "debug_continue", "arguments": {"timeout_s": CONTINUE_TIMEOUT_S}}}));
    std::thread::sleep(Duration::from_millis(500));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 41, "reason": "the user changed their mind"}}),
    );
    // The next call on the session waits for the cancelled one to settle. Had the cancel not reached
    // the wait, it would have ended by its timeout, and the report below would say so (not a clock).
    server.send(&json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "debug_get_session_status", "arguments": {}}}));
    let status = loop {
        let message = server.next_message();
        assert_ne!(
            message["id"],
            json!(41),
            "the cancelled call was answered: {message}"
        );
        if message["id"] == json!(42) {
            break message["result"]["structuredContent"].clone();
        }
    };
    assert_eq!(status["ok"], true, "{status}");
    assert_eq!(status["status"], "halted", "the core was halted: {status}");

    let failure = last_failure(&world);
    assert_eq!(failure["tool"], "debug_continue", "{failure}");
    assert_eq!(failure["error_type"], "interrupted", "{failure}");
    assert_eq!(failure["cancelled"], true, "{failure}");
    assert_eq!(failure["halt_confirmed"], true, "{failure}");
    assert_eq!(failure["target_state"], "halted", "{failure}");
    assert_ne!(failure["hardware_state"], "unknown", "{failure}");
    let (vm, _) = world.run_json(&["sim", "status"]);
    assert_ne!(vm["vm_status"], "running", "the board is halted: {vm}");
    let (lease, _) = world.run_json(&["lease-status"]);
    assert_eq!(lease["blocked"], false, "{lease}");

    let stopped = server.envelope("debug_stop_session", &json!({}));
    assert_eq!(stopped["ok"], true, "{stopped}");
}

/// The cancelled start's report, once the call has ended (MCP drops the answer to a cancelled
/// request, so its report is where it says how it ended).
fn settled_start(world: &World) -> Value {
    for _ in 0..1200 {
        if let Some(report) = report(world, "last-report.json")
            && report["tool"] == "debug_start_session"
        {
            return report;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the cancelled debug_start_session never ended");
}

#[test]
fn a_debug_start_cancelled_while_gdb_connects_is_interrupted_and_the_next_start_works() {
    let world = world();
    let _board = SimBoard::start(&world);
    // gdb's first packet to the board is held, so the start is inside gdb's connect when cancelled.
    let relay = GdbRelay::insert(
        &world
            .home
            .join(".local/state/agentic-hil/sim/board/gdb.sock"),
        &[b"$"],
        1,
    );
    let mut server = Mcp::ours(&world);
    server.send(&json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "debug_start_session",
                   "arguments": {"image_path": "fw/ahil-fw-v1.elf"}}}));
    relay.wait_for_a_held_write();
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 41, "reason": "the user changed their mind"}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    relay.release();

    let ended = settled_start(&world);
    assert_eq!(
        ended["ok"], false,
        "the cancelled start opened a session: {ended}"
    );
    assert_eq!(ended["error_type"], "interrupted", "{ended}");
    assert_eq!(ended["cancelled"], true, "{ended}");
    assert_eq!(
        ended["backend"], "qemu",
        "the start's own account stands: {ended}"
    );
    assert_eq!(
        support::shim::gdbs_under(&world.home),
        0,
        "the cancelled start's gdb is gone"
    );
    let (lease, _) = world.run_json(&["lease-status"]);
    assert_eq!(lease["blocked"], false, "{lease}");

    // Nothing of the cancelled start is left: no session, no lock, no gdb on the board's socket.
    let started = server.envelope(
        "debug_start_session",
        &json!({"image_path": "fw/ahil-fw-v1.elf"}),
    );
    assert_eq!(started["ok"], true, "{started}");
    assert_eq!(started["session"]["status"], "halted", "{started}");
    assert_eq!(
        support::shim::gdbs_under(&world.home),
        1,
        "the session's gdb"
    );
    // The start call has ended (its flag is raised): a wait on the session's gdb runs its course
    // and the halt after it is confirmed.
    let waited = server.envelope("debug_continue", &json!({"timeout_s": 1}));
    assert_eq!(waited["error_type"], "timeout", "{waited}");
    assert_eq!(
        waited["halt_confirmed"], true,
        "gdb outlived the start: {waited}"
    );
    let stopped = server.envelope("debug_stop_session", &json!({}));
    assert_eq!(stopped["ok"], true, "{stopped}");
}
