//! Rules across keys and entries, checked on the typed configuration.
//!
//! These are the refusals no per-key shape can express: roots that overlap, backends that
//! cannot honour a setting, two entries that would drive one physical device, and the
//! power-supply port reservations.

use std::path::Path;

use serde_json::json;

use crate::error::{ConfigError, Refusal};
use crate::model::{Config, ConnectMode, DebuggerType};
use crate::paths::{expand_tilde, is_within, normalize};

fn refuse(field: impl Into<String>, summary: impl Into<String>) -> Refusal {
    Refusal::new(summary).at(field)
}

fn err(r: Refusal) -> ConfigError {
    ConfigError::invalid(r)
}

/// Refuses the first of `keys` that is set (a key this kind of entry does not take), in the words
/// `refusal` gives for it.
fn refuse_first_set<const N: usize>(
    keys: [(&str, bool); N],
    refusal: impl Fn(&str) -> Refusal,
) -> Result<(), ConfigError> {
    match keys.into_iter().find(|(_, set)| *set) {
        Some((key, _)) => Err(err(refusal(key))),
        None => Ok(()),
    }
}

/// Resolves both roots lexically (after `~`) and checks they are absolute and disjoint.
pub(crate) fn check_roots(cfg: &mut Config, home: &Path) -> Result<(), ConfigError> {
    for (field, raw) in [
        (
            "workspace_root",
            cfg.workspace_root.to_string_lossy().into_owned(),
        ),
        ("state_root", cfg.state_root.to_string_lossy().into_owned()),
    ] {
        let p = expand_tilde(&raw, home);
        if !p.is_absolute() {
            return Err(err(refuse(
                field,
                format!("`{field}` must be an absolute path."),
            )
            .with("value", raw)
            .fix(format!(
                "Write the full path for `{field}`, starting at `/`."
            ))));
        }
        if field == "workspace_root" {
            cfg.workspace_root = normalize(&p);
        } else {
            cfg.state_root = normalize(&p);
        }
    }
    if is_within(&cfg.state_root, &cfg.workspace_root)
        || is_within(&cfg.workspace_root, &cfg.state_root)
    {
        return Err(err(refuse("state_root", "`state_root` and `workspace_root` overlap; state must live outside the project and must not contain it.")
            .fix("Move `state_root` outside the workspace, e.g. ~/.local/state/agentic-hil.")));
    }
    Ok(())
}

/// Everything after the roots, in the reference's order.
pub(crate) fn check_entries(cfg: &Config) -> Result<(), ConfigError> {
    check_backends(cfg)?;
    check_share_names(cfg)?;
    check_resource_id_case(cfg)?;
    check_debugger_collisions(cfg, None)?;
    check_identity_sources(cfg)?;
    if cfg.version >= 3 {
        check_v3_identity(cfg)?;
    }
    check_power_supplies(cfg)?;
    crate::labgrid::check(cfg)
}

