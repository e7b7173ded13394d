//! Bench ownership: who may drive which physical device right now. Machine-wide device locks live
//! here; leases, runs and incidents build on them.

pub mod device_lock;
pub mod owner;
pub mod runs;

pub use device_lock::{Acquired, Busy, DeviceLocks, LockRoot};
pub use owner::Owner;
pub use runs::RunSlot;

use std::path::Path;

/// What one server owns on the bench: its device locks and its open run.
pub struct Ownership {
    pub locks: DeviceLocks,
    pub runs: RunSlot,
}

impl Ownership {
    /// The ownership of this process, seen by others as `frontend` (`mcp`, `operator-cli`, …).
    pub fn for_process(home: &Path, frontend: &str) -> Self {
        Self {
            locks: DeviceLocks::new(LockRoot::for_home(home), Owner::this_process(frontend)),
            runs: RunSlot::default(),
        }
    }
}
