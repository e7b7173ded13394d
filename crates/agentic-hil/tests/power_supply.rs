//! Black-box, end to end: the built binary as an MCP server driving the simulated RS-3005P bench
//! supply (`ahil-psu-sim` of ahil-sim, a pty owned by a child process) through the whole gate. The
//! simulator journals every command it receives, so each test can prove what reached the "unit".

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use rmcp::service::RunningService;
use serde_json::{Value, json};
use support::World;
use support::call;

type Client = RunningService<rmcp::RoleClient, ()>;

/// The identity the simulator reports unless told otherwise, and the serial configured for it.
const SERIAL: &str = "03682957";
const VID: u16 = 0x0416;
const PID: u16 = 0x5011;

/// Limits and grants of the one supply a test bench has.
struct Supply {
    /// Extra keys under the supply entry (limits, grants).
    entry: &'static str,
    mode: &'static str,
    idn: Option<&'static str>,
    /// The USB vid the host reports for the supply's port.
    host_vid: u16,
    /// The permissions block of the board the supply powers.
    board: &'static str,
}

const GRANTED: &str = "    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n    channels:\n      \"1\": {voltage_limit_v: 5.0, current_limit_a: 1.0}\n    permissions: {allow_set: true, allow_output: true}\n";

impl Default for Supply {
    fn default() -> Self {
        Self {
            entry: GRANTED,
            mode: "normal",
            idn: None,
            host_vid: VID,
            // Switching the supply restarts the board, which needs the board's reset grant.
            board: "    permissions:\n      allow_reset: true\n",
        }
    }
}

/// A world with a configured supply whose port is the simulator's pty; the simulator is stopped
/// when this is dropped.
struct Bench {
    world: World,
    sim: Child,
    journal: PathBuf,
    inventory: PathBuf,
}

impl Bench {
    /// The default supply entry, with the simulator in `mode`.
    fn in_mode(mode: &'static str) -> Self {
        Self::new(&Supply {
            mode,
            ..Supply::default()
        })
    }

    fn new(supply: &Supply) -> Self {
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let link = world.home.join("psu-tty");
        let journal = world.home.join("psu-journal.txt");
        let mut sim = world.command_of(&support::power_supply_simulator());
        sim.arg("--link")
            .arg(&link)
            .args(["--mode", supply.mode, "--journal"])
            .arg(&journal);
        if let Some(idn) = supply.idn {
            sim.args(["--idn", idn]);
        }
        let mut sim = sim
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the supply simulator starts");
        let mut ready = String::new();
        BufReader::new(sim.stdout.take().expect("stdout"))
            .read_line(&mut ready)
            .expect("the simulator says where its pty is");
        assert_eq!(ready.trim(), link.display().to_string());
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: sim\n  controller: stm32f405\n\
             debuggers:\n  board:\n    type: qemu\n    timeout_s: 10\n{board}\
             com_ports:\n  psu:\n    device: \"{link}\"\n    resource_id: bench-psu\n    vid: {VID}\n    pid: {PID}\n\
             power_supplies:\n  bench:\n    type: rs3005p\n    com_port: psu\n    powers: [board]\n\
             \x20   idn_serial: \"{SERIAL}\"\n    timeout_s: 0.3\n{entry}",
            ws = world.workspace.display(),
            state = state.display(),
            link = link.display(),
            entry = supply.entry,
            board = supply.board,
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        let inventory = world.home.join("serial-inventory.json");
        let ports =
            json!([{"device": link.display().to_string(), "vid": supply.host_vid, "pid": PID}]);
        std::fs::write(&inventory, ports.to_string()).expect("the inventory is written");
        Self {
            world,
            sim,
            journal,
            inventory,
        }
    }

    /// An MCP session whose server sees the simulator's pty as a USB port with the configured ids.
    async fn connect(&self) -> Client {
        let mut cmd = Command::new(World::binary());
        self.world.scrub(&mut cmd);
        cmd.env("AHIL_TEST_SERIAL_INVENTORY", &self.inventory);
        support::connect_command(cmd).await
    }

    /// Every command the simulated unit received, in order.
    fn journal(&self) -> Vec<String> {
        std::fs::read_to_string(&self.journal)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The commands that change the unit.
    fn writes(&self) -> Vec<String> {
        self.journal()
            .into_iter()
            .filter(|c| !c.ends_with('?'))
            .collect()
    }

    fn report(&self, doc: &Value) -> Value {
        let path = doc["report_path"]
            .as_str()
            .unwrap_or_else(|| panic!("the call wrote a report: {doc}"));
        let text = std::fs::read_to_string(self.world.workspace.join(path))
            .expect("the report is readable");
        serde_json::from_str(&text).expect("the report is JSON")
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.sim.kill();
        let _ = self.sim.wait();
    }
}

async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(!is_error, "{tool} failed: {doc}");
    assert_eq!(doc["ok"], true, "{doc}");
    doc
}

