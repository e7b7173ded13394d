//! `com_ports_list`, and what every COM tool shares: finding the entry a `port_id` names.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::ComPort;
use ahil_drivers::serial::{HostPort, SerialError, enumerate};
use serde_json::{Map, Value, json};

use super::{Acted, Context, Plan, Work};
use crate::envelope::Outcome;
use crate::policy::Device;

/// The entry `port_id` names, or `com_port_not_configured` with the names that exist.
pub fn port_entry<'a>(ctx: &Context<'a>) -> Result<(&'a str, &'a ComPort), Box<Outcome>> {
    let config = &ctx.loaded.config;
    let wanted = ctx.args.arg_str("port_id").unwrap_or_default();
    if let Some((name, port)) = config.com_ports.get_key_value(wanted) {
        return Ok((name.as_str(), port));
    }
    let names: Vec<&String> = config.com_ports.keys().collect();
    Err(Box::new(
        Outcome::refused(
            ctx.tool,
            ErrorType::ComPortNotConfigured,
            "No com_ports entry has that port_id.",
        )
        .with("port_id", wanted)
        .with("configured_ports", json!(names))
        .with_remediation(["Call com_ports_list and pass one of its port ids (not a device path)."])
        .with_do_not(["Do not open the device path another way."])
        .not_contacted(),
    ))
}

/// The entry `port_id` is declared but unbound (its `device` is null), so `consequence`: nothing
/// was contacted, and only the operator can bind it.
pub fn no_device(tool: ToolId, port_id: &str, consequence: &str) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::ComPortNotBound,
        format!("com_ports.{port_id} names no device yet, so {consequence}."),
    )
    .with("port_id", port_id)
    .with("field", format!("com_ports.{port_id}.device"))
    .with_remediation([
        "The operator plugs the board in and runs `agentic-hil adopt-hardware`, or sets the entry's device (a /dev/serial/by-id name is best).",
    ])
    .not_contacted()
}

/// The policy device of a port entry.
pub fn device<'a>(name: &'a str, port: &ComPort) -> Device<'a> {
    Device::ComPort {
        name,
        grants: port.permissions,
    }
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ComPortsList])?;
    let config = &ctx.loaded.config;
    let sessions = std::sync::Arc::clone(&ctx.serial);
    let work = Work::Local(Box::new(move || {
        let mut ports = Map::new();
        for (id, port) in &config.com_ports {
            let mut entry = json!({
                "device": port.device,
                "baudrate": port.baudrate,
                "encoding": port.encoding,
                "max_buffer_bytes": port.max_buffer_bytes,
                "max_write_bytes": port.max_write_bytes,
                "assert_dtr": port.assert_dtr,
                "assert_rts": port.assert_rts,
                "identity_source": port.identity_source().as_str(),
                "lock_key": port.lock_key(id),
            });
            crate::actions::com_ports::add_declared_identity(&mut entry, port);
            if let Some(expected) = crate::serial::identity::expected(config, id, port)
                && let Some(from) = expected.from
            {
                entry["expected_serial_number"] = json!(expected.serial);
                entry["expected_from"] = json!(from);
            }
            if !port.carries_hardware_identity() {
                entry["identity_warning"] = json!(
                    "This port is named by its kernel device only; a second adapter can take that name."
                );
            }
            match sessions.get(id) {
                Some(session) => {
                    let described = session.describe(true);
                    if let Value::Object(fields) = described {
                        for (k, v) in fields {
                            if k != "device" {
                                entry[k] = v;
                            }
                        }
                    }
                }
                None => entry["session_active"] = json!(false),
            }
            ports.insert(id.clone(), entry);
        }
        let readable =
            config.version >= 2 || config.com_ports.values().any(|p| p.permissions.allow_read);
        let available = if readable {
            available_ports()
        } else {
            json!({
                "ok": false,
                "tool": "com_ports_available",
                "error_type": "permission_denied",
                "summary": "Under a version 1 configuration the host's ports are listed only when a configured port may be read.",
            })
        };
        let count = ports.len();
        Acted {
            outcome: Outcome::ok(
                "com_ports_list",
                format!(
                    "{count} COM port{} configured.",
                    if count == 1 { "" } else { "s" }
                ),
            )
            .with("ports", Value::Object(ports))
            .with("available_com_ports", available),
            contact: None,
        }
    }));
    Ok(Plan::read_state(work))
}

