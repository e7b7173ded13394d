//! Black-box, end to end: the built binary as an MCP server (rmcp's client) driving a real QEMU board
//! that `agentic-hil sim start` started in the test's own HOME, through the whole gate.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::call;

#[path = "emulated_board/cancellation.rs"]
mod cancellation;

type Client = RunningService<rmcp::RoleClient, ()>;

/// A test world with a `qemu` debugger, the committed firmware copied into `fw/`, and a running
/// board; the board is stopped when this is dropped, whatever the test did.
struct Bench {
    world: World,
}

impl Bench {
    fn new(grants: &str) -> Self {
        Self::on("netduinoplus2", "stm32f405", grants)
    }

    /// The bench on QEMU `machine` (`controller` is its part), with that machine's firmware build.
    fn on(machine: &str, controller: &str, grants: &str) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let state = world.home.join(".local/state/agentic-hil");
        let uart = state.join("sim/board/uart");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: sim\n  controller: {controller}\n\
             debuggers:\n  board:\n    type: qemu\n    machine: {machine}\n    timeout_s: 10\n    permissions:\n{grants}\n\
             artifacts:\n  allowed_roots: [fw]\n  allow_upload: true\n\
             com_ports:\n  uart:\n    device: \"{uart}\"\n    resource_id: sim-uart\n",
            ws = world.workspace.display(),
            state = state.display(),
            uart = uart.display(),
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        let fw = world.workspace.join("fw");
        std::fs::create_dir_all(&fw).expect("fw dir");
        let built = if machine == "netduinoplus2" {
            firmware()
        } else {
            firmware().join(machine)
        };
        for version in [1, 2] {
            for ext in ["elf", "hex", "bin"] {
                let name = format!("ahil-fw-v{version}.{ext}");
                std::fs::copy(built.join(&name), fw.join(&name)).expect("firmware copies");
            }
        }
        let bench = Self { world };
        let (doc, code) = bench
            .world
            .run_json(&["sim", "start", "--image", "fw/ahil-fw-v1.elf"]);
        assert_eq!(code, Some(0), "sim start: {doc}");
        assert_eq!(doc["running"], json!(true), "{doc}");
        bench
    }

    fn full() -> Self {
        Self::new(FULL_GRANTS)
    }

    fn qemu_pid(&self) -> i32 {
        let (doc, _) = self.world.run_json(&["sim", "status"]);
        doc["pid"]
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or_else(|| panic!("sim status names the qemu pid: {doc}"))
    }

    async fn connect(&self) -> Client {
        support::connect(&self.world).await
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.world.run(&["sim", "stop"]);
    }
}

const FULL_GRANTS: &str = "      allow_flash: true\n      allow_reset: true";

fn firmware() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build")
}

fn flash_args(image: &str, version: u8) -> Value {
    flash_args_on("netduinoplus2", image, version)
}

/// A flash that captures up to `machine`'s version line (a capture ends with its `until`, as
/// `com_read` does, on every backend).
fn flash_args_on(machine: &str, image: &str, version: u8) -> Value {
    json!({
        "image_path": image,
        "reset_after_flash": true,
        "capture": {"port_id": "uart", "until": format!("ahil-fw {version}.0 {machine}"), "wait_timeout_s": 5},
    })
}

