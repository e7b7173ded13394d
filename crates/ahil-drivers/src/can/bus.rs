//! An open adapter with a pump thread: received frames go into a capped queue the session reads from.
//!
//! The pump is the adapter's only reader, so a frame is handed out once. When the queue is full the
//! oldest frame is dropped and counted, never the newest silently. Readers wait on a condvar, so a
//! wait for an identifier answers as soon as that frame lands, without polling the queue.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{Adapter, CanError, Closed, Frame};
use crate::process::CancelFlag;

/// A take's wait looks at its call's cancel flag this often.
const CANCEL_SLICE: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Queue {
    frames: VecDeque<Frame>,
    dropped: u64,
    received: u64,
    /// Adapter reads completed, so a caller can wait for one that started after it.
    reads: u64,
    /// The last read came back with as many frames as it asked for: the adapter may hold more.
    last_read_full: bool,
    /// The failure that stopped the pump.
    error: Option<CanError>,
}

struct Shared {
    queue: Mutex<Queue>,
    arrived: Condvar,
    cap: usize,
    stop: AtomicBool,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Every critical section leaves the queue consistent, so a poisoned lock is still usable.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a take returned.
#[derive(Debug)]
pub struct Taken {
    pub frames: Vec<Frame>,
    /// An `until` identifier was among them (the last frame is the match).
    pub matched: bool,
    /// Frames dropped because the queue was full, since the bus opened.
    pub dropped_total: u64,
    /// Frames still queued after this take.
    pub remaining: usize,
    /// The take ended because its call was given up, not by its own rules: it took no frame.
    pub gave_up: bool,
}

/// Moves queued frames into `frames` (at most `max`, stopping after an `until` identifier);
/// answers whether the take is complete: full, matched, or (without `until`) not empty. Shared by
/// the bus and the broker's per-participant queues.
pub fn take_ready(
    queue: &mut VecDeque<Frame>,
    frames: &mut Vec<Frame>,
    matched: &mut bool,
    max: usize,
    until: &[u32],
) -> bool {
    while frames.len() < max
        && !*matched
        && let Some(frame) = queue.pop_front()
    {
        *matched = until.contains(&frame.id);
        frames.push(frame);
    }
    let satisfied = if until.is_empty() {
        !frames.is_empty()
    } else {
        *matched
    };
    satisfied || frames.len() >= max
}

/// An adapter and its pump.
pub struct Bus {
    adapter: Arc<dyn Adapter>,
    shared: Arc<Shared>,
    pump: Mutex<Option<JoinHandle<()>>>,
    kind: &'static str,
}

impl Bus {
    /// Start pumping `adapter` into a queue of at most `cap` frames; each adapter read waits up to
    /// `poll` for its first frame, which bounds how long a stop waits for the pump.
    pub fn start(adapter: Box<dyn Adapter>, cap: usize, poll: Duration) -> Self {
        let kind = adapter.kind();
        let adapter: Arc<dyn Adapter> = Arc::from(adapter);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            arrived: Condvar::new(),
            cap: cap.max(1),
            stop: AtomicBool::new(false),
        });
        let pump = thread::spawn({
            let adapter = Arc::clone(&adapter);
            let shared = Arc::clone(&shared);
            move || {
                pump(
                    adapter.as_ref(),
                    &shared,
                    poll.max(Duration::from_millis(1)),
                );
            }
        });
        Self {
            adapter,
            shared,
            pump: Mutex::new(Some(pump)),
            kind,
        }
    }

    /// `process` or `socketcan`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether the pump still runs (the adapter has not failed).
    pub fn is_alive(&self) -> bool {
        self.shared.queue().error.is_none() && !self.shared.stop.load(Ordering::SeqCst)
    }

    /// The failure that stopped the pump, if any.
    pub fn error(&self) -> Option<CanError> {
        self.shared.queue().error.clone()
    }

    /// (queued, dropped, received) since the bus opened.
    pub fn levels(&self) -> (usize, u64, u64) {
        let q = self.shared.queue();
        (q.frames.len(), q.dropped, q.received)
    }

    /// Send one frame through the adapter.
    pub fn send(&self, frame: &Frame) -> Result<Map<String, Value>, CanError> {
        if let Some(error) = self.error() {
            return Err(error);
        }
        self.adapter.send(frame)
    }

    /// Wait (at most `limit`) until the pump has finished a whole adapter read that began after this
    /// call, so frames the adapter held when the session opened are in the queue.
    pub fn settle(&self, limit: Duration) {
        let q = self.shared.queue();
        let target = q.reads + 2;
        let settled = self
            .shared
            .arrived
            .wait_timeout_while(q, limit, |q| q.reads < target && q.error.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        drop(settled);
    }

    /// After [`Bus::settle`]: while the adapter's reads keep coming back full (it held more than a
    /// read takes), wait for one that does not, for at most `max_frames` more frames or `limit`.
    /// `Err` with the frames that came meanwhile when no read came back short: the adapter's queue
    /// never emptied, so whatever a start clears, older frames may still be behind it.
    pub fn settle_backlog(&self, max_frames: u64, limit: Duration) -> Result<(), u64> {
        let q = self.shared.queue();
        let from = q.received;
        let (q, _) = self
            .shared
            .arrived
            .wait_timeout_while(q, limit, |q| {
                q.last_read_full && q.received - from < max_frames && q.error.is_none()
            })
            .unwrap_or_else(PoisonError::into_inner);
        if q.last_read_full && q.error.is_none() {
            Err(q.received - from)
        } else {
            Ok(())
        }
    }

    /// Drop everything queued; answers how many frames went.
    pub fn drain(&self) -> usize {
        let mut q = self.shared.queue();
        let n = q.frames.len();
        q.frames.clear();
        n
    }

    /// Take up to `max` frames, waiting up to `wait` for the first (or, with `until`, for a frame
    /// whose identifier is listed; the answer then ends at that frame). Once `cancel` is up (the
    /// call was given up) the take returns no frame: what it had taken goes back to the head of
    /// the queue for the next read, and a later read is not held up behind it.
    pub fn take(&self, max: usize, wait: Duration, until: &[u32], cancel: &CancelFlag) -> Taken {
        let deadline = Instant::now() + wait;
        let max = max.max(1);
        let mut frames = Vec::new();
        let mut matched = false;
        let mut gave_up = false;
        let mut q = self.shared.queue();
        loop {
            let done = take_ready(&mut q.frames, &mut frames, &mut matched, max, until);
            if cancel.is_cancelled() {
                self.put_back(&mut q, frames.drain(..));
                matched = false;
                gave_up = true;
                break;
            }
            let now = Instant::now();
            if done || now >= deadline || q.error.is_some() {
                break;
            }
            q = self
                .shared
                .arrived
                .wait_timeout(q, (deadline - now).min(CANCEL_SLICE))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        Taken {
            frames,
            matched,
            dropped_total: q.dropped,
            remaining: q.frames.len(),
            gave_up,
        }
    }

    /// Returns `taken` to the head of the queue in their order; the cap still holds, so frames
    /// that came meanwhile push out the oldest, counted as dropped, as if they had never left.
    fn put_back(&self, q: &mut Queue, taken: impl DoubleEndedIterator<Item = Frame>) {
        for frame in taken.rev() {
            q.frames.push_front(frame);
        }
        while q.frames.len() > self.shared.cap {
            q.frames.pop_front();
            q.dropped += 1;
        }
    }

    /// Stop the pump and close the adapter.
    pub fn close(&self) -> Closed {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.arrived.notify_all();
        crate::worker::join(&self.pump);
        self.adapter.close()
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        // A bus dropped without close (a server shutting down) still stops its pump; the adapter's own
        // drop ends any child process.
        self.shared.stop.store(true, Ordering::SeqCst);
    }
}

fn pump(adapter: &dyn Adapter, shared: &Shared, poll: Duration) {
    while !shared.stop.load(Ordering::SeqCst) {
        let result = adapter.read(shared.cap, poll);
        let mut q = shared.queue();
        q.reads += 1;
        q.last_read_full = matches!(&result, Ok(frames) if frames.len() >= shared.cap);
        match result {
            Ok(frames) if frames.is_empty() => shared.arrived.notify_all(),
            Ok(frames) => {
                q.received += frames.len() as u64;
                for frame in frames {
                    if q.frames.len() >= shared.cap {
                        q.frames.pop_front();
                        q.dropped += 1;
                    }
                    q.frames.push_back(frame);
                }
                shared.arrived.notify_all();
            }
            Err(error) => {
                q.error = Some(error);
                shared.arrived.notify_all();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// An adapter fed by a channel, so tests control exactly what arrives and when.
    struct Fed(Mutex<mpsc::Receiver<Result<Frame, CanError>>>);

    impl Adapter for Fed {
        fn kind(&self) -> &'static str {
            "test"
        }
        fn send(&self, _frame: &Frame) -> Result<Map<String, Value>, CanError> {
            Ok(Map::new())
        }
        fn read(&self, max: usize, wait: Duration) -> Result<Vec<Frame>, CanError> {
            let rx = self.0.lock().expect("one reader");
            let mut out = Vec::new();
            match rx.recv_timeout(wait) {
                Ok(frame) => out.push(frame?),
                Err(mpsc::RecvTimeoutError::Timeout) => return Ok(out),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    thread::sleep(wait);
                    return Ok(out);
                }
            }
            while out.len() < max
                && let Ok(frame) = rx.try_recv()
            {
                out.push(frame?);
            }
            Ok(out)
        }
        fn close(&self) -> Closed {
            Closed {
                safe_state_confirmed: true,
                process_reaped: true,
                report: Map::new(),
            }
        }
    }

    /// A [`Fed`] adapter that takes `.1` over every read, as a slow bridge does.
    struct Slow(Fed, Duration);

    impl Adapter for Slow {
        fn kind(&self) -> &'static str {
            self.0.kind()
        }
        fn send(&self, frame: &Frame) -> Result<Map<String, Value>, CanError> {
            self.0.send(frame)
        }
        fn read(&self, max: usize, wait: Duration) -> Result<Vec<Frame>, CanError> {
            thread::sleep(self.1);
            self.0.read(max, wait)
        }
        fn close(&self) -> Closed {
            self.0.close()
        }
    }

    fn frame(id: u32) -> Frame {
        Frame::new(u64::from(id), false, false, vec![]).expect("valid id")
    }

    fn ids(frames: &[Frame]) -> Vec<u32> {
        frames.iter().map(|f| f.id).collect()
    }

    fn settle(bus: &Bus, received: u64) {
        let until = Instant::now() + Duration::from_secs(5);
        while bus.levels().2 < received && Instant::now() < until {
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// A bus holding up to `capacity` frames that has received frames `1..=count`, and its feed
    /// (kept open: a closed feed would end the pump).
    fn fed_bus(capacity: usize, count: u32) -> (Bus, mpsc::Sender<Result<Frame, CanError>>) {
        let (tx, rx) = mpsc::channel();
        let bus = Bus::start(
            Box::new(Fed(Mutex::new(rx))),
            capacity,
            Duration::from_millis(5),
        );
        for id in 1..=count {
            tx.send(Ok(frame(id))).expect("pump alive");
        }
        settle(&bus, u64::from(count));
        (bus, tx)
    }

    #[test]
    fn a_settle_waits_until_the_backlog_a_slow_adapter_held_is_queued() {
        let (tx, rx) = mpsc::channel();
        for id in 1..=3 {
            tx.send(Ok(frame(id))).expect("channel open");
        }
        let slow = Slow(Fed(Mutex::new(rx)), Duration::from_millis(50));
        let bus = Bus::start(Box::new(slow), 16, Duration::from_millis(5));
        bus.settle(Duration::from_secs(5));
        assert_eq!(bus.drain(), 3);
        bus.close();
    }

    #[test]
    fn frames_are_handed_out_once_in_arrival_order() {
        let (bus, _feed) = fed_bus(16, 3);
        let first = bus.take(2, Duration::ZERO, &[], &CancelFlag::default());
        assert_eq!(ids(&first.frames), [1, 2]);
        let second = bus.take(10, Duration::ZERO, &[], &CancelFlag::default());
        assert_eq!(ids(&second.frames), [3]);
        assert!(
            bus.take(10, Duration::ZERO, &[], &CancelFlag::default())
                .frames
                .is_empty()
        );
        assert!(bus.close().safe_state_confirmed);
    }

    #[test]
    fn a_full_queue_drops_the_oldest_frames_and_counts_them() {
        let (bus, _feed) = fed_bus(4, 10);
        let taken = bus.take(100, Duration::ZERO, &[], &CancelFlag::default());
        assert_eq!(ids(&taken.frames), [7, 8, 9, 10]);
        assert_eq!(taken.dropped_total, 6);
        bus.close();
    }

    #[test]
    fn a_wait_for_an_identifier_ends_at_that_frame_as_soon_as_it_lands() {
        let (tx, rx) = mpsc::channel();
        let bus = Bus::start(Box::new(Fed(Mutex::new(rx))), 16, Duration::from_millis(5));
        tx.send(Ok(frame(1))).expect("pump alive");
        let feeder = thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            tx.send(Ok(frame(0x7e8))).expect("pump alive");
            tx.send(Ok(frame(2))).expect("pump alive");
            tx
        });
        let started = Instant::now();
        let taken = bus.take(
            100,
            Duration::from_secs(10),
            &[0x7e8],
            &CancelFlag::default(),
        );
        assert!(taken.matched);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(ids(&taken.frames), [1, 0x7e8]);
        let _tx = feeder.join().expect("feeder");
        bus.close();
    }

    #[test]
    fn a_cancelled_wait_for_an_identifier_stops_at_once_and_gives_its_frames_back() {
        let (bus, _feed) = fed_bus(16, 3);
        let cancel = CancelFlag::default();
        let canceller = thread::spawn({
            let cancel = cancel.clone();
            move || {
                thread::sleep(Duration::from_millis(200));
                cancel.cancel();
            }
        });
        let started = Instant::now();
        let taken = bus.take(100, Duration::from_secs(30), &[0x7e8], &cancel);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(taken.frames.is_empty() && !taken.matched);
        assert!(taken.gave_up, "the take says the cancel ended it");
        canceller.join().expect("canceller");
        let next = bus.take(100, Duration::ZERO, &[], &CancelFlag::default());
        assert_eq!(ids(&next.frames), [1, 2, 3]);
        assert!(!next.gave_up);
        bus.close();
    }

    #[test]
    fn an_adapter_failure_stops_the_pump_and_is_kept_for_the_session() {
        let (tx, rx) = mpsc::channel();
        let bus = Bus::start(Box::new(Fed(Mutex::new(rx))), 16, Duration::from_millis(5));
        tx.send(Err(CanError::ProcessExited {
            stderr_tail: String::new(),
        }))
        .expect("pump alive");
        let taken = bus.take(1, Duration::from_secs(5), &[], &CancelFlag::default());
        assert!(taken.frames.is_empty());
        assert!(!bus.is_alive());
        assert_eq!(
            bus.error().map(|e| e.error_type()),
            Some("can_adapter_process_exited")
        );
        bus.close();
    }
}