/// The host's serial ports as `com_ports_available` (also the `agentic-hil com-ports` command).
pub fn available_ports() -> Value {
    match enumerate() {
        Ok((ports, stubs)) => json!({
            "ok": true,
            "tool": "com_ports_available",
            "ports": ports,
            "legacy_stubs_hidden": stubs,
            "summary": format!("{} serial port{} on this host.", ports.len(), if ports.len() == 1 { "" } else { "s" }),
        }),
        Err(err) => json!({
            "ok": false,
            "tool": "com_ports_available",
            "error_type": err.error_type(),
            "summary": err.to_string(),
        }),
    }
}

/// Adds the hardware identity `port` declares (serial number, USB ids, resource id) to `entry`,
/// each key only when the configuration sets it.
pub(crate) fn add_declared_identity(entry: &mut Value, port: &ComPort) {
    for (key, value) in [
        ("serial_number", port.serial_number.clone().map(Value::from)),
        ("vid", port.vid.map(Value::from)),
        ("pid", port.pid.map(Value::from)),
        ("resource_id", port.resource_id.clone().map(Value::from)),
    ] {
        if let Some(value) = value {
            entry[key] = value;
        }
    }
}

/// The host's serial ports, for a port identity check or an adoption.
///
/// Test builds ([`ahil_wire::TEST_SEAMS`]) also take ports described in `AHIL_TEST_SERIAL_INVENTORY` (a JSON list of
/// `{device, vid, pid, serial_number}`): a pty in a test has no USB identity, and a supply's port
/// must declare one. Only a pty, or a name no node answers to, may be described so: the variable is
/// the agent's to set, and a real adapter's identity is never restated. No other build reads it.
pub fn host_ports() -> Result<Vec<HostPort>, SerialError> {
    let (mut ports, _) = enumerate()?;
    if ahil_wire::TEST_SEAMS
        && let Some(path) = std::env::var_os("AHIL_TEST_SERIAL_INVENTORY")
        && let Ok(text) = std::fs::read_to_string(path)
        && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&text)
    {
        for item in items {
            let device = item["device"].as_str().unwrap_or_default();
            if !seam_may_describe(std::path::Path::new(device)) {
                continue;
            }
            let id = |key: &str| {
                item.get(key)
                    .and_then(Value::as_u64)
                    .and_then(|v| u16::try_from(v).ok())
            };
            ports.push(HostPort {
                device: device.to_owned(),
                kind: "usb",
                stable_device: None,
                serial_number: item["serial_number"].as_str().map(str::to_owned),
                vid: id("vid"),
                pid: id("pid"),
                manufacturer: None,
                product: None,
            });
        }
    }
    Ok(ports)
}

/// Whether the test inventory may describe `device`: a pty (which has no USB identity of its own) or
/// a name nothing answers to, never a node that is a real adapter.
fn seam_may_describe(device: &std::path::Path) -> bool {
    std::fs::canonicalize(device).map_or(true, |node| node.starts_with("/dev/pts/"))
}

#[cfg(test)]
mod tests {
    use super::seam_may_describe;
    use std::path::Path;

    #[test]
    fn the_test_inventory_describes_only_ptys_and_names_no_node_answers_to() {
        assert!(seam_may_describe(Path::new("/dev/ttyUSB-none-such-0")));
        // A node that exists and is not a pty (a real adapter would be one) is never restated.
        assert!(!seam_may_describe(Path::new("/dev/null")));
        assert!(!seam_may_describe(Path::new("/dev/ptmx")));
    }
}