async fn refused(client: &Client, tool: &str, args: Value, error_type: &str) -> Value {
    let (doc, is_error) = call(client, tool, args).await;
    assert!(is_error, "{tool} should fail: {doc}");
    assert_eq!(doc["error_type"], error_type, "{doc}");
    doc
}

#[tokio::test]
async fn status_reads_every_value_and_its_limits_and_writes_nothing() {
    let bench = Bench::new(&Supply::default());
    let client = bench.connect().await;
    let doc = ok(
        &client,
        "power_supply_status",
        json!({"supply_id": "bench"}),
    )
    .await;
    assert_eq!(doc["model"], "RS-3005P");
    assert_eq!(doc["firmware"], "V6.9");
    let channel = &doc["channels"][0];
    assert_eq!(channel["set_voltage_v"], "5.00");
    assert_eq!(channel["set_current_a"], "1.000");
    assert_eq!(channel["measured_voltage_v"], "0.00");
    assert_eq!(channel["output_on"], false);
    assert_eq!(
        doc["limits"]["1"],
        json!({"voltage_v": "5.0", "current_a": "1.0"})
    );
    assert_eq!(doc["protection"]["1"]["ovp"]["support"], "unsupported");
    assert_eq!(doc["missing_limits"], json!([]));
    assert_eq!(doc["writes_refused_reason"], Value::Null);
    assert_eq!(
        bench.journal(),
        ["*IDN?", "VSET1?", "ISET1?", "VOUT1?", "IOUT1?", "STATUS?"]
    );
    assert!(
        !doc.to_string().contains(SERIAL),
        "the unit's serial stays out"
    );
    assert_eq!(bench.report(&doc)["tool"], "power_supply_status");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn set_writes_both_values_reads_them_back_and_is_recorded() {
    let bench = Bench::new(&Supply::default());
    let client = bench.connect().await;
    let doc = ok(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3, "current_a": 0.5}),
    )
    .await;
    assert_eq!(
        doc["requested"],
        json!({"voltage_v": "3.3", "current_a": "0.5"})
    );
    assert_eq!(
        doc["read_back"],
        json!({"voltage_v": "3.30", "current_a": "0.500"})
    );
    assert_eq!(doc["side_effect_status"], "committed");
    assert_eq!(doc["target_contacted"], true);
    assert_eq!(
        doc["channels"][0]["output_on"], false,
        "set leaves the output alone"
    );
    assert_eq!(bench.writes(), ["VSET1:3.30", "ISET1:0.500"]);
    let held = doc["run"]["declared_devices"]
        .as_array()
        .expect("the call's implicit run");
    assert_eq!(held[0], "physical:bench-psu");
    assert!(
        held.len() > 1,
        "the powered board's debugger is held too: {doc}"
    );
    let report = bench.report(&doc);
    assert_eq!(report["tool"], "power_supply_set");
    assert_eq!(report["read_back"]["voltage_v"], "3.30");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_value_above_the_effective_limit_is_refused_before_any_contact() {
    let bench = Bench::new(&Supply::default());
    let client = bench.connect().await;
    // 5.01 V is inside the supply-wide 5.5 V but above the channel's 5.0 V.
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 5.01}),
        "power_supply_limit_exceeded",
    )
    .await;
    assert_eq!(doc["limit"], "5.0");
    assert_eq!(doc["field"], "voltage_v");
    assert_eq!(doc["retry_safe"], true);
    assert_eq!(doc["hardware_state"], "unchanged");
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3, "current_a": 1.001}),
        "power_supply_limit_exceeded",
    )
    .await;
    assert_eq!(doc["field"], "current_a");
    assert!(bench.journal().is_empty(), "nothing reached the unit");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn missing_limits_refuse_every_write_but_reads_still_work() {
    let bench = Bench::new(&Supply {
        entry: "    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n    permissions: {allow_set: true, allow_output: true}\n",
        ..Supply::default()
    });
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3}),
        "permission_denied",
    )
    .await;
    assert_eq!(
        doc["missing_limits"],
        json!([
            "power_supplies.bench.channels.1.current_limit_a",
            "power_supplies.bench.channels.1.voltage_limit_v"
        ])
    );
    refused(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
        "permission_denied",
    )
    .await;
    assert!(bench.journal().is_empty());
    let status = ok(
        &client,
        "power_supply_status",
        json!({"supply_id": "bench"}),
    )
    .await;
    assert_eq!(status["missing_limits"].as_array().map(Vec::len), Some(2));
    assert!(status["writes_refused_reason"].is_string());
    assert!(bench.writes().is_empty());
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn without_the_grants_writes_are_permission_denied() {
    let bench = Bench::new(&Supply {
        entry: "    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n    channels:\n      \"1\": {voltage_limit_v: 5.0, current_limit_a: 1.0}\n",
        ..Supply::default()
    });
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 9.0}),
        "permission_denied",
    )
    .await;
    assert_eq!(
        doc["permission"],
        "power_supplies.bench.permissions.allow_set"
    );
    let doc = refused(
        &client,
        "power_supply_cycle",
        json!({"supply_id": "bench", "off_s": 0.5}),
        "permission_denied",
    )
    .await;
    assert_eq!(
        doc["permission"],
        "power_supplies.bench.permissions.allow_output"
    );
    assert!(bench.journal().is_empty());
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn switching_a_supply_is_refused_while_the_board_it_powers_may_not_be_reset() {
    let bench = Bench::new(&Supply {
        board: "",
        ..Supply::default()
    });
    let client = bench.connect().await;
    for (tool, args) in [
        (
            "power_supply_output",
            json!({"supply_id": "bench", "on": true}),
        ),
        (
            "power_supply_cycle",
            json!({"supply_id": "bench", "off_s": 0.5}),
        ),
    ] {
        let doc = refused(&client, tool, args, "permission_denied").await;
        assert_eq!(doc["permission"], "debuggers.board.permissions.allow_reset");
        assert_eq!(doc["device"], "debuggers.board", "{doc}");
        assert_eq!(doc["target_contacted"], false);
    }
    // The supply's own setpoints leave the board running: set needs only allow_set.
    ok(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3}),
    )
    .await;
    assert!(
        bench.writes().iter().all(|c| !c.starts_with("OUT")),
        "the output was never switched: {:?}",
        bench.writes()
    );
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn output_on_and_off_are_read_back_and_each_is_recorded() {
    let bench = Bench::new(&Supply::default());
    let client = bench.connect().await;
    let on = ok(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
    )
    .await;
    assert_eq!(on["read_back"], json!({"output_on": true}));
    assert_eq!(on["measured"]["voltage_v"], "5.00");
    assert_eq!(on["side_effect_status"], "committed");
    assert_eq!(bench.report(&on)["read_back"]["output_on"], true);
    let off = ok(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": false}),
    )
    .await;
    assert_eq!(off["read_back"], json!({"output_on": false}));
    assert_eq!(off["was_on"], true);
    assert_eq!(bench.report(&off)["tool"], "power_supply_output");
    assert_eq!(bench.writes(), ["OUT1", "OUT0"]);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn switching_on_is_refused_while_a_stored_set_point_is_above_the_limit() {
    // The unit holds 5.00 V; this channel may only have 3.3 V.
    let bench = Bench::new(&Supply {
        entry: "    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n    channels:\n      \"1\": {voltage_limit_v: 3.3, current_limit_a: 1.0}\n    permissions: {allow_set: true, allow_output: true}\n",
        ..Supply::default()
    });
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
        "power_supply_limit_exceeded",
    )
    .await;
    assert_eq!(doc["requested"], "5.00");
    assert_eq!(doc["limit"], "3.3");
    assert_eq!(doc["hardware_state"], "unchanged");
    // A set of the current alone would leave the voltage above its limit.
    refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "current_a": 0.2}),
        "power_supply_limit_exceeded",
    )
    .await;
    assert!(bench.writes().is_empty(), "no write reached the unit");
    ok(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3}),
    )
    .await;
    ok(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
    )
    .await;
    assert_eq!(bench.writes(), ["VSET1:3.30", "OUT1"]);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn cycle_switches_off_waits_and_switches_on() {
    let bench = Bench::new(&Supply::default());
    let client = bench.connect().await;
    let started = std::time::Instant::now();
    let doc = ok(
        &client,
        "power_supply_cycle",
        json!({"supply_id": "bench", "off_s": 0.5}),
    )
    .await;
    assert!(started.elapsed() >= std::time::Duration::from_millis(500));
    assert_eq!(doc["read_back"], json!({"output_on": true}));
    assert_eq!(doc["off_s"], 0.5);
    assert_eq!(bench.writes(), ["OUT0", "OUT1"]);
    assert_eq!(bench.report(&doc)["tool"], "power_supply_cycle");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_supply_that_does_not_hold_a_value_gives_a_readback_mismatch() {
    let bench = Bench::in_mode("lie-readback");
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3, "current_a": 0.5}),
        "power_supply_readback_mismatch",
    )
    .await;
    assert_eq!(doc["requested"], json!({"voltage_v": "3.3"}));
    assert_eq!(doc["read_back"], json!({"voltage_v": "3.29"}));
    assert_eq!(doc["side_effect_status"], "partial");
    assert_eq!(doc["retry_safe"], false);
    assert_eq!(
        bench.writes(),
        ["VSET1:3.30"],
        "the current was not written after the mismatch"
    );
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn an_output_that_does_not_switch_on_gives_a_readback_mismatch() {
    let bench = Bench::in_mode("output-stuck-off");
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
        "power_supply_readback_mismatch",
    )
    .await;
    assert_eq!(doc["requested"], json!({"output_on": true}));
    assert_eq!(doc["read_back"], json!({"output_on": false}));
    assert_eq!(doc["side_effect_status"], "partial");
    assert_eq!(doc["retry_safe"], false);
    // A cycle stops at the switch that did not take.
    let doc = refused(
        &client,
        "power_supply_cycle",
        json!({"supply_id": "bench", "off_s": 0.5}),
        "power_supply_readback_mismatch",
    )
    .await;
    assert_eq!(doc["read_back"], json!({"output_on": false}));
    assert_eq!(bench.writes(), ["OUT1", "OUT0", "OUT1"]);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_supply_silent_after_a_write_leaves_the_state_unknown_and_raises_an_incident() {
    let bench = Bench::in_mode("silent-after-write");
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
        "power_supply_no_reply",
    )
    .await;
    assert_eq!(doc["hardware_state"], "unknown");
    assert_eq!(doc["side_effect_status"], "unknown");
    assert_eq!(doc["retry_safe"], false);
    assert_eq!(doc["cause"], "no_reply");
    assert_eq!(doc["cleanup_required"], true);
    assert_eq!(
        doc["cleanup_reasons"],
        json!(["power_supply_state_unconfirmed"])
    );
    assert_eq!(
        doc["last_known_output"]["output_on"], false,
        "the last state read"
    );
    assert_eq!(bench.writes(), ["OUT1"]);
    assert_eq!(bench.report(&doc)["error_type"], "power_supply_no_reply");
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_silent_supply_without_a_write_is_no_reply_and_changes_nothing() {
    let bench = Bench::in_mode("silent");
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3}),
        "power_supply_no_reply",
    )
    .await;
    assert_eq!(doc["hardware_state"], "unchanged");
    assert_eq!(doc["retry_safe"], true);
    assert_eq!(doc["cleanup_reasons"], json!([]), "no incident: {doc}");
    assert_eq!(bench.journal(), ["*IDN?"]);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn another_unit_on_the_port_is_refused_after_only_the_identity_query() {
    let bench = Bench::new(&Supply {
        idn: Some("RS-3005P V6.9 SN:11112222"),
        ..Supply::default()
    });
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.3}),
        "power_supply_identity_mismatch",
    )
    .await;
    assert_eq!(doc["expected_idn_serial"], "[redacted]");
    assert!(
        !doc.to_string().contains("11112222"),
        "the unit's serial stays out"
    );
    assert!(!doc.to_string().contains(SERIAL));
    assert_eq!(doc["hardware_state"], "unchanged");
    assert_eq!(bench.journal(), ["*IDN?"]);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn an_unverified_firmware_is_refused_as_an_unknown_identity() {
    let bench = Bench::new(&Supply {
        idn: Some("RS-3005P V1.0 SN:03682957"),
        ..Supply::default()
    });
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_output",
        json!({"supply_id": "bench", "on": true}),
        "power_supply_identity_unknown",
    )
    .await;
    assert_eq!(doc["firmware"], "V1.0");
    assert_eq!(bench.journal(), ["*IDN?"]);
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_port_whose_usb_ids_differ_is_never_opened() {
    let bench = Bench::new(&Supply {
        host_vid: 0x1234,
        ..Supply::default()
    });
    let client = bench.connect().await;
    refused(
        &client,
        "power_supply_status",
        json!({"supply_id": "bench"}),
        "com_port_identity_mismatch",
    )
    .await;
    assert!(bench.journal().is_empty());
    client.cancel().await.expect("the session closes");
}

