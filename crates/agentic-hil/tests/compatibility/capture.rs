//! `flash_firmware` with `capture` on the scripted OpenOCD fake (ahil-sim's `probe_cli.py`, which
//! both run), the board a pty that prints its boot text at each reset the fake notes; and
//! `com_read`'s answers, whose `until` rules the capture follows.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::driver::{Step, compare, install_openocd_fake, tool};
use crate::support::World;
use crate::support::raw::BootBoard;

/// The whole configuration, written over the one `init` made: an OpenOCD fake with flash and
/// reset, and a `console` port on the boot board.
fn capture_bench(world: &World, _program: &Path) -> BootBoard {
    let exe = install_openocd_fake(world);
    let tools = world.home.join("tools");
    let board = BootBoard::start(&tools.join("board-resets"), &tools.join("board-booted"));
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: board\n  controller: stm32f405\n\
         debuggers:\n  probe:\n    type: openocd\n    executable: \"{exe}\"\n\
         \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
         com_ports:\n  console:\n    device: \"{device}\"\n    identity_source: device\n\
         \x20   permissions:\n      allow_write: true\n\
         artifacts:\n  allowed_roots: [fw]\n",
        ws = world.workspace.display(),
        state = world.home.join(".local/state/agentic-hil").display(),
        exe = exe.display(),
        device = board.device,
    );
    std::fs::write(world.config_path(), config).expect("the test config is written");
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    std::fs::copy(built.join("ahil-fw-v1.elf"), fw.join("fw.elf")).expect("firmware copies");
    board
}

fn flash(capture: &serde_json::Value) -> serde_json::Value {
    json!({"image_path": "fw/fw.elf", "reset_after_flash": true, "capture": capture})
}

const CAPTURED: &[&str] = &[
    "side_effect_status",
    "capture.port_id",
    "capture.until_matched",
    "capture.matched",
    "capture.data.encoding",
];

fn steps() -> Vec<Step> {
    vec![
        tool(
            "capture/flash_firmware until matched",
            "flash_firmware",
            flash(&json!({"port_id": "console", "until": "boot ok", "wait_timeout_s": 10})),
            &[
                "side_effect_status",
                "capture.port_id",
                "capture.until_matched",
                "capture.matched",
                "capture.data.encoding",
                "capture.data.text",
                "capture.bytes_read",
            ],
        ),
        tool(
            "capture/flash_firmware until missed",
            "flash_firmware",
            flash(&json!({"port_id": "console", "until": "never printed", "wait_timeout_s": 1})),
            CAPTURED,
        ),
        tool(
            "capture/flash_firmware without until",
            "flash_firmware",
            flash(&json!({"port_id": "console", "wait_timeout_s": 2})),
            &[
                "side_effect_status",
                "capture.port_id",
                "capture.until_matched",
                "capture.matched",
                "capture.bytes_read",
            ],
        ),
        tool(
            "capture/flash_firmware capture on an unknown port",
            "flash_firmware",
            flash(&json!({"port_id": "nope"})),
            &[],
        ),
        tool(
            "capture/com_session_start",
            "com_session_start",
            json!({"port_id": "console"}),
            &[],
        ),
        tool(
            "capture/com_read until missed",
            "com_read",
            json!({"port_id": "console", "until": "never printed", "wait_timeout_s": 1}),
            &["until_matched", "bytes_read"],
        ),
        tool(
            "capture/com_read without until",
            "com_read",
            json!({"port_id": "console", "wait_timeout_s": 1}),
            &["until_matched", "bytes_read"],
        ),
        tool(
            "capture/flash_firmware capture on a port a session holds",
            "flash_firmware",
            flash(&json!({"port_id": "console", "until": "boot ok"})),
            &[],
        ),
        tool(
            "capture/com_session_stop",
            "com_session_stop",
            json!({"port_id": "console"}),
            &["was_active"],
        ),
    ]
}

#[test]
fn flash_capture_answers_as_the_reference_does_and_follows_com_read() {
    compare("capture/", &capture_bench, &steps());
}
