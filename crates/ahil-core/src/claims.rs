//! Stage 4, claim: calls that touch the same device run one at a time.
//!
//! rmcp dispatches requests concurrently. Within one process, an async mutex per resource key (the
//! device's lock key) serializes calls on one device while calls on different devices run in parallel.
//! The machine-wide `flock` device locks and leases of a later issue go beneath this in
//! [`Claims::claim`]: take the in-process lock first, then the OS lock, so two tasks of one server never
//! contend on the file lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// The in-process claim table.
#[derive(Debug, Default)]
pub struct Claims {
    keys: Mutex<HashMap<String, Arc<AsyncMutex<()>>>>,
}

/// Held claims; dropping it releases every key.
#[derive(Debug)]
pub struct Claim {
    _guards: Vec<OwnedMutexGuard<()>>,
    /// The keys held, sorted.
    pub keys: Vec<String>,
}

impl Claims {
    /// Wait for and take every key. Keys are taken in sorted order so two calls claiming overlapping
    /// sets cannot deadlock.
    pub async fn claim(&self, keys: &[String]) -> Claim {
        let mut sorted: Vec<String> = keys.to_vec();
        sorted.sort();
        sorted.dedup();
        let locks: Vec<Arc<AsyncMutex<()>>> = {
            let mut table = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
            sorted
                .iter()
                .map(|key| Arc::clone(table.entry(key.clone()).or_default()))
                .collect()
        };
        let mut guards = Vec::with_capacity(locks.len());
        for lock in locks {
            guards.push(lock.lock_owned().await);
        }
        Claim {
            _guards: guards,
            keys: sorted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_claims_on_one_device_serialize() {
        let claims = Arc::new(Claims::default());
        let started = Instant::now();
        let run = |claims: Arc<Claims>| async move {
            let _held = claims.claim(&["probe:abc".to_owned()]).await;
            tokio::time::sleep(Duration::from_millis(150)).await;
        };
        tokio::join!(run(Arc::clone(&claims)), run(Arc::clone(&claims)));
        assert!(started.elapsed() >= Duration::from_millis(300));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn claims_on_different_devices_run_in_parallel() {
        let claims = Arc::new(Claims::default());
        let started = Instant::now();
        let run = |claims: Arc<Claims>, key: &'static str| async move {
            let _held = claims.claim(&[key.to_owned()]).await;
            tokio::time::sleep(Duration::from_millis(150)).await;
        };
        tokio::join!(
            run(Arc::clone(&claims), "probe:a"),
            run(Arc::clone(&claims), "probe:b")
        );
        assert!(started.elapsed() < Duration::from_millis(290));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn overlapping_claims_in_opposite_order_do_not_deadlock() {
        let claims = Arc::new(Claims::default());
        let take = |claims: Arc<Claims>, keys: [&'static str; 2]| {
            tokio::spawn(async move {
                for _ in 0..50 {
                    let held = claims.claim(&keys.map(str::to_owned)).await;
                    tokio::task::yield_now().await;
                    drop(held);
                }
            })
        };
        let a = take(Arc::clone(&claims), ["x", "y"]);
        let b = take(Arc::clone(&claims), ["y", "x"]);
        let both = tokio::time::timeout(Duration::from_secs(5), async { (a.await, b.await) });
        assert!(both.await.is_ok(), "sorted acquisition must not deadlock");
    }

    #[tokio::test]
    async fn a_released_claim_frees_the_key() {
        let claims = Claims::default();
        let held = claims.claim(&["k".to_owned()]).await;
        assert_eq!(held.keys, ["k"]);
        drop(held);
        let again =
            tokio::time::timeout(Duration::from_millis(100), claims.claim(&["k".to_owned()])).await;
        assert!(again.is_ok());
    }
}