#[tokio::test]
async fn the_second_board_is_listed_flashed_and_reset_through_the_gate() {
    let bench = Bench::on("stm32vldiscovery", "stm32f100", FULL_GRANTS);
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "debugger_probes_list", json!({})).await;
    assert!(!is_error, "{doc}");
    assert!(
        doc["probes"][0]["description"]
            .as_str()
            .is_some_and(|d| d.contains("stm32vldiscovery")),
        "{doc}"
    );
    for (image, version) in [("fw/ahil-fw-v2.hex", 2), ("fw/ahil-fw-v1.bin", 1)] {
        let (doc, is_error) = call(
            &client,
            "flash_firmware",
            flash_args_on("stm32vldiscovery", image, version),
        )
        .await;
        assert!(!is_error, "{image}: {doc}");
        let text = doc["capture"]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("ahil-fw {version}.0 stm32vldiscovery")),
            "{image}: {text:?}"
        );
    }
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "halt"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["core_state"], json!("halted"), "{doc}");
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["core_state"], json!("halted"), "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_flash_asked_with_a_progress_token_reports_its_stages_in_order() {
    let bench = Bench::full();
    let (client, collector) = support::call_with_progress(
        &bench.world,
        "flash_firmware",
        &flash_args("fw/ahil-fw-v2.elf", 2),
    )
    .await;
    // The server sends them before the result; the client may hand them to its handler a little later.
    let messages = || -> Vec<String> {
        collector
            .0
            .lock()
            .expect("collector")
            .iter()
            .filter_map(|p| p.message.clone())
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !messages().iter().any(|m| m == "flash_firmware: verify")
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let messages = messages();
    let position = |stage: &str| {
        messages
            .iter()
            .position(|m| m == &format!("flash_firmware: {stage}"))
            .unwrap_or_else(|| panic!("no {stage} stage in {messages:?}"))
    };
    assert!(
        position("connect") < position("download") && position("download") < position("verify"),
        "{messages:?}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn the_board_is_listed_and_probe_target_detects_it_without_a_reset() {
    let bench = Bench::full();
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "debugger_probes_list", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["probes"][0]["probe_id"], json!("qemu:board"), "{doc}");

    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["target_detected"], json!(true));
    assert_eq!(doc["target_contacted"], json!(true));
    assert_eq!(
        doc["core_state"],
        json!("running"),
        "probing leaves it running"
    );
    // The single-action lease's status is merged into the result, as the reference does.
    assert_eq!(doc["lease_state"], json!("released"), "{doc}");
    assert!(
        doc["resources"].as_array().is_some_and(|r| !r.is_empty()),
        "{doc}"
    );
    assert_eq!(doc["resources"], doc["run"]["declared_devices"], "{doc}");
    for (key, value) in [
        ("safe_state_confirmed", json!(true)),
        ("processes_reaped", json!(true)),
        ("cleanup_required", json!(false)),
        ("quarantined", json!(false)),
        ("cleanup_reasons", json!([])),
        ("quarantine_id", Value::Null),
    ] {
        assert_eq!(doc[key], value, "{key}: {doc}");
    }
    let shown = doc.to_string();
    assert!(
        !shown.contains(&bench.world.home.display().to_string()),
        "no path under HOME in the result: {shown}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn elf_hex_and_bin_flashes_each_boot_the_new_version_on_the_uart() {
    let bench = Bench::full();
    let client = bench.connect().await;
    for (image, version) in [
        ("fw/ahil-fw-v2.elf", 2),
        ("fw/ahil-fw-v1.hex", 1),
        ("fw/ahil-fw-v2.bin", 2),
    ] {
        let (doc, is_error) = call(&client, "flash_firmware", flash_args(image, version)).await;
        assert!(!is_error, "{image}: {doc}");
        assert_eq!(doc["verify"], json!(true), "{image}");
        assert_eq!(doc["side_effect_status"], json!("committed"), "{image}");
        let text = doc["capture"]["text"].as_str().unwrap_or_default();
        assert!(text.contains("boot ok"), "{image}: {text:?}");
        assert!(
            text.contains(&format!("ahil-fw {version}.0 netduinoplus2")),
            "{image}: {text:?}"
        );
        assert_eq!(doc["artifact"]["path"], json!(image), "{doc}");
    }

    let (report, is_error) = call(&client, "get_last_report", json!({})).await;
    assert!(!is_error, "{report}");
    assert!(
        report.to_string().contains("flash_firmware"),
        "the last report is the flash's: {report}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn the_boards_capture_is_read_through_the_serial_driver_with_the_fields_every_backend_gives()
{
    let bench = Bench::full();
    let client = bench.connect().await;
    // The running v1 firmware ticks every 200 ms; let it print into nobody's pty first, and again
    // once the capture holds the port, so a capture that kept the old firmware's lines would show.
    tokio::time::sleep(Duration::from_millis(450)).await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_args("fw/ahil-fw-v2.elf", 2),
    )
    .await;
    assert!(!is_error, "{doc}");
    let capture = &doc["capture"];
    let text = capture["text"].as_str().unwrap_or_default();
    assert!(
        text.trim_start_matches(['\r', '\n', '\0'])
            .starts_with("boot ok"),
        "the capture holds the new firmware's output only: {text:?}"
    );
    assert_eq!(capture["until_matched"], json!(true), "{capture}");
    assert_eq!(capture["data"]["text"], capture["text"], "{capture}");
    assert_eq!(capture["data"]["encoding"], json!("utf-8"), "{capture}");
    let hex = capture["data"]["hex"].as_str().unwrap_or_default();
    assert_eq!(
        capture["bytes_read"].as_u64(),
        Some(u64::try_from(hex.len() / 2).expect("a small capture")),
        "{capture}"
    );
    assert_eq!(capture["overflow_bytes"], json!(0), "{capture}");
    support::assert_capture_log(&bench.world.workspace, capture);
    assert_eq!(doc["backend"], json!("qemu"), "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_uploaded_artifact_flashes_like_a_path() {
    let bench = Bench::full();
    let client = bench.connect().await;
    let (upload, is_error) = call(
        &client,
        "artifact_upload",
        json!({"image_path": "fw/ahil-fw-v2.elf"}),
    )
    .await;
    assert!(!is_error, "{upload}");
    let id = upload["artifact_id"].as_str().expect("an artifact id");
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"artifact_id": id, "reset_after_flash": true,
               "capture": {"port_id": "uart", "until": "ahil-fw 2.0"}}),
    )
    .await;
    assert!(!is_error, "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_capture_on_a_port_a_com_session_holds_is_refused_before_the_flash() {
    let bench = Bench::full();
    let client = bench.connect().await;
    let (session, is_error) = call(&client, "com_session_start", json!({"port_id": "uart"})).await;
    assert!(!is_error, "{session}");
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_args("fw/ahil-fw-v2.elf", 2),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("com_port_busy"), "{doc}");
    assert_eq!(doc["held_by"], json!("com_session"));
    assert_eq!(doc["target_contacted"], json!(false));
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn reset_target_honours_run_and_halt_and_refuses_init_without_contact() {
    let bench = Bench::full();
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "halt"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["core_state"], json!("halted"));
    let (doc, _) = bench.world.run_json(&["sim", "status"]);
    assert_ne!(
        doc["vm_status"],
        json!("running"),
        "a halted board does not run: {doc}"
    );

    let (doc, is_error) = call(&client, "reset_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["mode"], json!("run"));
    let (doc, _) = bench.world.run_json(&["sim", "status"]);
    assert_eq!(doc["vm_status"], json!("running"), "{doc}");

    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("not_supported"));
    assert_eq!(doc["supported_modes"], json!(["run", "halt"]));
    assert_eq!(doc["retry_safe"], json!(true));
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn flashing_and_resetting_are_refused_without_their_grants() {
    let bench = Bench::new("      allow_flash: false\n      allow_reset: false");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        flash_args("fw/ahil-fw-v2.elf", 2),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("permission_denied"), "{doc}");
    assert_eq!(
        doc["permission"],
        json!("debuggers.board.permissions.allow_flash")
    );
    let (doc, is_error) = call(&client, "reset_target", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("permission_denied"), "{doc}");
    // Probing needs no grant in version 3.
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_second_server_asking_for_the_board_gets_device_busy_while_the_first_holds_a_run() {
    let bench = Bench::full();
    let first = bench.connect().await;
    let (doc, is_error) = call(
        &first,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger"}]}),
    )
    .await;
    assert!(!is_error, "{doc}");

    let second = bench.connect().await;
    let (doc, is_error) = call(&second, "probe_target", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");

    let (doc, is_error) = call(&first, "probe_target", json!({})).await;
    assert!(!is_error, "the holder still uses it: {doc}");
    first.cancel().await.expect("client closes");
    second.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_board_that_is_gone_answers_target_not_detected_and_is_retry_safe() {
    let bench = Bench::full();
    let (_, code) = bench.world.run_json(&["sim", "stop"]);
    assert_eq!(code, Some(0));
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/ahil-fw-v2.elf"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("target_not_detected"), "{doc}");
    assert_eq!(doc["retry_safe"], json!(true), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn killing_qemu_in_the_middle_of_a_flash_leaves_the_hardware_state_unknown() {
    let bench = Bench::full();
    let pid = bench.qemu_pid().to_string();
    let client = bench.connect().await;
    // Frozen, the board accepts the flash's connection and never answers: the flash is in flight
    // when the board dies.
    let stopped = Command::new("kill").args(["-STOP", &pid]).status();
    assert!(stopped.is_ok_and(|s| s.success()), "qemu is stopped");
    let flash = tokio::spawn({
        let request = CallToolRequestParams::new("flash_firmware").with_arguments(
            match flash_args("fw/ahil-fw-v2.elf", 2) {
                Value::Object(map) => map,
                _ => unreachable!("flash arguments are an object"),
            },
        );
        let peer = client.peer().clone();
        async move { peer.call_tool(request).await }
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let killed = Command::new("kill").args(["-KILL", &pid]).status();
    assert!(killed.is_ok_and(|s| s.success()), "qemu is killed");
    let result = flash
        .await
        .expect("the call task finishes")
        .expect("tools/call answers");
    let doc = result.structured_content.expect("structured content");
    support::check_result("flash_firmware", &doc);
    assert_eq!(result.is_error, Some(true), "{doc}");
    assert_eq!(doc["ok"], json!(false));
    assert_eq!(doc["hardware_state"], json!("unknown"), "{doc}");
    assert_eq!(doc["retry_safe"], json!(false), "{doc}");
    assert_eq!(doc["side_effect_status"], json!("unknown"), "{doc}");
    // The unknown state is an incident: the default policy tries a reset into halt, which fails
    // on a dead board, so the incident is stood down at the end of the call and said so.
    assert_eq!(
        doc["cleanup_reasons"],
        json!(["debugger_result_unconfirmed"]),
        "{doc}"
    );
    assert_eq!(doc["recovery"]["attempted"], json!(true), "{doc}");
    assert_eq!(doc["recovery"]["outcome"], json!("failed"), "{doc}");
    assert_eq!(
        doc["recovery"]["failed_action"],
        json!("reset_halt"),
        "{doc}"
    );
    assert_eq!(doc["incident_stood_down"], json!(true), "{doc}");
    assert_eq!(doc["quarantined"], json!(false), "{doc}");
    assert_eq!(doc["safe_state_confirmed"], json!(false), "{doc}");
    client.cancel().await.expect("client closes");
    let ledger = std::fs::read_to_string(
        bench
            .world
            .home
            .join(".local/state/agentic-hil/coordination/recovery.jsonl"),
    )
    .expect("the ledger exists");
    assert!(
        ledger.contains("\"incident_stood_down\"")
            && ledger.contains("debugger_result_unconfirmed"),
        "{ledger}"
    );
}

/// A server of this bench killed with SIGKILL while a flash is in flight: frozen, the board holds
/// the flash until its server is dead, then runs on.
async fn kill_a_server_mid_flash(bench: &Bench) {
    let pid = bench.qemu_pid().to_string();
    let mut doomed = support::raw::Mcp::ours(&bench.world);
    let stopped = Command::new("kill").args(["-STOP", &pid]).status();
    assert!(stopped.is_ok_and(|s| s.success()), "qemu is stopped");
    doomed.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "flash_firmware", "arguments": flash_args("fw/ahil-fw-v2.elf", 2)}}));
    tokio::time::sleep(Duration::from_millis(400)).await;
    doomed.kill9();
    let resumed = Command::new("kill").args(["-CONT", &pid]).status();
    assert!(resumed.is_ok_and(|s| s.success()), "qemu resumes");
}

#[tokio::test]
async fn a_server_killed_in_the_middle_of_a_flash_leaves_an_incident_the_next_call_recovers() {
    let bench = Bench::full();
    kill_a_server_mid_flash(&bench).await;

    let (status, _) = bench.world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], json!(true), "{status}");
    assert_eq!(status["auto_recoverable"], json!(true), "{status}");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["recovery"]["outcome"], json!("recovered"), "{doc}");
    assert_eq!(doc["recovery"]["incident_resolved"], json!(true), "{doc}");
    assert_eq!(
        doc["recovery"]["resolved_reason"],
        json!("owner_process_exited_without_release"),
        "{doc}"
    );
    assert_eq!(
        doc["recovery"]["actions"],
        json!(["reap_processes", "reset_halt", "probe_target"])
    );
    let (status, _) = bench.world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], json!(false), "{status}");
    client.cancel().await.expect("client closes");
}

