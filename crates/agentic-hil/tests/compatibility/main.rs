//! Side by side with the installed reference (agentic-hil 0.25.0): the same calls, on the same
//! inputs, to both servers, each in its own HOME and workspace. Only `isError`, `error_type` and a
//! few key fields are compared, never whole documents. Every difference must be listed in
//! `differences::DIFFERENCES` (and explained in docs/COMPATIBILITY.md); an unlisted difference
//! fails, and so does a listed one that no longer occurs, so the list stays true.

#[path = "../support/mod.rs"]
mod support;

mod arguments;
mod capture;
mod cli;
mod differences;
mod driver;
mod narrowing;
mod permissions;
mod plans;
mod remote_frames;
mod semantics;
mod shared_bus;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use differences::{DIFFERENCES, Reason};
use driver::{LEASE_STATUS, append_to_config, cli, compare, edit_config, tool};
use serde_json::{Value, json};
use support::World;
use support::raw::EchoBoard;

fn serial_bench(world: &World, _program: &Path) -> EchoBoard {
    let board = EchoBoard::start();
    let ports = format!(
        "com_ports:\n  uart0:\n    device: \"{}\"\n    identity_source: device\n    permissions:\n      allow_write: true\n",
        board.device
    );
    edit_config(world, "com_ports: {}", &ports);
    board
}

#[test]
fn serial_sessions_and_leases_answer_as_the_reference_does() {
    let port = || json!({"port_id": "uart0"});
    let steps = [
        tool(
            "serial/com_ports_list",
            "com_ports_list",
            json!({}),
            &["ports.uart0.session_active", "ports.uart0.identity_source"],
        ),
        tool(
            "serial/hardware_lease_status",
            "hardware_lease_status",
            json!({}),
            LEASE_STATUS,
        ),
        tool(
            "serial/com_write no session",
            "com_write",
            json!({"port_id": "uart0", "text": "x"}),
            &["side_effect_status", "retry_safe"],
        ),
        tool("serial/com_read no session", "com_read", port(), &[]),
        tool(
            "serial/com_session_stop no session",
            "com_session_stop",
            port(),
            &["was_active"],
        ),
        tool(
            "serial/com_session_start",
            "com_session_start",
            port(),
            &["side_effect_status"],
        ),
        tool(
            "serial/com_session_start again",
            "com_session_start",
            port(),
            &["already_active", "lease_state"],
        ),
        tool(
            "serial/com_write",
            "com_write",
            json!({"port_id": "uart0", "text": "hello\n"}),
            &["bytes_written", "data.hex"],
        ),
        tool(
            "serial/com_read until",
            "com_read",
            json!({"port_id": "uart0", "until": "HELLO", "wait_timeout_s": 5}),
            &["bytes_read", "matched", "until_matched", "data.text"],
        ),
        tool(
            "serial/com_write text and hex",
            "com_write",
            json!({"port_id": "uart0", "text": "a", "hex": "41"}),
            &[],
        ),
        tool(
            "serial/com_session_stop",
            "com_session_stop",
            port(),
            &[
                "was_active",
                "lease_state",
                "config_in_force.path#leaks_root",
            ],
        ),
        tool(
            "serial/com_session_start unknown port",
            "com_session_start",
            json!({"port_id": "nope"}),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "serial/project_config_set a string for a number",
            "project_config_set",
            change("com_ports.uart0.baudrate", &json!("fast")),
            &["field", "side_effect_status"],
        ),
        tool(
            "serial/project_config_set a zero baudrate",
            "project_config_set",
            change("com_ports.uart0.baudrate", &json!(0)),
            &["field", "side_effect_status"],
        ),
    ];
    compare("serial/", &serial_bench, &steps);
}

