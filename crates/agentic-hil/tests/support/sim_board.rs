//! The emulated board's test world: a configuration naming `qemu` debuggers, the committed firmware
//! in `fw/`, and the board `agentic-hil sim start` runs in the test's HOME.

use std::path::PathBuf;

use serde_json::Value;

use super::World;

/// A world after `init` whose configuration names `debuggers` (the YAML under the key), then
/// `rest` (whole top-level sections, each line ending in a newline), with the committed firmware
/// `images` (names under `firmware/build`) copied into `fw/`.
pub fn sim_world(debuggers: &str, rest: &str, images: &[&str]) -> World {
    let world = initialised();
    let config = sim_config(&world, debuggers, rest);
    std::fs::write(world.config_path(), config).expect("the test config is written");
    copy_firmware(&world, images);
    world
}

/// A new world after `init`.
pub fn initialised() -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    world
}

/// The `target` section `sim_config` writes.
pub const SIM_TARGET: &str = "target:\n  name: sim\n  controller: stm32f405\n";

/// The world's configuration text naming `debuggers`, then `rest`, as `sim_world` writes it.
pub fn sim_config(world: &World, debuggers: &str, rest: &str) -> String {
    config_text(world, SIM_TARGET, debuggers, rest)
}

/// A version 3 configuration: `head` (whole top-level sections), `debuggers` (the YAML under the
/// key), `fw` as the only artifact root, then `rest`.
fn config_text(world: &World, head: &str, debuggers: &str, rest: &str) -> String {
    format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n{head}\
         debuggers:\n{debuggers}artifacts:\n  allowed_roots: [fw]\n{rest}",
        ws = world.workspace.display(),
        state = state_root(world).display(),
    )
}

/// A provisioned world whose configuration holds `head` (whole top-level sections, each line
/// ending in a newline: the project's `permissions`, [`SIM_TARGET`], or none) and one `qemu`
/// debugger `board` with `grants` ([`qemu_board`]'s; empty, no `permissions` key at all), with
/// `fw/ahil-fw-v1.elf` in place for [`super::RunningBoard::start`].
pub fn provisioned_board(head: &str, grants: &str) -> World {
    let world = World::provisioned();
    let board = if grants.is_empty() {
        "  board:\n    type: qemu\n    timeout_s: 10\n".to_owned()
    } else {
        qemu_board(grants)
    };
    let config = config_text(&world, head, &board, "");
    std::fs::write(world.config_path(), config).expect("the qemu configuration is written");
    copy_firmware(&world, &["ahil-fw-v1.elf"]);
    world
}

/// Where the test configuration puts the state root.
pub fn state_root(world: &World) -> PathBuf {
    world.home.join(".local/state/agentic-hil")
}

/// Copies the committed firmware `images` (names under `firmware/build`) into the world's `fw/`.
pub fn copy_firmware(world: &World, images: &[&str]) {
    let same: Vec<(&str, &str)> = images.iter().map(|name| (*name, *name)).collect();
    copy_firmware_as(world, &same);
}

/// Copies committed firmware into the world's `fw/` under a name of the test's: each pair is
/// (a name under `firmware/build`, its name in `fw/`).
pub fn copy_firmware_as(world: &World, images: &[(&str, &str)]) {
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    let build = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    for (built, name) in images {
        std::fs::copy(build.join(built), fw.join(name)).expect("firmware copies");
    }
}

/// A `qemu` debugger named `board` with `timeout_s: 10` and `grants` (permission lines, each
/// ending in a newline), as `sim_world` takes it.
pub fn qemu_board(grants: &str) -> String {
    format!("  board:\n    type: qemu\n    timeout_s: 10\n    permissions:\n{grants}")
}

/// A running board booted from the workspace's `fw/ahil-fw-v1.elf`; stopped when dropped, whatever
/// the test did.
pub struct SimBoard<'a>(&'a World);

impl<'a> SimBoard<'a> {
    pub fn start(world: &'a World) -> Self {
        let (doc, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
        assert_eq!(code, Some(0), "sim start: {doc}");
        Self(world)
    }

    /// Stops on drop a board the test starts another way (through a tool call, say).
    pub fn stopped_on_drop(world: &'a World) -> Self {
        Self(world)
    }

    /// QMP's run state; a status that cannot be read fails the test rather than passing a check
    /// vacuously.
    pub fn vm_status(&self) -> Value {
        let (doc, _) = self.0.run_json(&["sim", "status"]);
        assert!(
            doc["vm_status"].is_string(),
            "sim status names the run state: {doc}"
        );
        doc["vm_status"].clone()
    }
}

impl Drop for SimBoard<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["sim", "stop"]);
    }
}
