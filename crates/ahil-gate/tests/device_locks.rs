//! Device locks across real processes: this test binary re-runs itself as contenders (selected by an
//! environment variable), so every claimant is a separate process with its own file descriptors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ahil_gate::ownership::{DeviceLocks, LockRoot, Owner};
use serde_json::Value;

const ROLE: &str = "AHIL_LOCK_TEST_ROLE";
const JOURNAL: &str = "AHIL_LOCK_TEST_JOURNAL";

fn locks(home: &Path) -> DeviceLocks {
    DeviceLocks::new(LockRoot::for_home(home), Owner::this_process("reactor"))
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn keys(name: &str) -> Vec<String> {
    vec![name.to_owned()]
}

/// Not a test of its own: the body of a child process when ROLE is set, a no-op otherwise.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let home = PathBuf::from(std::env::var("HOME").expect("HOME set for the child"));
    let owner = locks(&home);
    match role.as_str() {
        "contend" => contend(&owner),
        "hold" => {
            owner
                .acquire(&keys("probe:crash"), Duration::ZERO)
                .expect("the device is free for the holder");
            // The harness may capture stdout, so the signal is a file.
            let journal = std::env::var(JOURNAL).expect("journal path");
            std::fs::write(journal, "HELD").expect("signal the parent");
            std::thread::sleep(Duration::from_mins(1));
        }
        other => panic!("unknown role {other}"),
    }
}

/// Takes and releases the shared device for 1.5 s, journaling each hold and each refusal.
fn contend(owner: &DeviceLocks) {
    let journal_path = std::env::var(JOURNAL).expect("journal path");
    let mut journal = std::fs::OpenOptions::new()
        .append(true)
        .open(journal_path)
        .expect("journal opens");
    let pid = std::process::id();
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        match owner.acquire(&keys("probe:shared"), Duration::ZERO) {
            Ok(_) => {
                record(&mut journal, &format!("{pid} start {}", now_ns()));
                std::thread::sleep(Duration::from_millis(15));
                record(&mut journal, &format!("{pid} end {}", now_ns()));
                owner.release(&keys("probe:shared"));
            }
            Err(busy) => {
                let holder_pid = busy
                    .holder
                    .as_ref()
                    .and_then(|h| h.get("pid"))
                    .and_then(Value::as_u64);
                let named = holder_pid.map_or("none".to_owned(), |p| p.to_string());
                record(&mut journal, &format!("{pid} busy {named}"));
                std::thread::sleep(Duration::from_millis(3));
            }
        }
    }
}

/// One `write` per line: O_APPEND makes a single small write atomic between processes, while
/// `writeln!` may split a line into several writes that interleave.
fn record(journal: &mut std::fs::File, line: &str) {
    journal
        .write_all(format!("{line}\n").as_bytes())
        .expect("journal");
}

fn spawn_child(home: &Path, role: &str, journal: Option<&Path>) -> Child {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary path"));
    cmd.args([
        "--exact",
        "child_process_role",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .env("HOME", home)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    if let Some(path) = journal {
        cmd.env(JOURNAL, path);
    }
    cmd.spawn().expect("child starts")
}

#[test]
fn eight_processes_contending_for_one_device_never_hold_it_together() {
    let home = tempfile::tempdir().expect("home");
    let journal = home.path().join("journal.txt");
    std::fs::write(&journal, "").expect("journal");
    let children: Vec<Child> = (0..8)
        .map(|_| spawn_child(home.path(), "contend", Some(&journal)))
        .collect();
    for mut child in children {
        assert!(child.wait().expect("child exits").success());
    }
    let text = std::fs::read_to_string(&journal).expect("journal");
    let mut holds: Vec<(u128, u128, u32)> = Vec::new();
    let mut open: std::collections::HashMap<u32, u128> = std::collections::HashMap::new();
    let mut busy = 0;
    let mut busy_unnamed = 0;
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let pid: u32 = parts[0].parse().expect("pid");
        match parts[1] {
            "start" => {
                open.insert(pid, parts[2].parse().expect("time"));
            }
            "end" => {
                let start = open.remove(&pid).expect("an end follows its start");
                holds.push((start, parts[2].parse().expect("time"), pid));
            }
            _ => {
                busy += 1;
                if parts[2] == "none" {
                    busy_unnamed += 1;
                }
            }
        }
    }
    holds.sort_unstable();
    assert!(
        holds.len() >= 8,
        "the device changed hands: {} holds",
        holds.len()
    );
    assert!(busy > 0, "there was contention");
    for pair in holds.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "two holders at once: pid {} until {} and pid {} from {}",
            pair[0].2,
            pair[0].1,
            pair[1].2,
            pair[1].0
        );
    }
    assert_eq!(
        busy_unnamed, 0,
        "every refusal named a holder ({busy} refusals)"
    );
}

