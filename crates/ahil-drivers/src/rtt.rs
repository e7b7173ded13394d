//! SEGGER RTT on a running target: the control block's layout, the ring-buffer arithmetic, and the
//! reads and writes of one channel through any [`Memory`] that reaches the target's RAM.
//!
//! The layout (SEGGER_RTT.h, 32-bit target): `char acID[16]` ("SEGGER RTT"), `int MaxNumUpBuffers`,
//! `int MaxNumDownBuffers`, then that many up and down descriptors of six words each: `sName`,
//! `pBuffer`, `SizeOfBuffer`, `WrOff`, `RdOff`, `Flags`.
//!
//! Why no halt is needed: each offset has one writer. The target writes an up buffer's `WrOff` and a
//! down buffer's `RdOff`; the host writes the other two. The host reads `WrOff` before the bytes it
//! covers and publishes `RdOff` after taking them, so it never reads a byte the target is still
//! writing and never frees one it has not read. Every word the host writes is aligned and 32 bits.
//!
//! Everything read from the target is untrusted: counts, sizes and offsets are checked before they
//! are used, so a corrupt or hostile block is refused, never followed.

use std::fmt;

pub mod defmt;
pub mod link;
pub mod stream;

/// The id at the start of a control block.
pub const ID: &[u8] = b"SEGGER RTT";
/// `acID` and the two counts.
const HEADER: u32 = 24;
/// One buffer descriptor.
const DESCRIPTOR: u32 = 24;
/// More channels than any real configuration has (SEGGER's defaults are 3 and 3): a larger count
/// is a block that is not one.
pub const MAX_CHANNELS: u32 = 16;
/// A ring larger than this is refused as corrupt (targets use a few KiB).
pub const MAX_RING_BYTES: u32 = 1 << 20;
/// A channel name is read up to this many bytes.
const MAX_NAME: usize = 32;

/// Why an RTT access failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RttError {
    /// The target's memory could not be read or written at `address`.
    #[error("the target's memory at {address:#010x} could not be reached: {detail}")]
    Memory { address: u64, detail: String },
    /// No control block where one was expected.
    #[error("no RTT control block: {0}")]
    NotFound(String),
    /// A block whose counts, sizes or offsets cannot be right.
    #[error("the RTT control block is not valid: {0}")]
    Invalid(String),
    /// The block has no channel with this index.
    #[error("the target has no {direction} channel {index}")]
    NoChannel { direction: Direction, index: u32 },
}

impl RttError {
    /// The public `error_type`.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::Memory { .. } => "rtt_memory_unavailable",
            Self::NotFound(_) => "rtt_control_block_not_found",
            Self::Invalid(_) => "rtt_control_block_invalid",
            Self::NoChannel { .. } => "rtt_channel_not_found",
        }
    }
}

/// Up (target to host) or down (host to target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Up => "up",
            Self::Down => "down",
        })
    }
}

/// The target's physical memory, read and written while the core runs.
pub trait Memory {
    /// Fill `buf` from `address`.
    fn read(&mut self, address: u32, buf: &mut [u8]) -> Result<(), RttError>;
    /// Store `data` at `address`.
    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), RttError>;

    /// From now on, refuse writes outside the memory that holds `address` (the control block), so
    /// a descriptor pointing elsewhere cannot aim a write. A memory without regions ignores it.
    fn confine_writes_to(&mut self, address: u32) -> Result<(), RttError> {
        let _ = address;
        Ok(())
    }

    /// One little-endian word.
    fn read_u32(&mut self, address: u32) -> Result<u32, RttError> {
        let mut word = [0u8; 4];
        self.read(address, &mut word)?;
        Ok(u32::from_le_bytes(word))
    }
}

/// One buffer descriptor as the target holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    pub name: u32,
    pub buffer: u32,
    pub size: u32,
    pub wr_off: u32,
    pub rd_off: u32,
    pub flags: u32,
}

impl Descriptor {
    fn parse(bytes: &[u8]) -> Self {
        let word = |i: usize| {
            u32::from_le_bytes(
                bytes[i * 4..i * 4 + 4]
                    .try_into()
                    .expect("a descriptor slice is 24 bytes (DESCRIPTOR)"),
            )
        };
        Self {
            name: word(0),
            buffer: word(1),
            size: word(2),
            wr_off: word(3),
            rd_off: word(4),
            flags: word(5),
        }
    }
}

/// The bytes `[start, start + len)` of a ring, in at most two runs (the second after a wrap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Runs {
    pub first: (u32, u32),
    pub second: (u32, u32),
}