#[test]
fn bench_runs_over_a_serial_port_answer_as_the_reference_does() {
    let port = || json!({"port_id": "uart0"});
    let uart = || json!({"devices": [{"kind": "uart", "id": "uart0"}]});
    let steps = [
        tool(
            "run/bench_run_status idle",
            "bench_run_status",
            json!({}),
            &["run_active", "declared_devices#len"],
        ),
        tool(
            "run/bench_run_stop idle",
            "bench_run_stop",
            json!({}),
            &["run_was_active", "released_devices#len"],
        ),
        tool(
            "run/bench_run_start undeclared",
            "bench_run_start",
            json!({"devices": [{"kind": "uart", "id": "nope"}]}),
            &["retry_safe"],
        ),
        tool(
            "run/bench_run_start",
            "bench_run_start",
            uart(),
            &["declared_devices#len", "devices.0.identity_source"],
        ),
        tool(
            "run/bench_run_start again",
            "bench_run_start",
            uart(),
            &["declared_devices#len"],
        ),
        tool(
            "run/bench_run_status active",
            "bench_run_status",
            json!({}),
            &["run_active", "declared_devices#len"],
        ),
        tool(
            "run/com_session_start in the run",
            "com_session_start",
            port(),
            &[],
        ),
        tool(
            "run/bench_run_stop with a session open",
            "bench_run_stop",
            json!({}),
            &[
                "run_was_active",
                "released_devices#len",
                "still_held_devices#len",
                "open_leases#len",
            ],
        ),
        tool(
            "run/com_session_stop after the run",
            "com_session_stop",
            port(),
            &["was_active"],
        ),
        tool(
            "run/bench_run_start debugger",
            "bench_run_start",
            json!({"devices": [{"kind": "debugger", "id": "dut"}]}),
            &["declared_devices#leaks_root"],
        ),
        tool(
            "run/bench_run_stop debugger",
            "bench_run_stop",
            json!({}),
            &["run_was_active"],
        ),
    ];
    compare("run/", &serial_bench, &steps);
}

/// The bridge simulator behind a `#!/bin/sh` wrapper, as a process bus names it.
fn can_bench(world: &World, _program: &Path) {
    let bridge = world.write_fake_tool(
        "bridge",
        &format!(
            "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 30\n",
            support::can_bridge_simulator().display()
        ),
    );
    let mut yaml = String::from("can_buses:\n");
    for (bus, write) in [("ecu", true), ("ro", false), ("nine", true)] {
        let _ = write!(
            yaml,
            "  {bus}:\n    adapter: process\n    channel: sim-{bus}\n    executable: \"{}\"\n    timeout_s: 2\n    permissions:\n      allow_write: {write}\n",
            bridge.display()
        );
    }
    edit_config(world, "can_buses: {}", yaml.trim_end());
}

#[test]
fn can_buses_on_the_bridge_simulator_answer_as_the_reference_does() {
    let bus = |id: &str| json!({"bus_id": id});
    let steps = [
        tool(
            "can/can_buses_list",
            "can_buses_list",
            json!({}),
            &[
                "buses.ecu.session_active",
                "buses.ecu.listen_only_enforcement",
                "buses.ecu.max_frame_data_bytes",
            ],
        ),
        tool("can/can_read no session", "can_read", bus("ecu"), &[]),
        tool(
            "can/can_send no session",
            "can_send",
            json!({"bus_id": "ecu", "frame_id": 0x123, "data_hex": "01"}),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "can/can_session_stop no session",
            "can_session_stop",
            bus("ecu"),
            &["was_active"],
        ),
        tool("can/can_read unknown bus", "can_read", bus("nope"), &[]),
        tool(
            "can/can_send unknown bus",
            "can_send",
            json!({"bus_id": "nope", "frame_id": 1}),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "can/can_session_start",
            "can_session_start",
            bus("ecu"),
            &[
                "already_active",
                "side_effect_status",
                "adapter_result.backend",
            ],
        ),
        tool(
            "can/can_send",
            "can_send",
            json!({"bus_id": "ecu", "frame_id": 0x123, "data_hex": "0102"}),
            &["side_effect_status"],
        ),
        tool(
            "can/can_read",
            "can_read",
            json!({"bus_id": "ecu", "max_frames": 1, "wait_timeout_s": 5}),
            &["frames_read", "frames#len"],
        ),
        tool(
            "can/can_session_stop",
            "can_session_stop",
            bus("ecu"),
            &["was_active"],
        ),
        tool(
            "can/can_session_start read-only",
            "can_session_start",
            bus("ro"),
            &[],
        ),
        tool(
            "can/can_send read-only",
            "can_send",
            json!({"bus_id": "ro", "frame_id": 1, "data_hex": "01"}),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "can/can_session_stop read-only",
            "can_session_stop",
            bus("ro"),
            &["was_active"],
        ),
        tool(
            "can/can_session_start nine",
            "can_session_start",
            bus("nine"),
            &[],
        ),
        tool(
            "can/can_send nine bytes",
            "can_send",
            json!({"bus_id": "nine", "frame_id": 1, "data_hex": "010203040506070809"}),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "can/can_read after the refused frame",
            "can_read",
            json!({"bus_id": "nine", "max_frames": 1, "wait_timeout_s": 0}),
            &[],
        ),
    ];
    compare("can/", &can_bench, &steps);
}

