use super::*;

/// A target's RAM as a byte vector at `base`.
struct Ram {
    base: u32,
    bytes: Vec<u8>,
}

impl Memory for Ram {
    fn read(&mut self, address: u32, buf: &mut [u8]) -> Result<(), RttError> {
        let at = address.checked_sub(self.base).map(|a| a as usize);
        let slice = at.and_then(|a| self.bytes.get(a..a + buf.len()));
        let slice = slice.ok_or(RttError::Memory {
            address: u64::from(address),
            detail: "outside the fake RAM".into(),
        })?;
        buf.copy_from_slice(slice);
        Ok(())
    }

    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), RttError> {
        let at = (address - self.base) as usize;
        self.bytes[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }
}

const BASE: u32 = 0x2000_0000;
const BLOCK: u32 = BASE + 0x100;
const UP_BUF: u32 = BASE + 0x400;
const DOWN_BUF: u32 = BASE + 0x800;
const NAME: u32 = BASE + 0x40;

fn put(ram: &mut Ram, address: u32, words: &[u32]) {
    for (i, w) in (0u32..).zip(words) {
        ram.write(address + i * 4, &w.to_le_bytes()).unwrap();
    }
}

/// A block with one up ring of `up_size` and one down ring of 8 bytes.
fn target(up_size: u32) -> Ram {
    let mut ram = Ram {
        base: BASE,
        bytes: vec![0; 0x1000],
    };
    ram.write(BLOCK, b"SEGGER RTT").unwrap();
    put(&mut ram, BLOCK + 16, &[1, 1]);
    put(&mut ram, BLOCK + 24, &[NAME, UP_BUF, up_size, 0, 0, 0]);
    put(&mut ram, BLOCK + 48, &[NAME, DOWN_BUF, 8, 0, 0, 0]);
    ram.write(NAME, b"Terminal\0").unwrap();
    ram
}

/// What the firmware does: write at WrOff, wrapping, then publish WrOff.
fn target_writes(ram: &mut Ram, size: u32, data: &[u8]) {
    let mut wr = ram.read_u32(BLOCK + 24 + 12).unwrap();
    for b in data {
        ram.write(UP_BUF + wr, &[*b]).unwrap();
        wr = advance(size, wr, 1);
    }
    put(ram, BLOCK + 24 + 12, &[wr]);
}

#[test]
fn an_empty_ring_has_nothing_pending_and_all_but_one_byte_free() {
    assert!(pending(16, 5, 5).unwrap().is_empty());
    let free = free(16, 5, 5).unwrap();
    assert_eq!(free.len(), 15);
    assert_eq!(free.first, (5, 11));
    assert_eq!(free.second, (0, 4));
}

#[test]
fn a_full_ring_keeps_one_byte_free_and_has_size_minus_one_pending() {
    assert_eq!(pending(16, 4, 5).unwrap().len(), 15);
    assert!(free(16, 4, 5).unwrap().is_empty());
    assert_eq!(pending(16, 15, 0).unwrap().len(), 15);
    assert!(free(16, 15, 0).unwrap().is_empty());
}

#[test]
fn pending_bytes_past_the_end_wrap_to_the_start_in_a_second_run() {
    let runs = pending(16, 3, 12).unwrap();
    assert_eq!(runs.first, (12, 4));
    assert_eq!(runs.second, (0, 3));
    let taken = runs.take(5);
    assert_eq!((taken.first, taken.second), ((12, 4), (0, 1)));
    assert_eq!(advance(16, 12, 7), 3);
}

#[test]
fn offsets_outside_the_ring_are_refused_not_followed() {
    assert!(matches!(pending(16, 16, 0), Err(RttError::Invalid(_))));
    assert!(matches!(free(16, 0, 99), Err(RttError::Invalid(_))));
    assert!(matches!(pending(0, 0, 0), Err(RttError::Invalid(_))));
    assert!(matches!(
        pending(MAX_RING_BYTES + 1, 0, 0),
        Err(RttError::Invalid(_))
    ));
}

#[test]
fn the_control_block_parses_its_counts_and_descriptors() {
    let mut ram = target(64);
    let block = ControlBlock::read(&mut ram, BLOCK).unwrap();
    assert_eq!(block.address, BLOCK);
    assert_eq!(block.up.len(), 1);
    assert_eq!(block.down.len(), 1);
    assert_eq!(block.up[0].buffer, UP_BUF);
    assert_eq!(block.up[0].size, 64);
    assert_eq!(block.down[0].buffer, DOWN_BUF);
    assert_eq!(block.name(&mut ram, Direction::Up, 0).unwrap(), "Terminal");
    assert_eq!(
        block.channel(Direction::Up, 1),
        Err(RttError::NoChannel {
            direction: Direction::Up,
            index: 1
        })
    );
}

#[test]
fn a_block_without_the_id_or_with_absurd_counts_is_refused() {
    let mut ram = target(64);
    assert_eq!(
        ControlBlock::read(&mut ram, BLOCK + 4)
            .unwrap_err()
            .error_type(),
        "rtt_control_block_not_found"
    );
    put(&mut ram, BLOCK + 16, &[MAX_CHANNELS + 1]);
    assert_eq!(
        ControlBlock::read(&mut ram, BLOCK)
            .unwrap_err()
            .error_type(),
        "rtt_control_block_invalid"
    );
    put(&mut ram, BLOCK + 16, &[u32::MAX]);
    assert!(matches!(
        ControlBlock::read(&mut ram, BLOCK),
        Err(RttError::Invalid(_))
    ));
}

