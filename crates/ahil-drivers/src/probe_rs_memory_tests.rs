use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use super::*;
use crate::rtt::link::{Link, Options};

const RAM: u32 = 0x2000_0000;

/// A memory of `len` bytes at `base` that records the accesses it serves.
struct Vector {
    base: u64,
    bytes: Vec<u8>,
}

impl TargetMemory for Vector {
    fn read(&mut self, address: u64, buf: &mut [u8]) -> Result<(), String> {
        let at = usize::try_from(address - self.base).map_err(|e| e.to_string())?;
        let from = self.bytes.get(at..at + buf.len()).ok_or("out of range")?;
        buf.copy_from_slice(from);
        Ok(())
    }

    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), String> {
        let at = usize::try_from(address - self.base).map_err(|e| e.to_string())?;
        self.bytes
            .get_mut(at..at + data.len())
            .ok_or("out of range")?
            .copy_from_slice(data);
        Ok(())
    }
}

fn served(memory: &mut Vector, input: &str) -> Vec<MemoryReply> {
    let mut replies = Vec::new();
    serve(memory, input.as_bytes(), |line| {
        replies.push(serde_json::from_str(line).expect("a reply line"));
    });
    replies
}

#[test]
fn the_memory_server_answers_each_line_once_and_refuses_what_it_cannot_do() {
    let mut memory = Vector {
        base: u64::from(RAM),
        bytes: vec![0; 64],
    };
    let input = format!(
        "{}\n{}\nnot json\n\n{}\n{}\n",
        r#"{"write":{"address":536870916,"hex":"cafe"}}"#,
        r#"{"read":{"address":536870912,"length":8}}"#,
        r#"{"read":{"address":536870912,"length":4294967295}}"#,
        r#"{"write":{"address":536870912,"hex":"xyz"}}"#,
    );
    let replies = served(&mut memory, &input);
    assert_eq!(
        replies.len(),
        5,
        "one reply per non-empty line: {replies:?}"
    );
    assert_eq!(replies[0], MemoryReply::Written(2));
    assert_eq!(replies[1], MemoryReply::Bytes("00000000cafe0000".into()));
    for refused in &replies[2..] {
        assert!(matches!(refused, MemoryReply::Failed(_)), "{refused:?}");
    }
}

#[test]
fn hex_round_trips_and_odd_or_foreign_digits_are_refused() {
    assert_eq!(to_hex(&[0, 0xab, 0x10]), "00ab10");
    assert_eq!(from_hex("00ab10"), Some(vec![0, 0xab, 0x10]));
    assert_eq!(from_hex("0ab"), None);
    assert_eq!(from_hex("zz"), None);
}

/// A stand-in for `agentic-hil probe-rs-worker --request {"op":"memory",...}`: prints library
/// noise, then the attach answer and one reply per request over `memory.bin` (at 0x20000000) in
/// its directory; `mode` there is `ok`, `refuse` (the attach fails), `silent` (never answers) or
/// `deaf` (attaches, then ignores stdin and never exits, as a worker stuck in a USB call would).
/// Every request it gets is appended to `requests.log`.
const FAKE_WORKER: &str = r#"#!/usr/bin/python3
import json, os, sys, time
mode = open("mode").read().strip()
open("worker.pid", "w").write(str(os.getpid()))
if mode == "silent":
    sys.stdin.read()
    sys.exit(0)
print("Read 0x20000000 = 0", flush=True)
if mode == "refuse":
    print(json.dumps({"ok": False, "class": "target_not_detected", "reached": "possible",
                      "message": "no core answered", "data": {}}), flush=True)
    sys.exit(1)
mem = bytearray(open("memory.bin", "rb").read())
base = 0x20000000
print(json.dumps({"ok": True, "message": "attached", "data": {"regions": {
    "ram": [[base, base + len(mem)]], "nvm": [[0x08000000, 0x08100000]]}}}), flush=True)
if mode == "deaf":
    sys.stdin.close()
    while True:
        time.sleep(1)
log = open("requests.log", "a")
for line in sys.stdin:
    log.write(line); log.flush()
    op = json.loads(line)
    if "read" in op:
        at, n = op["read"]["address"] - base, op["read"]["length"]
        if at < 0:
            reply = {"bytes": "00" * n}
        else:
            reply = {"bytes": mem[at:at + n].hex()}
    else:
        at, data = op["write"]["address"] - base, bytes.fromhex(op["write"]["hex"])
        mem[at:at + len(data)] = data
        reply = {"written": len(data)}
    print("Write noise", flush=True)
    print(json.dumps(reply), flush=True)
"#;

/// A control block at RAM + 0x100 with one up channel (ring at RAM + 0x200, 64 bytes) holding
/// `text`, and one down channel (ring at RAM + 0x300, 16 bytes).
fn memory_image(text: &[u8]) -> Vec<u8> {
    let mut mem = vec![0u8; 0x400];
    let block = 0x100;
    mem[block..block + 10].copy_from_slice(b"SEGGER RTT");
    let words: [u32; 14] = [
        1,
        1,
        0,
        RAM + 0x200,
        64,
        u32::try_from(text.len()).expect("short"),
        0,
        0,
        0,
        RAM + 0x300,
        16,
        0,
        0,
        0,
    ];
    for (i, word) in words.iter().enumerate() {
        let at = block + 16 + i * 4;
        mem[at..at + 4].copy_from_slice(&word.to_le_bytes());
    }
    mem[0x200..0x200 + text.len()].copy_from_slice(text);
    mem
}

