//! Black-box, end to end: the built binary as an MCP server driving an ESP32 through esptool over the
//! board's serial port. esptool is `ahil-sim`'s scripted fake replaying esptool 5's recorded output,
//! and, where `target/esptool-venv` holds it (CI installs it), the real esptool on a port that does
//! not exist. The COM port is a pty, so the port lock and the COM session share a real device.

mod support;

use std::path::{Path, PathBuf};

use rmcp::service::RunningService;
use serde_json::json;
use support::World;
use support::raw::EchoBoard;
use support::{call, fakes};

type Client = RunningService<rmcp::RoleClient, ()>;

struct Bench {
    world: World,
    tools: PathBuf,
    device: String,
    _board: Option<EchoBoard>,
}

fn real_esptool() -> PathBuf {
    let exe =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/esptool-venv/bin/esptool");
    assert!(
        exe.is_file(),
        "esptool is missing from target/esptool-venv: run scripts/setup-debian.sh"
    );
    exe
}

impl Bench {
    /// One esptool debugger on com port `uart0`; a pty board unless `device` names another path.
    fn new(
        scenario: &str,
        executable: Option<&Path>,
        device: Option<&str>,
        timeout_s: u32,
    ) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let tools = fakes::tools(&world);
        let exe = executable.map_or_else(
            || fakes::install_probe_cli(&world, "esptool.py", scenario),
            Path::to_path_buf,
        );
        fakes::play(&tools, scenario);
        let board = device.is_none().then(EchoBoard::start);
        let device = device.map_or_else(
            || board.as_ref().expect("board").device.clone(),
            str::to_owned,
        );
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: esp32\n\
             debuggers:\n  esp:\n    type: esptool\n    executable: \"{exe}\"\n    com_port: uart0\n\
             \x20   flash_address: \"0x10000\"\n    timeout_s: {timeout_s}\n\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
             com_ports:\n  uart0:\n    device: \"{device}\"\n    identity_source: device\n\
             \x20   permissions:\n      allow_write: true\n\
             artifacts:\n  allowed_roots: [fw]\n",
            ws = world.workspace.display(),
            state = state.display(),
            exe = exe.display(),
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        let fw = world.workspace.join("fw");
        std::fs::create_dir_all(&fw).expect("fw dir");
        std::fs::write(fw.join("app.bin"), [0xE9_u8; 256]).expect("bin image");
        std::fs::write(
            fw.join("app.hex"),
            ":10000000E9E9E9E9E9E9E9E9E9E9E9E9E9E9E9E960\n:00000001FF\n",
        )
        .expect("hex image");
        let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
        std::fs::copy(built.join("ahil-fw-v1.elf"), fw.join("app.elf")).expect("elf image");
        Self {
            world,
            tools,
            device,
            _board: board,
        }
    }

    fn scenario(&self, scenario: &str) {
        fakes::play(&self.tools, scenario);
    }

    fn calls(&self) -> Vec<Vec<String>> {
        fakes::calls(&self.tools)
    }

    async fn connect(&self) -> Client {
        support::connect(&self.world).await
    }
}

