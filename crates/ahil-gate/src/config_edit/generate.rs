//! `project_config_create`: read the bench, then build a whole configuration from what was found.
//!
//! For this bench, discovery means the emulated boards running under `<state_root>/sim/<name>` (each
//! a `type: qemu` probe and its UART) and the host's USB serial adapters. Entries this server already
//! knows keep their grants (the tighter of what it loaded and what the file says now); new ones get
//! the generated grants, with the interlocked pair (raw commands, mass erase) false.

use std::path::{Path, PathBuf};

use ahil_config::{Config, ConfigError, render_init_config};
use ahil_drivers::qemu::{BoardPaths, BoardState};
use serde_json::{Value, json};

use super::identity::{close_grants, redirected, workspace_of};
use super::keys::PROJECT_FLAGS;

/// A board found running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundBoard {
    pub name: String,
    pub dir: PathBuf,
    pub uart: PathBuf,
}

/// A USB serial adapter found on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundPort {
    pub device: String,
    pub by_id: bool,
    pub serial_number: Option<String>,
    pub vid: Option<u16>,
    pub pid: Option<u16>,
}

/// What discovery ran and what it found.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub boards: Vec<FoundBoard>,
    pub ports: Vec<FoundPort>,
    /// One record per source: `{source, ok, found, …}`.
    pub ran: Vec<Value>,
}

impl Discovery {
    pub fn is_empty(&self) -> bool {
        self.boards.is_empty() && self.ports.is_empty()
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Reads the bench: boards under `<state_root>/sim`, then the host's USB serial adapters.
pub fn discover(state_root: &Path) -> Discovery {
    let mut found = Discovery::default();
    let sim = state_root.join("sim");
    let mut names: Vec<String> = std::fs::read_dir(&sim)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| valid_name(n))
        .collect();
    names.sort();
    for name in names {
        let dir = sim.join(&name);
        if matches!(
            ahil_drivers::qemu::board::status(&dir),
            BoardState::Running { .. }
        ) {
            let uart = BoardPaths::new(&dir).uart();
            found.boards.push(FoundBoard { name, dir, uart });
        }
    }
    found.ran.push(json!({
        "source": "emulated_boards",
        "ok": true,
        "looked_in": "<state_root>/sim",
        "found": found.boards.iter().map(|b| b.name.clone()).collect::<Vec<_>>(),
    }));
    match ahil_drivers::serial::enumerate() {
        Ok((ports, _)) => {
            found.ports = ports
                .into_iter()
                .filter(|p| p.kind == "usb")
                .map(|p| FoundPort {
                    by_id: p.stable_device.is_some(),
                    device: p.stable_device.unwrap_or(p.device),
                    serial_number: p.serial_number,
                    vid: p.vid,
                    pid: p.pid,
                })
                .collect();
            found.ran.push(json!({
                "source": "usb_serial",
                "ok": true,
                "found": found.ports.iter().map(|p| p.device.clone()).collect::<Vec<_>>(),
            }));
        }
        Err(err) => found.ran.push(json!({
            "source": "usb_serial",
            "ok": false,
            "error_type": err.error_type(),
            "summary": err.to_string(),
        })),
    }
    found
}

/// A generated document and what it left out.
#[derive(Debug, Clone)]
pub struct Generated {
    pub document: Value,
    /// `<section>.<name>` the server knew that the new file no longer names.
    pub dropped_entries: Vec<String>,
    /// Whether the starter skeleton was written (nothing was found).
    pub skeleton: bool,
    /// `<section>.<name>` written with every grant false: entries the server did not know, and
    /// known names that now stand for another device.
    pub closed_entries: Vec<String>,
}

/// Builds the document for `workspace` from `found`; `known` is the configuration this server
/// loaded and `disk` the file as it is now (both absent for a first creation).
pub fn generate(
    workspace: &Path,
    state_root: &Path,
    found: &Discovery,
    known: Option<&Config>,
    disk: Option<&Config>,
    created_at: &str,
) -> Result<Generated, ConfigError> {
    let template = ahil_config::parse_config(render_init_config(workspace, state_root).as_bytes())?;
    let generated_debugger = template
        .debuggers
        .values()
        .next()
        .map(|d| d.permissions)
        .unwrap_or_default();
    let mut config = template.clone();
    if let Some(known) = known {
        config.target = known.target.clone();
        config
            .debug
            .allowed_symbols
            .clone_from(&known.debug.allowed_symbols);
        config
            .artifacts
            .allowed_roots
            .clone_from(&known.artifacts.allowed_roots);
        config
            .artifacts
            .allowed_extensions
            .clone_from(&known.artifacts.allowed_extensions);
    }
    let skeleton = found.is_empty();
    if !skeleton {
        config.debuggers.clear();
        config.com_ports.clear();
        for board in &found.boards {
            config.debuggers.insert(
                board.name.clone(),
                ahil_config::Debugger {
                    kind: ahil_config::DebuggerType::Qemu,
                    timeout_s: 10.0,
                    permissions: generated_debugger,
                    ..ahil_config::Debugger::default()
                },
            );
            let uart = board.uart.display().to_string();
            let existing = known.and_then(|k| {
                k.com_ports
                    .iter()
                    .find(|(_, p)| p.device.as_deref() == Some(uart.as_str()))
            });
            let (name, port) = match existing {
                Some((name, port)) => (name.clone(), port.clone()),
                None => (
                    format!("{}_uart", board.name),
                    ahil_config::ComPort {
                        device: Some(uart),
                        resource_id: Some(format!("sim-{}-uart", board.name)),
                        ..ahil_config::ComPort::default()
                    },
                ),
            };
            config.com_ports.insert(name, port);
        }
        for (index, found_port) in found.ports.iter().enumerate() {
            let existing = known.and_then(|k| {
                k.com_ports.iter().find(|(_, p)| {
                    found_port.serial_number.is_some()
                        && p.serial_number == found_port.serial_number
                })
            });
            let (name, port) = match existing {
                Some((name, port)) => (name.clone(), port.clone()),
                None => (usb_name(found_port, index), usb_port(found_port)),
            };
            config.com_ports.insert(name, port);
        }
        for port in config.com_ports.values_mut() {
            port.permissions.allow_write = true;
            port.permissions.allow_read = false;
        }
    }
    let mut closed_entries = Vec::new();
    let mut document = prune(
        serde_json::to_value(&config).unwrap_or(Value::Null),
        config.version,
    );
    if let Some(known) = known {
        let known_doc = serde_json::to_value(known).unwrap_or(Value::Null);
        let disk_doc = disk.map(|d| serde_json::to_value(d).unwrap_or(Value::Null));
        carry(&mut document, &known_doc, disk_doc.as_ref());
        closed_entries = close_new_devices(&mut document, &known_doc);
    }
    document["provenance"] = json!({
        "created_by": "agent",
        "created_via": "mcp:project_config_create",
        "created_at": created_at,
        "agentic_hil_version": env!("CARGO_PKG_VERSION"),
    });
    let dropped_entries = known
        .map(|k| {
            let mut dropped = Vec::new();
            for (section, names) in [
                ("debuggers", k.debuggers.keys().collect::<Vec<_>>()),
                ("com_ports", k.com_ports.keys().collect()),
                ("can_buses", k.can_buses.keys().collect()),
            ] {
                for name in names {
                    if document[section].get(name.as_str()).is_none() {
                        dropped.push(format!("{section}.{name}"));
                    }
                }
            }
            dropped
        })
        .unwrap_or_default();
    Ok(Generated {
        document,
        dropped_entries,
        skeleton,
        closed_entries,
    })
}

fn usb_name(port: &FoundPort, index: usize) -> String {
    let tail: String = port
        .serial_number
        .as_deref()
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(16)
        .collect();
    if tail.is_empty() {
        format!("usb_serial_{}", index + 1)
    } else {
        format!("usb_{}", tail.to_ascii_lowercase())
    }
}

fn usb_port(found: &FoundPort) -> ahil_config::ComPort {
    let identity = if found.serial_number.is_some() || found.by_id {
        None
    } else if found.vid.is_some() && found.pid.is_some() {
        Some("vid_pid")
    } else {
        Some("device")
    };
    let mut port = ahil_config::ComPort {
        device: Some(found.device.clone()),
        serial_number: found.serial_number.clone().filter(|s| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
        }),
        vid: found.vid,
        pid: found.pid,
        ..ahil_config::ComPort::default()
    };
    if let Some(source) = identity {
        port.declared_identity_source = serde_json::from_value(json!(source)).ok();
    }
    port
}

