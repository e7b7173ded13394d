//! Start-up benchmark: process start to the `tools/list` answer over stdio, the peak resident
//! memory at that moment, and then the round trip of a gate-only call (`hardware_lease_status`: the
//! whole pipeline and the lease records, no device), for this binary and (when installed) the
//! reference implementation, in the same run. Run with `cargo bench -p agentic-hil --bench startup`.

// Memory figures are KiB counts far below 2^52, so the float conversions are exact.
#![allow(clippy::cast_precision_loss)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;
use common::{World, reference_binary};

const RUNS: usize = 30;
/// Gate-only calls per server, after start-up.
const CALLS: usize = 10;

struct Sample {
    elapsed: Duration,
    peak_rss_kib: u64,
    calls: Vec<Duration>,
}

fn main() {
    // The binary a user installs: `cargo bench` builds its own with the dev-dependencies' features
    // unified in, so other code and symbol names, which the start-up order file does not match.
    // scripts/bench.sh keeps a copy of the plain release build and names it here.
    let ours = std::env::var_os("AHIL_RELEASE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_agentic-hil")),
        PathBuf::from,
    );
    let reference = reference_binary();
    let world = World::new(&ours);

    let ours_samples = measure(&world, &ours);
    report("agentic-hil (Rust)", &ours_samples);
    if let Some(reference) = reference {
        let ref_samples = measure(&world, &reference);
        report("agentic-hil 0.25.0 (reference)", &ref_samples);
        let ours_ms = median_ms(&ours_samples);
        let ref_ms = median_ms(&ref_samples);
        println!(
            "ratio: start-up {:.1}x faster, peak RSS {:.1}x smaller, hardware_lease_status {:.1}x faster (medians of {RUNS} starts, {} calls)",
            ref_ms / ours_ms,
            median_rss(&ref_samples) as f64 / median_rss(&ours_samples) as f64,
            median_call_ms(&ref_samples) / median_call_ms(&ours_samples),
            RUNS * CALLS
        );
    } else {
        println!(
            "reference not installed: run scripts/setup-debian.sh (or set AHIL_REFERENCE_BIN)"
        );
    }
}

fn measure(world: &World, program: &Path) -> Vec<Sample> {
    // One warm-up run so both start from a warm page cache.
    let _ = once(world, program);
    (0..RUNS).map(|_| once(world, program)).collect()
}

fn once(world: &World, program: &Path) -> Sample {
    let start = Instant::now();
    let mut child = world
        .command(program)
        .arg("mcp-stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let messages = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        "\n"
    );
    stdin.write_all(messages.as_bytes()).expect("send");
    stdin.flush().expect("flush");
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).expect("read");
        assert!(n > 0, "server closed before answering tools/list");
        // The reference writes `"id": 2` with a space, so compare parsed ids, not text.
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if answer["id"] == 2 {
            assert!(
                answer["result"]["tools"].is_array(),
                "tools/list failed: {line}"
            );
            break;
        }
    }
    let elapsed = start.elapsed();
    let peak_rss_kib = peak_rss(child.id()).unwrap_or(0);
    let mut calls = Vec::with_capacity(CALLS);
    for id in 0..CALLS {
        let id = 100 + id;
        let call = Instant::now();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"hardware_lease_status","arguments":{{}}}}}}"#
        )
        .expect("send");
        stdin.flush().expect("flush");
        loop {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read");
            assert!(
                n > 0,
                "server closed before answering hardware_lease_status"
            );
            let answer: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            if answer["id"] == id {
                assert!(
                    answer["result"]["structuredContent"]["ok"] == true,
                    "hardware_lease_status failed: {line}"
                );
                break;
            }
        }
        calls.push(call.elapsed());
    }
    drop(stdin);
    let _ = child.wait();
    Sample {
        elapsed,
        peak_rss_kib,
        calls,
    }
}

fn median_call_ms(samples: &[Sample]) -> f64 {
    let mut ms: Vec<f64> = samples
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.as_secs_f64() * 1000.0))
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// VmHWM: the high-water mark of resident memory since the process started.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn median_ms(samples: &[Sample]) -> f64 {
    let mut ms: Vec<f64> = samples
        .iter()
        .map(|s| s.elapsed.as_secs_f64() * 1000.0)
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn median_rss(samples: &[Sample]) -> u64 {
    let mut kib: Vec<u64> = samples.iter().map(|s| s.peak_rss_kib).collect();
    kib.sort_unstable();
    kib[kib.len() / 2]
}

fn report(name: &str, samples: &[Sample]) {
    // The lines scripts/bench.sh puts in its table.
    let who = if name.contains("reference") {
        "reference"
    } else {
        "ours"
    };
    println!("row\tstartup_ms\t{who}\t{:.3}", median_ms(samples));
    println!(
        "row\trss_mib\t{who}\t{:.3}",
        median_rss(samples) as f64 / 1024.0
    );
    println!("row\tgate_call_ms\t{who}\t{:.3}", median_call_ms(samples));
    println!(
        "{name}: start to tools/list median {:.2} ms, peak RSS median {:.1} MiB ({} runs); hardware_lease_status median {:.2} ms",
        median_ms(samples),
        median_rss(samples) as f64 / 1024.0,
        samples.len(),
        median_call_ms(samples)
    );
}
