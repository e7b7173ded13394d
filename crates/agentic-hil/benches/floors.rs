//! The floors `scripts/bench.sh` prints beside every row: the same work without the gate, measured in
//! the same run (`ahil-sim`'s `ahil-floor` and the CAN bridge simulator, and in-process file work).
//! Prints `row\t<key>\tfloor\t<value>` lines; medians. Not a test: nothing is asserted.
//! `cargo bench -p agentic-hil --bench floors`.

#![allow(clippy::cast_precision_loss, reason = "figures for people to read")]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use ahil_sim::executables::{CAN_BRIDGE, FLOOR, executable};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const STARTS: usize = 30;
const CALLS: usize = 300;
const AUDITED: usize = 40;
const SENDS: usize = 200;
const BURST: usize = 1000;
const UPLOAD: usize = 2 * 1024 * 1024;

struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Peer {
    fn start(program: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("floor starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self {
            child,
            stdin,
            stdout,
            next: 0,
        }
    }

    fn send(&mut self, text: &str) {
        self.stdin.write_all(text.as_bytes()).expect("send");
        self.stdin.flush().expect("flush");
    }

    fn line(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).expect("answer");
        assert!(n > 0, "the floor closed its output");
        serde_json::from_str(&line).expect("a JSON line")
    }

    /// One request and its answer; answers the result.
    fn call(&mut self, method: &str, params: &Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        ));
        loop {
            let answer = self.line();
            if answer["id"] == id {
                return answer["result"].clone();
            }
        }
    }

    fn round_trips(&mut self, n: usize) -> f64 {
        median((0..n).map(|_| {
            let clock = Instant::now();
            self.call("ping", &json!({}));
            ms(clock.elapsed())
        }))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn row(key: &str, value: f64) {
    println!("row\t{key}\tfloor\t{value:.3}");
}

/// Process start to the answer of its first request line, and the peak RSS then.
fn startup(floor: &Path) -> (f64, f64) {
    let mut rss = Vec::new();
    let starts = median((0..STARTS).map(|_| {
        let clock = Instant::now();
        let mut peer = Peer::start(floor, &["echo"]);
        peer.call("tools/list", &json!({}));
        let elapsed = ms(clock.elapsed());
        rss.push(peak_rss_kib(peer.child.id()) / 1024.0);
        elapsed
    }));
    (starts, median(rss.into_iter()))
}

fn peak_rss_kib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(f64::NAN)
}

/// A byte written to the pty's controlling side until the floor's line about it is read.
fn until_latency(floor: &Path) -> f64 {
    let mut pty = ahil_sim::PtyPeer::open().expect("pty pair");
    let device = pty.device().to_owned();
    let mut peer = Peer::start(floor, &["pty", &device]);
    std::thread::sleep(Duration::from_millis(200));
    median((0..AUDITED).map(|_| {
        std::thread::sleep(Duration::from_millis(20));
        let clock = Instant::now();
        pty.send(b"!").expect("send");
        peer.line();
        ms(clock.elapsed())
    }))
}

/// The bridge alone: its burst read rate, a send's round trip, a request to the ECU and its answer.
fn bridge() -> (f64, f64, f64) {
    let mut bridge = Peer::start(&executable(CAN_BRIDGE), &["--period-ms", "0"]);
    bridge.call("open", &json!({"channel": "sim0"}));
    let rate = median((0..5).map(|_| {
        let clock = Instant::now();
        bridge.call(
            "send",
            &json!({"frame": {"id": 0x7df, "data_hex": format!("{BURST:04x}")}}),
        );
        let mut got = 0;
        while got < BURST {
            let read = bridge.call("read", &json!({"max_frames": 1024, "wait_timeout_s": 1}));
            got += read["frames"].as_array().map_or(0, Vec::len);
        }
        BURST as f64 / clock.elapsed().as_secs_f64()
    }));
    let send = median((0..SENDS).map(|i| {
        let clock = Instant::now();
        bridge.call(
            "send",
            &json!({"frame": {"id": 0x123, "data_hex": format!("{i:04x}")}}),
        );
        ms(clock.elapsed())
    }));
    let exchange = median((0..100).map(|_| {
        let clock = Instant::now();
        bridge.call("send", &json!({"frame": {"id": 0x7e0, "data_hex": "1001"}}));
        bridge.call("read", &json!({"max_frames": 16, "wait_timeout_s": 5}));
        ms(clock.elapsed())
    }));
    (rate, send, exchange)
}

/// Read the 2 MiB image, hash it, and store a private copy under its digest as a content-addressed
/// store must: a temp file written and fsynced, renamed over the digest's name, the directory
/// fsynced. Each round stores the same bytes, as the upload bench does, so each replaces the copy
/// the round before left (a fresh name per round measured 2x slower on ext4: it allocates where a
/// replace frees, and it is not what either upload does).
fn upload() -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("app.elf");
    let image: Vec<u8> = (0..UPLOAD)
        .map(|i| u8::try_from(i * 7 % 251).unwrap_or(0))
        .collect();
    std::fs::write(&source, &image).expect("image");
    median((0..30).map(|i| {
        let clock = Instant::now();
        let mut bytes = Vec::new();
        std::fs::File::open(&source)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .expect("read");
        let digest = Sha256::digest(&bytes);
        let name = digest.iter().fold(String::new(), |mut name, b| {
            let _ = write!(name, "{b:02x}");
            name
        });
        let temp = dir.path().join(format!(".{name}.tmp-{i}"));
        let mut file = std::fs::File::create(&temp).expect("copy");
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&temp, dir.path().join(&name)))
            .and_then(|()| std::fs::File::open(dir.path()))
            .and_then(|d| d.sync_all())
            .expect("write");
        ms(clock.elapsed())
    }))
}

fn main() {
    let floor = executable(FLOOR);
    let (start, rss) = startup(&floor);
    row("startup_ms", start);
    row("rss_mib", rss);
    let mut echo = Peer::start(&floor, &["echo"]);
    let call = echo.round_trips(CALLS);
    row("gate_call_ms", call);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut audited = Peer::start(&floor, &["audited", &dir.path().display().to_string()]);
    let audited_ms = audited.round_trips(AUDITED);
    row("com_write_ms", audited_ms);
    row("until_ms", until_latency(&floor));
    let (rate, send, exchange) = bridge();
    row("can_read_fps", rate);
    row("can_send_ms", audited_ms + send);
    row("can_reqresp_ms", audited_ms + call + exchange);
    // One floor for both upload rows: the same bytes again and new bytes are the same work to it.
    let stored = upload();
    row("upload_ms", stored);
    row("upload_new_ms", stored);
}
