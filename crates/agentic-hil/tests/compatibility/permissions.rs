//! The permission matrix: for configuration versions 1 and 3, each grant a tool needs closed in
//! turn, and every tool that needs it called; both servers must refuse it alike (`isError`,
//! `error_type`, and the grant the refusal names), or both let it through. Grants stay as loaded at
//! startup and a bench has one debugger, so each variant is one configuration and one server per
//! implementation; a variant closes grants no row needs two of (a debugger grant and a project
//! grant), and the ports, buses and supplies carry one entry per closed grant, so their rows ride
//! along in the first variant.

use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::driver::{Step, compare, install_openocd_fake, tool};
use crate::support::{self, World};

const V1: &[u8] = &[1];
const ANY: &[u8] = &[1, 3];
/// Power supplies exist from version 2 on.
const V3: &[u8] = &[3];

/// The variants: (versions, grants closed). Every grant a row names is closed in exactly one
/// variant of each version it exists in. `allow_read` to `allow_output` select the rows on the
/// entries named for them (those entries are the same in every variant), `nothing` the rows no
/// grant refuses.
#[rustfmt::skip]
pub const VARIANTS: &[(&[u8], &[&str])] = &[
    (ANY, &["allow_flash", "allow_config_write", "allow_read", "allow_write", "allow_set", "allow_output", "nothing"]),
    (V1, &["allow_probe"]),
    (ANY, &["allow_reset", "allow_config_description_write"]),
    (ANY, &["allow_debug_execution", "allow_config_permissions_write"]),
    (ANY, &["allow_upload", "allow_recover", "allow_upgrade"]),
];

/// The project's grants (`permissions:`), in every version.
const PROJECT_GRANTS: &[&str] = &[
    "allow_config_write",
    "allow_config_description_write",
    "allow_config_permissions_write",
    "allow_recover",
    "allow_upgrade",
];

// The rows' arguments, as JSON text. An uploaded artifact is named by an id no upload is behind.
const NOTHING: &str = "{}";
const FLASH: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": false}"#;
const FLASH_RESET: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": true}"#;
const FLASH_CAPTURE: &str = r#"{"image_path": "fw/fw.elf", "reset_after_flash": true,
    "capture": {"port_id": "noread", "until": "boot ok", "wait_timeout_s": 0.2}}"#;
const FLASH_UPLOAD: &str = r#"{"reset_after_flash": false,
    "artifact_id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.elf"}"#;
const RESET: &str = r#"{"mode": "run"}"#;
const START_RESET_HALT: &str = r#"{"image_path": "fw/fw.elf", "mode": "reset_halt"}"#;
const START_LOAD: &str = r#"{"image_path": "fw/fw.elf", "mode": "load"}"#;
const START_UPLOAD: &str = r#"{"mode": "attach",
    "artifact_id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.elf"}"#;
const BREAKPOINT: &str = r#"{"location": "main"}"#;
const SYMBOL: &str = r#"{"symbol": "counter"}"#;
const DUMP: &str = r#"{"symbol": "counter", "output_path": "counter.hex"}"#;
/// A description key, and a permission narrowed.
const DESCRIBE: &str = r#"{"changes": [{"key": "target.name", "value": "renamed"}]}"#;
const NARROW: &str =
    r#"{"changes": [{"key": "debuggers.dut.permissions.allow_flash", "value": false}]}"#;

/// One row: (tool, arguments, the grant that refuses it, versions in which it does). Rows on a
/// port, bus or supply name its entry, which is named for what it lacks: `noread`, `nowrite`,
/// `closed` (both; a session opens on read or write), `noset`, `nooutput`.
type Row = (&'static str, &'static str, &'static str, &'static [u8]);

