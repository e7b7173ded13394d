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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_close_joins_the_thread() {
        let slot = Mutex::new(Some(std::thread::spawn(|| {})));
        assert!(join(&slot), "the first close joins the thread");
        assert!(!join(&slot), "a second close finds it gone");
    }

    #[test]
    fn a_thread_that_panicked_is_joined_without_the_panic() {
        let slot = Mutex::new(Some(std::thread::spawn(|| panic!("a reader failed"))));
        assert!(join(&slot));
    }
}
