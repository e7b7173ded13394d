//! COM sessions through the whole gate, on pty pairs: the peer end plays the board.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ahil_config::{Environment, canonical_config_path, default_state_root, render_init_config};
use ahil_drivers::serial::PtyPeer;
use ahil_gate::{Bench, Outcome};
use serde_json::{Value, json};

const ROLE: &str = "AHIL_COM_TEST_ROLE";
const SIGNAL: &str = "AHIL_COM_TEST_SIGNAL";
const DEVICE: &str = "AHIL_COM_TEST_DEVICE";

struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    env: Environment,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        Self::at(root)
    }

    fn at(root: tempfile::TempDir) -> Self {
        let home = root.path().join("home");
        let workspace = root.path().join("ws");
        for dir in [&home, &workspace] {
            std::fs::create_dir_all(dir).expect("world dirs");
        }
        let env = Environment {
            home: home.clone(),
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            path: None,
        };
        Self {
            _root: root,
            home,
            workspace,
            env,
        }
    }

    /// A configuration with one port `uart0` on `device`; `entry` adds YAML keys to the entry.
    fn bench(&self, device: &str, entry: &str) -> Bench {
        let starter = render_init_config(&self.workspace, &default_state_root(&self.env));
        let ports = format!(
            "com_ports:\n  uart0:\n    device: \"{device}\"\n    permissions:\n      allow_write: true\n{entry}"
        );
        assert!(starter.contains("com_ports: {}"));
        let text = starter.replacen("com_ports: {}", &ports, 1);
        let path = canonical_config_path(&self.workspace, &self.env);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("config dir");
        std::fs::write(&path, text).expect("config");
        let loaded =
            ahil_config::load_authoritative(&self.workspace, &self.env).expect("the config loads");
        Bench::provisioned(loaded, self.env.clone())
    }
}

const BY_DEVICE: &str = "    identity_source: device\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn call(rt: &tokio::runtime::Runtime, bench: &Bench, tool: &str, args: Value) -> Outcome {
    rt.block_on(bench.call(tool, args))
}

fn text_of(outcome: &Outcome) -> String {
    outcome.detail("data").expect("data")["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

/// A start of a session that is already open reuses it, and its answer names the session's lease,
/// which stays active (the reference answers the same), not the repeated call's own, which ends.
#[test]
fn a_repeated_start_answers_the_sessions_lease_still_active() {
    let world = World::new();
    let peer = PtyPeer::open().expect("pty pair");
    let bench = world.bench(peer.device(), BY_DEVICE);
    let rt = runtime();
    let first = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(first.ok, "{first:?}");
    assert_eq!(first.lease_state.as_deref(), Some("active"));
    let again = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(again.ok, "{again:?}");
    assert_eq!(again.detail("already_active"), Some(&json!(true)));
    assert_eq!(again.lease_state.as_deref(), Some("active"), "{again:?}");
    assert_eq!(again.detail("lease_id"), first.detail("lease_id"));
    let stopped = call(&rt, &bench, "com_session_stop", json!({"port_id": "uart0"}));
    assert!(stopped.ok, "{stopped:?}");
    assert_eq!(stopped.lease_state.as_deref(), Some("released"));
}

#[test]
fn a_session_reads_until_boot_ok_and_echoes_a_written_line() {
    let world = World::new();
    let mut peer = PtyPeer::open().expect("pty pair");
    let bench = world.bench(peer.device(), BY_DEVICE);
    let rt = runtime();
    let started = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(started.ok, "{started:?}");
    assert_eq!(started.detail("already_active"), Some(&json!(false)));
    assert_eq!(
        started.detail("identity").expect("identity")["status"],
        "not_declared"
    );
    assert!(
        started.detail("session").expect("session")["modem_lines"]["dtr_error"].is_string(),
        "a pty has no modem lines and says so"
    );

    peer.send(b"rom v1\r\nboot ok\r\n> ").expect("board talks");
    let read = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "until": "boot ok"}),
    );
    assert!(read.ok, "{read:?}");
    assert_eq!(read.detail("until_matched"), Some(&json!(true)));
    assert_eq!(text_of(&read), "rom v1\r\nboot ok");
    assert!(read.meta.is_some(), "device bytes are marked untrusted");

    let wrote = call(
        &rt,
        &bench,
        "com_write",
        json!({"port_id": "uart0", "text": "ping\n"}),
    );
    assert!(wrote.ok, "{wrote:?}");
    assert_eq!(wrote.detail("bytes_written"), Some(&json!(5)));
    let mut got = Vec::new();
    while !got.ends_with(b"ping\n") {
        let chunk = peer.receive(Duration::from_secs(5)).expect("receive");
        assert!(!chunk.is_empty(), "the line never reached the board");
        got.extend(chunk);
    }
    peer.send(b"pong\r\n").expect("the board echoes");
    let echo = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "until": ["pong", "err"]}),
    );
    assert_eq!(text_of(&echo), "\r\n> pong", "each byte is returned once");

    let missed = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "until": "never", "wait_timeout_s": 0.2}),
    );
    assert!(missed.ok);
    assert_eq!(missed.detail("until_matched"), Some(&json!(false)));
    assert_eq!(text_of(&missed), "\r\n");

    let stopped = call(&rt, &bench, "com_session_stop", json!({"port_id": "uart0"}));
    assert!(stopped.ok, "{stopped:?}");
    assert_eq!(stopped.detail("was_active"), Some(&json!(true)));
    let log = world
        .workspace
        .join(stopped.log_path.as_deref().expect("log path"));
    let log = std::fs::read_to_string(log).expect("the session log is in the workspace");
    for needle in [
        "\"event\": \"start\"",
        "\"direction\": \"rx\"",
        "\"direction\": \"tx\"",
        "\"event\": \"stop\"",
    ] {
        assert!(log.contains(needle), "{needle} missing from {log}");
    }
    let again = call(&rt, &bench, "com_session_stop", json!({"port_id": "uart0"}));
    assert_eq!(again.detail("was_active"), Some(&json!(false)));
}

