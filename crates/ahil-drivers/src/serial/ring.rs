//! The receive ring: a capped byte queue shared by the reader thread and the callers, with a condvar
//! so a caller waiting for bytes or a pattern sleeps until the reader appends, never polls.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// What a read took from the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The bytes, consumed from the front of the ring: each byte is handed out once.
    pub bytes: Vec<u8>,
    /// With patterns: whether the bytes end with a match.
    pub matched: Option<bool>,
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
        let mut inner = self.lock();
        while !inner.reader_done {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            inner = self
                .arrived
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
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

    /// Waits until `deadline` for bytes (without patterns: any byte; with patterns: the first match,
    /// or `max` bytes buffered), then takes up to `max` bytes, through the first match if there is one.
    pub fn take(&self, max: usize, deadline: Instant, patterns: &[Vec<u8>]) -> Taken {
        let max = max.max(1);
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        let mut inner = self.lock();
        // Bytes before `scanned` have been searched and hold no match that ends inside them.
        let mut scanned = 0usize;
        loop {
            if patterns.is_empty() {
                if !inner.buf.is_empty() {
                    break;
                }
            } else {
                if let Some(end) = first_match(&mut inner.buf, scanned, max, patterns) {
                    return Self::split(&mut inner, end, Some(true));
                }
                scanned = inner
                    .buf
                    .len()
                    .min(max)
                    .saturating_sub(longest.saturating_sub(1));
                if inner.buf.len() >= max {
                    break;
                }
            }
            if inner.reader_done {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            inner = self
                .arrived
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let n = inner.buf.len().min(max);
        let matched = (!patterns.is_empty()).then_some(false);
        Self::split(&mut inner, n, matched)
    }

    fn split(inner: &mut Inner, n: usize, matched: Option<bool>) -> Taken {
        let bytes: Vec<u8> = inner.buf.drain(..n).collect();
        Taken {
            bytes,
            matched,
            remaining: inner.buf.len(),
            overflow: inner.overflow,
            reader_error: inner.reader_error.clone(),
        }
    }
}

/// The end of the earliest match that ends within the first `max` bytes, searching from `from`.
fn first_match(
    buf: &mut VecDeque<u8>,
    from: usize,
    max: usize,
    patterns: &[Vec<u8>],
) -> Option<usize> {
    let limit = buf.len().min(max);
    let hay = &buf.make_contiguous()[..limit];
    let mut best: Option<usize> = None;
    for pattern in patterns.iter().filter(|p| !p.is_empty()) {
        if hay.len() < pattern.len() {
            continue;
        }
        let start = from.min(hay.len());
        if let Some(at) = hay[start..]
            .windows(pattern.len())
            .position(|w| w == pattern.as_slice())
        {
            let end = start + at + pattern.len();
            best = Some(best.map_or(end, |b| b.min(end)));
        }
    }
    best
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
        let taken = ring.take(10, soon(), &[]);
        assert_eq!(taken.bytes, b"cdef");
        assert_eq!(taken.overflow, 2);
    }

    #[test]
    fn a_pattern_read_returns_through_the_first_match_and_keeps_the_rest() {
        let ring = Ring::new(64);
        ring.push(b"boot ok\nready\n");
        let taken = ring.take(64, soon(), &[b"ready".to_vec(), b"ok".to_vec()]);
        assert_eq!(taken.bytes, b"boot ok");
        assert_eq!(taken.matched, Some(true));
        assert_eq!(taken.remaining, 7);
    }

    #[test]
    fn a_pattern_split_across_two_arrivals_is_found() {
        let ring = std::sync::Arc::new(Ring::new(64));
        ring.push(b"bo");
        let writer = std::sync::Arc::clone(&ring);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            writer.push(b"ot ok");
        });
        let taken = ring.take(
            64,
            Instant::now() + Duration::from_secs(5),
            &[b"boot ok".to_vec()],
        );
        thread.join().expect("writer thread");
        assert_eq!(taken.bytes, b"boot ok");
        assert_eq!(taken.matched, Some(true));
    }

    #[test]
    fn a_pattern_not_found_within_max_bytes_returns_the_bytes_so_far_at_the_deadline() {
        // (case, bytes pushed, max_bytes, pattern, bytes taken)
        for (case, pushed, max_bytes, pattern, expected) in [
            ("never sent", "partial", 64, "never", "partial"),
            ("beyond max_bytes", "0123456789ok", 4, "ok", "0123"),
        ] {
            let ring = Ring::new(64);
            ring.push(pushed.as_bytes());
            let taken = ring.take(max_bytes, soon(), &[pattern.as_bytes().to_vec()]);
            assert_eq!(taken.bytes, expected.as_bytes(), "{case}");
            assert_eq!(taken.matched, Some(false), "{case}");
        }
    }
}
