//! An emulated board that `agentic-hil sim start` runs in a test's HOME.

use std::path::PathBuf;

use super::World;

/// An initialized world whose configuration is `body` (the YAML after the roots and the version
/// line), with `images` of the committed firmware (firmware/build) copied into `fw/`.
pub fn board_world(version: u8, body: &str, images: &[&str]) -> World {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let state = world.home.join(".local/state/agentic-hil");
    let config = format!(
        "workspace_root: \"{}\"\nstate_root: \"{}\"\nversion: {version}\n{body}",
        world.workspace.display(),
        state.display(),
    );
    std::fs::write(world.config_path(), config).expect("the test config is written");
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    let build = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    for image in images {
        std::fs::copy(build.join(image), fw.join(image)).expect("firmware copies");
    }
    world
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
}

impl Drop for SimBoard<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["sim", "stop"]);
    }
}