#[test]
fn a_scan_finds_the_block_by_its_id_across_a_chunk_boundary() {
    let mut ram = Ram {
        base: BASE,
        bytes: vec![0; 0x3000],
    };
    // The id straddles the scan's first 4 KiB chunk.
    let at = BASE + 4096 - 4;
    ram.write(at, b"SEGGER RTT").unwrap();
    put(&mut ram, at + 16, &[1, 0]);
    put(&mut ram, at + 24, &[0, BASE + 0x2000, 16, 0, 0, 0]);
    let block = ControlBlock::scan(&mut ram, BASE, 0x3000).unwrap();
    assert_eq!(block.address, at);
    assert!(matches!(
        ControlBlock::scan(&mut ram, BASE, 0x800),
        Err(RttError::NotFound(_))
    ));
}

#[test]
fn reading_an_up_channel_takes_each_byte_once_across_the_wrap() {
    let mut ram = target(16);
    let block = ControlBlock::read(&mut ram, BLOCK).unwrap();
    target_writes(&mut ram, 16, b"boot line\n");
    assert_eq!(block.read_up(&mut ram, 0, 4).unwrap(), b"boot");
    assert_eq!(block.read_up(&mut ram, 0, 100).unwrap(), b" line\n");
    assert!(block.read_up(&mut ram, 0, 100).unwrap().is_empty());
    // Ten more bytes wrap past the end of the 16-byte ring.
    target_writes(&mut ram, 16, b"tick 12345");
    assert_eq!(ram.read_u32(BLOCK + 24 + 12).unwrap(), 4);
    assert_eq!(block.read_up(&mut ram, 0, 100).unwrap(), b"tick 12345");
    assert_eq!(ram.read_u32(BLOCK + 24 + 16).unwrap(), 4, "RdOff published");
}

#[test]
fn writing_a_down_channel_fills_only_the_free_bytes_and_publishes_wroff() {
    let mut ram = target(16);
    let block = ControlBlock::read(&mut ram, BLOCK).unwrap();
    // An 8-byte ring holds 7.
    assert_eq!(block.write_down(&mut ram, 0, b"123456789").unwrap(), 7);
    assert_eq!(ram.read_u32(BLOCK + 48 + 12).unwrap(), 7);
    // The target reads five; the next write wraps.
    put(&mut ram, BLOCK + 48 + 16, &[5]);
    assert_eq!(block.write_down(&mut ram, 0, b"abcd").unwrap(), 4);
    assert_eq!(ram.read_u32(BLOCK + 48 + 12).unwrap(), 3);
    let mut ring = [0u8; 8];
    ram.read(DOWN_BUF, &mut ring).unwrap();
    assert_eq!(&ring, b"bcd4567a");
}

#[test]
fn a_ring_that_changed_size_since_the_block_was_read_is_refused() {
    let mut ram = target(16);
    let block = ControlBlock::read(&mut ram, BLOCK).unwrap();
    put(&mut ram, BLOCK + 24 + 8, &[32]);
    assert!(matches!(
        block.read_up(&mut ram, 0, 10),
        Err(RttError::Invalid(_))
    ));
}

/// A target's RAM that another thread changes while a link looks at it.
struct Changing(std::sync::Arc<std::sync::Mutex<Ram>>);

impl Memory for Changing {
    fn read(&mut self, address: u32, buf: &mut [u8]) -> Result<(), RttError> {
        self.0.lock().expect("the fake RAM").read(address, buf)
    }

    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), RttError> {
        self.0.lock().expect("the fake RAM").write(address, data)
    }
}

#[test]
fn a_link_started_by_a_deadline_finds_a_block_the_target_builds_after_the_first_look() {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use link::{Link, Options};

    let mut ram = target(64);
    // Just reset: the firmware has not written the block's id yet.
    ram.write(BLOCK, &[0; 10]).unwrap();
    let ram = Arc::new(Mutex::new(ram));
    let options = Options::scan_channel_zero(BASE, 0x1000, 256, Duration::from_millis(5));
    let opener = || -> link::Opener {
        let ram = Arc::clone(&ram);
        Box::new(move || Ok(Box::new(Changing(Arc::clone(&ram))) as Box<dyn Memory + Send>))
    };
    let early = Link::start_by(opener, &options, || None, Instant::now());
    assert!(
        matches!(early, Err(RttError::NotFound(_))),
        "no block yet, and no time to wait: {early:?}"
    );
    let builder = std::thread::spawn({
        let ram = Arc::clone(&ram);
        move || {
            std::thread::sleep(Duration::from_millis(60));
            ram.lock().unwrap().write(BLOCK, b"SEGGER RTT").unwrap();
        }
    });
    let link = Link::start_by(
        opener,
        &options,
        || None,
        Instant::now() + Duration::from_secs(5),
    )
    .expect("found once the target wrote its id");
    assert_eq!(link.address(), BLOCK);
    assert!(link.close(Duration::from_secs(1)));
    builder.join().unwrap();
}