/// The supply's serial link is reserved from COM sessions under every name of its device: the
/// entry the supply names, and another entry naming the node its link leads to (a session on that
/// one used to open the pty and let `com_write` reach the supply past its grants and limits).
#[tokio::test]
async fn the_supply_port_is_reserved_from_com_sessions_under_every_name_of_its_device() {
    let bench = Bench::new(&Supply {
        entry: "    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n",
        ..Supply::default()
    });
    let node = std::fs::canonicalize(bench.world.home.join("psu-tty")).expect("the pty's node");
    let config = std::fs::read_to_string(bench.world.config_path()).expect("config");
    let alias = format!(
        "com_ports:\n  console:\n    device: \"{}\"\n    identity_source: device\n    permissions:\n      allow_write: true\n",
        node.display()
    );
    std::fs::write(
        bench.world.config_path(),
        config.replacen("com_ports:\n", &alias, 1),
    )
    .expect("the alias is configured");
    let client = bench.connect().await;
    for port_id in ["psu", "console"] {
        let args = json!({"port_id": port_id});
        let doc = refused(
            &client,
            "com_session_start",
            args,
            "com_port_reserved_for_power_supply",
        )
        .await;
        assert_eq!(doc["power_supply"], "bench", "{doc}");
        let write = json!({"port_id": port_id, "text": "VSET1:5.00\n"});
        let (sent, _) = call(&client, "com_write", write).await;
        assert!(
            bench.journal().is_empty(),
            "{port_id}: the supply heard {:?}: {sent}",
            bench.journal()
        );
    }
    client.cancel().await.expect("the session closes");
}