/// The catalogue's `bench_run_stop`: "With an incident open it runs the recovery
/// recovery.auto_recover allows (by default reset into halt, then a probe re-read), reported in
/// recovery." A run started after a server died mid-flash ends by proving the board.
#[tokio::test]
async fn a_run_ending_with_an_incident_open_runs_the_recovery_and_reports_it() {
    let bench = Bench::full();
    kill_a_server_mid_flash(&bench).await;

    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger", "id": "board"}]}),
    )
    .await;
    assert!(!is_error, "{doc}");
    let (doc, is_error) = call(&client, "bench_run_stop", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["run_was_active"], json!(true), "{doc}");
    assert_eq!(doc["recovery"]["outcome"], json!("recovered"), "{doc}");
    assert_eq!(
        doc["recovery"]["actions"],
        json!(["reap_processes", "reset_halt", "probe_target"]),
        "{doc}"
    );
    let (status, _) = bench.world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], json!(false), "{status}");
    // With nothing open, ending a run reports no recovery.
    let (doc, _) = call(&client, "bench_run_stop", json!({})).await;
    assert!(doc.get("recovery").is_none(), "{doc}");
    client.cancel().await.expect("client closes");
}

#[test]
fn sim_commands_without_a_qemu_debugger_say_so_and_start_nothing() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0));
    for command in ["start", "status", "stop"] {
        let (doc, code) = world.run_json(&["sim", command]);
        assert_eq!(code, Some(1), "{command}: {doc}");
        assert_eq!(
            doc["error_type"],
            json!("not_supported"),
            "{command}: {doc}"
        );
    }
    assert!(!world.home.join(".local/state/agentic-hil/sim").exists());
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

#[test]
fn a_supervisor_killed_with_sigkill_takes_its_qemu_with_it() {
    let bench = Bench::full();
    let qemu = bench.qemu_pid();
    let supervisor = parent_of(qemu).expect("qemu has a parent");
    let cmdline = std::fs::read(format!("/proc/{supervisor}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&cmdline).contains("supervise"),
        "the parent is the supervisor"
    );
    let killed = Command::new("kill")
        .args(["-KILL", &supervisor.to_string()])
        .status();
    assert!(killed.is_ok_and(|s| s.success()));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(qemu) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!running(qemu), "qemu outlived its supervisor");
    let (doc, _) = bench.world.run_json(&["sim", "status"]);
    assert_eq!(doc["running"], json!(false), "{doc}");
}
