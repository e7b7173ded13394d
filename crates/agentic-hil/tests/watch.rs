//! `agentic-hil watch`, black-box: one frame (`--once`) of a bench in a temp HOME, a device another
//! process holds, and the live view under tmux showing a flash on the emulated board while it runs.

mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use support::World;
use support::sim_board::{qemu_board, sim_config, state_root};

fn frame(world: &World) -> String {
    let out = world.run(&["watch", "--once", "--width", "110", "--height", "30"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 frame")
}

/// A configuration with the emulated board and its UART (the board need not run for `--once`).
fn configure(world: &World) {
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let uart = state_root(world).join("sim/board/uart");
    let rest = format!(
        "com_ports:\n  uart:\n    device: \"{}\"\n    resource_id: sim-uart\n",
        uart.display()
    );
    let board = qemu_board("      allow_flash: true\n      allow_reset: true\n");
    std::fs::write(world.config_path(), sim_config(world, &board, &rest))
        .expect("the test config is written");
}

/// The device names the frame lists, in order.
fn devices(frame: &str) -> Vec<String> {
    frame
        .lines()
        .skip_while(|l| !l.contains("device"))
        .skip(1)
        .take_while(|l| !l.starts_with('└'))
        .filter_map(|l| l.trim_start_matches('│').split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn without_a_configuration_one_frame_says_how_to_get_one() {
    let world = World::new();
    let text = frame(&world);
    assert!(text.starts_with("agentic-hil watch  board-fw"), "{text}");
    assert!(text.contains("config_file_not_found"), "{text}");
}

#[test]
fn an_idle_bench_lists_every_configured_device_as_free() {
    let world = World::new();
    configure(&world);
    let text = frame(&world);
    let names = devices(&text);
    assert_eq!(names.len(), 2, "{text}");
    assert!(text.contains("free"), "{text}");
    assert!(!text.contains("HELD"), "{text}");
    assert!(text.contains("incident: none"), "{text}");
    assert!(text.contains("(no open COM session)"), "{text}");
    assert!(
        !text.contains(&world.home.display().to_string()),
        "no absolute path under HOME in the frame: {text}"
    );
}

#[test]
fn a_device_another_process_holds_is_shown_with_its_holder_and_stays_held() {
    let world = World::new();
    configure(&world);
    let resource = devices(&frame(&world))
        .into_iter()
        .find(|d| d.contains("sim-uart"))
        .expect("the UART is listed");
    let digest = ahil_config::digest::sha256_hex(resource.as_bytes());
    let dir = world.home.join(".agentic-hil/device-locks");
    std::fs::create_dir_all(&dir).expect("lock dir");
    let lock = std::fs::File::create(dir.join(format!("{digest}.lock"))).expect("lock file");
    lock.lock().expect("this test holds the device");
    let record = json!({"version": 1, "state": "held", "resource": resource,
        "owner": {"owner_id": "0123456789abcdef", "pid": 4242, "host": "bench", "frontend": "mcp", "label": "soak"},
        "acquired_at": "2026-11-30T10:15:02.120Z", "heartbeat_at": "2026-11-30T10:15:02.120Z"});
    let mut holder =
        std::fs::File::create(dir.join(format!("{digest}.holder.json"))).expect("holder");
    holder
        .write_all(record.to_string().as_bytes())
        .expect("holder record");

    let text = frame(&world);
    let line = text
        .lines()
        .find(|l| l.contains(&resource))
        .expect("the UART line");
    assert!(line.contains("HELD"), "{line}");
    assert!(line.contains("mcp pid 4242"), "{line}");
    assert!(line.contains("soak"), "{line}");
    assert!(line.contains("10:15:02"), "{line}");
    // The watcher never took the lock, so the holder's flock is undisturbed and still exclusive.
    let other = std::fs::File::open(dir.join(format!("{digest}.lock"))).expect("open");
    assert!(other.try_lock().is_err(), "the test's hold stands");
    lock.unlock().expect("unlock");
    let text = frame(&world);
    let line = text.lines().find(|l| l.contains(&resource)).expect("line");
    assert!(line.contains("free"), "{line}");
}

/// Debian's tmux, which scripts/setup-debian.sh installs.
fn tmux() -> PathBuf {
    let exe = PathBuf::from("/usr/bin/tmux");
    assert!(
        exe.is_file(),
        "/usr/bin/tmux is missing: run scripts/setup-debian.sh"
    );
    exe
}

/// A tmux server of the test's own, killed when dropped.
struct Tmux {
    program: PathBuf,
    socket: String,
}

impl Tmux {
    fn command(&self, world: &World) -> Command {
        let mut cmd = Command::new(&self.program);
        world.scrub(&mut cmd);
        cmd.env("TERM", "xterm-256color")
            .args(["-L", &self.socket, "-f", "/dev/null"]);
        cmd
    }

    fn screen(&self, world: &World) -> String {
        let out = self
            .command(world)
            .args(["capture-pane", "-p", "-t", "watch"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new(&self.program)
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn firmware() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build")
}

fn line_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle))
}

#[tokio::test]
async fn under_tmux_the_live_view_shows_a_flash_on_the_emulated_board_while_it_happens() {
    let program = tmux();
    let world = World::new();
    configure(&world);
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    std::fs::copy(firmware().join("ahil-fw-v2.elf"), fw.join("ahil-fw-v2.elf")).expect("firmware");
    let (doc, code) = world.run_json(&["sim", "start", "--image", "fw/ahil-fw-v2.elf"]);
    assert_eq!(code, Some(0), "sim start: {doc}");
    let _board = StopBoard(&world);

    let tmux = Tmux {
        program,
        socket: format!("ahil-watch-{}", std::process::id()),
    };
    let watch = format!("{} watch --interval-ms 50", World::binary());
    let status = tmux
        .command(&world)
        .args(["new-session", "-d", "-s", "watch", "-x", "110", "-y", "34"])
        .arg("-c")
        .arg(&world.workspace)
        .arg(&watch)
        .status()
        .expect("tmux starts");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tmux.screen(&world).contains("Devices") {
        assert!(
            Instant::now() < deadline,
            "watch draws: {}",
            tmux.screen(&world)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let board = devices(&tmux.screen(&world))
        .into_iter()
        .find(|d| d.contains("qemu"))
        .expect("the board is listed");

    let client = support::connect(&world).await;
    let mut request = CallToolRequestParams::new("flash_firmware".to_owned());
    if let Value::Object(map) = json!({"image_path": "fw/ahil-fw-v2.elf", "reset_after_flash": true,
        "capture": {"port_id": "uart", "until": "ahil-fw 2.0", "wait_timeout_s": 5}})
    {
        request = request.with_arguments(map);
    }
    let flash = tokio::spawn({
        let peer = client.peer().clone();
        async move { peer.call_tool(request).await }
    });

    // While the flash runs, the board shows as held by the MCP server, for the flash.
    let mut seen_held = None;
    while !flash.is_finished() {
        let screen = tmux.screen(&world);
        let board_held = line_with(&screen, &board).is_some_and(|l| {
            l.contains("HELD") && l.contains("mcp pid") && l.contains("flash_firmware")
        });
        // The devices are taken a moment before the lease, so wait for both.
        if board_held && screen.contains("lease: held by mcp pid") {
            seen_held = Some(screen);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let result = flash.await.expect("join").expect("flash answers");
    assert_ne!(
        result.is_error,
        Some(true),
        "{:?}",
        result.structured_content
    );
    let held = seen_held.expect("the board was shown HELD while the flash ran");
    assert!(held.contains("incident: none"), "{held}");

    // Afterwards: free again, and the flash listed with its verdict.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let screen = tmux.screen(&world);
        let done = line_with(&screen, "flash_firmware").is_some_and(|l| l.contains(" ok "))
            && line_with(&screen, &board).is_some_and(|l| l.contains("free"));
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "the flash is listed: {screen}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // An open COM session shows its tail: the boot banner after a reset; stopped, it goes away.
    assert_ne!(
        call(&client, "com_session_start", json!({"port_id": "uart"})).await,
        Some(true)
    );
    assert_ne!(call(&client, "reset_target", json!({})).await, Some(true));
    wait_for(&tmux, &world, "the boot banner in the COM tail", |screen| {
        screen.contains("COM uart (.agentic-hil/logs/com-")
            && screen
                .lines()
                .any(|l| l.contains("rx ") && l.contains("boot ok"))
    })
    .await;
    assert_ne!(
        call(&client, "com_session_stop", json!({"port_id": "uart"})).await,
        Some(true)
    );
    wait_for(&tmux, &world, "the session gone", |screen| {
        screen.contains("(no open COM session)")
    })
    .await;
    client.cancel().await.expect("client closes");
}

/// Calls a tool; returns its `isError`.
async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    args: Value,
) -> Option<bool> {
    let mut request = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(map) = args {
        request = request.with_arguments(map);
    }
    let result = client.call_tool(request).await.expect("the tool answers");
    if let Some(doc) = &result.structured_content {
        support::check_result(tool, doc);
    }
    result.is_error
}

async fn wait_for(tmux: &Tmux, world: &World, what: &str, done: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let screen = tmux.screen(world);
        if done(&screen) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {screen}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct StopBoard<'a>(&'a World);

impl Drop for StopBoard<'_> {
    fn drop(&mut self) {
        let _ = self.0.run(&["sim", "stop"]);
    }
}