fn check_backends(cfg: &Config) -> Result<(), ConfigError> {
    let port_names: Vec<&str> = cfg.com_ports.keys().map(String::as_str).collect();
    for (name, d) in &cfg.debuggers {
        let at = |k: &str| format!("debuggers.{name}.{k}");
        if d.connect_mode == ConnectMode::UnderReset && d.kind != DebuggerType::Stlink {
            return Err(err(refuse(
                at("connect_mode"),
                format!(
                    "The {} backend cannot connect under reset; only stlink can.",
                    d.kind.as_str()
                ),
            )
            .with("value", "under_reset")
            .with("allowed_values", json!(["hotplug"]))
            .fix(
                "Set `connect_mode: hotplug`, or use `type: stlink` for this probe.",
            )));
        }
        check_qemu_keys(cfg, name, d)?;
        crate::rtt_rules::check(name, d)?;
        if d.kind == DebuggerType::ProbeRs {
            refuse_first_set(
                [
                    ("executable", d.executable.is_some()),
                    ("gdb_server_executable", d.gdb_server_executable.is_some()),
                ],
                |key| {
                    refuse(
                        at(key),
                        format!("A probe-rs debugger runs inside agentic-hil itself; it takes no `{key}`."),
                    )
                    .fix(format!("Remove `{key}`."))
                },
            )?;
        }
        if d.kind == DebuggerType::Esptool {
            let Some(port) = &d.com_port else {
                return Err(err(refuse(
                    at("com_port"),
                    "An esptool debugger must name the com_ports entry of its USB-UART bridge.",
                )
                .with("allowed_values", json!(port_names))));
            };
            for key in ["probe_id", "resource_id"] {
                let set = if key == "probe_id" {
                    d.probe_id.is_some()
                } else {
                    d.resource_id.is_some()
                };
                if set {
                    return Err(err(refuse(at(key), format!("An esptool debugger takes its identity from its COM port; remove `{key}` here."))
                        .fix("Put the serial number on the com_ports entry instead.")));
                }
            }
            if !cfg.com_ports.contains_key(port) {
                return Err(err(refuse(
                    at("com_port"),
                    format!("`com_port` names `{port}`, which is not an entry under com_ports."),
                )
                .with("value", port.clone())
                .with("allowed_values", json!(port_names))));
            }
        } else if let Some(port) = &d.com_port {
            return Err(err(refuse(
                at("com_port"),
                format!(
                    "Only an esptool debugger names a COM port; this one is {}.",
                    d.kind.as_str()
                ),
            )
            .with("value", port.clone())
            .fix("Remove `com_port`, or set `type: esptool`.")));
        }
    }
    Ok(())
}

/// `machine` and `board_dir` belong to `type: qemu` (our extension); the board directory holds the
/// emulator's sockets, so it lives outside the workspace like the rest of the state, and QEMU's option
/// syntax cannot carry a comma in it.
fn check_qemu_keys(
    cfg: &Config,
    name: &str,
    d: &crate::model::Debugger,
) -> Result<(), ConfigError> {
    let at = |k: &str| format!("debuggers.{name}.{k}");
    if d.kind != DebuggerType::Qemu {
        refuse_first_set(
            [
                ("machine", d.machine.is_some()),
                ("board_dir", d.board_dir.is_some()),
            ],
            |key| {
                refuse(
                    at(key),
                    format!(
                        "Only a qemu debugger names `{key}`; this one is {}.",
                        d.kind.as_str()
                    ),
                )
                .fix(format!("Remove `{key}`, or set `type: qemu`."))
            },
        )?;
        return Ok(());
    }
    let Some(raw) = &d.board_dir else {
        return Ok(());
    };
    let dir = Path::new(raw);
    if !dir.is_absolute() {
        return Err(err(refuse(
            at("board_dir"),
            "`board_dir` must be an absolute path.",
        )
        .with("value", raw.clone())
        .fix(
            "Write the full path of the board's state directory, starting at `/`.",
        )));
    }
    if raw.contains(',') || raw.contains('\n') {
        return Err(err(refuse(
            at("board_dir"),
            "`board_dir` cannot contain a comma or a newline: QEMU's options could not carry it.",
        )
        .fix("Choose a directory whose path has no comma.")));
    }
    let dir = normalize(dir);
    if is_within(&dir, &cfg.workspace_root) || is_within(&cfg.workspace_root, &dir) {
        return Err(err(refuse(
            at("board_dir"),
            "`board_dir` overlaps the workspace; the board's sockets must live outside the project.",
        )
        .fix("Leave `board_dir` unset (it defaults under state_root), or name a directory outside the workspace.")));
    }
    Ok(())
}

fn check_share_names(cfg: &Config) -> Result<(), ConfigError> {
    for (bus, b) in &cfg.can_buses {
        for share in b.shares.iter().flat_map(|s| s.keys()) {
            // A share named like a block or a grant would read as policy in dotted keys.
            if share == "permissions" || share == "provenance" || share.starts_with("allow_") {
                return Err(err(refuse(
                    format!("can_buses.{bus}.shares.{share}"),
                    "A CAN share may not be named `permissions`, `provenance` or `allow_*`.",
                )
                .with("value", share.clone())));
            }
        }
    }
    Ok(())
}

