//! The device locks a session holds from its start to its stop, as a value.
//!
//! A session (COM, CAN, debug) takes its devices' machine-wide locks past the call that started it.
//! Before this guard every failure path between "locks taken" and "session registered" had to give
//! them back by hand; now the hold is released when the guard drops, so an early return, a `?` or
//! a panic cannot leave a device held by a session that does not exist.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Busy, Ownership};

/// One hold on each of a session's device locks; released once, on [`Self::release`] or on drop.
pub struct SessionLocks {
    ownership: Arc<Ownership>,
    keys: Vec<String>,
    /// Set by the first release, so the hold is given back exactly once.
    released: AtomicBool,
}

impl SessionLocks {
    /// Takes every key at once (all or nothing), without waiting: a session never queues behind
    /// another holder. `label` says in the holder records what the device is busy with.
    pub fn take(
        ownership: &Arc<Ownership>,
        keys: Vec<String>,
        label: &str,
    ) -> Result<Self, Box<Busy>> {
        ownership
            .locks
            .acquire_labeled(&keys, Duration::ZERO, Some(label))?;
        Ok(Self {
            ownership: Arc::clone(ownership),
            keys,
            released: AtomicBool::new(false),
        })
    }

    /// The keys held.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Whether the hold was given back already.
    pub fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Gives the hold back now (a stop does this after closing the device); later calls and the
    /// drop do nothing.
    pub fn release(&self) {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.ownership.locks.release(&self.keys);
        }
    }
}

impl Drop for SessionLocks {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::tests::two_processes;

    fn keys() -> Vec<String> {
        vec!["com:/dev/ttyS9".to_owned()]
    }

    #[test]
    fn a_dropped_guard_frees_its_devices() {
        let (_home, ours, theirs) = two_processes();
        let guard = SessionLocks::take(&ours, keys(), "com_session:uart").expect("free");
        assert!(
            SessionLocks::take(&theirs, keys(), "other").is_err(),
            "a held device is refused to another owner"
        );
        drop(guard);
        SessionLocks::take(&theirs, keys(), "other").expect("free again once the guard dropped");
    }

    #[test]
    fn release_gives_the_hold_back_once_even_with_another_hold_of_the_same_key() {
        let (_home, ours, theirs) = two_processes();
        // The same process may hold a key twice (a call's claim beside the session's hold).
        let call = SessionLocks::take(&ours, keys(), "call").expect("free");
        let session = SessionLocks::take(&ours, keys(), "session").expect("re-entrant");
        session.release();
        session.release();
        drop(session);
        assert!(
            SessionLocks::take(&theirs, keys(), "other").is_err(),
            "the call's own hold still stands: the session gave back only its one"
        );
        drop(call);
        SessionLocks::take(&theirs, keys(), "other").expect("free once both holds are gone");
    }
}