#[test]
fn bytes_beyond_the_buffer_cap_are_counted_as_overflow() {
    let world = World::new();
    let mut peer = PtyPeer::open().expect("pty pair");
    let bench = world.bench(
        peer.device(),
        &format!("{BY_DEVICE}    max_buffer_bytes: 1024\n"),
    );
    let rt = runtime();
    assert!(
        call(
            &rt,
            &bench,
            "com_session_start",
            json!({"port_id": "uart0"})
        )
        .ok
    );
    let payload: Vec<u8> = (0..4096u32)
        .map(|i| b'a' + u8::try_from(i % 26).expect("small"))
        .collect();
    peer.send(&payload).expect("flood");
    peer.send(b"END").expect("marker");
    // Wait until the reader has taken all 4099 bytes (kept or dropped), so no read races the flood.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let listed = call(&rt, &bench, "com_ports_list", json!({}));
        let entry = &listed.detail("ports").expect("ports")["uart0"];
        let seen = entry["rx_buffer_bytes"].as_u64().unwrap_or(0)
            + entry["overflow_bytes"].as_u64().unwrap_or(0);
        if seen >= 4099 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reader never took the flood: {entry}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let read = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "until": "END", "wait_timeout_s": 1}),
    );
    assert_eq!(read.detail("until_matched"), Some(&json!(true)), "{read:?}");
    let bytes = read
        .detail("bytes_read")
        .and_then(Value::as_u64)
        .expect("count");
    let overflow = read
        .detail("overflow_bytes")
        .and_then(Value::as_u64)
        .expect("overflow");
    assert_eq!(overflow, 4099 - 1024, "{read:?}");
    assert!(text_of(&read).ends_with("END"));
    assert_eq!(bytes, 1024);
}

#[test]
fn a_serial_number_the_host_cannot_confirm_refuses_the_start_before_opening() {
    let world = World::new();
    let peer = PtyPeer::open().expect("pty pair");
    let bench = world.bench(peer.device(), "    serial_number: \"WRONG123\"\n");
    let rt = runtime();
    let refused = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert_eq!(
        refused.error_type.as_deref(),
        Some("com_port_identity_unverified"),
        "{refused:?}"
    );
    assert_eq!(refused.retry_safe, Some(true));
    // Nothing was opened: the port is free for anyone.
    let port = ahil_drivers::serial::Port::open(
        &ahil_drivers::serial::OpenOptions {
            device: peer.device().to_owned(),
            baud: 115_200,
            assert_dtr: false,
            assert_rts: false,
            max_buffer_bytes: 64,
            write_timeout: Duration::from_secs(1),
            reader_poll: Duration::from_millis(20),
        },
        None,
    )
    .expect("the port was left closed");
    port.close(Duration::from_secs(2)).expect("closes");
}