/// Every `resource_id` in file order with the key path that holds it.
fn resource_ids(cfg: &Config) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for (n, d) in &cfg.debuggers {
        if let Some(r) = &d.resource_id {
            out.push((format!("debuggers.{n}.resource_id"), r.as_str()));
        }
    }
    for (n, p) in &cfg.com_ports {
        if let Some(r) = &p.resource_id {
            out.push((format!("com_ports.{n}.resource_id"), r.as_str()));
        }
    }
    for (n, b) in &cfg.can_buses {
        if let Some(r) = &b.resource_id {
            out.push((format!("can_buses.{n}.resource_id"), r.as_str()));
        }
    }
    out
}

fn check_resource_id_case(cfg: &Config) -> Result<(), ConfigError> {
    let ids = resource_ids(cfg);
    for (i, (field, id)) in ids.iter().enumerate() {
        if let Some((other, _)) = ids[..i]
            .iter()
            .find(|(_, o)| o != id && o.to_lowercase() == id.to_lowercase())
        {
            return Err(err(refuse(field.clone(), "Two entries spell one resource_id in different cases; lock keys ignore case, so they would share one lock.")
                .with("conflicts_with", other.clone())
                .fix("Spell it identically if it is one unit, or choose distinct ids.")));
        }
    }
    Ok(())
}

/// Pinned executable path of a debugger, by entry name.
pub(crate) type PinnedLookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// Two debuggers may not select one probe. `executables` (pinned paths by debugger name)
/// refines the lock identity after pinning.
pub(crate) fn check_debugger_collisions(
    cfg: &Config,
    executables: Option<&PinnedLookup<'_>>,
) -> Result<(), ConfigError> {
    let entries: Vec<_> = cfg.debuggers.iter().collect();
    for (j, (name_b, b)) in entries.iter().enumerate() {
        for (_, a) in &entries[..j] {
            let (Some(sa), Some(sb)) = (a.probe_selector(), b.probe_selector()) else {
                continue;
            };
            if sa == sb {
                return Err(err(refuse(
                    format!("debuggers.{name_b}.probe_id"),
                    "Two debuggers name the same probe_id, so both would drive one probe.",
                )
                .fix(
                    "Give each entry the full id of its own probe (`agentic-hil debugger-probes`).",
                )));
            }
            // pyOCD matches --uid as a substring, so a shorter id also selects the longer one's board.
            let pyocd = a.kind == DebuggerType::Pyocd || b.kind == DebuggerType::Pyocd;
            if pyocd && (sa.contains(&sb) || sb.contains(&sa)) {
                return Err(err(refuse(format!("debuggers.{name_b}.probe_id"), "One probe_id contains the other and pyOCD matches ids as substrings, so one entry would also select the other's board.")
                    .fix("Use each probe's full unique id.")));
            }
        }
    }
    let key_of = |name: &str, d: &crate::model::Debugger| {
        let exe = executables.and_then(|f| f(name));
        d.lock_key(exe.as_deref())
    };
    for (j, (name_b, b)) in entries.iter().enumerate() {
        let kb = key_of(name_b, b);
        if entries[..j].iter().any(|(na, a)| key_of(na, a) == kb) {
            return Err(err(refuse(format!("debuggers.{name_b}"), "Two debuggers resolve to the same lock identity, so they could silently share one probe.")
                .fix("Give each debugger the probe_id of its own probe.")));
        }
    }
    Ok(())
}

fn check_identity_sources(cfg: &Config) -> Result<(), ConfigError> {
    for (name, p) in &cfg.com_ports {
        if let Some(declared) = p.declared_identity_source {
            let actual = p.identity_source();
            if declared != actual {
                return Err(err(refuse(
                    format!("com_ports.{name}.identity_source"),
                    format!(
                        "`identity_source` says `{}` but the entry is identified by `{}`.",
                        declared.as_str(),
                        actual.as_str()
                    ),
                )
                .with("value", declared.as_str())
                .with("actual_identity_source", actual.as_str())
                .fix(
                    "Remove `identity_source` or make it match the keys the entry carries.",
                )));
            }
        }
    }
    Ok(())
}

