//! The parts of the doctor's document that describe the bench rather than check it: the grants of
//! each entry, the ports and buses, the identity warnings, the incidents other projects left on
//! this bench's devices and the report state. Each is under the reference's key with its shape,
//! so a script written against either implementation reads the same fact.

use std::path::Path;

use ahil_config::{Config, DebuggerType, LoadedConfig};
use serde_json::{Map, Value, json};

use crate::actions::lease;

#[path = "doctor_access.rs"]
pub(crate) mod device_access;
use crate::ownership::coordination::Coordinator;

/// The reference's words for a debugger whose lock key is its toolchain's, not its board's.
const UNIDENTIFIED_DEBUGGER: &str = "This debugger names no resource_id and no probe_id, so its lock identity falls back to the backend toolchain rather than to hardware. Two boards driven by the same backend on this machine would share one lock, and one board reached through two backends would take two. Give the entry a probe_id (or a resource_id shared by every entry that names this unit) so the lock follows the board.";
const UNBOUND_PORT: &str = "This COM port names no device yet, so nothing can be opened on it. Run `agentic-hil adopt-hardware` with the board plugged in to fill the device in from the hardware, or set `com_ports.<name>.device` yourself. `agentic-hil com-ports` lists what this host has.";
const KERNEL_NAME_PORT: &str = "This COM port names no serial_number and no resource_id, so its identity is the kernel name in `device`, and a kernel name is an enumeration order, not hardware: attaching a second adapter can hand this entry another board, at which point the lock protects a name rather than a board and nothing refuses the wrong one. Run `agentic-hil adopt-hardware` to record the port's serial_number (and, on Linux, its /dev/serial/by-id/... name), or give the entry the resource_id its probe already carries. An adapter that publishes no serial at all (the cheap CH340 clones) can still name `vid`/`pid`, which refuses at least a different kind of adapter under this name.";
const TYPE_ONLY_PORT: &str = "This COM port is identified by `vid`/`pid` and a kernel name: two adapters of the same type are indistinguishable to it, and the lock still follows the kernel name. If this adapter publishes a serial number, `agentic-hil adopt-hardware` records it and the entry names a unit.";

/// Every grant the configuration holds, by name, in the reference's shape (`permission_summary`):
/// the project's grants at the top, then each entry's; the version 1 read grants only in a
/// version 1 file, where they decide something. `allow_rtt_write` (ours alone) is listed only for
/// a debugger whose file has an `rtt` section, a file the reference does not load anyway.
pub(crate) fn permission_summary(config: &Config) -> Value {
    let reads = config.version < 2;
    let project = &config.permissions;
    let debuggers: Map<String, Value> = config
        .debuggers
        .iter()
        .map(|(name, debugger)| {
            let p = &debugger.permissions;
            let mut grants = Map::new();
            if reads {
                grants.insert("allow_probe".into(), json!(p.allow_probe));
            }
            for (key, value) in [
                ("allow_flash", p.allow_flash),
                ("allow_reset", p.allow_reset),
                ("allow_debug_execution", p.allow_debug_execution),
                ("allow_raw_debugger_commands", p.allow_raw_debugger_commands),
                ("allow_mass_erase", p.allow_mass_erase),
            ] {
                grants.insert(key.into(), json!(value));
            }
            if debugger.rtt.is_some() {
                grants.insert("allow_rtt_write".into(), json!(p.allow_rtt_write));
            }
            (name.clone(), Value::Object(grants))
        })
        .collect();
    let io = |p: &ahil_config::IoPermissions| {
        if reads {
            json!({"allow_read": p.allow_read, "allow_write": p.allow_write})
        } else {
            json!({"allow_write": p.allow_write})
        }
    };
    let com_ports: Map<String, Value> = config
        .com_ports
        .iter()
        .map(|(name, port)| (name.clone(), io(&port.permissions)))
        .collect();
    let can_buses: Map<String, Value> = config
        .can_buses
        .iter()
        .map(|(name, bus)| (name.clone(), io(&bus.permissions)))
        .collect();
    json!({
        "allow_config_write": project.allow_config_write,
        "allow_config_description_write": project.allow_config_description_write,
        "allow_config_permissions_write": project.allow_config_permissions_write,
        "allow_recover": project.allow_recover,
        "allow_upgrade": project.allow_upgrade,
        "debuggers": debuggers,
        "com_ports": com_ports,
        "can_buses": can_buses,
        "debug": {"allow_all_symbols": config.debug.allow_all_symbols},
        "artifacts": {"allow_upload": config.artifacts.allow_upload},
    })
}

/// What each OpenOCD script field is: a search name OpenOCD resolves itself, or a path on this
/// host (with whether it is a file there).
pub(crate) fn openocd_scripts(debugger: &ahil_config::Debugger) -> Option<Value> {
    if debugger.kind != DebuggerType::Openocd {
        return None;
    }
    let describe = |value: &str| {
        if Path::new(value).is_absolute() {
            json!({"value": value, "kind": "path", "exists": Path::new(value).is_file()})
        } else {
            json!({
                "value": value,
                "kind": "search_name",
                "resolved_by": "openocd",
                "note": "An OpenOCD search name, resolved against OpenOCD's own script path when it runs. It does not name a file on this host and does not have to exist here.",
            })
        }
    };
    Some(json!({
        "interface_cfg": describe(&debugger.interface_cfg),
        "target_cfg": describe(&debugger.target_cfg),
    }))
}

