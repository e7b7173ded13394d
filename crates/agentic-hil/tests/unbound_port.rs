//! A COM port declared with `device: null` is "declared but unbound": the project names the port,
//! its baudrate and its grants, but not which of this host's serial devices it is. Every call that
//! would open it (a session, a flash's capture, esptool flashing through it) is refused
//! `com_port_not_bound` before anything is contacted, here and in the reference 0.25.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::raw::Mcp;
use support::{World, fakes, sim_board};

/// A project whose debugger of `kind` is the scripted fake and whose `console` port is unbound;
/// an esptool debugger flashes through that port.
fn unbound_bench(kind: &str) -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let exe = fakes::install_probe_cli(&world, &format!("{kind}.py"), "ok");
    let through_console = if kind == "esptool" {
        "    com_port: console\n    flash_address: \"0x10000\"\n"
    } else {
        ""
    };
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: board\n  controller: stm32f405\n\
         debuggers:\n  probe:\n    type: {kind}\n    executable: \"{exe}\"\n{through_console}\
         \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
         com_ports:\n  console:\n    device: null\n    identity_source: device\n\
         \x20   permissions:\n      allow_write: true\n\
         artifacts:\n  allowed_roots: [fw]\n",
        ws = world.workspace.display(),
        state = world.home.join(".local/state/agentic-hil").display(),
        exe = exe.display(),
    );
    std::fs::write(world.config_path(), config).expect("the test config is written");
    sim_board::copy_firmware_as(&world, &[("ahil-fw-v1.elf", "fw.elf")]);
    std::fs::write(world.workspace.join("fw/fw.bin"), [0xE9_u8; 256]).expect("bin image");
    world
}

/// Each call, on our server and on the reference's, is refused `com_port_not_bound` naming the
/// entry's `device` field, and the backend never ran.
fn each_is_refused_unbound(kind: &str, tools: &[(&str, Value)]) {
    let world = unbound_bench(kind);
    for program in [PathBuf::from(World::binary()), support::reference()] {
        let mut mcp = Mcp::start(&world, &program);
        for (tool, args) in tools {
            let result = mcp.call(tool, args);
            let doc = &result["structuredContent"];
            let who = format!("{tool} by {}", program.display());
            assert_eq!(result["isError"], true, "{who}: {result}");
            assert_eq!(doc["error_type"], "com_port_not_bound", "{who}: {doc}");
            assert_eq!(doc["field"], "com_ports.console.device", "{who}: {doc}");
            assert_eq!(doc["target_contacted"], false, "{who}: {doc}");
        }
    }
    assert!(
        fakes::calls(&fakes::tools(&world)).is_empty(),
        "no backend ran"
    );
}

#[test]
fn a_session_and_a_flash_capture_on_an_unbound_port_are_refused_here_and_in_the_reference() {
    each_is_refused_unbound(
        "openocd",
        &[
            ("com_session_start", json!({"port_id": "console"})),
            (
                "flash_firmware",
                json!({
                    "image_path": "fw/fw.elf",
                    "reset_after_flash": true,
                    "capture": {"port_id": "console", "until": "boot", "wait_timeout_s": 2.0},
                }),
            ),
        ],
    );
}

#[test]
fn esptool_flashing_through_an_unbound_port_is_refused_here_and_in_the_reference() {
    each_is_refused_unbound(
        "esptool",
        &[
            ("probe_target", json!({})),
            ("flash_firmware", json!({"image_path": "fw/fw.bin"})),
        ],
    );
}
