//! Validate and stage a 2 MiB ELF: ours in-process, ours through `Bench::call("artifact_upload")`, and
//! the reference 0.25 doing the same through `artifact_upload` over its MCP stdio, in the same run.
//! `cargo bench -p ahil-gate --bench artifacts`. Medians; not a test, nothing is asserted.

#[path = "../tests/artifacts_support/mod.rs"]
mod artifacts_support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use std::{env, fs};

use ahil_config::{
    Environment, canonical_config_path, default_state_root, load_authoritative, render_init_config,
};
use ahil_gate::Bench;
use ahil_gate::artifacts::{self, ArtifactRef};
use artifacts_support::{World, elf32};
use serde_json::{Value, json};

const ROUNDS: usize = 30;
const SIZE: usize = 2 * 1024 * 1024;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ours_in_process(image: &[u8]) -> Duration {
    let mut world = World::new();
    world.config.artifacts.max_upload_size_mb = 64;
    world.put("build/app.elf", image);
    let policy = world.policy();
    let samples = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            let staged =
                artifacts::resolve(&policy, &world.stager, ArtifactRef::Path("build/app.elf"))
                    .expect("the benchmark image passes");
            let elapsed = start.elapsed();
            drop(staged);
            elapsed
        })
        .collect();
    median(samples)
}

/// `artifact_upload` of `image` through the gate, `ROUNDS` times. With `fresh`, the image's last byte
/// differs every round, so each upload is new bytes under a new id and is written; without, each
/// round uploads the same bytes again, which the store keeps (issue #27).
fn ours_through_the_gate(image: &[u8], fresh: bool) -> Duration {
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let workspace = root.path().join("ws");
    fs::create_dir_all(workspace.join("build")).expect("dirs");
    fs::create_dir_all(&home).expect("home");
    fs::write(workspace.join("build/app.elf"), image).expect("image");
    let env = Environment {
        home,
        xdg_config_home: None,
        xdg_state_home: None,
        config_override: None,
        path: None,
    };
    let path = canonical_config_path(&workspace, &env);
    fs::create_dir_all(path.parent().expect("parent")).expect("config dir");
    fs::write(
        &path,
        render_init_config(&workspace, &default_state_root(&env)),
    )
    .expect("config");
    let bench = Bench::provisioned(load_authoritative(&workspace, &env).expect("loads"), env);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut image = image.to_vec();
    let samples = (0..ROUNDS)
        .map(|round| {
            if fresh && let Some(last) = image.last_mut() {
                *last = u8::try_from(round % 251).unwrap_or(0);
                fs::write(workspace.join("build/app.elf"), &image).expect("image");
            }
            let start = Instant::now();
            let outcome = runtime
                .block_on(bench.call("artifact_upload", json!({"image_path": "build/app.elf"})));
            let elapsed = start.elapsed();
            assert!(outcome.ok, "{}", outcome.to_value());
            elapsed
        })
        .collect();
    median(samples)
}

struct Reference {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Reference {
    fn send(&mut self, message: &Value) -> Value {
        let stdin = self.child.stdin.as_mut().expect("piped stdin");
        writeln!(stdin, "{message}").expect("write request");
        stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            let n = self.out.read_line(&mut line).expect("read response");
            assert!(n > 0, "the reference closed its stdout");
            let value: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if value.get("id") == message.get("id") {
                return value;
            }
        }
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn reference_binary() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/reference-venv/bin/agentic-hil")
}

fn reference(image: &[u8]) -> Option<Duration> {
    let binary = reference_binary();
    if !binary.exists() {
        return None;
    }
    let root = tempfile::tempdir().expect("temp dir");
    let home = root.path().join("home");
    let workspace = root.path().join("ws");
    fs::create_dir_all(workspace.join("build")).expect("dirs");
    fs::create_dir_all(&home).expect("home");
    fs::write(workspace.join("build/app.elf"), image).expect("image");
    let init = Command::new(&binary)
        .arg("init")
        .current_dir(&workspace)
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("reference init runs");
    assert!(init.success(), "reference init failed");
    let mut child = Command::new(&binary)
        .arg("mcp-stdio")
        .current_dir(&workspace)
        .env("HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("reference server starts");
    let out = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut server = Reference { child, out };
    server.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}),
    );
    let stdin = server.child.stdin.as_mut().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("notify");
    let samples = (1..=ROUNDS)
        .map(|id| {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "artifact_upload", "arguments": {"image_path": "build/app.elf"}}});
            let start = Instant::now();
            let response = server.send(&request);
            let elapsed = start.elapsed();
            let ok = response["result"]["structuredContent"]["ok"] == true;
            assert!(ok, "the reference refused the image: {response}");
            elapsed
        })
        .collect();
    Some(median(samples))
}

fn main() {
    let image = elf32(40, SIZE);
    println!("2 MiB ELF, median of {ROUNDS} rounds each");
    let in_process = ours_in_process(&image);
    println!(
        "  ours, validate + stage (resolve):             {:8.3} ms",
        ms(in_process)
    );
    let gate = ours_through_the_gate(&image, false);
    println!("row\tupload_ms\tours\t{:.3}", ms(gate));
    println!(
        "  ours, artifact_upload through Bench::call:    {:8.3} ms (the same bytes again)",
        ms(gate)
    );
    let new_bytes = ours_through_the_gate(&image, true);
    println!("row\tupload_new_ms\tours\t{:.3}", ms(new_bytes));
    println!(
        "  ours, artifact_upload of new bytes each round:{:8.3} ms",
        ms(new_bytes)
    );
    match reference(&image) {
        Some(theirs) => {
            println!("row\tupload_ms\treference\t{:.3}", ms(theirs));
            println!(
                "  reference 0.25, artifact_upload over stdio:   {:8.3} ms",
                ms(theirs)
            );
            println!(
                "  ratio reference / ours: {:.1}x (resolve), {:.1}x (artifact_upload)",
                ms(theirs) / ms(in_process),
                ms(theirs) / ms(gate)
            );
        }
        None => println!(
            "  reference 0.25 not installed at {}; no comparison",
            reference_binary().display()
        ),
    }
}