#[rustfmt::skip]
const ROWS: &[Row] = &[
    ("debugger_info", NOTHING, "allow_probe", V1),
    ("debugger_probes_list", NOTHING, "allow_probe", V1),
    ("probe_target", NOTHING, "allow_probe", V1),
    ("flash_firmware", FLASH, "allow_flash", ANY),
    ("flash_firmware", FLASH_RESET, "allow_flash", ANY),
    ("flash_firmware", FLASH_RESET, "allow_reset", ANY),
    ("flash_firmware", FLASH_UPLOAD, "allow_flash", ANY),
    ("flash_firmware", FLASH_UPLOAD, "allow_upload", ANY),
    ("reset_target", RESET, "allow_reset", ANY),
    ("debug_start_session", START_RESET_HALT, "allow_probe", V1),
    ("debug_start_session", START_RESET_HALT, "allow_reset", ANY),
    ("debug_start_session", START_LOAD, "allow_probe", V1),
    ("debug_start_session", START_LOAD, "allow_reset", ANY),
    ("debug_start_session", START_LOAD, "allow_flash", ANY),
    ("debug_start_session", START_UPLOAD, "allow_probe", V1),
    ("debug_start_session", START_UPLOAD, "allow_upload", ANY),
    ("debug_get_session_status", NOTHING, "allow_probe", V1),
    ("debug_set_breakpoint", BREAKPOINT, "allow_probe", V1),
    ("debug_list_breakpoints", NOTHING, "allow_probe", V1),
    ("debug_continue", NOTHING, "allow_probe", V1),
    ("debug_continue", NOTHING, "allow_debug_execution", ANY),
    ("debug_get_stop_reason", NOTHING, "allow_probe", V1),
    ("debug_symbol_info", SYMBOL, "allow_probe", V1),
    ("debug_symbol_value", SYMBOL, "allow_probe", V1),
    ("debug_dump_symbol_ihex", DUMP, "allow_probe", V1),
    ("com_session_start", r#"{"port_id": "closed"}"#, "allow_read", V1),
    ("com_read", r#"{"port_id": "noread"}"#, "allow_read", V1),
    ("flash_firmware", FLASH_CAPTURE, "allow_read", V1),
    ("com_write", r#"{"port_id": "nowrite", "text": "x"}"#, "allow_write", ANY),
    ("can_session_start", r#"{"bus_id": "closed"}"#, "allow_read", V1),
    ("can_read", r#"{"bus_id": "noread"}"#, "allow_read", V1),
    ("can_send", r#"{"bus_id": "nowrite", "frame_id": 291, "data_hex": "01"}"#, "allow_write", ANY),
    ("power_supply_set", r#"{"supply_id": "noset", "channel": 1, "voltage_v": 3.3}"#, "allow_set", V3),
    ("power_supply_output", r#"{"supply_id": "nooutput", "channel": 1, "on": true}"#, "allow_output", V3),
    ("power_supply_cycle", r#"{"supply_id": "nooutput", "channel": 1, "off_s": 0.5}"#, "allow_output", V3),
    // A switch of a supply whose own grants are open restarts the board it powers, which lacks
    // allow_reset (docs/COMPATIBILITY.md, "a-powered-board-needs-its-reset-grant").
    ("power_supply_output", r#"{"supply_id": "open", "channel": 1, "on": false}"#, "allow_reset", V3),
    ("power_supply_cycle", r#"{"supply_id": "open", "channel": 1, "off_s": 0.5}"#, "allow_reset", V3),
    // The project's grants.
    ("project_config_create", NOTHING, "allow_config_write", ANY),
    ("project_config_set", DESCRIBE, "allow_config_write", ANY),
    ("project_config_set", DESCRIBE, "allow_config_description_write", ANY),
    ("project_config_adopt_hardware", r#"{"apply": true}"#, "allow_config_description_write", ANY),
    ("project_config_set", NARROW, "allow_config_permissions_write", ANY),
    ("hardware_recover", r#"{"operator_statement": "the board is back"}"#, "allow_recover", ANY),
    ("server_upgrade", NOTHING, "allow_upgrade", ANY),
    // Let through by both: a session on a port or bus that may still be read (version 3 reads
    // need no grant; version 1 opens on write). The port's device does not exist; the bridge does.
    ("com_session_start", r#"{"port_id": "noread"}"#, "nothing", V1),
    ("com_session_start", r#"{"port_id": "nowrite"}"#, "nothing", ANY),
    ("can_session_start", r#"{"bus_id": "nowrite"}"#, "nothing", ANY),
    ("can_read", r#"{"bus_id": "nowrite", "max_frames": 1}"#, "nothing", ANY),
    ("can_session_stop", r#"{"bus_id": "nowrite"}"#, "nothing", ANY),
    // A version 1 session opened on write alone: it sends, and its reads stay refused.
    ("can_session_start", r#"{"bus_id": "noread"}"#, "nothing", V1),
    ("can_send", r#"{"bus_id": "noread", "frame_id": 291, "data_hex": "01"}"#, "nothing", V1),
    ("can_read", r#"{"bus_id": "noread", "max_frames": 1, "wait_timeout_s": 0}"#, "nothing", V1),
    ("can_session_stop", r#"{"bus_id": "noread"}"#, "nothing", V1),
];

/// The supplies, named for the grant each lacks (`open` lacks none).
const SUPPLIES: &[&str] = &["noset", "nooutput", "open"];

/// What each case compares beside `isError` and `error_type`: the grant the refusal names.
const FIELDS: &[&str] = &["permission"];

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn parsed(args: &str) -> Value {
    serde_json::from_str(args).expect("a row's arguments are JSON")
}

/// A short label for a row's arguments (the mode, the capture, the upload) so cases stay unique.
fn label(args: &str) -> String {
    let doc = parsed(args);
    let mut words: Vec<String> = Vec::new();
    for key in [
        "port_id",
        "bus_id",
        "supply_id",
        "mode",
        "reset_after_flash",
        "artifact_id",
        "capture",
        "max_frames",
    ] {
        match doc.get(key) {
            None => {}
            Some(Value::String(s)) if key == "artifact_id" && !s.is_empty() => {
                words.push("upload".into());
            }
            Some(Value::Object(_)) => words.push(key.into()),
            Some(Value::Bool(b)) => words.push(format!("{key}={b}")),
            Some(Value::Number(n)) => words.push(format!("{key}={n}")),
            Some(Value::String(s)) => words.push(s.clone()),
            Some(other) => words.push(other.to_string()),
        }
    }
    words.join(" ")
}

fn grants(flags: &[(&str, &[u8])], version: u8, closed: &[&str]) -> String {
    let mut out = String::new();
    for (flag, versions) in flags {
        if versions.contains(&version) {
            let _ = writeln!(out, "      {flag}: {}", !closed.contains(flag));
        }
    }
    out
}

/// The whole configuration of one variant: the project's and a scripted OpenOCD fake `dut`'s
/// grants false where `closed` names them (every other one true), ports and buses named for the
/// grants they lack, and (version 3) supplies that power `dut`. No port's device exists, and no
/// supply's.
pub fn write_bench(world: &World, version: u8, closed: &[&str]) {
    let exe = install_openocd_fake(world);
    let bridge = world.write_fake_tool(
        "bridge",
        &format!(
            "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 30\n",
            support::can_bridge_simulator().display()
        ),
    );
    let dut_flags: &[(&str, &[u8])] = &[
        ("allow_probe", V1),
        ("allow_flash", ANY),
        ("allow_reset", ANY),
        ("allow_debug_execution", ANY),
    ];
    let project: Vec<(&str, &[u8])> = PROJECT_GRANTS.iter().map(|g| (*g, ANY)).collect();
    let io = |read: bool, write: bool| {
        let read = if version == 1 {
            format!("      allow_read: {read}\n")
        } else {
            String::new()
        };
        format!("    permissions:\n{read}      allow_write: {write}\n")
    };
    let io_entries: &[(&str, bool, bool)] = if version == 1 {
        &[
            ("noread", false, true),
            ("nowrite", true, false),
            ("closed", false, false),
            ("open", true, true),
        ]
    } else {
        &[("nowrite", true, false), ("open", true, true)]
    };
    let mut yaml = String::new();
    let header = if version == 1 {
        String::new()
    } else {
        format!("version: {version}\n")
    };
    let _ = write!(
        yaml,
        "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\n{header}\
         target:\n  name: board\n  controller: stm32f405\n\
         permissions:\n{project}\
         debuggers:\n  dut:\n    type: openocd\n    executable: \"{exe}\"\n    timeout_s: 5\n\
         \x20   permissions:\n{dut}\
         debug:\n  allowed_symbols: [main]\n\
         artifacts:\n  allowed_roots: [fw]\n  allow_upload: {uploads}\n",
        ws = world.workspace.display(),
        state = world.home.join(".local/state/agentic-hil").display(),
        exe = exe.display(),
        project = grants(&project, version, closed).replace("      ", "  "),
        dut = grants(dut_flags, version, closed),
        uploads = !closed.contains(&"allow_upload"),
    );
    yaml.push_str("com_ports:\n");
    for (name, read, write) in io_entries {
        let _ = write!(
            yaml,
            "  {name}:\n    device: \"{}\"\n    identity_source: device\n{}",
            world.home.join(format!("tty-{name}")).display(),
            io(*read, *write)
        );
    }
    // A supply's port is its alone: one each.
    for supply in SUPPLIES.iter().take_while(|_| version >= 2) {
        let _ = write!(
            yaml,
            "  psu-{supply}:\n    device: \"{}\"\n    resource_id: bench-psu-{supply}\n    vid: 1046\n    pid: 20497\n",
            world.home.join(format!("tty-psu-{supply}")).display()
        );
    }
    yaml.push_str("can_buses:\n");
    for (name, read, write) in io_entries {
        let _ = write!(
            yaml,
            "  {name}:\n    adapter: process\n    channel: sim-{name}\n    executable: \"{}\"\n    timeout_s: 2\n{}",
            bridge.display(),
            io(*read, *write)
        );
    }
    if version >= 2 {
        yaml.push_str("power_supplies:\n");
        for name in SUPPLIES {
            let (set, output) = (*name != "noset", *name != "nooutput");
            let _ = write!(
                yaml,
                "  {name}:\n    type: rs3005p\n    com_port: psu-{name}\n    powers: [dut]\n\
                 \x20   idn_serial: \"03682957\"\n    timeout_s: 0.3\n    voltage_limit_v: 5.5\n    current_limit_a: 1.5\n\
                 \x20   channels:\n      \"1\": {{voltage_limit_v: 5.0, current_limit_a: 1.0}}\n\
                 \x20   permissions: {{allow_set: {set}, allow_output: {output}}}\n"
            );
        }
    }
    std::fs::write(world.config_path(), yaml).expect("the matrix config is written");
    let fw = world.workspace.join("fw");
    std::fs::create_dir_all(&fw).expect("fw dir");
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../firmware/build");
    std::fs::copy(built.join("ahil-fw-v1.elf"), fw.join("fw.elf")).expect("firmware copies");
}

/// The steps of one variant: every row of `version` whose grant it closes.
fn steps(scope: &str, version: u8, closed: &[&str]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for (name, args, grant, versions) in ROWS {
        if !closed.contains(grant) || !versions.contains(&version) {
            continue;
        }
        let case = leak(
            format!("{scope}{name} {}", label(args))
                .trim_end()
                .to_owned(),
        );
        assert!(steps.iter().all(|s| s.case != case), "{case} is one case");
        steps.push(tool(case, name, parsed(args), FIELDS));
    }
    steps
}

#[test]
fn each_closed_grant_refuses_every_tool_that_needs_it_as_the_reference_does() {
    let mut failed = Vec::new();
    for version in [1_u8, 3] {
        for (index, (versions, closed)) in VARIANTS.iter().enumerate() {
            if !versions.contains(&version) {
                continue;
            }
            let scope = leak(format!("perm/v{version}/{}/", closed[0]));
            let steps = steps(scope, version, closed);
            assert!(!steps.is_empty(), "{scope} has rows");
            let bench = move |world: &World, _: &Path| write_bench(world, version, closed);
            // Every variant runs, so one answer shows every difference of the matrix.
            let run = std::panic::catch_unwind(AssertUnwindSafe(|| compare(scope, &bench, &steps)));
            if run.is_err() {
                failed.push((index, scope));
            }
        }
    }
    assert!(failed.is_empty(), "variants that differ: {failed:?}");
}

/// The matrix is only worth something if every grant it closes refuses some row in each version
/// the variant runs in, and every row's grant is closed by exactly one variant there.
#[test]
fn every_closed_grant_of_the_matrix_has_a_row_and_every_row_a_variant() {
    for version in [1_u8, 3] {
        let variants: Vec<&[&str]> = VARIANTS
            .iter()
            .filter(|(versions, _)| versions.contains(&version))
            .map(|(_, closed)| *closed)
            .collect();
        for closed in &variants {
            for grant in *closed {
                let rows = ROWS
                    .iter()
                    .filter(|(_, _, g, v)| g == grant && v.contains(&version))
                    .count();
                // Supplies exist from version 2 on, and the read grants only in version 1.
                let absent = match version {
                    1 => ["allow_set", "allow_output"].contains(grant),
                    _ => ["allow_probe", "allow_read"].contains(grant),
                };
                assert!(rows > 0 || absent, "v{version} {grant} selects no row");
            }
        }
        for (name, args, grant, versions) in ROWS {
            if versions.contains(&version) {
                let closing = variants.iter().filter(|c| c.contains(grant)).count();
                assert_eq!(
                    closing, 1,
                    "v{version} {name} {args}: {grant} closed by one variant"
                );
            }
        }
    }
}
