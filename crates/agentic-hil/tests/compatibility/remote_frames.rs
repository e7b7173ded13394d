//! Remote frames side by side, on a classic and an FD process bus whose bridge keeps every request
//! it is sent: both hand the bridge a classic remote frame with the `data_hex` it was given (its
//! byte count is the DLC the frame requests), and both refuse a remote frame on the FD bus, with or
//! without data, before its adapter.

use std::path::Path;

use serde_json::json;

use crate::driver::{Step, compare, tool};
use crate::support::World;
use crate::support::can_wire::{FD, logged_buses, sent_frames};

/// What each answer says it sent.
const FRAME: &[&str] = &["frame.rtr", "frame.data_hex", "frame.dlc"];

#[test]
fn remote_frames_reach_the_bridge_as_the_reference_sends_them() {
    let bus = |id: &str| json!({"bus_id": id});
    let remote = |bus: &str, id: u32, data_hex: &str| json!({"bus_id": bus, "frame_id": id, "rtr": true, "data_hex": data_hex});
    let steps: [Step; 9] = [
        tool(
            "remote/can_session_start classic",
            "can_session_start",
            bus("classic"),
            &[],
        ),
        tool(
            "remote/can_send a remote frame with data",
            "can_send",
            remote("classic", 0x123, "0102"),
            FRAME,
        ),
        tool(
            "remote/can_send a remote frame",
            "can_send",
            remote("classic", 0x124, ""),
            FRAME,
        ),
        tool(
            "remote/can_session_stop classic",
            "can_session_stop",
            bus("classic"),
            &[],
        ),
        tool(
            "remote/can_session_start fd",
            "can_session_start",
            bus("fdbus"),
            &[],
        ),
        tool(
            "remote/can_send a remote frame on the FD bus",
            "can_send",
            remote("fdbus", 0x125, ""),
            &["field"],
        ),
        tool(
            "remote/can_read on the FD bus after the refused remote frame",
            "can_read",
            json!({"bus_id": "fdbus", "max_frames": 1, "wait_timeout_s": 0}),
            &[],
        ),
        // The reference's refusal left its session failed, past opening again: another FD bus.
        tool(
            "remote/can_session_start fd2",
            "can_session_start",
            bus("fd2"),
            &[],
        ),
        tool(
            "remote/can_send a remote frame with data on the FD bus",
            "can_send",
            remote("fd2", 0x125, "0102"),
            &["field"],
        ),
    ];
    let wires = tempfile::tempdir().expect("wire logs");
    let log_of = |program: &Path| {
        let name = if program == Path::new(World::binary()) {
            "ours"
        } else {
            "reference"
        };
        wires.path().join(name)
    };
    let bench = |world: &World, program: &Path| {
        logged_buses(
            world,
            &log_of(program),
            &[("classic", ""), ("fdbus", FD), ("fd2", FD)],
        );
    };
    compare("remote/", &bench, &steps);
    let ours = sent_frames(&log_of(Path::new(World::binary())));
    assert_eq!(ours, sent_frames(&log_of(&crate::support::reference())));
    // Not vacuous: the classic remote frames did reach the bridge, the first with its data.
    assert_eq!(ours.len(), 2, "{ours:?}");
    assert_eq!(
        (&ours[0]["rtr"], &ours[0]["data_hex"], &ours[0]["dlc"]),
        (&json!(true), &json!("0102"), &json!(2))
    );
}
