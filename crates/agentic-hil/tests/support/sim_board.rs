//! An emulated board that `agentic-hil sim start` runs in a test's HOME.

use super::World;

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