fn check_v3_identity(cfg: &Config) -> Result<(), ConfigError> {
    for (name, p) in &cfg.com_ports {
        if !p.carries_hardware_identity() && p.declared_identity_source.is_none() {
            return Err(err(refuse(format!("com_ports.{name}"), "Version 3 needs every COM port to say which adapter it is; this one is known only by enumeration order.")
                .with("actual_identity_source", p.identity_source().as_str())
                .with("config_version", cfg.version)
                .with("migration", json!({
                    "identify": "agentic-hil adopt-hardware --apply fills serial_number, vid, pid and identity_source",
                    "order": "run it while the file is still version 2, then set version: 3",
                    "by_hand": "add serial_number, resource_id, a /dev/serial/by-id/ device, or identity_source",
                    "stay": "keep version: 2 until the adapter is identified",
                    "allowed_values": ["vid_pid", "vid", "pid", "device"],
                }))
                .fix("Run `agentic-hil adopt-hardware --apply` with the adapter attached.")));
        }
    }
    Ok(())
}

/// A supply model this release can drive, with the ranges and step sizes it accepts.
struct SupplyModel {
    name: &'static str,
    channels: usize,
    max_v: f64,
    step_v: f64,
    max_a: f64,
    step_a: f64,
}

const SUPPLY_MODELS: [SupplyModel; 1] = [SupplyModel {
    name: "rs3005p",
    channels: 1,
    max_v: 30.0,
    step_v: 0.01,
    max_a: 5.0,
    step_a: 0.001,
}];

fn on_grid(v: f64, step: f64) -> bool {
    let k = (v / step).round();
    (k * step - v).abs() < step * 1e-6
}

fn check_limit(
    field: String,
    v: Option<f64>,
    max: f64,
    step: f64,
    unit: &str,
) -> Result<(), ConfigError> {
    let Some(v) = v else { return Ok(()) };
    // Limits are never rounded: a value the supply cannot set exactly is refused.
    if v > max {
        return Err(err(refuse(
            field,
            format!("{v} {unit} is above the {max} {unit} this supply type can deliver."),
        )
        .with("value", v.to_string())));
    }
    if !on_grid(v, step) {
        return Err(err(refuse(
            field,
            format!("{v} {unit} is not a whole number of this supply's {step} {unit} steps."),
        )
        .with("value", v.to_string())));
    }
    Ok(())
}

