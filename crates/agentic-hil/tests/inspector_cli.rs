//! Black-box: the MCP Inspector CLI (npm `@modelcontextprotocol/inspector`, pinned, installed by
//! scripts/setup-debian.sh into target/inspector), a client nobody here wrote, lists our tools and
//! calls one, in both protocol eras: `legacy` (initialize, 2025-11-25) and `modern` (2026-07-28,
//! `server/discover` and the version in every request's `_meta`). What went over the wire is
//! captured, so each test also proves which era it spoke. Missing Inspector is a failure, not a skip.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::World;

fn inspector_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/inspector")
}

/// The node setup recorded and the Inspector's entry point, or a failure that says how to get them.
fn inspector() -> (PathBuf, PathBuf) {
    let root = inspector_root();
    let entry =
        root.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let node = std::fs::read_to_string(root.join("node-path"))
        .map(|text| PathBuf::from(text.trim()))
        .ok()
        .filter(|node| node.is_absolute() && node.exists());
    match node {
        Some(node) if entry.exists() => (node, entry),
        _ => panic!(
            "The MCP Inspector is not installed under target/inspector: run scripts/setup-debian.sh, which installs it."
        ),
    }
}

struct Run {
    code: Option<i32>,
    stdout: String,
    /// The client's requests as the server received them.
    sent: String,
}

/// The Inspector CLI with `args`, against `agentic-hil mcp-stdio` started in `dir` behind a `tee`
/// that keeps what the Inspector sent.
fn inspect(world: &World, dir: &Path, era: &str, args: &[&str]) -> Run {
    let (node, entry) = inspector();
    let wire = world
        .home
        .parent()
        .expect("world root")
        .join(format!("{era}-sent.jsonl"));
    let server = format!(
        "/usr/bin/tee '{}' | '{}' mcp-stdio",
        wire.display(),
        World::binary()
    );
    let mut cmd = Command::new(node);
    world.scrub(&mut cmd);
    let mut child = cmd
        .current_dir(dir)
        .arg(entry)
        .args(["--cli", "--protocol-era", era, "--quiet"])
        .arg("-e")
        .arg(format!(
            "XDG_CONFIG_HOME={}",
            world.home.join(".config").display()
        ))
        .arg("-e")
        .arg(format!(
            "XDG_STATE_HOME={}",
            world.home.join(".local/state").display()
        ))
        .arg("--cwd")
        .arg(dir)
        .args(args)
        .args(["/bin/sh", "-c", &server])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs the Inspector");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    // A deadline so a hung client fails the test instead of hanging it; the result is not timed.
    let deadline = Instant::now() + Duration::from_mins(2);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = status.expect("the Inspector finished within two minutes");
    Run {
        code: status.code(),
        stdout: reader.join().expect("stdout read"),
        sent: std::fs::read_to_string(&wire).unwrap_or_default(),
    }
}

fn assert_spoke(era: &str, sent: &str) {
    let first: Value =
        serde_json::from_str(sent.lines().next().expect("the client sent something"))
            .expect("JSON-RPC");
    match era {
        "legacy" => {
            assert_eq!(first["method"], json!("initialize"), "{sent}");
            assert_eq!(
                first["params"]["protocolVersion"],
                json!("2025-11-25"),
                "{sent}"
            );
        }
        _ => assert!(
            sent.lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|m| m["method"] == json!("tools/call"))
                .all(
                    |m| m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
                        == json!("2026-07-28")
                ),
            "{sent}"
        ),
    }
    assert!(
        sent.contains("\"tools/call\"") || sent.contains("\"tools/list\""),
        "{sent}"
    );
}

fn list_and_call_in_a_project(era: &str) {
    let world = World::new();
    let (doc, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "{doc:#}");

    let listed = inspect(&world, &world.workspace, era, &["--method", "tools/list"]);
    assert_eq!(listed.code, Some(0), "{}", listed.stdout);
    assert_spoke(era, &listed.sent);
    let tools: Value = serde_json::from_str(&listed.stdout).expect("tools/list prints JSON");
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"flash_firmware"), "{names:?}");
    assert!(names.contains(&"project_config_describe"), "{names:?}");

    let called = inspect(
        &world,
        &world.workspace,
        era,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "project_config_describe",
        ],
    );
    assert_eq!(called.code, Some(0), "{}", called.stdout);
    assert_spoke(era, &called.sent);
    assert!(called.sent.contains("\"tools/call\""), "{}", called.sent);
    let result: Value = serde_json::from_str(&called.stdout).expect("tools/call prints JSON");
    assert_eq!(result["structuredContent"]["ok"], json!(true), "{result:#}");
}

fn a_call_in_home(era: &str) {
    let world = World::new();
    let called = inspect(
        &world,
        &world.home,
        era,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "project_config_describe",
        ],
    );
    assert_spoke(era, &called.sent);
    // The Inspector exits non-zero for an isError result and still prints it.
    assert_ne!(called.code, Some(0));
    let result: Value = serde_json::from_str(&called.stdout).expect("tools/call prints JSON");
    assert_eq!(result["isError"], json!(true), "{result:#}");
    assert_eq!(
        result["structuredContent"]["error_type"],
        json!("workspace_is_home"),
        "{result:#}"
    );
}

#[test]
fn the_inspector_lists_the_tools_and_calls_one_in_the_2025_11_25_era() {
    list_and_call_in_a_project("legacy");
}

#[test]
fn the_inspector_lists_the_tools_and_calls_one_in_the_2026_07_28_era() {
    list_and_call_in_a_project("modern");
}

#[test]
fn the_inspector_connects_from_home_and_is_told_workspace_is_home_in_both_eras() {
    a_call_in_home("legacy");
    a_call_in_home("modern");
}