#[test]
fn writes_beyond_max_write_bytes_and_reads_without_a_session_are_refused() {
    let world = World::new();
    let peer = PtyPeer::open().expect("pty pair");
    let bench = world.bench(
        peer.device(),
        &format!("{BY_DEVICE}    max_write_bytes: 4\n"),
    );
    let rt = runtime();
    let read = call(&rt, &bench, "com_read", json!({"port_id": "uart0"}));
    assert_eq!(read.error_type.as_deref(), Some("session_not_active"));
    let unknown = call(&rt, &bench, "com_read", json!({"port_id": "nope"}));
    assert_eq!(
        unknown.error_type.as_deref(),
        Some("com_port_not_configured")
    );
    assert!(
        call(
            &rt,
            &bench,
            "com_session_start",
            json!({"port_id": "uart0"})
        )
        .ok
    );
    let big = call(
        &rt,
        &bench,
        "com_write",
        json!({"port_id": "uart0", "hex": "01 02 03 04 05"}),
    );
    assert_eq!(big.error_type.as_deref(), Some("invalid_argument"));
    assert_eq!(big.detail("bytes_requested"), Some(&json!(5)));
    let bad = call(
        &rt,
        &bench,
        "com_write",
        json!({"port_id": "uart0", "hex": "0g"}),
    );
    assert_eq!(bad.error_type.as_deref(), Some("invalid_argument"));
    let listed = call(&rt, &bench, "com_ports_list", json!({}));
    assert!(listed.ok);
    assert_eq!(
        listed.detail("ports").expect("ports")["uart0"]["session_active"],
        true
    );
    assert!(
        listed.detail("available_com_ports").expect("host")["ok"]
            .as_bool()
            .expect("ok")
    );
}

/// Not a test of its own: the body of a child process when ROLE is set, a no-op otherwise.
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    assert_eq!(role, "hold");
    let root = PathBuf::from(std::env::var("AHIL_COM_TEST_ROOT").expect("root"));
    let world = World {
        _root: tempfile::tempdir().expect("unused"),
        home: root.join("home"),
        workspace: root.join("ws"),
        env: Environment {
            home: root.join("home"),
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            path: None,
        },
    };
    let device = std::env::var(DEVICE).expect("device");
    let bench = world.bench(&device, BY_DEVICE);
    let rt = runtime();
    let started = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(started.ok, "{started:?}");
    std::fs::write(std::env::var(SIGNAL).expect("signal"), "HELD").expect("signal the parent");
    std::thread::sleep(Duration::from_mins(1));
}

fn spawn_holder(root: &Path, device: &str, signal: &Path) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_process_role",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "hold")
        .env("AHIL_COM_TEST_ROOT", root)
        .env(DEVICE, device)
        .env(SIGNAL, signal)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("child starts")
}