/// The typed document as the file should say it: no nulls (absent means the same), and no
/// version-1 read grants in a later version (the loader refuses them by name).
fn prune(value: Value, version: u8) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .into_iter()
                .filter(|(k, v)| {
                    !v.is_null() && !(version >= 2 && (k == "allow_probe" || k == "allow_read"))
                })
                .map(|(k, v)| (k, prune(v, version)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| prune(v, version)).collect()),
        other => other,
    }
}

/// A regeneration over a configuration in force grants no device the operator did not grant: an
/// entry the server did not know, or a known name that now stands for another device, is written
/// with every grant false.
fn close_new_devices(document: &mut Value, known: &Value) -> Vec<String> {
    let workspace = workspace_of(document);
    let mut closed = Vec::new();
    for section in ["debuggers", "com_ports", "can_buses"] {
        let Some(entries) = document.get_mut(section).and_then(Value::as_object_mut) else {
            continue;
        };
        for (name, entry) in entries.iter_mut() {
            let same = known
                .get(section)
                .and_then(|s| s.get(name))
                .is_some_and(|was| !redirected(section, was, entry, &workspace));
            if !same {
                close_grants(entry);
                closed.push(format!("{section}.{name}"));
            }
        }
    }
    closed
}

/// Grants of entries the server knew: the loaded value, closed further if the file closed it since.
fn carry(document: &mut Value, known: &Value, disk: Option<&Value>) {
    let both = |path: &[&str]| -> Option<bool> {
        let get = |doc: &Value| {
            path.iter()
                .try_fold(doc, |node, part| node.get(*part))
                .and_then(Value::as_bool)
        };
        let loaded = get(known)?;
        Some(loaded && disk.and_then(get).unwrap_or(loaded))
    };
    for flag in PROJECT_FLAGS {
        if let Some(v) = both(&["permissions", flag]) {
            document["permissions"][*flag] = json!(v);
        }
    }
    for (section, flag) in [
        ("debug", "allow_all_symbols"),
        ("artifacts", "allow_upload"),
    ] {
        if let Some(v) = both(&[section, flag]) {
            document[section][flag] = json!(v);
        }
    }
    for section in ["debuggers", "com_ports", "can_buses"] {
        let Some(entries) = document.get_mut(section).and_then(Value::as_object_mut) else {
            continue;
        };
        for (name, entry) in entries.iter_mut() {
            let Some(flags) = entry.get_mut("permissions").and_then(Value::as_object_mut) else {
                continue;
            };
            let keys: Vec<String> = flags.keys().cloned().collect();
            for flag in keys {
                if let Some(v) = both(&[section, name, "permissions", &flag]) {
                    flags.insert(flag, json!(v));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn board() -> Discovery {
        Discovery {
            boards: vec![FoundBoard {
                name: "board".into(),
                dir: PathBuf::from("/s/sim/board"),
                uart: PathBuf::from("/s/sim/board/uart"),
            }],
            ..Discovery::default()
        }
    }

    /// What a generation for workspace `/w`, state root `/s` makes of `found`.
    fn generated(found: &Discovery, known: Option<&Config>, disk: Option<&Config>) -> Generated {
        generate(Path::new("/w"), Path::new("/s"), found, known, disk, "t").expect("generated")
    }

    /// The starter file for workspace `/w`, state root `/s`, as the server knows it.
    fn starter() -> Config {
        ahil_config::parse_config(render_init_config(Path::new("/w"), Path::new("/s")).as_bytes())
            .expect("template")
    }

    /// Whether each JSON pointer into `document` holds its value.
    fn assert_holds(document: &Value, expected: &[(&str, Value)]) {
        for (pointer, value) in expected {
            assert_eq!(document.pointer(pointer), Some(value), "{pointer}");
        }
    }

    #[test]
    fn a_found_board_becomes_a_qemu_probe_and_a_uart_with_the_interlocked_pair_false() {
        let g = generated(&board(), None, None);
        assert!(!g.skeleton);
        let d = &g.document;
        assert_holds(
            d,
            &[
                ("/debuggers/board/type", json!("qemu")),
                (
                    "/debuggers/board/permissions/allow_mass_erase",
                    json!(false),
                ),
                (
                    "/debuggers/board/permissions/allow_raw_debugger_commands",
                    json!(false),
                ),
                ("/debuggers/board/permissions/allow_flash", json!(true)),
                ("/com_ports/board_uart/device", json!("/s/sim/board/uart")),
                ("/com_ports/board_uart/resource_id", json!("sim-board-uart")),
            ],
        );
        assert!(
            d["debuggers"]["board"]["permissions"]
                .get("allow_probe")
                .is_none()
        );
    }

    #[test]
    fn known_entries_keep_their_grants_and_unknown_ones_are_dropped() {
        let mut known = starter();
        let mut entry = known.debuggers["dut"].clone();
        entry.permissions.allow_flash = false;
        known.debuggers.insert("board".into(), entry);
        known.permissions.allow_recover = false;
        let mut disk = known.clone();
        disk.debug.allow_all_symbols = false;
        let g = generated(&board(), Some(&known), Some(&disk));
        assert_holds(
            &g.document,
            &[
                ("/debuggers/board/permissions/allow_flash", json!(false)),
                ("/permissions/allow_recover", json!(false)),
                // Closed on disk since.
                ("/debug/allow_all_symbols", json!(false)),
            ],
        );
        assert_eq!(g.dropped_entries, ["debuggers.dut"]);
    }

    #[test]
    fn a_regeneration_grants_no_device_the_server_did_not_know() {
        let known = starter();
        let g = generated(&board(), Some(&known), Some(&known));
        assert_eq!(
            g.closed_entries,
            ["debuggers.board", "com_ports.board_uart"]
        );
        assert_holds(
            &g.document,
            &[
                ("/debuggers/board/permissions/allow_flash", json!(false)),
                (
                    "/com_ports/board_uart/permissions/allow_write",
                    json!(false),
                ),
            ],
        );
        let first = generated(&board(), None, None);
        assert!(
            first.closed_entries.is_empty(),
            "a first file is the operator's starter"
        );
    }

    #[test]
    fn nothing_found_gives_the_starter_skeleton() {
        let g = generated(&Discovery::default(), None, None);
        assert!(g.skeleton);
        assert!(g.document["debuggers"].get("dut").is_some());
    }
}