impl Runs {
    /// Total bytes.
    pub fn len(&self) -> u32 {
        self.first.1 + self.second.1
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first `max` bytes of these runs.
    #[must_use]
    pub fn take(self, max: u32) -> Self {
        let first = (self.first.0, self.first.1.min(max));
        let second = (self.second.0, self.second.1.min(max - first.1));
        Self { first, second }
    }
}

fn check(size: u32, wr: u32, rd: u32) -> Result<(), RttError> {
    if !(2..=MAX_RING_BYTES).contains(&size) {
        return Err(RttError::Invalid(format!("a ring of {size} bytes")));
    }
    if wr >= size || rd >= size {
        return Err(RttError::Invalid(format!(
            "offsets wr {wr} rd {rd} outside a ring of {size} bytes"
        )));
    }
    Ok(())
}

/// The bytes written and not yet read: from `rd` up to `wr`. `wr == rd` is empty; the writer keeps
/// one byte free, so a full ring is `wr == rd - 1`.
pub fn pending(size: u32, wr: u32, rd: u32) -> Result<Runs, RttError> {
    check(size, wr, rd)?;
    Ok(if wr >= rd {
        Runs {
            first: (rd, wr - rd),
            second: (0, 0),
        }
    } else {
        Runs {
            first: (rd, size - rd),
            second: (0, wr),
        }
    })
}

/// The bytes a writer may fill: from `wr` up to one before `rd`.
pub fn free(size: u32, wr: u32, rd: u32) -> Result<Runs, RttError> {
    check(size, wr, rd)?;
    let total = if rd > wr {
        rd - wr - 1
    } else {
        size - (wr - rd) - 1
    };
    let first = total.min(size - wr);
    Ok(Runs {
        first: (wr, first),
        second: (0, total - first),
    })
}

/// `off + n` in a ring of `size`.
pub fn advance(size: u32, off: u32, n: u32) -> u32 {
    let sum = u64::from(off) + u64::from(n);
    u32::try_from(sum % u64::from(size)).expect("a remainder mod a u32 fits a u32")
}

/// A control block: its address and its descriptors as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlBlock {
    pub address: u32,
    pub up: Vec<Descriptor>,
    pub down: Vec<Descriptor>,
}

impl ControlBlock {
    /// Parse a block read at `address`: `bytes` holds at least its header, and all its descriptors
    /// for the counts the header gives (see [`ControlBlock::len`]).
    pub fn parse(address: u32, bytes: &[u8]) -> Result<Self, RttError> {
        let header = bytes
            .get(..HEADER as usize)
            .ok_or_else(|| RttError::Invalid("shorter than its header".into()))?;
        if !header.starts_with(ID) || header[ID.len()..16].iter().any(|b| *b != 0) {
            return Err(RttError::NotFound(format!(
                "no \"SEGGER RTT\" id at {address:#010x}"
            )));
        }
        let (up, down) = Self::counts(header)?;
        let need = Self::len(up, down) as usize;
        let body = bytes
            .get(..need)
            .ok_or_else(|| RttError::Invalid(format!("{} bytes read of {need}", bytes.len())))?;
        let descriptors = |from: u32, n: u32| -> Vec<Descriptor> {
            (0..n)
                .map(|i| {
                    let at = (from + i * DESCRIPTOR) as usize;
                    Descriptor::parse(&body[at..at + DESCRIPTOR as usize])
                })
                .collect()
        };
        Ok(Self {
            address,
            up: descriptors(HEADER, up),
            down: descriptors(HEADER + up * DESCRIPTOR, down),
        })
    }

    fn counts(header: &[u8]) -> Result<(u32, u32), RttError> {
        let count = |at: usize| {
            let raw = i32::from_le_bytes(
                header[at..at + 4]
                    .try_into()
                    .expect("the header is 24 bytes (HEADER)"),
            );
            u32::try_from(raw)
                .ok()
                .filter(|n| *n <= MAX_CHANNELS)
                .ok_or_else(|| RttError::Invalid(format!("a channel count of {raw}")))
        };
        Ok((count(16)?, count(20)?))
    }

    /// The bytes of a block with `up` and `down` channels.
    pub fn len(up: u32, down: u32) -> u32 {
        HEADER + (up + down) * DESCRIPTOR
    }

    /// Read the block at `address`.
    pub fn read(memory: &mut dyn Memory, address: u32) -> Result<Self, RttError> {
        let mut header = [0u8; HEADER as usize];
        memory.read(address, &mut header)?;
        if !header.starts_with(ID) {
            return Err(RttError::NotFound(format!(
                "no \"SEGGER RTT\" id at {address:#010x}"
            )));
        }
        let (up, down) = Self::counts(&header)?;
        let mut bytes = vec![0u8; Self::len(up, down) as usize];
        memory.read(address, &mut bytes)?;
        Self::parse(address, &bytes)
    }