/// The RS-3005P simulator on a pty (ahil-sim's `ahil-psu-sim`, for both). Neither server is given a
/// serial inventory, so neither can confirm the pty's USB ids: both refuse to open it, and what is
/// compared is that refusal and every refusal decided before the port.
struct PsuSim(Child);

impl Drop for PsuSim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn psu_bench(world: &World, _program: &Path) -> PsuSim {
    let link = world.home.join("psu-tty");
    let mut sim = world.command_of(&support::power_supply_simulator());
    let mut sim = sim
        .arg("--link")
        .arg(&link)
        .args(["--mode", "normal"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the supply simulator starts");
    let mut ready = String::new();
    BufReader::new(sim.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("the simulator names its pty");
    // The board may be reset: switching the supply restarts it, which this implementation
    // refuses without the board's allow_reset (the reference does not ask; docs/COMPATIBILITY.md).
    let config = format!(
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
         target:\n  name: sim\n  controller: stm32f405\n\
         debuggers:\n  board:\n    type: openocd\n    executable: null\n    permissions: {{allow_reset: true}}\n\
         com_ports:\n  psu:\n    device: \"{link}\"\n    resource_id: bench-psu\n    vid: 1046\n    pid: 20497\n\
         power_supplies:\n  bench:\n    type: rs3005p\n    com_port: psu\n    powers: [board]\n\
         \x20   idn_serial: \"03682957\"\n    timeout_s: 0.3\n    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n\
         \x20   channels:\n      \"1\": {{voltage_limit_v: 5.0, current_limit_a: 1.0}}\n\
         \x20   permissions: {{allow_set: true, allow_output: true}}\n",
        ws = world.workspace.display(),
        state = world.home.join(".local/state/agentic-hil").display(),
        link = link.display(),
    );
    std::fs::write(world.config_path(), config).expect("the supply config is written");
    PsuSim(sim)
}

#[test]
fn power_supply_refusals_answer_as_the_reference_does() {
    let steps = [
        tool(
            "psu/power_supply_status unverified port",
            "power_supply_status",
            json!({"supply_id": "bench"}),
            &["side_effect_status"],
        ),
        tool(
            "psu/power_supply_set above the channel voltage limit",
            "power_supply_set",
            json!({"supply_id": "bench", "voltage_v": 6.0}),
            &["limit", "side_effect_status", "retry_safe"],
        ),
        tool(
            "psu/power_supply_set above the channel current limit",
            "power_supply_set",
            json!({"supply_id": "bench", "current_a": 1.2}),
            &["limit", "side_effect_status", "retry_safe"],
        ),
        tool(
            "psu/power_supply_set unknown channel",
            "power_supply_set",
            json!({"supply_id": "bench", "channel": 2, "voltage_v": 1.0}),
            &["side_effect_status"],
        ),
        tool(
            "psu/power_supply_set within the limits",
            "power_supply_set",
            json!({"supply_id": "bench", "voltage_v": 3.3}),
            &["side_effect_status"],
        ),
        tool(
            "psu/power_supply_output unverified port",
            "power_supply_output",
            json!({"supply_id": "bench", "on": true}),
            &["side_effect_status"],
        ),
        tool(
            "psu/power_supply_status unknown supply",
            "power_supply_status",
            json!({"supply_id": "nope"}),
            &["side_effect_status", "retry_safe"],
        ),
    ];
    compare("psu/", &psu_bench, &steps);
}

const OTHER_PLAN: &str = "version: 5\nname: other\nsteps:\n  - {device: uart9, action: uart_open}\n  - {device: uart9, action: uart_close}\n";
const THIS_PLAN: &str =
    "version: 5\nname: this\nsteps:\n  - {device: dut, action: reset, mode: run}\n";

/// What `init` wrote, untouched, plus two test plans.
fn unbound_bench(world: &World, _program: &Path) {
    std::fs::write(world.workspace.join("other.yaml"), OTHER_PLAN).expect("plan");
    std::fs::write(world.workspace.join("this.yaml"), THIS_PLAN).expect("plan");
}

fn change(key: &str, value: &Value) -> Value {
    json!({"changes": [{"key": key, "value": value}]})
}

#[test]
fn an_unbound_bench_answers_config_artifact_and_plan_calls_as_the_reference_does() {
    let steps = [
        tool(
            "unbound/project_config_set unknown key",
            "project_config_set",
            change("debuggers.dut.permissions.allow_nothing", &json!(false)),
            &["field", "side_effect_status"],
        ),
        tool(
            "unbound/project_config_set the string false",
            "project_config_set",
            change("debuggers.dut.permissions.allow_flash", &json!("false")),
            &["field", "side_effect_status"],
        ),
        tool(
            "unbound/project_config_set widening",
            "project_config_set",
            change("debuggers.dut.permissions.allow_mass_erase", &json!(true)),
            &["side_effect_status", "retry_safe"],
        ),
        tool(
            "unbound/project_config_create with nothing to discover",
            "project_config_create",
            json!({}),
            &["side_effect_status"],
        ),
        tool(
            "unbound/project_config_adopt_hardware on the starter entry",
            "project_config_adopt_hardware",
            json!({}),
            &["side_effect_status"],
        ),
        tool(
            "unbound/debugger_probes_list on the starter entry",
            "debugger_probes_list",
            json!({}),
            &["complete", "probes#len", "target_contacted"],
        ),
        tool(
            "unbound/flash_firmware missing image",
            "flash_firmware",
            json!({"image_path": "build/missing.elf"}),
            &[],
        ),
        tool(
            "unbound/flash_firmware image outside the workspace",
            "flash_firmware",
            json!({"image_path": "/etc/passwd"}),
            &[],
        ),
        tool(
            "unbound/debug_start_session missing image",
            "debug_start_session",
            json!({"image_path": "build/missing.elf"}),
            &[],
        ),
        cli(
            "unbound/check-plan",
            &["check-plan", "other.yaml", "this.yaml"],
            &[
                "ok",
                "strict",
                "plans#len",
                "plans.0.unconfigured_devices",
                "plans.1.ok",
            ],
        ),
        cli(
            "unbound/check-plan --strict unconfigured device",
            &["check-plan", "--strict", "other.yaml"],
            &["ok", "strict"],
        ),
        cli(
            "unbound/check-plan --strict this bench",
            &["check-plan", "--strict", "this.yaml"],
            &["ok"],
        ),
    ];
    compare("unbound/", &unbound_bench, &steps);
}

#[test]
fn the_configuration_tools_answer_as_the_reference_does() {
    let reset = "debuggers.dut.permissions.allow_reset";
    let steps = [
        tool(
            "config/project_config_describe",
            "project_config_describe",
            json!({}),
            &[
                "document_source",
                "config_status.state",
                "config_status.reload_required",
                "config_status.path#leaks_root",
                "writable_keys#len",
                "locked_keys#len",
                "writable_keys@debuggers.dut.permissions.allow_reset@current_value",
                "locked_keys@debuggers.dut.executable@locked_by",
            ],
        ),
        tool(
            "config/project_config_set a program",
            "project_config_set",
            change("debuggers.dut.executable", &json!("/bin/sh")),
            &["side_effect_status"],
        ),
        tool(
            "config/project_config_set narrowing",
            "project_config_set",
            change(reset, &json!(false)),
            &["reload_required", "permissions_changed"],
        ),
        tool(
            "config/project_config_describe after narrowing",
            "project_config_describe",
            json!({}),
            &[
                "config_status.state",
                "config_status.reload_required",
                "writable_keys@debuggers.dut.permissions.allow_reset@current_value",
            ],
        ),
        tool(
            "config/hardware_lease_status",
            "hardware_lease_status",
            json!({}),
            &["lifecycle_state", "owner_active", "standing_incidents#len"],
        ),
        append_to_config("config/the file stops parsing", "\n  : [unclosed\n"),
        tool(
            "config/project_config_describe of a file that no longer parses",
            "project_config_describe",
            json!({}),
            &["document_source", "side_effect_status"],
        ),
        tool(
            "config/project_config_set while the file does not parse",
            "project_config_set",
            change(reset, &json!(false)),
            &["side_effect_status"],
        ),
    ];
    compare("config/", &|_: &World, _: &Path| (), &steps);
}

/// Every `debug_*` tool with no session open, on the bench `init` wrote: what the catalogue says
/// each one answers then.
#[test]
fn every_debug_tool_without_a_session_answers_as_the_reference_does() {
    let none = || json!({});
    let symbol = || json!({"symbol": "main"});
    let steps = [
        tool(
            "debug/debug_get_session_status",
            "debug_get_session_status",
            none(),
            &["active"],
        ),
        tool(
            "debug/debug_list_breakpoints",
            "debug_list_breakpoints",
            none(),
            &["active", "breakpoints#len"],
        ),
        tool(
            "debug/debug_set_breakpoint",
            "debug_set_breakpoint",
            json!({"location": "main"}),
            &[],
        ),
        tool(
            "debug/debug_clear_breakpoints",
            "debug_clear_breakpoints",
            none(),
            &[],
        ),
        tool("debug/debug_continue", "debug_continue", none(), &[]),
        tool("debug/debug_halt", "debug_halt", none(), &[]),
        tool(
            "debug/debug_get_stop_reason",
            "debug_get_stop_reason",
            none(),
            &[],
        ),
        tool(
            "debug/debug_symbol_info",
            "debug_symbol_info",
            symbol(),
            &[],
        ),
        tool(
            "debug/debug_symbol_value",
            "debug_symbol_value",
            symbol(),
            &[],
        ),
        tool(
            "debug/debug_dump_symbol_ihex into the workspace",
            "debug_dump_symbol_ihex",
            json!({"symbol": "main", "output_path": "dump.hex"}),
            &[],
        ),
        tool(
            "debug/debug_dump_symbol_ihex outside the workspace",
            "debug_dump_symbol_ihex",
            json!({"symbol": "main", "output_path": "../dump.hex"}),
            &[],
        ),
        tool(
            "debug/debug_stop_session",
            "debug_stop_session",
            none(),
            &["was_active"],
        ),
    ];
    compare("debug/", &|_: &World, _: &Path| (), &steps);
}

fn probe_rs_bench(world: &World, _program: &Path) {
    edit_config(world, "type: \"openocd\"", "type: \"probe-rs\"");
}

#[test]
fn a_probe_rs_debugger_is_ours_alone() {
    let steps = [cli(
        "ours-alone/doctor with a probe-rs debugger",
        &["doctor"],
        &[],
    )];
    compare("ours-alone/", &probe_rs_bench, &steps);
}

/// The scope of each test above; a row under no scope would never be compared.
const SCOPES: &[&str] = &[
    "serial/",
    "run/",
    "can/",
    "psu/",
    "unbound/",
    "config/",
    "debug/",
    "ours-alone/",
    "shared/",
    "capture/",
    "perm/",
    "narrow/",
    "args/",
    "plans/",
    "plan-bench/",
    "bench-args/",
    "one-grant/",
    "remote/",
    "cli-grant/",
    "cli-revoke/",
    "cli-config/",
    "cli-state/",
    "cli-files/",
    "cli-refused/",
    "cli-run/",
    "cli-incident/",
];

/// The documentation explains every reason the table uses, so no difference is listed without one,
/// and every row belongs to a test that compares it.
#[test]
fn every_listed_reason_is_explained_in_compatibility_md() {
    for d in DIFFERENCES {
        assert!(
            SCOPES.iter().any(|scope| d.0.starts_with(scope)),
            "{} belongs to no test's scope",
            d.0
        );
    }
    let doc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/COMPATIBILITY.md");
    let text = std::fs::read_to_string(&doc).expect("docs/COMPATIBILITY.md exists");
    for d in DIFFERENCES {
        let anchor = format!("<a id=\"{}\">", d.4.id());
        assert!(
            text.contains(&anchor),
            "{} is not explained in COMPATIBILITY.md",
            d.4.id()
        );
        if d.4 != Reason::KnownBug {
            continue;
        }
        assert!(
            text.contains(d.0),
            "known bug {} is not listed in COMPATIBILITY.md",
            d.0
        );
    }
}