/// A plan's `uart_open` on the supply's port would call a COM session the port refuses: preflight
/// refuses the plan first, naming the step, so no step runs and no device is claimed for it.
#[test]
fn a_plan_that_opens_the_supply_port_is_refused_at_preflight() {
    let bench = Bench::new(&Supply::default());
    let plan = bench.world.write_plan(
        "psu-open.yaml",
        "version: 5\nname: psu-open\nsteps:\n  - {device: psu, action: uart_open}\n",
    );
    let (doc, code) = bench
        .world
        .run_json(&["test-reactor", "--test-config", &plan]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(
        doc["error_type"], "com_port_reserved_for_power_supply",
        "{doc}"
    );
    assert_eq!(doc["validation_error"]["field"], "steps[0].device", "{doc}");
    assert_eq!(doc["steps"], json!([]), "no step ran: {doc}");
    assert!(bench.journal().is_empty());
}

#[tokio::test]
async fn bad_arguments_are_refused_before_contact() {
    let bench = Bench::new(&Supply::default());
    let client = bench.connect().await;
    let doc = refused(
        &client,
        "power_supply_status",
        json!({"supply_id": "nope"}),
        "unknown_device",
    )
    .await;
    assert_eq!(doc["configured_devices"], json!(["bench"]));
    let doc = refused(
        &client,
        "power_supply_status",
        json!({"supply_id": "bench", "channel": 2}),
        "invalid_argument",
    )
    .await;
    assert_eq!(doc["field"], "channel");
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench", "voltage_v": 3.333}),
        "invalid_argument",
    )
    .await;
    assert_eq!(doc["validator"], "multipleOf");
    let doc = refused(
        &client,
        "power_supply_set",
        json!({"supply_id": "bench"}),
        "invalid_argument",
    )
    .await;
    assert_eq!(doc["validator"], "required");
    refused(
        &client,
        "power_supply_cycle",
        json!({"supply_id": "bench", "off_s": 0.1}),
        "invalid_argument",
    )
    .await;
    assert!(bench.journal().is_empty());
    client.cancel().await.expect("the session closes");
}

#[tokio::test]
async fn a_channel_written_as_a_whole_float_names_that_channel_and_never_the_first() {
    let bench = Bench::new(&Supply::default());
    // 2.0 validates as the integer 2; this supply has one channel, so it must not switch channel 1.
    let on_channel_two = json!({"supply_id": "bench", "channel": 2.0, "on": true});
    let client = bench.connect().await;
    let (doc, is_error) = call(&client, "power_supply_output", on_channel_two).await;
    assert!(is_error, "channel 2.0 was switched: {doc}");
    assert_eq!(
        (&doc["error_type"], &doc["field"]),
        (&json!("invalid_argument"), &json!("channel")),
        "{doc}"
    );
    assert!(bench.writes().is_empty(), "{:?}", bench.journal());
    client.cancel().await.expect("the session closes");
}
