//! Black-box: a session start the client cancels while its device is still opening. The gate stops
//! waiting for the start after the cancel's grace; the open that finishes afterwards must not
//! become a session (holding the device's machine-wide lock) that the client was never told of.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::World;
use support::raw::Mcp;

/// How long the bus's bridge takes to start: past the gate's five seconds of grace after a cancel.
const SLOW_OPEN_S: u64 = 7;

/// A world whose one CAN bus, `slow`, is the bridge simulator started `SLOW_OPEN_S` late; the path
/// of the wrapper, which stays the bridge's parent so its command line names this world.
fn world() -> (World, String) {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let bridge = world.write_fake_tool(
        "slow-bridge",
        &format!(
            "#!/bin/sh\nsleep {SLOW_OPEN_S}\n\"{}\" --mode normal --period-ms 30\n",
            support::can_bridge_simulator().display()
        ),
    );
    let bus = format!(
        "can_buses:\n  slow:\n    adapter: process\n    channel: sim-slow\n    executable: \"{}\"\n    timeout_s: 20\n    permissions:\n      allow_write: true\n",
        bridge.display()
    );
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config");
    std::fs::write(&path, text.replacen("can_buses: {}\n", &bus, 1)).expect("write config");
    (world, bridge.display().to_string())
}

fn bus_session_active(server: &mut Mcp) -> Value {
    let listed = server.envelope("can_buses_list", &json!({}));
    listed["buses"]["slow"]["session_active"].clone()
}

#[test]
fn a_session_start_cancelled_while_its_bus_opens_keeps_no_session_and_the_next_start_opens_it() {
    let (world, bridge) = world();
    let mut server = Mcp::ours(&world);
    server.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
        "params": {"name": "can_session_start", "arguments": {"bus_id": "slow"}}}));
    std::thread::sleep(Duration::from_secs(1));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "the user changed their mind"}}),
    );
    // Past the bridge's start: on main the open finished here and registered a session.
    std::thread::sleep(Duration::from_secs(SLOW_OPEN_S + 3));
    assert_eq!(
        bus_session_active(&mut server),
        json!(false),
        "a cancelled start left a session"
    );
    assert!(
        support::processes_with(&[&bridge]).is_empty(),
        "the bridge of the cancelled start was closed"
    );
    let failure = server.envelope("classify_last_error", &json!({}));
    assert_eq!(failure["error_type"], "interrupted", "{failure}");
    assert_eq!(failure["source_tool"], "can_session_start", "{failure}");
    // The bus's lock was given back: the next start opens the bus afresh.
    let started = server.envelope("can_session_start", &json!({"bus_id": "slow"}));
    assert_eq!(started["ok"], true, "{started}");
    assert_eq!(started["already_active"], false, "{started}");
    let stopped = server.envelope("can_session_stop", &json!({"bus_id": "slow"}));
    assert_eq!(stopped["was_active"], true, "{stopped}");
}