#[test]
fn killing_the_holder_frees_the_device_at_once_and_the_next_taker_learns_why() {
    let home = tempfile::tempdir().expect("home");
    let signal = home.path().join("held");
    let mut child = spawn_child(home.path(), "hold", Some(&signal));
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&signal).map_or(true, |s| s != "HELD") {
        assert!(
            Instant::now() < deadline,
            "the holder never took the device"
        );
        assert!(
            child.try_wait().expect("poll child").is_none(),
            "the holder exited early"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let me = locks(home.path());
    let busy = me
        .acquire(&keys("probe:crash"), Duration::ZERO)
        .expect_err("the child holds it");
    assert_eq!(
        busy.holder
            .as_ref()
            .and_then(|h| h.get("pid"))
            .and_then(Value::as_u64),
        Some(u64::from(child.id()))
    );

    child.kill().expect("SIGKILL the holder");
    child.wait().expect("reaped");
    let taken = me
        .acquire(&keys("probe:crash"), Duration::ZERO)
        .expect("free as soon as the holder died");
    assert_eq!(taken.reclaimed.len(), 1);
    assert_eq!(
        taken.reclaimed[0]["owner"]["pid"].as_u64(),
        Some(u64::from(child.id()))
    );
    assert_eq!(
        taken.reclaimed[0]["reason"],
        "owner_process_exited_without_release"
    );
}

// The reference implementation (agentic-hil 0.25.0), installed by scripts/setup-debian.sh.
#[path = "../../ahil-config/tests/reference/mod.rs"]
mod installed_reference;
use installed_reference::reference;

/// A workspace whose one debugger names probe `interop1`, accepted by both implementations.
struct Bench {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

impl Bench {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temp");
        let base = std::fs::canonicalize(root.path()).expect("resolve");
        let home = base.join("home");
        let workspace = base.join("ws");
        std::fs::create_dir_all(home.join("tools")).expect("home");
        std::fs::create_dir_all(&workspace).expect("ws");
        let openocd = home.join("tools/openocd");
        std::fs::write(
            &openocd,
            "#!/bin/sh\necho 'Open On-Chip Debugger 0.12.0' >&2\n",
        )
        .expect("fake openocd");
        std::fs::set_permissions(
            &openocd,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        let env = ahil_config::Environment {
            home: home.clone(),
            xdg_config_home: Some(home.join(".config")),
            xdg_state_home: Some(home.join(".local/state")),
            config_override: None,
            path: None,
        };
        let text =
            ahil_config::render_init_config(&workspace, &home.join(".local/state/agentic-hil"))
                .replacen(
                    "executable: null",
                    &format!("executable: \"{}\"", openocd.display()),
                    1,
                )
                .replacen("probe_id: null", "probe_id: \"interop1\"", 1);
        let path = ahil_config::canonical_config_path(&workspace, &env);
        std::fs::create_dir_all(path.parent().expect("config dir")).expect("config dir");
        std::fs::write(&path, text).expect("config");
        Self {
            _root: root,
            home,
            workspace,
        }
    }

    /// The reference's MCP server in this workspace, with `bench_run_start` on the debugger sent.
    /// The caller kills and reaps the child it gets back.
    #[allow(clippy::zombie_processes)]
    fn reference_run_start(&self, reference: &Path) -> (Child, Value) {
        let mut child = Command::new(reference)
            .arg("mcp-stdio")
            .current_dir(&self.workspace)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("reference server starts");
        let mut stdin = child.stdin.take().expect("stdin");
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bench_run_start","arguments":{"devices":[{"kind":"debugger"}],"label":"interop"}}}"#,
        ];
        for line in lines {
            writeln!(stdin, "{line}").expect("send");
        }
        stdin.flush().expect("flush");
        // Keep stdin open: the reference holds its run until EOF.
        std::mem::forget(stdin);
        let mut reader = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        loop {
            let mut line = String::new();
            let n = std::io::BufRead::read_line(&mut reader, &mut line).expect("read");
            assert!(n > 0, "the reference closed before answering");
            let msg: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if msg["id"] == 2 {
                return (child, msg["result"]["structuredContent"].clone());
            }
        }
    }
}

#[test]
fn a_device_held_by_the_reference_is_busy_for_us() {
    let reference = reference();
    let bench = Bench::new();
    let (mut server, started) = bench.reference_run_start(&reference);
    assert_eq!(
        started["ok"], true,
        "the reference took the device: {started}"
    );
    let ours = locks(&bench.home);
    let busy = ours
        .acquire(&keys("probe:interop1"), Duration::ZERO)
        .expect_err("the reference holds probe:interop1");
    assert_eq!(
        busy.holder
            .as_ref()
            .and_then(|h| h.get("pid"))
            .and_then(Value::as_u64),
        Some(u64::from(server.id())),
        "the refusal names the reference's process"
    );
    server.kill().expect("stop the reference");
    server.wait().expect("reaped");
    ours.acquire(&keys("probe:interop1"), Duration::ZERO)
        .expect("free once the reference is gone");
}

#[test]
fn a_device_we_hold_is_busy_for_the_reference() {
    let reference = reference();
    let bench = Bench::new();
    let ours = locks(&bench.home);
    ours.acquire(&keys("probe:interop1"), Duration::ZERO)
        .expect("the device is free");
    let (mut server, refused) = bench.reference_run_start(&reference);
    server.kill().expect("stop the reference");
    server.wait().expect("reaped");
    assert_eq!(refused["error_type"], "device_busy", "{refused}");
    let summary = refused["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains(&format!("pid {}", std::process::id())),
        "the reference names us: {summary}"
    );
}
