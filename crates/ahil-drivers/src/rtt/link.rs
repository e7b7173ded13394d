//! An RTT link held across calls: a poller thread takes the target's up channels into capped rings
//! (the COM session's [`Ring`], so a read waits, matches and counts overflow exactly as `com_read`
//! does), and writes go to down channels between polls.
//!
//! The target may reset under the link: its firmware rebuilds the block (offsets back at zero),
//! which the poller follows because it reads the offsets fresh every poll. A poll that fails (a
//! block half rebuilt, a board restarted) is not the end of the session: the poller finds the block
//! again, reopening the memory if it must, and the failure is kept for the session's status.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{ControlBlock, Memory, RttError};
use crate::serial::Ring;

/// Where the control block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locate {
    At(u32),
    Scan { start: u32, size: u32 },
}

impl Locate {
    fn find(self, memory: &mut dyn Memory) -> Result<ControlBlock, RttError> {
        let block = match self {
            Self::At(address) => ControlBlock::read(memory, address),
            Self::Scan { start, size } => ControlBlock::scan(memory, start, size),
        }?;
        memory.confine_writes_to(block.address)?;
        Ok(block)
    }
}

/// Sees every chunk an up channel gave (its index and the bytes), e.g. for the session log.
pub type Tap = Box<dyn Fn(u32, &[u8]) + Send + Sync>;

/// Opens the target's memory (again, after a failure).
pub type Opener = Box<dyn Fn() -> Result<Box<dyn Memory + Send>, RttError> + Send + Sync>;

/// Where a link's bytes come from and where its writes go: the target's memory, whose rings the
/// poller reads itself ([`Link::start`]), or a stream a debug server serves each channel on
/// (OpenOCD's `rtt server`, which reads the rings on its side).
pub trait Source: Send {
    /// Up to `max` bytes of up channel `index` that arrived since the last call; none is empty.
    fn read_up(&mut self, index: u32, max: usize) -> Result<Vec<u8>, RttError>;
    /// Put as much of `data` as fits into down channel `index`; how many bytes went in.
    fn write_down(&mut self, index: u32, data: &[u8]) -> Result<usize, RttError>;
    /// Let go of what the source holds (a debug server's process), once the poller has ended.
    fn close(&mut self) {}
}

struct Target {
    memory: Box<dyn Memory + Send>,
    block: ControlBlock,
}

/// The target's memory, found again (reopened) after any failed access.
struct MemorySource {
    target: Option<Target>,
    open: Opener,
    locate: Locate,
}

impl MemorySource {
    /// Runs `f` on the target, finding the block again first when the last access failed.
    fn with_target<T>(
        &mut self,
        f: impl FnOnce(&mut Target) -> Result<T, RttError>,
    ) -> Result<T, RttError> {
        if self.target.is_none() {
            let mut memory = (self.open)()?;
            let block = self.locate.find(memory.as_mut())?;
            self.target = Some(Target { memory, block });
        }
        let target = self
            .target
            .as_mut()
            .expect("set just above when it was empty");
        let result = f(target);
        if result.is_err() {
            // Found again at the next access: the block may have been rebuilt, the board restarted.
            self.target = None;
        }
        result
    }
}

impl Source for MemorySource {
    fn read_up(&mut self, index: u32, max: usize) -> Result<Vec<u8>, RttError> {
        self.with_target(|t| t.block.read_up(t.memory.as_mut(), index, max))
    }

    fn write_down(&mut self, index: u32, data: &[u8]) -> Result<usize, RttError> {
        self.with_target(|t| t.block.write_down(t.memory.as_mut(), index, data))
    }
}

struct Shared {
    source: Mutex<Box<dyn Source>>,
    stop: AtomicBool,
    /// Up channel index and its ring.
    rings: Vec<(u32, Ring)>,
    last_error: Mutex<Option<String>>,
    polls: AtomicU64,
    /// Taken out and dropped when the link closes: a tap may hold the end of a stream back and
    /// write it when dropped, before the caller logs the session's end.
    tap: Mutex<Option<Tap>>,
}

