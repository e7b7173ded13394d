//! Bench ownership: who may drive which physical device right now. Machine-wide device locks live
//! here; leases, runs and incidents build on them.

pub mod device_lock;
pub mod owner;
pub mod runs;

pub use device_lock::{Acquired, Busy, DeviceLocks, LockRoot};
pub use owner::Owner;