fn check_power_supplies(cfg: &Config) -> Result<(), ConfigError> {
    if cfg.power_supplies.is_empty() {
        return Ok(());
    }
    if cfg.version < 2 {
        return Err(err(refuse(
            "power_supplies",
            "Power supplies are read from version 2 on; this file is version 1.",
        )
        .fix(
            "Move the file to version 2 or 3 first, then declare the supply.",
        )));
    }
    let mut claimed: Vec<(&str, String)> = Vec::new();
    for (dn, d) in &cfg.debuggers {
        if let Some(p) = &d.com_port {
            claimed.push((p.as_str(), format!("debuggers.{dn}.com_port")));
        }
    }
    for (sn, s) in &cfg.power_supplies {
        let at = |k: &str| format!("power_supplies.{sn}.{k}");
        let Some(model) = SUPPLY_MODELS.iter().find(|m| m.name == s.kind) else {
            return Err(err(refuse(
                at("type"),
                format!(
                    "`{}` is not a power supply type this release can drive.",
                    s.kind
                ),
            )
            .with("value", s.kind.clone())
            .with(
                "allowed_values",
                json!(SUPPLY_MODELS.iter().map(|m| m.name).collect::<Vec<_>>()),
            )));
        };
        let Some(port) = cfg.com_ports.get(&s.com_port) else {
            return Err(err(refuse(
                at("com_port"),
                "The supply's `com_port` names no entry under com_ports.",
            )
            .with("value", s.com_port.clone())));
        };
        let pn = &s.com_port;
        for (key, present) in [
            ("device", port.device.is_some()),
            ("resource_id", port.resource_id.is_some()),
            ("vid", port.vid.is_some()),
            ("pid", port.pid.is_some()),
        ] {
            if !present {
                return Err(err(refuse(
                    format!("com_ports.{pn}.{key}"),
                    format!(
                        "A power supply's port must name its device, resource_id, vid and pid; `{key}` is missing."
                    ),
                )));
            }
        }
        let rid = port
            .resource_id
            .as_deref()
            .unwrap_or_default()
            .to_lowercase();
        for (serial, holder) in [
            (
                port.serial_number.as_deref(),
                format!("com_ports.{pn}.serial_number"),
            ),
            (s.idn_serial.as_deref(), at("idn_serial")),
        ] {
            if serial.is_some_and(|ser| rid.contains(&ser.to_lowercase())) {
                // Lock keys are printed everywhere; a serial inside one would leak it.
                return Err(err(refuse(format!("com_ports.{pn}.resource_id"), "The supply port's resource_id contains a serial number, and lock keys are printed in every report.")
                    .with("conflicts_with", holder)));
            }
        }
        let own = format!("com_ports.{pn}.resource_id");
        if let Some((other, _)) = resource_ids(cfg)
            .into_iter()
            .find(|(f, r)| *f != own && r.to_lowercase() == rid)
        {
            return Err(err(refuse(own, "A power supply's port needs a lock of its own; another entry shares its resource_id.")
                .with("conflicts_with", other)));
        }
        if let Some((_, other)) = claimed.iter().find(|(p, _)| *p == pn.as_str()) {
            return Err(err(refuse(
                at("com_port"),
                "This port is reserved for the supply, but another entry already uses it.",
            )
            .with("conflicts_with", other.clone())));
        }
        claimed.push((pn.as_str(), at("com_port")));
        for (i, target) in s.powers.iter().enumerate() {
            if !cfg.debuggers.contains_key(target) {
                return Err(err(refuse(
                    format!("power_supplies.{sn}.powers[{i}]"),
                    "`powers` names a debugger this configuration does not have.",
                )
                .with("value", target.clone())));
            }
        }
        if port.serial_number.is_none() && s.idn_serial.is_none() {
            return Err(err(refuse(
                at("idn_serial"),
                "`idn_serial` is required because the supply's port names no serial_number.",
            )));
        }
        check_limit(
            at("voltage_limit_v"),
            s.voltage_limit_v,
            model.max_v,
            model.step_v,
            "V",
        )?;
        check_limit(
            at("current_limit_a"),
            s.current_limit_a,
            model.max_a,
            model.step_a,
            "A",
        )?;
        for (ch, limits) in &s.channels {
            let n: usize = ch.parse().unwrap_or(usize::MAX);
            let cat = |k: &str| format!("power_supplies.{sn}.channels.{ch}{k}");
            if n == 0 || n > model.channels {
                return Err(err(refuse(
                    cat(""),
                    format!(
                        "A {} has {} channel(s), numbered from 1.",
                        model.name, model.channels
                    ),
                )));
            }
            check_limit(
                cat(".voltage_limit_v"),
                limits.voltage_limit_v,
                model.max_v,
                model.step_v,
                "V",
            )?;
            check_limit(
                cat(".current_limit_a"),
                limits.current_limit_a,
                model.max_a,
                model.step_a,
                "A",
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supply_limits_must_sit_on_the_step_grid() {
        assert!(on_grid(3.3, 0.01));
        assert!(on_grid(5.0, 0.01));
        assert!(!on_grid(5.005, 0.01));
        assert!(on_grid(1.234, 0.001));
        assert!(!on_grid(1.2345, 0.001));
    }
}
