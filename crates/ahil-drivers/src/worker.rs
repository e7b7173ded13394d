//! The background thread a device handle owns (a port's reader, a bus's pump, an RTT poller),
//! joined once by whichever close comes first.

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

/// Joins the thread in `slot` unless another close already took it; false when none was left.
/// The slot's lock is not held during the join, and a panic in the thread is not propagated:
/// it has stopped either way, which is all a close waits for.
pub(crate) fn join(slot: &Mutex<Option<JoinHandle<()>>>) -> bool {
    let Some(thread) = slot.lock().unwrap_or_else(PoisonError::into_inner).take() else {
        return false;
    };
    let _ = thread.join();
    true
}
