//! COM sessions over MCP stdio, this build beside the reference 0.25 on the same kind of pty pair:
//! latency from a byte's arrival to the `com_read until` answer, and sustained throughput at
//! 3 Mbaud-equivalent (300 kB/s) for 10 s with the loss and the server's CPU use.
//! `cargo bench -p ahil-gate --bench serial_io`; the reference runs when AHIL_REFERENCE_BIN names it.
//! Not a test: nothing is asserted, medians are printed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use ahil_config::{Environment, canonical_config_path, default_state_root, render_init_config};
use ahil_drivers::serial::PtyPeer;
use serde_json::{Value, json};

const LATENCY_ROUNDS: usize = 40;
const THROUGHPUT: Duration = Duration::from_secs(10);
/// 3 Mbaud at 10 bits per byte.
const BYTES_PER_S: usize = 300_000;
const TICK: Duration = Duration::from_millis(10);

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(binary: &Path, workspace: &Path, home: &Path) -> Self {
        let mut child = Command::new(binary)
            .arg("mcp-stdio")
            .current_dir(workspace)
            .env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Self {
            child,
            stdin,
            stdout,
            next: 0,
        };
        server.request("initialize", &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}));
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("send");
        self.stdin.flush().expect("flush");
    }

    fn post(&mut self, method: &str, params: &Value) -> u64 {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn wait(&mut self, id: u64) -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            self.stdout.read_line(&mut line).expect("answer");
            let doc: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if doc["id"] == id {
                return doc["result"]["structuredContent"].clone();
            }
        }
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.post(method, params);
        self.wait(id)
    }

    fn call(&mut self, tool: &str, args: &Value) -> Value {
        self.request("tools/call", &json!({"name": tool, "arguments": args}))
    }

    fn cpu_ticks(&self) -> u64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let num = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // utime and stime are fields 14 and 15; after the comm field they are 11 and 12 (0-based).
        num(11) + num(12)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn world(device: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let workspace = root.path().join("ws");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&workspace).expect("ws");
    let env = Environment {
        home: home.clone(),
        xdg_config_home: Some(home.join(".config")),
        xdg_state_home: Some(home.join(".local/state")),
        config_override: None,
        path: None,
    };
    let text = render_init_config(&workspace, &default_state_root(&env)).replacen(
        "com_ports: {}",
        &format!("com_ports:\n  uart0:\n    device: \"{device}\"\n    identity_source: device\n    max_buffer_bytes: 1048576\n    permissions:\n      allow_write: true\n"),
        1,
    );
    let path = canonical_config_path(&workspace, &env);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("config dir");
    std::fs::write(path, text).expect("config");
    (root, home, workspace)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn bench(label: &str, binary: &Path) {
    let mut peer = PtyPeer::open().expect("pty pair");
    let (_root, home, workspace) = world(peer.device());
    let mut server = Server::start(binary, &workspace, &home);
    let started = server.call("com_session_start", &json!({"port_id": "uart0"}));
    assert!(started["ok"] == true, "{label}: {started}");

    // Latency: the read is waiting before the byte is sent.
    let mut latencies = Vec::with_capacity(LATENCY_ROUNDS);
    for _ in 0..LATENCY_ROUNDS {
        let id = server.post("tools/call", &json!({"name": "com_read", "arguments": {"port_id": "uart0", "until": "!", "wait_timeout_s": 5}}));
        std::thread::sleep(Duration::from_millis(100));
        let sent = Instant::now();
        peer.send(b"!").expect("send");
        let answer = server.wait(id);
        latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
        assert!(answer["until_matched"] == true, "{label}: {answer}");
    }

    // An audited effect: each com_write is a report plus chained log lines, fsynced, before it answers.
    let mut writes = Vec::with_capacity(LATENCY_ROUNDS);
    for _ in 0..LATENCY_ROUNDS {
        let sent = Instant::now();
        let answer = server.call("com_write", &json!({"port_id": "uart0", "text": "w\n"}));
        writes.push(sent.elapsed().as_secs_f64() * 1000.0);
        assert!(answer["ok"] == true, "{label}: {answer}");
    }

    // Throughput: a sender thread paces 300 kB/s of a counting pattern; the client drains.
    let ticks_before = server.cpu_ticks();
    let total = BYTES_PER_S * usize::try_from(THROUGHPUT.as_secs()).unwrap_or(10);
    let per_tick = BYTES_PER_S / 100;
    let sender = std::thread::spawn(move || {
        let begin = Instant::now();
        let mut sent = 0usize;
        let mut n = 0u8;
        while sent < total {
            let chunk: Vec<u8> = (0..per_tick)
                .map(|_| {
                    n = n.wrapping_add(1);
                    n
                })
                .collect();
            peer.send(&chunk).expect("send");
            sent += chunk.len();
            let due = TICK * u32::try_from(sent / per_tick).unwrap_or(u32::MAX);
            if let Some(rest) = due.checked_sub(begin.elapsed()) {
                std::thread::sleep(rest);
            }
        }
        (begin.elapsed(), peer)
    });
    let began = Instant::now();
    let mut received = 0usize;
    let mut overflow = 0u64;
    let mut expected = 1u8;
    let mut corrupt = 0usize;
    while received < total && began.elapsed() < THROUGHPUT + Duration::from_secs(10) {
        let read = server.call(
            "com_read",
            &json!({"port_id": "uart0", "max_bytes": 262_144, "wait_timeout_s": 0.5}),
        );
        overflow = read["overflow_bytes"].as_u64().unwrap_or(overflow);
        let hex = read["data"]["hex"].as_str().unwrap_or_default();
        for pair in hex.as_bytes().chunks(2) {
            let byte = std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .unwrap_or(0);
            if byte != expected {
                corrupt += 1;
                expected = byte;
            }
            expected = expected.wrapping_add(1);
            received += 1;
        }
    }
    let drained = began.elapsed();
    let (send_time, _peer) = sender.join().expect("sender");
    let ticks = server.cpu_ticks().saturating_sub(ticks_before);
    #[allow(clippy::cast_precision_loss, reason = "figures for people to read")]
    let (rate, cpu) = (
        received as f64 / drained.as_secs_f64() / 1000.0,
        ticks as f64 / 100.0 / drained.as_secs_f64() * 100.0,
    );
    let who = if label == "ours" { "ours" } else { "reference" };
    println!("row\tcom_write_ms\t{who}\t{:.3}", median(writes.clone()));
    println!("row\tuntil_ms\t{who}\t{:.3}", median(latencies.clone()));
    println!(
        "{label:>10}: audited com_write round trip median {:.2} ms ({LATENCY_ROUNDS} writes)",
        median(writes)
    );
    println!(
        "{label:>10}: latency median {:.2} ms (min {:.2}, {LATENCY_ROUNDS} rounds) | throughput {rate:.0} kB/s, {received}/{total} bytes in {:.1} s (sent in {:.1} s), overflow {overflow}, discontinuities {corrupt}, server CPU {cpu:.0}%",
        median(latencies.clone()),
        latencies.iter().copied().fold(f64::INFINITY, f64::min),
        drained.as_secs_f64(),
        send_time.as_secs_f64(),
    );
    let _ = server.call("com_session_stop", &json!({"port_id": "uart0"}));
}

fn main() {
    let ours = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/agentic-hil");
    if ours.exists() {
        bench("ours", &ours);
    } else {
        println!("build the release binary first: cargo build --release -p agentic-hil");
    }
    match std::env::var_os("AHIL_REFERENCE_BIN") {
        Some(reference) => bench("reference", Path::new(&reference)),
        None => println!("set AHIL_REFERENCE_BIN to run the reference beside it"),
    }
}
