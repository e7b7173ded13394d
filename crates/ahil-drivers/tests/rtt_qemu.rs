//! RTT on the emulated board: the firmware's control block found and read while the core runs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ahil_drivers::qemu::memory::QemuMemory;
use ahil_drivers::qemu::{Board, BoardConfig};
use ahil_drivers::rtt::link::{Link, Locate, Options};
use ahil_drivers::rtt::{ControlBlock, Memory};

fn firmware() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build/ahil-fw-v1.elf")
}

/// Read up channel 0 until `text` has arrived (or 5 s pass); everything read so far.
fn read_until(block: &ControlBlock, memory: &mut QemuMemory, seen: &mut Vec<u8>, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !String::from_utf8_lossy(seen).contains(text) {
        assert!(
            Instant::now() < deadline,
            "{text:?} never came: {:?}",
            String::from_utf8_lossy(seen)
        );
        seen.extend(block.read_up(memory, 0, 4096).expect("read up"));
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_firmwares_rtt_lines_are_read_and_its_echo_answers_without_halting_the_core() {
    let dir = tempfile::tempdir().expect("temp dir");
    let board = Board::start(BoardConfig::new(dir.path().join("sim")).with_image(firmware()))
        .expect("board starts");
    board.run().expect("board runs");
    let mut memory = QemuMemory::open(board.paths(), Duration::from_secs(5)).expect("memory opens");

    // The control block is found by scanning RAM, as a config without an address asks; it may
    // take the firmware a moment to build it.
    let deadline = Instant::now() + Duration::from_secs(5);
    let block = loop {
        match ControlBlock::scan(&mut memory, 0x2000_0000, 0x1000) {
            Ok(block) => break block,
            Err(error) if Instant::now() < deadline => {
                let _ = error;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => panic!("no control block: {error}"),
        }
    };
    assert_eq!(block.address, 0x2000_0070, "the ELF's _SEGGER_RTT");
    assert_eq!((block.up.len(), block.down.len()), (1, 1));
    assert_eq!(
        block
            .name(&mut memory, ahil_drivers::rtt::Direction::Up, 0)
            .expect("name"),
        "Terminal"
    );
    memory
        .confine_writes_to(block.address)
        .expect("the block's page");

    let mut seen = Vec::new();
    read_until(
        &block,
        &mut memory,
        &mut seen,
        "rtt boot ahil-fw 1.0 netduinoplus2\n",
    );
    read_until(&block, &mut memory, &mut seen, "rtt tick 2\n");
    assert_eq!(
        board.status().expect("status").status,
        "running",
        "the core ran throughout"
    );

    assert_eq!(
        block.write_down(&mut memory, 0, b"ping!").expect("write"),
        5
    );
    read_until(&block, &mut memory, &mut seen, "ping!");

    // A write outside the block's memory (here: flash) is refused, whatever a descriptor says.
    let error = memory
        .write(0x0800_0000, &[0])
        .expect_err("flash is not writable");
    assert_eq!(error.error_type(), "rtt_memory_unavailable");

    // What a poll costs: the block's offsets and an empty ring, read a thousand times.
    let started = Instant::now();
    for _ in 0..1000 {
        let _ = block.read_up(&mut memory, 0, 4096).expect("read");
    }
    eprintln!("one up-channel poll: {:?}", started.elapsed() / 1000);
    board.stop().expect("board stops");
}

#[test]
fn a_link_polls_the_up_channel_into_a_ring_and_follows_a_reset_of_the_board() {
    let dir = tempfile::tempdir().expect("temp dir");
    let board = Board::start(BoardConfig::new(dir.path().join("sim")).with_image(firmware()))
        .expect("board starts");
    board.run().expect("board runs");
    let options = Options {
        locate: Locate::At(0x2000_0070),
        up: vec![0],
        down: vec![0],
        ring_bytes: 4096,
        interval: Duration::from_millis(10),
    };
    // The firmware may not have built its block yet.
    let deadline = Instant::now() + Duration::from_secs(5);
    let link = loop {
        match Link::start(
            QemuMemory::opener(board.paths().clone(), Duration::from_secs(5)),
            &options,
            None,
        ) {
            Ok(link) => break link,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(error) => panic!("no link: {error}"),
        }
    };
    let ring = link.ring(0).expect("up channel 0 polled");
    // The ring matches no pattern: each wait reads on until its text has come, and keeps what
    // came after it for the next one.
    let mut seen: Vec<u8> = Vec::new();
    let mut wait = |text: &str| {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(at) = seen.windows(text.len()).position(|w| w == text.as_bytes()) {
                seen.drain(..at + text.len());
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?}: {:?}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend(ring.take(4096, deadline).bytes);
        }
    };
    wait("rtt boot ahil-fw 1.0 netduinoplus2\n");
    wait("rtt tick 1\n");
    assert_eq!(link.write(0, b"echo me").expect("write"), 7);
    wait("echo me");
    // A reset rebuilds the block; the link keeps reading from the new boot line on.
    let mut qmp = board.qmp().expect("qmp");
    qmp.system_reset().expect("reset");
    drop(qmp);
    wait("rtt boot ahil-fw 1.0 netduinoplus2\n");
    wait("rtt tick 1\n");
    assert!(link.close(Duration::from_secs(2)), "the poller ends");
    board.stop().expect("board stops");
}
