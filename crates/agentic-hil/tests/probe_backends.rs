//! Black-box, end to end: the built binary as an MCP server driving the OpenOCD, pyOCD and
//! STM32CubeProgrammer backends. The executables are `ahil-sim`'s scripted fake, copied outside the
//! workspace under the backend's name and told which recorded output to replay; where Debian's
//! `openocd` is installed, it runs for real too.

mod support;

use std::path::{Path, PathBuf};

use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::shim::alive;
use support::sim_board::copy_firmware_as;
use support::{World, call, fakes};

type Client = RunningService<rmcp::RoleClient, ()>;

/// A world with one debugger of `kind` whose executable is the fake playing `scenario`.
struct Bench {
    world: World,
    tools: PathBuf,
    state: PathBuf,
}

fn exe_name(kind: &str) -> &'static str {
    match kind {
        "openocd" => "openocd.py",
        "pyocd" => "pyocd.py",
        _ => "STM32_Programmer_CLI.py",
    }
}

impl Bench {
    /// `entry` is extra YAML for the debugger entry (indented six spaces).
    fn new(kind: &str, scenario: &str, executable: Option<&Path>, entry: &str) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let tools = fakes::tools(&world);
        let exe = executable.map_or_else(
            || fakes::install_probe_cli(&world, exe_name(kind), scenario),
            Path::to_path_buf,
        );
        fakes::play(&tools, scenario);
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  probe:\n    type: {kind}\n    executable: \"{exe}\"\n{entry}\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
             artifacts:\n  allowed_roots: [fw]\n",
            ws = world.workspace.display(),
            state = state.display(),
            exe = exe.display(),
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        copy_firmware_as(
            &world,
            &[("ahil-fw-v1.elf", "fw.elf"), ("ahil-fw-v1.bin", "fw.bin")],
        );
        Self {
            world,
            tools,
            state,
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

    /// The state root's absolute path never appears in a result.
    fn assert_private(&self, doc: &Value) {
        let shown = doc.to_string();
        assert!(
            !shown.contains(&self.state.display().to_string()),
            "no state-root path in the result: {shown}"
        );
    }
}

#[tokio::test]
async fn openocd_probes_flashes_and_resets_with_confirmed_markers() {
    let bench = Bench::new("openocd", "ok", None, "");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["target_detected"], json!(true));
    assert_eq!(doc["success_confirmed"], json!(true));
    assert_eq!(doc["backend"], json!("openocd"));

    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.elf", "reset_after_flash": true}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["reset_after_flash"], json!(true));
    bench.assert_private(&doc);
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["mode"], json!("init"));

    let calls = bench.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    let flash_script = calls[1].last().expect("script");
    assert!(
        flash_script.contains("program \"") && flash_script.contains("\" verify reset;"),
        "{flash_script}"
    );
    assert!(calls[2].last().expect("script").contains("; reset init;"));
    for server in [
        "gdb_port disabled",
        "tcl_port disabled",
        "telnet_port disabled",
    ] {
        assert!(calls[0].iter().any(|a| a == server), "{server}");
    }
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn openocd_without_a_probe_is_adapter_not_found_and_retry_safe() {
    let bench = Bench::new("openocd", "no-probe", None, "");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("adapter_not_found"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false));
    assert_eq!(doc["retry_safe"], json!(true));
    assert!(
        doc["likely_causes"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    bench.assert_private(&doc);
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn openocd_failure_words_before_the_marker_come_back_as_warnings() {
    let bench = Bench::new("openocd", "warnings", None, "");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        doc["backend_warnings"],
        json!(["Error: auto0.tap: IR capture error; saw 0x0003 not 0x0001"])
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn openocd_lists_the_usb_inventory_as_incomplete() {
    let bench = Bench::new("openocd", "ok", None, "");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "debugger_probes_list", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["complete"], json!(false));
    assert!(doc["probes"].is_array());
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_openocd_script_in_the_temp_dir_is_refused_before_openocd_runs() {
    let world_tmp = tempfile::tempdir().expect("tmp");
    let script = world_tmp.path().join("evil.cfg");
    std::fs::write(&script, "adapter driver dummy\n").expect("script");
    let entry = format!("    interface_cfg: \"{}\"\n", script.display());
    let bench = Bench::new("openocd", "ok", None, &entry);
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("unsafe_configured_path"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false));
    assert!(bench.calls().is_empty(), "openocd never ran");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_hung_backend_is_killed_at_its_timeout_with_its_grandchild_and_the_probe_is_free_again() {
    let bench = Bench::new("openocd", "fork-hang", None, "    timeout_s: 3\n");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "halt"})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("timeout"), "{doc}");
    assert_eq!(doc["retry_safe"], json!(false));
    for file in ["child.pid", "grandchild.pid"] {
        let pid: i32 = std::fs::read_to_string(bench.tools.join(file))
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        assert!(!alive(pid), "{file} {pid} survived the timeout");
    }
    bench.scenario("ok");
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(!is_error, "the lock was released after the kill: {doc}");
    assert_eq!(doc["target_detected"], json!(true));
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn pyocd_reports_a_failed_post_flash_reset_as_a_partial_side_effect() {
    let bench = Bench::new(
        "pyocd",
        "reset-fail",
        None,
        "    target_type: stm32f405rg\n",
    );
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.elf", "reset_after_flash": true}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("reset_failed"), "{doc}");
    assert_eq!(doc["side_effect_committed"], json!(true));
    assert_eq!(doc["side_effect_status"], json!("partial"));
    assert_eq!(doc["retry_safe"], json!(false));
    let calls = bench.calls();
    assert_eq!(calls[0][..3], ["flash", "-W", "--no-reset"]);
    assert_eq!(calls[1][..4], ["commander", "-W", "--command", "reset"]);
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn pyocd_refuses_a_bin_without_flash_address_and_reset_init_before_running() {
    let bench = Bench::new("pyocd", "ok", None, "");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.bin"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("invalid_argument"), "{doc}");
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("not_supported"), "{doc}");
    assert_eq!(doc["supported_modes"], json!(["run", "halt"]));
    assert!(bench.calls().is_empty(), "pyocd never ran");
    let (doc, is_error) = call(&client, "debugger_probes_list", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["probes"].as_array().map(Vec::len), Some(2));
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn adopt_takes_the_one_attached_pyocd_probe_as_probe_id_and_the_operator_writes_it() {
    let bench = Bench::new("pyocd", "one-probe", None, "");
    let before = std::fs::read_to_string(bench.world.config_path()).expect("config");
    let client = bench.connect().await;
    let (plan, is_error) = call(&client, "project_config_adopt_hardware", json!({})).await;
    assert!(!is_error, "{plan}");
    assert_eq!(
        plan["carried"],
        json!([{"key": "debuggers.probe.probe_id", "value": "0670FF515455827267135939"}]),
        "{plan}"
    );
    assert_eq!(
        plan["already_current"][0]["key"],
        json!("debuggers.probe.executable"),
        "the pinned executable is what was found"
    );
    assert_eq!(plan["applied"], json!(false));
    assert_eq!(plan["target_contacted"], json!(false));
    assert_eq!(bench.calls(), [["json", "--probes", "--no-config"]]);
    client.cancel().await.expect("client closes");
    let after = std::fs::read_to_string(bench.world.config_path()).expect("config");
    assert_eq!(after, before, "a proposal writes nothing");

    let (done, code) = bench.world.run_json(&["adopt-hardware"]);
    assert_eq!(code, Some(0), "{done}");
    assert_eq!(done["applied"], json!(true), "{done}");
    let text = std::fs::read_to_string(bench.world.config_path()).expect("config");
    assert!(
        text.contains("probe_id: \"0670FF515455827267135939\""),
        "{text}"
    );
    let (again, _) = bench.world.run_json(&["adopt-hardware", "--dry-run"]);
    assert_eq!(again["carried"], json!([]), "{again}");
}

#[test]
fn adopt_takes_the_serial_port_carrying_the_probes_serial_number_as_the_boards_port() {
    let bench = Bench::new("pyocd", "one-probe", None, "");
    // An ST-LINK's virtual COM port carries the probe's serial number; the other adapter does not.
    let inventory = bench.tools.join("inventory.json");
    std::fs::write(
        &inventory,
        json!([
            {"device": "/dev/ttyUSB0", "vid": 1027, "pid": 24577, "serial_number": "A50285BI"},
            {"device": "/dev/ttyACM7", "vid": 1155, "pid": 14155, "serial_number": "0670ff515455827267135939"},
        ])
        .to_string(),
    )
    .expect("inventory");
    let out = bench
        .world
        .command()
        .args(["adopt-hardware", "--json"])
        .env("AHIL_TEST_SERIAL_INVENTORY", &inventory)
        .output()
        .expect("adopt runs");
    let done: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(out.status.code(), Some(0), "{done}");
    assert_eq!(done["com_port_id"], json!("probe_uart"), "{done}");
    assert_eq!(done["created_entries"], json!(["com_ports.probe_uart"]));
    assert_eq!(
        support::carried_keys(&done),
        [
            "debuggers.probe.probe_id",
            "com_ports.probe_uart.device",
            "com_ports.probe_uart.serial_number"
        ]
    );
    let text = std::fs::read_to_string(bench.world.config_path()).expect("config");
    assert!(text.contains("device: \"/dev/ttyACM7\""), "{text}");
    assert!(
        text.contains("allow_write: false"),
        "a created port has no grant: {text}"
    );
    // The written file loads, and the board has nothing more to say.
    let again = bench
        .world
        .command()
        .args(["adopt-hardware", "--dry-run", "--json"])
        .env("AHIL_TEST_SERIAL_INVENTORY", &inventory)
        .output()
        .expect("adopt runs");
    let again: Value = serde_json::from_slice(&again.stdout).expect("one JSON document");
    assert_eq!(again["carried"], json!([]), "{again}");
}

#[tokio::test]
async fn adopt_asks_which_of_several_probes_and_refuses_one_not_attached() {
    let bench = Bench::new("pyocd", "ok", None, "");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "project_config_adopt_hardware", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("invalid_argument"), "{doc}");
    assert_eq!(
        doc["candidate_probe_ids"],
        json!(["0670FF515455827267135939", "E6614103E7"])
    );
    let (doc, is_error) = call(
        &client,
        "project_config_adopt_hardware",
        json!({"probe_id": "0670FF0000"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("hardware_mismatch"), "{doc}");
    assert_eq!(doc["retry_safe"], json!(true));
    // pyOCD selects by any unambiguous part of the UID; the full UID is what gets written.
    let (doc, is_error) = call(
        &client,
        "project_config_adopt_hardware",
        json!({"probe_id": "e66141"}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["carried"][0]["value"], json!("E6614103E7"));
    bench.scenario("no-probe");
    let (doc, is_error) = call(&client, "project_config_adopt_hardware", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("adapter_not_found"), "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn stlink_erase_refusal_is_classified_and_never_called_retry_safe() {
    let bench = Bench::new("stlink", "erase-refused", None, "    probe_id: STLINK123\n");
    let client = bench.connect().await;
    let (doc, is_error) = call(
        &client,
        "flash_firmware",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("flash_erase_failed"), "{doc}");
    assert_eq!(
        doc["erase_abort_point"]["reading"],
        json!("erase_refused_effect_unconfirmed")
    );
    assert_eq!(doc["retry_safe"], json!(false));
    assert_eq!(
        bench.calls()[0][..5],
        ["-q", "-c", "port=SWD", "mode=HOTPLUG", "sn=STLINK123"]
    );

    bench.scenario("ok");
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "run"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        doc["operation_result"]["matched_success_text"],
        json!(["MCU Reset", "reset is performed"])
    );
    let (doc, is_error) = call(&client, "debugger_probes_list", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        doc["probes"][0]["probe_id"],
        json!("066DFF535254887767184038")
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn real_openocd_without_a_probe_is_adapter_not_found_through_the_gate() {
    // Debian's package, which scripts/setup-debian.sh installs.
    let openocd = std::path::PathBuf::from("/usr/bin/openocd");
    assert!(
        openocd.is_file(),
        "/usr/bin/openocd is missing: run scripts/setup-debian.sh"
    );
    let bench = Bench::new("openocd", "ok", Some(&openocd), "");
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "probe_target", json!({})).await;
    assert!(is_error);
    assert_eq!(doc["error_type"], json!("adapter_not_found"), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false));
    client.cancel().await.expect("client closes");
}

/// On the bench `init` writes, whose debugger names no executable yet, the image is checked before
/// the toolchain: the agent hears first about what it can fix itself.
#[tokio::test]
async fn an_unbound_debugger_still_checks_the_image_first_for_flash_and_debug_sessions() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    std::fs::write(world.workspace.join("junk.elf"), b"not an image").expect("junk image");
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    std::fs::copy(built.join("ahil-fw-v1.elf"), world.workspace.join("fw.elf")).expect("image");
    let client = support::connect(&world).await;
    for tool in ["flash_firmware", "debug_start_session"] {
        for (image, expected) in [
            ("missing.elf", "artifact_not_found"),
            ("junk.elf", "artifact_validation_failed"),
            ("fw.elf", "debugger_not_found"),
        ] {
            let (doc, is_error) = call(&client, tool, json!({"image_path": image})).await;
            assert!(is_error, "{tool} {image}: {doc}");
            assert_eq!(doc["error_type"], expected, "{tool} {image}: {doc}");
            assert_eq!(doc["target_contacted"], false, "{tool} {image}: {doc}");
        }
    }
    client.cancel().await.expect("client closes");
}