/// Why `port`'s lock may not follow its board, if it may not.
fn port_warning(port: &ahil_config::ComPort) -> Option<&'static str> {
    if port.device.is_none() {
        Some(UNBOUND_PORT)
    } else if port.carries_hardware_identity() {
        None
    } else if port.vid.is_some() || port.pid.is_some() {
        Some(TYPE_ONLY_PORT)
    } else {
        Some(KERNEL_NAME_PORT)
    }
}

/// The identity warnings of the configured devices, each sentence once, sorted (the reference's
/// `warnings`): none is a failure, each says what would make a lock follow the board.
pub(crate) fn warnings(config: &Config) -> Vec<String> {
    let mut found: Vec<&str> = config
        .debuggers
        .values()
        .filter(|d| d.resource_id.is_none() && d.probe_id.is_none())
        .map(|_| UNIDENTIFIED_DEBUGGER)
        .chain(config.com_ports.values().filter_map(port_warning))
        .collect();
    found.sort_unstable();
    found.dedup();
    found.into_iter().map(str::to_owned).collect()
}

/// Each configured COM port as the file identifies it, with its grants (no device is opened).
pub(crate) fn com_ports(config: &Config, grants: &Value) -> Value {
    let ports: Map<String, Value> = config
        .com_ports
        .iter()
        .map(|(id, port)| {
            let mut entry = json!({
                "device": port.device,
                "baudrate": port.baudrate,
                "encoding": port.encoding,
                "identity_source": port.identity_source().as_str(),
                "permissions": grants["com_ports"][id],
            });
            crate::actions::com_ports::add_declared_identity(&mut entry, port);
            if let Some(warning) = port_warning(port) {
                entry["identity_warning"] = json!(warning);
            }
            if let Some(access) = port.device.as_deref().and_then(device_access::port_access) {
                entry["device_access"] = access;
            }
            (id.clone(), entry)
        })
        .collect();
    Value::Object(ports)
}

/// Each configured CAN bus with its grants.
pub(crate) fn can_buses(config: &Config, grants: &Value) -> Value {
    let buses: Map<String, Value> = config
        .can_buses
        .iter()
        .map(|(id, bus)| {
            let entry = json!({
                "adapter": bus.adapter,
                "channel": bus.channel,
                "bitrate": bus.bitrate,
                "fd": bus.fd,
                "permissions": grants["can_buses"][id],
            });
            (id.clone(), entry)
        })
        .collect();
    Value::Object(buses)
}

/// The unresolved incidents other projects left on a device this configuration declares: the
/// next hardware call from this workspace is refused for them, whatever the other checks say.
pub(crate) fn standing_incidents(loaded: &LoadedConfig) -> Vec<Value> {
    Coordinator::new(loaded, "operator-cli").foreign_incidents(&lease::configured_keys(loaded))
}

/// Whether this project's report state reads (read only, never initialized): a damaged one refuses
/// every hardware call as `audit_unavailable` while the state root itself is sound.
pub(crate) fn report_state(loaded: &LoadedConfig) -> Value {
    let audit = crate::audit::Audit::for_config(loaded);
    let digest = crate::audit::project_digest(&loaded.path, &loaded.workspace);
    // Under `<state_root>`, as every result names the root: never the machine's path.
    let path = format!(
        "<state_root>/projects/{}/reports/report-state.json",
        &digest[..24]
    );
    match crate::audit::report::load_state(&audit) {
        Err(crate::audit::AuditError::ReportStateDamaged { why, .. }) => json!({
            "ok": false,
            "error_type": "report_state_damaged",
            "path": path,
            "summary": format!("This project's report state does not read ({why}); `agentic-hil report-state-repair` moves it aside, every byte kept, and starts a fresh one."),
        }),
        // Access to the file, not its content: the hardware call that meets it names the fault.
        _ => json!({
            "ok": true,
            "path": path,
            "summary": "This project's report state reads, or none has been written yet.",
        }),
    }
}

/// The reference's `debugger`: the first checked toolchain's answer, or why none was run.
pub(crate) fn debugger_check(debuggers: &Map<String, Value>) -> Value {
    let checked = debuggers
        .values()
        .find_map(|entry| entry.get("check").cloned());
    match checked {
        Some(mut check) => {
            check["tool"] = json!("debugger_info");
            check
        }
        None => json!({
            "ok": true,
            "tool": "debugger_info",
            "skipped": true,
            "summary": "Debugger check skipped: no configured debugger pins a toolchain, so there is nothing to check yet. Set `debuggers.<name>.executable` to your toolchain's absolute path (outside the workspace).",
        }),
    }
}
