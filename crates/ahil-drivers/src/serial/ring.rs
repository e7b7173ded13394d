//! The receive ring: a capped byte queue shared by the reader thread and the callers, with a condvar
//! so a caller waiting for bytes sleeps until the reader appends, never polls. It matches no
//! pattern: an `until` is decided on the masked stream the agent sees (the gate's
//! `MaskedStream`), never on raw bytes, so the ring offers no way to decide on them.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// What a read took from the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The bytes, consumed from the front of the ring: each byte is handed out once.
    pub bytes: Vec<u8>,
    /// Bytes still buffered after this read.
    pub remaining: usize,
    /// Bytes dropped (oldest first) because the ring was full, since the session started or was cleared.
    pub overflow: u64,
    /// Why the reader stopped, if it did.
    pub reader_error: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    buf: VecDeque<u8>,
    overflow: u64,
    /// Set once the reader thread has ended (stopped or failed).
    reader_done: bool,
    reader_error: Option<String>,
}

/// The ring and its condvar.
#[derive(Debug)]
pub struct Ring {
    cap: usize,
    inner: Mutex<Inner>,
    arrived: Condvar,
}

impl Ring {
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            inner: Mutex::new(Inner::default()),
            arrived: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves the ring consistent (plain pushes and counters).
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends what the reader received; the oldest bytes beyond the cap are dropped and counted.
    pub fn push(&self, bytes: &[u8]) {
        let mut inner = self.lock();
        inner.buf.extend(bytes);
        let excess = inner.buf.len().saturating_sub(self.cap);
        if excess > 0 {
            inner.buf.drain(..excess);
            inner.overflow += excess as u64;
        }
        drop(inner);
        self.arrived.notify_all();
    }

    /// Marks the reader as ended, with its failure if it failed, and wakes every waiter.
    pub fn finish(&self, error: Option<String>) {
        let mut inner = self.lock();
        inner.reader_done = true;
        if inner.reader_error.is_none() {
            inner.reader_error = error;
        }
        drop(inner);
        self.arrived.notify_all();
    }

    /// Whether the reader has ended.
    pub fn reader_done(&self) -> bool {
        self.lock().reader_done
    }

    /// Waits until the reader has ended or `deadline` passes; true if it ended.
    pub fn wait_done(&self, deadline: Instant) -> bool {
        self.lock_when(deadline, |inner| inner.reader_done)
            .reader_done
    }

    /// The lock, taken once `ready` holds or `deadline` has passed, whichever comes first.
    fn lock_when(
        &self,
        deadline: Instant,
        ready: impl Fn(&Inner) -> bool,
    ) -> MutexGuard<'_, Inner> {
        let inner = self.lock();
        let left = deadline.saturating_duration_since(Instant::now());
        self.arrived
            .wait_timeout_while(inner, left, |inner| !ready(inner))
            .unwrap_or_else(PoisonError::into_inner)
            .0
    }

    /// The reader's failure, if it failed.
    pub fn reader_error(&self) -> Option<String> {
        self.lock().reader_error.clone()
    }

    /// Drops everything buffered and zeroes the overflow count.
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.buf.clear();
        inner.overflow = 0;
    }

    /// (buffered bytes, overflow count).
    pub fn levels(&self) -> (usize, u64) {
        let inner = self.lock();
        (inner.buf.len(), inner.overflow)
    }

    /// Waits until `deadline` for a byte (not at all once the reader has ended), then takes up to
    /// `max` bytes.
    pub fn take(&self, max: usize, deadline: Instant) -> Taken {
        let mut inner =
            self.lock_when(deadline, |inner| !inner.buf.is_empty() || inner.reader_done);
        let n = inner.buf.len().min(max.max(1));
        Self::split(&mut inner, n)
    }

    fn split(inner: &mut Inner, n: usize) -> Taken {
        let bytes: Vec<u8> = inner.buf.drain(..n).collect();
        Taken {
            bytes,
            remaining: inner.buf.len(),
            overflow: inner.overflow,
            reader_error: inner.reader_error.clone(),
        }
    }
}

/// For tests: everything the ring hands out until the bytes so far hold `text` (or 5 s pass).
#[cfg(test)]
pub(crate) fn take_until_seen(ring: &Ring, text: &str) -> Vec<u8> {
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    let mut got = Vec::new();
    while !got.windows(text.len()).any(|w| w == text.as_bytes()) && Instant::now() < deadline {
        got.extend(ring.take(usize::MAX, deadline).bytes);
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_millis(20)
    }

    #[test]
    fn a_full_ring_drops_the_oldest_bytes_and_counts_them() {
        let ring = Ring::new(4);
        ring.push(b"abcdef");
        let taken = ring.take(10, soon());
        assert_eq!(taken.bytes, b"cdef");
        assert_eq!(taken.overflow, 2);
    }

    #[test]
    fn a_take_hands_out_at_most_max_bytes_once_and_keeps_the_rest() {
        let ring = Ring::new(64);
        ring.push(b"boot ok\nready\n");
        let taken = ring.take(7, soon());
        assert_eq!(
            (taken.bytes.as_slice(), taken.remaining),
            (&b"boot ok"[..], 7)
        );
        assert_eq!(ring.take(64, soon()).bytes, b"\nready\n");
        assert!(ring.take(64, soon()).bytes.is_empty());
    }

    #[test]
    fn a_take_sleeps_until_the_first_byte_arrives() {
        let ring = std::sync::Arc::new(Ring::new(64));
        let writer = std::sync::Arc::clone(&ring);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            writer.push(b"boot");
        });
        let taken = ring.take(64, Instant::now() + Duration::from_secs(5));
        thread.join().expect("writer thread");
        assert_eq!(taken.bytes, b"boot");
    }

    #[test]
    fn a_take_on_an_ended_reader_answers_at_once_with_its_error() {
        let ring = Ring::new(64);
        ring.finish(Some("unplugged".into()));
        let started = Instant::now();
        let taken = ring.take(64, started + Duration::from_secs(5));
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(taken.reader_error.as_deref(), Some("unplugged"));
    }
}
