//! Soak: two servers on one emulated board and one simulated CAN bus (the bridge simulator with its
//! ECU) take random tool calls at the same time. Afterwards
//! nothing leaked (no child process, no file descriptor growth, no held lock, flat memory), every
//! audited call is in the canonical chained log, and the chain verifies.
//!
//! `AHIL_SOAK_CALLS` sets the calls per client (default 120, which runs in CI in a few seconds);
//! `AHIL_SOAK_CALLS=5000` is the long run.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::World;
use support::raw::Mcp;

fn calls_per_client() -> usize {
    std::env::var("AHIL_SOAK_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120)
}

/// A tiny deterministic generator: the soak must be repeatable from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn configure(world: &World) {
    assert!(world.run(&["init"]).status.success());
    let state = world.home.join(".local/state/agentic-hil");
    let uart = state.join("sim/board/uart");
    let bridge = world.write_fake_tool(
        "bridge-ecu",
        &format!(
            "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 20\n",
            support::can_bridge_simulator().display()
        ),
    );
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: sim\n  controller: stm32f405\n\
         debuggers:\n  board:\n    type: qemu\n    probe_id: soak-board\n    timeout_s: 10\n    permissions:\n      allow_flash: true\n      allow_reset: true\n\
         artifacts:\n  allowed_roots: [fw]\n\
         com_ports:\n  uart:\n    device: \"{uart}\"\n    resource_id: soak-uart\n    permissions:\n      allow_write: true\n\
         can_buses:\n  ecu:\n    adapter: process\n    channel: sim-ecu\n    executable: \"{bridge}\"\n    timeout_s: 5\n    permissions:\n      allow_write: true\n",
        ws = world.workspace.display(),
        state = state.display(),
        uart = uart.display(),
        bridge = bridge.display(),
    );
    std::fs::write(world.config_path(), config).expect("config");
    support::sim_board::copy_firmware(world, &["ahil-fw-v1.elf"]);
}

fn proc_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Processes (other than QEMU) whose environment names this HOME: what a server left behind.
fn children_under(home: &Path) -> Vec<String> {
    support::processes::under_home(home)
        .into_iter()
        .map(|(_, cmdline)| cmdline)
        .filter(|cmdline| !cmdline.contains("qemu-system") && !cmdline.contains("sim supervise"))
        .collect()
}

/// One random call: (tool, arguments).
fn pick(rng: &mut Rng) -> (&'static str, Value) {
    match rng.below(100) {
        0..=29 => ("probe_target", json!({})),
        30..=39 => ("reset_target", json!({"mode": "run"})),
        40..=44 => ("flash_firmware", json!({"image_path": "fw/ahil-fw-v1.elf"})),
        45..=54 => ("com_session_start", json!({"port_id": "uart"})),
        55..=64 => ("com_write", json!({"port_id": "uart", "text": "ping\n"})),
        65..=74 => (
            "com_read",
            json!({"port_id": "uart", "until": "\n", "wait_timeout_s": 0.2}),
        ),
        75..=77 => ("com_session_stop", json!({"port_id": "uart"})),
        78..=80 => ("can_session_start", json!({"bus_id": "ecu"})),
        81..=84 => (
            "can_send",
            json!({"bus_id": "ecu", "frame_id": "0x7E0", "data_hex": "10 01"}),
        ),
        85..=88 => (
            "can_read",
            json!({"bus_id": "ecu", "max_frames": 16, "wait_timeout_s": 0.1}),
        ),
        89 => ("can_session_stop", json!({"bus_id": "ecu"})),
        90..=94 => ("hardware_lease_status", json!({})),
        _ => ("get_last_report", json!({})),
    }
}

struct Tally {
    /// Calls of each tool whose result names a canonical log line (`log_path`).
    logged: std::collections::BTreeMap<String, usize>,
    /// Calls of each tool that succeeded.
    succeeded: std::collections::BTreeMap<String, usize>,
    calls: usize,
    /// (fds, rss KiB) after the warm-up and at the end.
    warm: (usize, u64),
    end: (usize, u64),
}