    /// Find the block in `[start, start + size)` by its id, reading in chunks.
    pub fn scan(memory: &mut dyn Memory, start: u32, size: u32) -> Result<Self, RttError> {
        const CHUNK: u32 = 4096;
        let overlap = u32::try_from(ID.len()).expect("the id is 10 bytes") - 1;
        let end = u64::from(start) + u64::from(size);
        let mut at = u64::from(start);
        while at < end {
            let len = (end - at).min(u64::from(CHUNK + overlap));
            let mut chunk = vec![0u8; usize::try_from(len).expect("at most a chunk")];
            let base = u32::try_from(at).expect("the range was given in u32");
            memory.read(base, &mut chunk)?;
            if let Some(i) = chunk.windows(ID.len()).position(|w| w == ID) {
                let found = base + u32::try_from(i).expect("an index within a chunk");
                if let Ok(block) = Self::read(memory, found) {
                    return Ok(block);
                }
            }
            at += u64::from(CHUNK);
        }
        Err(RttError::NotFound(format!(
            "no \"SEGGER RTT\" id in {size} bytes from {start:#010x}"
        )))
    }

    fn descriptor_address(&self, direction: Direction, index: u32) -> u32 {
        let before = match direction {
            Direction::Up => 0,
            Direction::Down => {
                u32::try_from(self.up.len()).expect("at most MAX_CHANNELS descriptors")
            }
        };
        self.address + HEADER + (before + index) * DESCRIPTOR
    }

    /// The descriptor of a channel, or [`RttError::NoChannel`].
    pub fn channel(&self, direction: Direction, index: u32) -> Result<Descriptor, RttError> {
        let list = match direction {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        };
        list.get(index as usize)
            .copied()
            .ok_or(RttError::NoChannel { direction, index })
    }

    /// A channel's name as the target declares it (empty when it has none).
    pub fn name(
        &self,
        memory: &mut dyn Memory,
        direction: Direction,
        index: u32,
    ) -> Result<String, RttError> {
        let descriptor = self.channel(direction, index)?;
        if descriptor.name == 0 {
            return Ok(String::new());
        }
        let mut bytes = [0u8; MAX_NAME];
        memory.read(descriptor.name, &mut bytes)?;
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(MAX_NAME);
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }

    /// The ring's size read fresh; a size other than the one the block was found with means the
    /// block was rebuilt differently, and its buffer pointer is no longer the one we hold.
    fn same_size(
        memory: &mut dyn Memory,
        at: u32,
        descriptor: &Descriptor,
        direction: Direction,
        index: u32,
    ) -> Result<u32, RttError> {
        let size = memory.read_u32(at + 8)?;
        if size != descriptor.size {
            return Err(RttError::Invalid(format!(
                "{direction} channel {index} changed size from {} to {size}",
                descriptor.size
            )));
        }
        Ok(size)
    }

    /// Take up to `max` pending bytes of up channel `index` and publish the new `RdOff`. The
    /// offsets are read fresh, so a target that reset and rebuilt its block is followed.
    pub fn read_up(
        &self,
        memory: &mut dyn Memory,
        index: u32,
        max: usize,
    ) -> Result<Vec<u8>, RttError> {
        let descriptor = self.channel(Direction::Up, index)?;
        let at = self.descriptor_address(Direction::Up, index);
        let size = Self::same_size(memory, at, &descriptor, Direction::Up, index)?;
        let wr = memory.read_u32(at + 12)?;
        let rd = memory.read_u32(at + 16)?;
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        let runs = pending(size, wr, rd)?.take(max);
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut bytes = vec![0u8; runs.len() as usize];
        let (head, tail) = bytes.split_at_mut(runs.first.1 as usize);
        memory.read(descriptor.buffer + runs.first.0, head)?;
        if !tail.is_empty() {
            memory.read(descriptor.buffer + runs.second.0, tail)?;
        }
        memory.write(at + 16, &advance(size, rd, runs.len()).to_le_bytes())?;
        Ok(bytes)
    }

    /// Put as much of `data` as fits into down channel `index` and publish the new `WrOff`.
    /// Answers how many bytes went in (a full ring takes fewer).
    pub fn write_down(
        &self,
        memory: &mut dyn Memory,
        index: u32,
        data: &[u8],
    ) -> Result<usize, RttError> {
        let descriptor = self.channel(Direction::Down, index)?;
        let at = self.descriptor_address(Direction::Down, index);
        let size = Self::same_size(memory, at, &descriptor, Direction::Down, index)?;
        let wr = memory.read_u32(at + 12)?;
        let rd = memory.read_u32(at + 16)?;
        let want = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let runs = free(size, wr, rd)?.take(want);
        let (head, tail) = data[..runs.len() as usize].split_at(runs.first.1 as usize);
        if !head.is_empty() {
            memory.write(descriptor.buffer + runs.first.0, head)?;
        }
        if !tail.is_empty() {
            memory.write(descriptor.buffer + runs.second.0, tail)?;
        }
        memory.write(at + 12, &advance(size, wr, runs.len()).to_le_bytes())?;
        Ok(runs.len() as usize)
    }
}

#[cfg(test)]
#[path = "rtt_tests.rs"]
mod tests;
