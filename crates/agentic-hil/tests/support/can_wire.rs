//! Process CAN buses whose bridge (the simulator) sits behind `tee`: every request a server sends
//! its adapter is kept in a file, so a test reads what reached the wire, not what an answer says.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::World;

/// The extra YAML lines of an FD bus.
pub const FD: &str = "    fd: true\n    data_bitrate: 2000000\n";

/// Replaces the generated `can_buses: {}` of `world`'s configuration with one write-enabled
/// process bus per `(name, extra YAML lines)`, each behind a simulator whose requests are appended
/// to `log`. The simulator sends no periodic frames, so only what a server asks for is on the bus.
pub fn logged_buses(world: &World, log: &Path, buses: &[(&str, &str)]) {
    let bridge = world.write_fake_tool(
        "logged-bridge",
        &format!(
            "#!/bin/sh\ntee -a \"{}\" | \"{}\" --mode normal --period-ms 0\n",
            log.display(),
            super::can_bridge_simulator().display()
        ),
    );
    let mut yaml = String::from("can_buses:\n");
    for (name, extra) in buses {
        let _ = write!(
            yaml,
            "  {name}:\n    adapter: process\n    channel: sim-{name}\n    executable: \"{}\"\n    timeout_s: 2\n    permissions:\n      allow_write: true\n{extra}",
            bridge.display()
        );
    }
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config");
    assert!(
        text.contains("can_buses: {}"),
        "the generated file has no buses"
    );
    std::fs::write(&path, text.replacen("can_buses: {}", yaml.trim_end(), 1)).expect("config");
}

/// The frames of the `send` requests kept in `log`, in order (none when nothing was started).
pub fn sent_frames(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a request is one JSON line"))
        .filter(|request| request["method"] == "send")
        .map(|request| request["params"]["frame"].clone())
        .collect()
}