fn drive(world: &World, seed: u64, count: usize) -> Tally {
    let mut server = Mcp::ours(world);
    let pid = server.pid();
    let mut rng = Rng(seed);
    let mut tally = Tally {
        logged: std::collections::BTreeMap::new(),
        succeeded: std::collections::BTreeMap::new(),
        calls: 0,
        warm: (0, 0),
        end: (0, 0),
    };
    for i in 0..count {
        if i == count / 5 {
            let _ = server.call("com_session_stop", &json!({"port_id": "uart"}));
            let _ = server.call("can_session_stop", &json!({"bus_id": "ecu"}));
            tally.warm = (open_fds(pid), proc_field(pid, "VmRSS:"));
        }
        let (tool, args) = pick(&mut rng);
        let result = server.call(tool, &args);
        let doc = &result["structuredContent"];
        assert!(doc["ok"].is_boolean(), "{tool}: {result}");
        if result["isError"] == true {
            assert!(doc["error_type"].is_string(), "{tool}: {result}");
            assert_ne!(
                doc["error_type"], "resource_quarantined",
                "nothing in a soak loses evidence: {result}"
            );
        }
        if result["isError"] == false {
            *tally.succeeded.entry(tool.to_owned()).or_default() += 1;
        }
        if doc["log_path"].is_string() && !tool.starts_with("com_") && !tool.starts_with("can_") {
            *tally.logged.entry(tool.to_owned()).or_default() += 1;
        }
        tally.calls += 1;
    }
    // Measured with no session open, as at the warm-up point's worst case.
    let _ = server.call("com_session_stop", &json!({"port_id": "uart"}));
    let _ = server.call("can_session_stop", &json!({"bus_id": "ecu"}));
    tally.end = (open_fds(pid), proc_field(pid, "VmRSS:"));
    assert_eq!(server.close(), Some(0), "the server ends cleanly");
    tally
}

fn canonical_lines(world: &World, log: &str) -> usize {
    let projects = world.home.join(".local/state/agentic-hil/projects");
    let project = std::fs::read_dir(projects)
        .expect("projects")
        .next()
        .expect("one project")
        .expect("entry")
        .path();
    std::fs::read_to_string(project.join("audit-logs").join(log))
        .map_or(0, |text| text.lines().count())
}

#[test]
fn two_clients_of_random_calls_leak_nothing_and_every_audited_call_is_in_the_chain() {
    let world = World::new();
    configure(&world);
    let (doc, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
    assert_eq!(code, Some(0), "sim start: {doc}");
    let _board = support::RunningBoard(&world);
    let count = calls_per_client();
    let tallies: Vec<Tally> = std::thread::scope(|scope| {
        let handles: Vec<_> = [0x9E37_79B9_7F4A_7C15_u64, 0xD1B5_4A32_D192_ED03]
            .into_iter()
            .map(|seed| {
                let world = &world;
                scope.spawn(move || drive(world, seed, count))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });

    for tally in &tallies {
        eprintln!(
            "soak client: {} calls, succeeded {:?}, fds {} -> {}, rss {} -> {} KiB",
            tally.calls, tally.succeeded, tally.warm.0, tally.end.0, tally.warm.1, tally.end.1
        );
        assert_eq!(tally.calls, count);
        assert!(
            tally.end.0 <= tally.warm.0 + 4,
            "file descriptors grew from {} to {}",
            tally.warm.0,
            tally.end.0
        );
        assert!(
            tally.end.1 <= tally.warm.1 + 16 * 1024,
            "resident memory grew from {} KiB to {} KiB",
            tally.warm.1,
            tally.end.1
        );
    }
    let leftover = children_under(&world.home);
    assert!(leftover.is_empty(), "processes left behind: {leftover:?}");

    for tool in ["probe_target", "reset_target", "flash_firmware"] {
        let answered: usize = tallies
            .iter()
            .map(|t| t.logged.get(tool).copied().unwrap_or(0))
            .sum();
        assert_eq!(
            canonical_lines(&world, &format!("{tool}.jsonl")),
            answered,
            "every {tool} result that names its log has exactly one canonical line"
        );
    }

    let (status, _) = world.run_json(&["lease-status"]);
    assert_eq!(status["bench_held"], false, "{status}");
    assert_eq!(status["blocked"], false, "{status}");
    // The last report of the soak may be a refusal that names no log, so each chained log is
    // checked through one more call of its own tool.
    let mut last = Mcp::ours(&world);
    for (tool, args) in [
        ("probe_target", json!({})),
        ("reset_target", json!({"mode": "run"})),
        ("flash_firmware", json!({"image_path": "fw/ahil-fw-v1.elf"})),
    ] {
        let result = last.call(tool, &args);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        let report = last.envelope("get_last_report", &json!({}));
        assert_eq!(report["report"]["tool"], tool, "{report}");
        assert_eq!(
            report["report"]["canonical_audit"]["canonical_chain_verified"], true,
            "{report}"
        );
    }
    drop(last);
}