#[tokio::test]
async fn esptool_probes_flashes_and_resets_through_the_configured_port() {
    let bench = Bench::new("ok", None, None, 20);
    let client = bench.connect().await;
    let port = format!("--port={}", bench.device);

    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["backend"], "esptool");
    assert_eq!(doc["success_confirmed"], true);
    assert_eq!(
        doc["operation_result"]["matched_success_text"],
        json!(["Chip type:", "Detected flash size:", "Hard resetting"])
    );

    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/app.bin", "reset_after_flash": false}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["verify"], true);
    assert_eq!(doc["reset_after_flash"], false);
    assert!(
        doc["summary"]
            .as_str()
            .is_some_and(|s| s.contains("not reset")),
        "{doc}"
    );

    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/app.hex", "reset_after_flash": true}),
    )
    .await;
    assert!(!is_error, "{doc}");

    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "halt"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        doc["operation_result"]["matched_success_text"],
        json!(["Staying in bootloader."])
    );

    let calls = bench.calls();
    let commands: Vec<&Vec<String>> = calls.iter().filter(|c| c[0] != "version").collect();
    assert_eq!(
        calls.len(),
        2 * commands.len(),
        "each command follows a version check"
    );
    assert_eq!(commands.len(), 4, "{calls:?}");
    for command in &commands {
        assert_eq!(command[0], "--chip=auto");
        assert_eq!(command[1], port);
    }
    let bin = commands[1];
    assert!(bin.contains(&"--after=no-reset".to_owned()), "{bin:?}");
    let at = bin
        .iter()
        .position(|a| a == "write-flash")
        .expect("write-flash");
    assert_eq!(bin[at + 1..at + 3], ["--no-progress", "0x10000"]);
    assert!(
        bin[at + 3].ends_with("/image.bin")
            && !bin[at + 3].contains(&*bench.world.workspace.to_string_lossy()),
        "esptool writes the staged copy, not the workspace file: {bin:?}"
    );
    let hex = commands[2];
    assert!(hex.contains(&"--after=hard-reset".to_owned()), "{hex:?}");
    assert!(hex.contains(&"0x0".to_owned()), "{hex:?}");
    assert!(commands[3].contains(&"--after=no-reset".to_owned()));
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_elf_and_reset_init_and_a_probe_listing_are_refused_without_running_esptool() {
    let bench = Bench::new("ok", None, None, 20);
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/app.elf"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], "invalid_argument", "{doc}");
    assert_eq!(doc["target_contacted"], false);
    let (doc, _) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert_eq!(doc["error_type"], "not_supported", "{doc}");
    let (doc, _) = call(&client, "debugger_probes_list", json!({})).await;
    assert_eq!(doc["error_type"], "not_supported", "{doc}");
    assert_eq!(doc["com_port_device"], bench.device.as_str());
    let ran: Vec<Vec<String>> = bench
        .calls()
        .into_iter()
        .filter(|c| c[0] != "version")
        .collect();
    assert!(ran.is_empty(), "esptool never opened the port: {ran:?}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn each_recorded_esptool_failure_reaches_the_agent_as_its_error_type() {
    let bench = Bench::new("ok", None, None, 20);
    let client = bench.connect().await;
    for (scenario, tool, error_type, contacted) in [
        ("no-port", "probe_target", "com_port_open_failed", false),
        ("no-chip", "probe_target", "target_not_detected", true),
        ("wrong-chip", "flash_firmware", "target_type_invalid", true),
        ("verify-fail", "flash_firmware", "verify_failed", true),
        ("write-fail", "flash_firmware", "flash_failed", true),
        ("unconfirmed", "reset_target", "reset_failed", true),
        (
            "unconfirmed",
            "probe_target",
            "target_state_unconfirmed",
            true,
        ),
        ("garbled", "probe_target", "debugger_error", true),
        ("old-version", "flash_firmware", "debugger_not_found", false),
    ] {
        bench.scenario(scenario);
        let args = if tool == "flash_firmware" {
            json!({"image_path": "fw/app.bin"})
        } else {
            json!({})
        };
        let (doc, is_error) = call(&client, tool, args).await;
        assert!(is_error, "{scenario}: {doc}");
        assert_eq!(doc["error_type"], error_type, "{scenario}: {doc}");
        assert_eq!(doc["backend"], "esptool", "{scenario}");
        assert!(
            doc["likely_causes"]
                .as_array()
                .is_some_and(|c| !c.is_empty()),
            "{scenario}: {doc}"
        );
        if contacted {
            assert_ne!(doc["target_contacted"], false, "{scenario}: {doc}");
        } else {
            assert_eq!(doc["target_contacted"], false, "{scenario}: {doc}");
        }
    }
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_com_session_on_the_port_and_esptool_exclude_each_other() {
    let bench = Bench::new("ok", None, None, 20);
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "com_session_start", json!({"port_id": "uart0"})).await;
    assert!(!is_error, "{doc}");
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/app.bin"}),
    )
    .await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "device_busy", "{doc}");
    assert_eq!(doc["target_contacted"], false);
    assert!(
        bench.calls().is_empty(),
        "esptool did not start while the session held the port"
    );
    let (doc, is_error) = call(&client, "com_session_stop", json!({"port_id": "uart0"})).await;
    assert!(!is_error, "{doc}");
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "the port is free again: {doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_com_session_of_another_server_cannot_start_while_esptool_holds_the_port() {
    let bench = Bench::new("connect-hang", None, None, 4);
    let flasher = bench.connect().await;
    let other = bench.connect().await;
    let started = bench.tools.join("child.pid");
    let (probe, session) = tokio::join!(call(&flasher, "probe_target", json!({})), async {
        for _ in 0..100 {
            if started.exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert!(started.exists(), "esptool started");
        call(&other, "com_session_start", json!({"port_id": "uart0"})).await
    });
    let (doc, is_error) = session;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "device_busy", "{doc}");
    let (doc, _) = probe;
    assert_eq!(doc["error_type"], "timeout", "{doc}");
    let pid = std::fs::read_to_string(&started).expect("pid");
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    assert!(
        stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .unwrap_or_default()
                .trim_start()
                .starts_with('Z'),
        "the hung esptool is gone: {stat}"
    );
    let (doc, is_error) = call(&other, "com_session_start", json!({"port_id": "uart0"})).await;
    assert!(!is_error, "the port is free once esptool is gone: {doc}");
    flasher.cancel().await.expect("client closes");
    other.cancel().await.expect("client closes");
}

#[tokio::test]
async fn debugger_info_reports_the_esptool_version() {
    let bench = Bench::new("ok", None, None, 20);
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "debugger_info", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["backend"], "esptool");
    assert_eq!(doc["version"], "5.5.0");
    bench.scenario("old-version");
    let (doc, is_error) = call(&client, "debugger_info", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], "debugger_not_found", "{doc}");
    assert_eq!(doc["version"], "4.8.1");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn real_esptool_on_a_port_that_does_not_exist_is_com_port_open_failed() {
    let exe = real_esptool();
    let gone = std::env::temp_dir().join(format!("ahil-no-such-tty-{}", std::process::id()));
    let bench = Bench::new("ok", Some(&exe), Some(&gone.display().to_string()), 30);
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], "com_port_open_failed", "{doc}");
    assert_eq!(doc["backend_error_type"], "port_open_failed");
    assert_eq!(doc["target_contacted"], false);
    let (doc, is_error) = call(&client, "debugger_info", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["version"], "5.5.0");
    client.cancel().await.expect("client closes");
}

#[test]
fn doctor_checks_the_esptool_version_without_opening_the_port() {
    let bench = Bench::new("ok", None, None, 20);
    let (doc, _) = bench.world.run_json(&["doctor"]);
    assert_eq!(doc["debuggers"]["esp"]["check"]["ok"], true, "{doc}");
    assert_eq!(
        doc["debuggers"]["esp"]["check"]["version"], "5.5.0",
        "{doc}"
    );
    assert_eq!(bench.calls(), [["version"]], "only the version ran");
    bench.scenario("old-version");
    let (doc, _) = bench.world.run_json(&["doctor"]);
    assert_eq!(
        doc["debuggers"]["esp"]["check"]["error_type"], "debugger_not_found",
        "{doc}"
    );
}