#[test]
fn a_second_owner_is_refused_and_kill_9_of_the_owner_frees_the_port() {
    let root = tempfile::tempdir().expect("root");
    let root_path = root.path().to_path_buf();
    let world = World::at(root);
    let peer = PtyPeer::open().expect("pty pair");
    let signal = root_path.join("held");
    let mut holder = spawn_holder(&root_path, peer.device(), &signal);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !signal.exists() {
        assert!(Instant::now() < deadline, "the holder never took the port");
        assert!(
            holder.try_wait().expect("wait").is_none(),
            "the holder died"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let bench = world.bench(peer.device(), BY_DEVICE);
    let rt = runtime();
    let refused = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert_eq!(
        refused.error_type.as_deref(),
        Some("device_busy"),
        "{refused:?}"
    );
    assert!(
        refused.summary.contains(&holder.id().to_string()),
        "{}",
        refused.summary
    );

    holder.kill().expect("SIGKILL");
    holder.wait().expect("reaped");
    let started = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(
        started.ok,
        "the port is free once its owner is gone: {started:?}"
    );
    assert!(call(&rt, &bench, "com_session_stop", json!({"port_id": "uart0"})).ok);
    let _ = world.home;
}

#[test]
fn the_emulated_boards_uart_reads_boot_ok_and_echoes_a_line_through_a_session() {
    let world = World::new();
    let sim = world.workspace.parent().expect("root").join("sim");
    let config = ahil_sim::BoardConfig::new(&sim).with_image(ahil_sim::firmware::image(1, "elf"));
    let board = ahil_sim::Board::start(config).unwrap_or_else(|error| {
        panic!("the board did not start: {error} (install with scripts/setup-debian.sh)")
    });
    let uart = board.paths().uart();
    let bench = world.bench(&uart.display().to_string(), BY_DEVICE);
    let rt = runtime();
    let started = call(
        &rt,
        &bench,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(started.ok, "{started:?}");
    board.run().expect("the board boots");
    let boot = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "until": "boot ok", "wait_timeout_s": 10}),
    );
    assert_eq!(boot.detail("until_matched"), Some(&json!(true)), "{boot:?}");
    let wrote = call(
        &rt,
        &bench,
        "com_write",
        json!({"port_id": "uart0", "text": "hello board\r"}),
    );
    assert!(wrote.ok, "{wrote:?}");
    let echo = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "until": "echo: hello board", "wait_timeout_s": 10}),
    );
    assert_eq!(echo.detail("until_matched"), Some(&json!(true)), "{echo:?}");
    assert!(call(&rt, &bench, "com_session_stop", json!({"port_id": "uart0"})).ok);
    board.stop().expect("the board stops");
}

#[test]
fn a_line_that_hangs_up_ends_the_session_with_a_reader_error() {
    let world = World::new();
    let peer = PtyPeer::open().expect("pty pair");
    let bench = world.bench(peer.device(), BY_DEVICE);
    let rt = runtime();
    assert!(
        call(
            &rt,
            &bench,
            "com_session_start",
            json!({"port_id": "uart0"})
        )
        .ok
    );
    drop(peer);
    let read = call(
        &rt,
        &bench,
        "com_read",
        json!({"port_id": "uart0", "wait_timeout_s": 5}),
    );
    assert_eq!(
        read.error_type.as_deref(),
        Some("session_not_active"),
        "{read:?}"
    );
    assert_eq!(
        read.detail("reader_error").expect("reader_error")["error_type"],
        "serial_read_failed"
    );
    let stopped = call(&rt, &bench, "com_session_stop", json!({"port_id": "uart0"}));
    assert!(
        stopped.ok,
        "a dead session still stops cleanly: {stopped:?}"
    );
}

#[test]
fn a_start_whose_port_fails_to_open_gives_its_device_back() {
    // The session's locks are taken before the open; the open failing must not leave them held,
    // or no server could start a session on the port until this one exits.
    let world = World::new();
    let link = world.workspace.join("ttyDUT");
    let not_a_tty = world.workspace.join("plain-file");
    std::fs::write(&not_a_tty, b"").expect("plain file");
    std::os::unix::fs::symlink(&not_a_tty, &link).expect("link to the plain file");
    let device = link.to_str().expect("utf-8 path");
    let first = world.bench(device, BY_DEVICE);
    let rt = runtime();
    let failed = call(
        &rt,
        &first,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(!failed.ok, "a plain file is not a serial port: {failed:?}");
    assert_ne!(
        failed.error_type.as_deref(),
        Some("device_busy"),
        "{failed:?}"
    );

    let peer = PtyPeer::open().expect("pty pair");
    std::fs::remove_file(&link).expect("unlink");
    std::os::unix::fs::symlink(peer.device(), &link).expect("link to the pty");
    let second = world.bench(device, BY_DEVICE);
    let started = call(
        &rt,
        &second,
        "com_session_start",
        json!({"port_id": "uart0"}),
    );
    assert!(
        started.ok,
        "the failed start left the port's lock held: {started:?}"
    );
    assert!(
        call(
            &rt,
            &second,
            "com_session_stop",
            json!({"port_id": "uart0"})
        )
        .ok
    );
}
