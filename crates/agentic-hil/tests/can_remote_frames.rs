//! Black-box: remote frames through the built server to a process bus, read back from what its
//! bridge was sent. A classic remote frame goes as given, `rtr` with `data_hex`'s bytes, whose
//! count is the DLC it requests (SocketCAN sends that DLC and no bytes; a bridge is handed both,
//! as the reference hands them); an FD bus refuses every remote frame before its adapter and stays
//! open.

mod support;

use serde_json::{Value, json};
use support::World;
use support::can_wire::{FD, logged_buses, sent_frames};
use support::raw::Mcp;

fn frame(id: u32, rtr: bool, data_hex: &str) -> Value {
    json!({
        "id": id,
        "id_hex": format!("{id:#x}"),
        "extended": false,
        "rtr": rtr,
        "data_hex": data_hex,
        "dlc": data_hex.len() / 2,
    })
}

#[test]
fn a_classic_remote_frame_reaches_the_bridge_with_its_data_and_an_fd_bus_refuses_one() {
    let world = World::new();
    assert!(world.run(&["init"]).status.success(), "init");
    let log = world.home.join("wire.log");
    logged_buses(&world, &log, &[("classic", ""), ("fdbus", FD)]);
    let mut mcp = Mcp::ours(&world);
    for bus in ["classic", "fdbus"] {
        let started = mcp.envelope("can_session_start", &json!({"bus_id": bus}));
        assert_eq!(started["ok"], true, "{started}");
    }
    for (id, data_hex) in [(0x123, "0102"), (0x124, "")] {
        let args = json!({"bus_id": "classic", "frame_id": id, "rtr": true, "data_hex": data_hex});
        let sent = mcp.envelope("can_send", &args);
        assert_eq!(sent["ok"], true, "{sent}");
        assert_eq!(sent["frame"], frame(id, true, data_hex), "{sent}");
    }
    for data_hex in ["", "0102"] {
        let args = json!({"bus_id": "fdbus", "frame_id": 0x125, "rtr": true, "data_hex": data_hex});
        let refused = mcp.envelope("can_send", &args);
        assert_eq!(
            refused["error_type"], "can_fd_remote_frame_unsupported",
            "{refused}"
        );
        assert_eq!(refused["field"], "rtr", "{refused}");
        assert_eq!(refused["side_effect_status"], "not_started", "{refused}");
    }
    let data = mcp.envelope(
        "can_send",
        &json!({"bus_id": "fdbus", "frame_id": 0x126, "data_hex": "0102"}),
    );
    assert_eq!(data["ok"], true, "the FD session stays open: {data}");
    for bus in ["classic", "fdbus"] {
        mcp.envelope("can_session_stop", &json!({"bus_id": bus}));
    }
    drop(mcp);
    assert_eq!(
        sent_frames(&log),
        [
            frame(0x123, true, "0102"),
            frame(0x124, true, ""),
            frame(0x126, false, "0102")
        ]
    );
}