impl Shared {
    fn source(&self) -> std::sync::MutexGuard<'_, Box<dyn Source>> {
        self.source.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn poll(&self) {
        for (index, ring) in &self.rings {
            let cap = 64 * 1024;
            let taken = self.source().read_up(*index, cap);
            match taken {
                Ok(bytes) if !bytes.is_empty() => {
                    if let Some(tap) = self
                        .tap
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .as_ref()
                    {
                        tap(*index, &bytes);
                    }
                    ring.push(&bytes);
                }
                Ok(_) => {}
                Err(error) => {
                    *self
                        .last_error
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
                }
            }
        }
        self.polls.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running link. Dropping it stops the poller.
pub struct Link {
    shared: Arc<Shared>,
    address: u32,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// What a link is asked to do.
pub struct Options {
    pub locate: Locate,
    /// The up channels to poll.
    pub up: Vec<u32>,
    /// The down channels writes may go to.
    pub down: Vec<u32>,
    pub ring_bytes: usize,
    pub interval: Duration,
}

impl Options {
    fn rings(&self) -> Vec<(u32, Ring)> {
        self.up
            .iter()
            .map(|index| (*index, Ring::new(self.ring_bytes)))
            .collect()
    }
}

impl Link {
    /// Open the memory, find the block, check that every configured channel exists, and start
    /// polling. Bytes already in the up buffers are the first the rings get.
    pub fn start(open: Opener, options: &Options, tap: Option<Tap>) -> Result<Self, RttError> {
        let mut memory = open()?;
        let block = options.locate.find(memory.as_mut())?;
        for index in &options.up {
            block.channel(super::Direction::Up, *index)?;
        }
        for index in &options.down {
            block.channel(super::Direction::Down, *index)?;
        }
        let address = block.address;
        let source = MemorySource {
            target: Some(Target { memory, block }),
            open,
            locate: options.locate,
        };
        Self::with_source(Box::new(source), address, options, tap)
    }

    /// Start polling `source`, whose control block is at `address` (as its backend reported it),
    /// into one ring per up channel of `options`.
    pub fn with_source(
        source: Box<dyn Source>,
        address: u32,
        options: &Options,
        tap: Option<Tap>,
    ) -> Result<Self, RttError> {
        let shared = Arc::new(Shared {
            source: Mutex::new(source),
            stop: AtomicBool::new(false),
            rings: options.rings(),
            last_error: Mutex::new(None),
            polls: AtomicU64::new(0),
            tap: Mutex::new(tap),
        });
        shared.poll();
        let poller = Arc::clone(&shared);
        let interval = options.interval;
        let thread = std::thread::Builder::new()
            .name("rtt-poller".into())
            .spawn(move || {
                while !poller.stop.load(Ordering::Acquire) {
                    std::thread::sleep(interval);
                    poller.poll();
                }
                for (_, ring) in &poller.rings {
                    ring.finish(None);
                }
            })
            .map_err(|error| RttError::Memory {
                address: u64::from(address),
                detail: format!("the poller thread did not start: {error}"),
            })?;
        Ok(Self {
            shared,
            address,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// [`Link::start`], again every poll interval while the block is not there yet or half built
    /// (a target just reset builds it at boot, its id last) until `deadline`; memory that cannot be
    /// reached ends it at once. `open` and `tap` are asked anew for each attempt.
    pub fn start_by(
        open: impl Fn() -> Opener,
        options: &Options,
        tap: impl Fn() -> Option<Tap>,
        deadline: Instant,
    ) -> Result<Self, RttError> {
        loop {
            match Self::start(open(), options, tap()) {
                Err(error)
                    if !matches!(error, RttError::Memory { .. })
                        && Instant::now() + options.interval < deadline =>
                {
                    std::thread::sleep(options.interval);
                }
                other => return other,
            }
        }
    }

    /// The control block's address.
    pub fn address(&self) -> u32 {
        self.address
    }

    /// The ring of up channel `index`.
    pub fn ring(&self, index: u32) -> Option<&Ring> {
        self.shared
            .rings
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, ring)| ring)
    }

    /// Put `data` into down channel `index`; how many bytes went in.
    pub fn write(&self, index: u32, data: &[u8]) -> Result<usize, RttError> {
        self.shared.source().write_down(index, data)
    }

    /// The last poll failure, if any poll failed.
    pub fn last_error(&self) -> Option<String> {
        self.shared
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Polls done so far.
    pub fn polls(&self) -> u64 {
        self.shared.polls.load(Ordering::Relaxed)
    }

    /// Whether the poller still runs.
    pub fn is_alive(&self) -> bool {
        !self.shared.stop.load(Ordering::Acquire)
    }

    /// Stop the poller and wait for it up to `limit`; false if it did not end in time.
    pub fn close(&self, limit: Duration) -> bool {
        self.shared.stop.store(true, Ordering::Release);
        let deadline = Instant::now() + limit;
        let ended = self
            .shared
            .rings
            .first()
            .is_none_or(|(_, ring)| ring.wait_done(deadline));
        if ended && crate::worker::join(&self.thread) {
            self.shared.source().close();
            drop(
                self.shared
                    .tap
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take(),
            );
        }
        ended
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

#[cfg(test)]
impl Options {
    /// A scan of `size` bytes from `start` for the block, with up and down channel 0, rings of
    /// `ring_bytes` and a poll every `interval`: what the link tests ask for.
    pub(crate) fn scan_channel_zero(
        start: u32,
        size: u32,
        ring_bytes: usize,
        interval: Duration,
    ) -> Self {
        Self {
            locate: Locate::Scan { start, size },
            up: vec![0],
            down: vec![0],
            ring_bytes,
            interval,
        }
    }
}
