//! Shared CAN buses (`shares:`) on the bridge simulator: participants, the list's sharing fields, a
//! declared run naming a participant, and one server as two participants.

use std::path::Path;

use serde_json::json;

use crate::driver::{Step, compare, edit_config, tool};
use crate::support::{self, World};

/// `shared` (a writing `tester` and a reading `monitor`) and `plain`, a bus without shares.
fn shared_bench(world: &World, _program: &Path) {
    let bridge = world.write_fake_tool(
        "bridge",
        &format!(
            "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 30\n",
            support::can_bridge_simulator().display()
        ),
    );
    let bus = |name: &str, shares: &str| {
        format!(
            "  {name}:\n    adapter: process\n    channel: sim-{name}\n    executable: \"{}\"\n    timeout_s: 2\n    permissions:\n      allow_write: true\n{shares}",
            bridge.display()
        )
    };
    let shares = "    shares:\n      tester:\n        permissions:\n          allow_write: true\n        filter:\n          - {id: 2016, mask: 2032}\n      monitor:\n        filter:\n          - {id: 256, mask: 2047}\n          - {id: 2016, mask: 2047}\n";
    let yaml = format!("can_buses:\n{}{}", bus("shared", shares), bus("plain", ""));
    edit_config(world, "can_buses: {}", yaml.trim_end());
}

fn shared(participant: Option<&str>) -> serde_json::Value {
    match participant {
        Some(name) => json!({"bus_id": "shared", "participant": name}),
        None => json!({"bus_id": "shared"}),
    }
}

fn run(participant: Option<&str>) -> serde_json::Value {
    let mut device = json!({"kind": "can", "id": "shared"});
    if let Some(name) = participant {
        device["participant"] = json!(name);
    }
    json!({"devices": [device]})
}

/// Refusals before any session: the participant named, or not, or not configured.
fn refusals() -> Vec<Step> {
    vec![
        tool(
            "shared/can_buses_list",
            "can_buses_list",
            json!({}),
            &[
                "buses.shared.shares_declared",
                "buses.shared.participant_sessions",
                "buses.shared.session_takes_whole_bus",
                "buses.shared.active_participants",
                "buses.shared.session_active",
                "buses.shared.shares.tester.permissions.allow_write",
                "buses.shared.shares.monitor.filter#len",
                "buses.plain.shares",
            ],
        ),
        tool(
            "shared/can_session_start without participant",
            "can_session_start",
            shared(None),
            &["side_effect_status"],
        ),
        tool(
            "shared/can_session_start unconfigured participant",
            "can_session_start",
            shared(Some("nobody")),
            &["participant"],
        ),
        tool(
            "shared/can_session_start participant on a bus without shares",
            "can_session_start",
            json!({"bus_id": "plain", "participant": "tester"}),
            &[],
        ),
        tool(
            "shared/can_session_stop without participant",
            "can_session_stop",
            shared(None),
            &[],
        ),
        tool(
            "shared/can_session_stop no session",
            "can_session_stop",
            shared(Some("tester")),
            &["was_active"],
        ),
        tool(
            "shared/can_read without participant",
            "can_read",
            shared(None),
            &[],
        ),
        tool(
            "shared/can_send no session",
            "can_send",
            json!({"bus_id": "shared", "participant": "tester", "frame_id": 1}),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "shared/bench_run_start without participant",
            "bench_run_start",
            run(None),
            &[],
        ),
        tool(
            "shared/bench_run_start unconfigured participant",
            "bench_run_start",
            run(Some("nobody")),
            &[],
        ),
    ]
}

/// A run declaring `tester`, its session inside the run, then `monitor` beside it after the run.
fn sessions() -> Vec<Step> {
    vec![
        tool(
            "shared/bench_run_start tester",
            "bench_run_start",
            run(Some("tester")),
            &["declared_devices"],
        ),
        tool(
            "shared/can_session_start tester",
            "can_session_start",
            shared(Some("tester")),
            &[
                "participant",
                "adapter",
                "already_active",
                "side_effect_status",
                "session.participant",
                "session.adapter",
                "session.session_active",
            ],
        ),
        tool(
            "shared/can_session_start tester again",
            "can_session_start",
            shared(Some("tester")),
            &["already_active"],
        ),
        tool(
            "shared/can_session_start monitor outside the run",
            "can_session_start",
            shared(Some("monitor")),
            &["declared_devices"],
        ),
        tool(
            "shared/can_buses_list one participant",
            "can_buses_list",
            json!({}),
            &[
                "buses.shared.active_participants",
                "buses.shared.session_active",
            ],
        ),
        tool(
            "shared/can_send tester",
            "can_send",
            json!({"bus_id": "shared", "participant": "tester", "frame_id": "0x7E0", "data_hex": "1001"}),
            &["side_effect_status", "participant"],
        ),
        tool(
            "shared/can_read tester until the answer",
            "can_read",
            json!({"bus_id": "shared", "participant": "tester", "until_id": 0x7e8, "wait_timeout_s": 5}),
            &["until_matched", "participant"],
        ),
        tool(
            "shared/can_read the default participant",
            "can_read",
            shared(None),
            &[],
        ),
        tool(
            "shared/bench_run_stop with the session open",
            "bench_run_stop",
            json!({}),
            &["still_held_devices", "released_devices", "open_leases#len"],
        ),
        tool(
            "shared/can_session_start monitor",
            "can_session_start",
            shared(Some("monitor")),
            &["participant", "already_active"],
        ),
        tool(
            "shared/can_buses_list two participants",
            "can_buses_list",
            json!({}),
            &["buses.shared.active_participants"],
        ),
        tool(
            "shared/can_read monitor sees the tester's frame",
            "can_read",
            json!({"bus_id": "shared", "participant": "monitor", "until_id": 0x7e0, "wait_timeout_s": 5}),
            &["until_matched"],
        ),
        tool(
            "shared/can_read two open without participant",
            "can_read",
            shared(None),
            &[],
        ),
        tool(
            "shared/can_session_stop tester",
            "can_session_stop",
            shared(Some("tester")),
            &["was_active", "participant", "lease_state"],
        ),
        tool(
            "shared/can_session_stop monitor",
            "can_session_stop",
            shared(Some("monitor")),
            &["was_active", "participant"],
        ),
        tool(
            "shared/can_buses_list after the stops",
            "can_buses_list",
            json!({}),
            &["buses.shared.active_participants"],
        ),
    ]
}

#[test]
fn shared_can_buses_answer_as_the_reference_does() {
    let mut steps = refusals();
    steps.extend(sessions());
    compare("shared/", &shared_bench, &steps);
}