struct Fake {
    dir: tempfile::TempDir,
    worker: std::path::PathBuf,
}

impl Fake {
    fn new(mode: &str, text: &[u8]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let worker = dir.path().join("worker.py");
        std::fs::write(&worker, FAKE_WORKER).expect("the fake worker is written");
        std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(dir.path().join("mode"), mode).expect("mode");
        std::fs::write(dir.path().join("memory.bin"), memory_image(text)).expect("memory");
        Self { dir, worker }
    }

    fn open(&self) -> Result<ProbeRsMemory, RttError> {
        ProbeRsMemory::open(
            &self.worker,
            &target(),
            Duration::from_secs(5),
            Duration::from_millis(800),
        )
    }

    fn requests(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("requests.log")).unwrap_or_default()
    }
}

fn target() -> TargetRef {
    TargetRef {
        chip: "STM32F405RGTx".into(),
        probe: None,
        protocol: "swd".into(),
    }
}

#[test]
fn an_rtt_link_over_the_probe_rs_worker_reads_the_up_channel_and_publishes_rdoff() {
    let fake = Fake::new("ok", b"hello over probe-rs\n");
    let (worker, target) = (fake.worker.clone(), target());
    let opener = ProbeRsMemory::opener(
        worker,
        target,
        Duration::from_secs(5),
        Duration::from_millis(800),
    );
    let options = Options::scan_channel_zero(RAM, 0x400, 4096, Duration::from_millis(10));
    let link = Link::start(opener, &options, None).expect("the block is found");
    assert_eq!(link.address(), RAM + 0x100);
    let ring = link.ring(0).expect("up 0");
    assert_eq!(
        crate::serial::ring::take_until_seen(ring, "\n"),
        b"hello over probe-rs\n"
    );
    assert_eq!(link.write(0, b"hi").expect("a write goes in"), 2);
    assert!(link.close(Duration::from_secs(2)));
    let requests = fake.requests();
    // RdOff of up channel 0 (block + 24 + 16) is published as one aligned word.
    assert!(
        requests.contains(&format!(
            r#"{{"write":{{"address":{},"hex":"14000000"}}}}"#,
            RAM + 0x100 + 40
        )),
        "{requests}"
    );
}

#[test]
fn reads_outside_the_chips_ram_and_flash_and_writes_outside_the_blocks_ram_never_reach_the_worker()
{
    let fake = Fake::new("ok", b"x");
    let mut memory = fake.open().expect("the worker attaches");
    let mut word = [0u8; 4];
    // A peripheral (GPIOA's ODR): a descriptor aimed there is not followed.
    let error = memory.read(0x4002_0014, &mut word).expect_err("refused");
    assert!(error.to_string().contains("RAM and flash"), "{error}");
    memory
        .read(0x0800_0000, &mut word)
        .expect("flash is readable");
    let error = memory
        .write(RAM, &[1])
        .expect_err("no write before confinement");
    assert_eq!(error.error_type(), "rtt_memory_unavailable");
    memory
        .confine_writes_to(RAM + 0x100)
        .expect("the block is in RAM");
    memory
        .write(RAM + 0x3fc, &[1, 2, 3, 4])
        .expect("inside RAM");
    let error = memory
        .write(RAM + 0x3fe, &[1, 2, 3, 4])
        .expect_err("past the region's end");
    assert!(error.to_string().contains("control block's RAM"), "{error}");
    memory
        .write(0x0800_0000, &[0])
        .expect_err("flash is not writable");
    let requests = fake.requests();
    assert!(!requests.contains("1073872916"), "{requests}");
    assert_eq!(requests.matches("\"write\"").count(), 1, "{requests}");
    let error = memory
        .confine_writes_to(0x0800_0000)
        .expect_err("a block in flash");
    assert_eq!(error.error_type(), "rtt_control_block_invalid");
}

#[test]
fn a_worker_that_cannot_attach_is_unavailable_memory_in_its_own_words() {
    let fake = Fake::new("refuse", b"");
    let Err(error) = fake.open() else {
        panic!("the attach was refused")
    };
    assert_eq!(error.error_type(), "rtt_memory_unavailable");
    let text = error.to_string();
    assert!(
        text.contains("target_not_detected") && text.contains("no core answered"),
        "{text}"
    );
}

#[test]
fn a_silent_worker_is_given_up_on_at_the_attach_limit() {
    let fake = Fake::new("silent", b"");
    let started = Instant::now();
    let Err(error) = ProbeRsMemory::open(
        &fake.worker,
        &target(),
        Duration::from_millis(300),
        Duration::from_millis(300),
    ) else {
        panic!("a silent worker never attaches")
    };
    assert!(error.to_string().contains("did not answer"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_worker_that_ignores_the_closed_stdin_is_killed_when_the_memory_is_dropped() {
    let fake = Fake::new("deaf", b"");
    let memory = fake.open().expect("the worker attaches");
    let pid: i32 = std::fs::read_to_string(fake.dir.path().join("worker.pid"))
        .expect("the worker wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    let started = Instant::now();
    drop(memory);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z"),
        "the worker's group was killed and reaped: {stat}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}
