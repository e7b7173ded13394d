//! Bench runs: an owner declares the devices a sequence of calls will use, takes them all at once
//! (or none), and holds them until the run ends. Selectors resolve against the configuration in force
//! before any lock is touched, so a typo never leaves half a bench held.

use crate::ErrorType;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use ahil_config::time::now_millis;
use ahil_config::{Config, Debugger, LoadedConfig};
use ahil_job::CancelFlag;
use serde::Serialize;
use serde_json::{Value, json};

use super::device_keys;
use super::device_lock::{Acquired, DeviceLocks};
use crate::envelope::Outcome;

/// One device a run holds, as results show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredDevice {
    pub kind: String,
    pub id: String,
    pub lock_key: String,
    pub identity_source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_warning: Option<String>,
    /// Every key this device declares (the primary `lock_key` first): a pure function of the
    /// configuration, what calls inside the run are checked against.
    #[serde(skip)]
    pub lock_keys: Vec<String>,
    /// The keys the host gives this device when the run begins (the node its name resolves to):
    /// held beside the declaration, never declared (see `device_keys`).
    #[serde(skip)]
    pub host_keys: Vec<String>,
}

impl DeclaredDevice {
    /// A device the configuration holds by `lock_keys` (the primary first; a device always has
    /// one); the host's keys are added when the run begins.
    fn held_by(
        kind: &str,
        id: &str,
        lock_keys: Vec<String>,
        identity_source: &str,
        identity_warning: Option<String>,
    ) -> Self {
        Self {
            kind: kind.to_owned(),
            id: id.to_owned(),
            lock_key: lock_keys[0].clone(),
            identity_source: identity_source.to_owned(),
            identity_warning,
            lock_keys,
            host_keys: Vec::new(),
        }
    }
}

/// The machine-wide keys of a debugger entry, primary first. An entry that names both a
/// `resource_id` and a `probe_id` also locks the probe, so a neighbour naming only the probe collides;
/// one known only by its executable also locks the reference's legacy `probe:<executable>`, which an
/// older reference process or a raw caller still takes for it; a pyOCD probe id qualified by its type
/// (`stlink:0669FF`) also locks the bare serial, the key every other backend's entry for that probe
/// takes.
pub fn debugger_keys(debugger: &Debugger, executable: Option<&Path>) -> Vec<String> {
    let exe = executable.map(|p| p.display().to_string());
    let primary = debugger.lock_key(exe.as_deref());
    let mut keys = vec![primary];
    if debugger.resource_id.is_some()
        && let Some(probe) = &debugger.probe_id
    {
        keys.push(format!("probe:{}", probe.to_lowercase()));
    }
    if debugger.resource_id.is_none()
        && debugger.probe_id.is_none()
        && let Some(exe) = exe.as_deref().or(debugger.executable.as_deref())
    {
        keys.push(format!("probe:{exe}"));
    }
    if let Some(selector) = debugger.probe_selector() {
        let bare = format!("probe:{selector}");
        if !keys.contains(&bare) {
            keys.push(bare);
        }
    }
    keys
}

/// The keys a call on `debugger` claims. An esptool entry has no probe: its chip is reached only
/// through its COM port, so it claims that port's key, and a COM session on the port excludes it.
pub fn claimed_keys(
    config: &Config,
    debugger: &Debugger,
    executable: Option<&Path>,
) -> Vec<String> {
    if debugger.kind == ahil_config::DebuggerType::Esptool
        && let Some(name) = debugger.com_port.as_deref()
        && let Some(port) = config.com_ports.get(name)
    {
        return vec![port.lock_key(name)];
    }
    debugger_keys(debugger, executable)
}

fn debugger_identity(
    debugger: &Debugger,
    executable: Option<&Path>,
) -> (&'static str, Option<String>) {
    if debugger.kind == ahil_config::DebuggerType::Esptool {
        ("com_port", None)
    } else if debugger.resource_id.is_some() {
        ("resource_id", None)
    } else if debugger.probe_id.is_some() {
        ("probe_id", None)
    } else {
        let warning = "This debugger names no probe_id or resource_id, so its lock follows the toolchain, not the board; give it a probe_id.".to_owned();
        let source = if executable.is_some() || debugger.executable.is_some() {
            "executable"
        } else {
            "backend"
        };
        (source, Some(warning))
    }
}

/// Resolves `devices` selectors (`{kind, id?, participant?}`, already schema-checked) to the devices
/// they name, or the refusal for the first that names nothing.
pub fn resolve(
    loaded: &LoadedConfig,
    tool: &str,
    selectors: &[Value],
) -> Result<Vec<DeclaredDevice>, Box<Outcome>> {
    let config = &loaded.config;
    let nodes = device_keys::Nodes::resolve(config);
    let mut devices: Vec<DeclaredDevice> = Vec::new();
    for selector in selectors {
        let kind = selector
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = selector.get("id").and_then(Value::as_str);
        if selector.get("participant").is_some() && kind != "can" {
            return Err(Box::new(invalid(
                tool,
                "participant",
                "Only a can selector takes a participant.",
            )));
        }
        let device = match kind {
            "debugger" => resolve_debugger(loaded, tool, id)?,
            "uart" => {
                let (id, port) = entry(config, &config.com_ports, tool, kind, id)?;
                let source = port.identity_source().as_str();
                let warning = (!port.carries_hardware_identity()).then(|| {
                    "This port is named by its kernel device only; a second adapter can take that name.".to_owned()
                });
                let key = port.lock_key(id);
                DeclaredDevice::held_by(kind, id, vec![key], source, warning)
            }
            "can" => {
                let (id, bus) = entry(config, &config.can_buses, tool, kind, id)?;
                let participant = selector.get("participant").and_then(Value::as_str);
                let key = can_key(tool, id, bus, participant)?;
                let source = if bus.resource_id.is_some() {
                    "resource_id"
                } else {
                    "channel"
                };
                DeclaredDevice::held_by(kind, id, vec![key], source, None)
            }
            "power_supply" => {
                let (id, supply) = entry(config, &config.power_supplies, tool, kind, id)?;
                // A supply is reached through its serial port, so it is held by that port's key.
                let port = config
                    .com_ports
                    .get(&supply.com_port)
                    .ok_or_else(|| unknown_device(config, tool, kind, id))?;
                let key = port.lock_key(&supply.com_port);
                DeclaredDevice::held_by(kind, id, vec![key], port.identity_source().as_str(), None)
            }
            _ => return Err(Box::new(invalid(tool, "kind", "Unknown device kind."))),
        };
        let device = DeclaredDevice {
            host_keys: device_keys::host_keys(config, &device.lock_keys, &nodes),
            ..device
        };
        // Two participants of one shared bus are one entry but two devices.
        if !devices
            .iter()
            .any(|d| d.kind == device.kind && d.id == device.id && d.lock_key == device.lock_key)
        {
            devices.push(device);
        }
    }
    Ok(devices)
}

fn resolve_debugger(
    loaded: &LoadedConfig,
    tool: &str,
    id: Option<&str>,
) -> Result<DeclaredDevice, Box<Outcome>> {
    let config = &loaded.config;
    let (name, debugger) = match id {
        Some(id) => (
            id,
            config
                .debuggers
                .get(id)
                .ok_or_else(|| unknown_device(config, tool, "debugger", id))?,
        ),
        None => config.auto_bound_debugger().ok_or_else(|| {
            Box::new(invalid(
                tool,
                "devices",
                "A debugger selector may omit id only when exactly one debugger is configured.",
            ))
        })?,
    };
    let exe = loaded.executables.debugger(name);
    let keys = claimed_keys(config, debugger, exe);
    let (source, warning) = debugger_identity(debugger, exe);
    Ok(DeclaredDevice::held_by(
        "debugger", name, keys, source, warning,
    ))
}

/// The machine-wide key of one participant of a shared bus: one holder per participant.
pub fn participant_key(bus_key: &str, participant: &str) -> String {
    format!("{bus_key}#{participant}")
}

/// The key a run holds for a CAN bus: the bus's own, or on a bus with `shares` the participant's
/// (`<bus-key>#<participant>`), because the bus lock belongs to the broker that owns the adapter.
fn can_key(
    tool: &str,
    bus_id: &str,
    bus: &ahil_config::CanBus,
    participant: Option<&str>,
) -> Result<String, Box<Outcome>> {
    let refused = |error_type, summary: String| {
        let configured: Vec<&str> = bus
            .shares
            .iter()
            .flat_map(|s| s.keys())
            .map(String::as_str)
            .collect();
        let mut outcome = Outcome::refused(tool, error_type, summary)
            .with("bus_id", bus_id)
            .with("configured_participants", json!(configured))
            .with_remediation([
                "Name the device as {kind: can, id, participant} with one of configured_participants, or without participant on a bus without shares.",
            ])
            .not_contacted();
        if let Some(name) = participant {
            outcome.set("participant", name);
        }
        Box::new(outcome)
    };
    match (&bus.shares, participant) {
        (None, None) => Ok(bus.lock_key()),
        (None, Some(name)) => Err(refused(
            ErrorType::CanParticipantNotConfigured,
            format!("can_buses.{bus_id} declares no shares, so it has no participant `{name}`."),
        )),
        (Some(_), None) => Err(refused(
            ErrorType::CanParticipantRequired,
            format!("can_buses.{bus_id} is shared; a run declares the participant it will be."),
        )),
        (Some(shares), Some(name)) if shares.contains_key(name) => {
            Ok(participant_key(&bus.lock_key(), name))
        }
        (Some(_), Some(name)) => Err(refused(
            ErrorType::CanParticipantNotConfigured,
            format!("can_buses.{bus_id}.shares has no participant `{name}`."),
        )),
    }
}

/// The entry of `entries` the selector's `id` names, with that id, or the refusal: a selector of
/// these kinds must carry an id, and it must name a configured entry.
fn entry<'c, 'i, T>(
    config: &Config,
    entries: &'c indexmap::IndexMap<String, T>,
    tool: &str,
    kind: &str,
    id: Option<&'i str>,
) -> Result<(&'i str, &'c T), Box<Outcome>> {
    let id = required_id(tool, kind, id)?;
    let found = entries
        .get(id)
        .ok_or_else(|| unknown_device(config, tool, kind, id))?;
    Ok((id, found))
}

fn required_id<'a>(tool: &str, kind: &str, id: Option<&'a str>) -> Result<&'a str, Box<Outcome>> {
    id.ok_or_else(|| {
        Box::new(invalid(
            tool,
            "id",
            &format!("A {kind} selector needs the entry's id."),
        ))
    })
}

fn invalid(tool: &str, field: &str, summary: &str) -> Outcome {
    Outcome::refused(tool, ErrorType::InvalidArgument, summary)
        .with("field", field)
        .with_remediation([
            "Name each device as {kind, id} with an entry name from project_config_describe.",
        ])
        .not_contacted()
}

fn unknown_device(config: &Config, tool: &str, kind: &str, id: &str) -> Box<Outcome> {
    let configured: Vec<&str> = match kind {
        "debugger" => config.debuggers.keys().map(String::as_str).collect(),
        "uart" => config.com_ports.keys().map(String::as_str).collect(),
        "can" => config.can_buses.keys().map(String::as_str).collect(),
        _ => config.power_supplies.keys().map(String::as_str).collect(),
    };
    Box::new(
        Outcome::refused(
            tool,
            ErrorType::UnknownDevice,
            format!("The configuration declares no {kind} named '{id}'."),
        )
        .with("kind", kind)
        .with("id", id)
        .with("configured_devices", json!(configured))
        .with_remediation([
            "Use an entry name from configured_devices; the operator adds new devices.",
        ])
        .not_contacted(),
    )
}

/// The run this owner has open.
#[derive(Debug, Clone)]
pub struct Run {
    pub label: Option<String>,
    pub started_at: String,
    pub devices: Vec<DeclaredDevice>,
    /// Every key the run took: its declaration and the host keys read when it began. Kept rather
    /// than read again at the end, since the host's answer can change meanwhile, and a run gives
    /// back exactly what it took.
    held: Vec<String>,
}

impl Run {
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .devices
            .iter()
            .flat_map(|d| d.lock_keys.clone())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Whether this run declared every key in `keys` (a call inside a run may use only those).
    pub fn covers(&self, keys: &[String]) -> bool {
        let held = self.keys();
        keys.iter().all(|k| held.contains(k))
    }
}

/// At most one open run per owner.
#[derive(Default)]
pub struct RunSlot {
    run: Mutex<Option<Run>>,
}

impl RunSlot {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Run>> {
        self.run
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn current(&self) -> Option<Run> {
        self.slot().clone()
    }

    /// Opens a run over `devices`, taking every lock or none. The slot is not held while the locks
    /// are waited for, so this server's status and stop answer meanwhile; a wait that `cancel`
    /// ends (the client's cancel, the gate's deadline) takes nothing.
    pub fn start(
        &self,
        locks: &DeviceLocks,
        tool: &str,
        devices: Vec<DeclaredDevice>,
        label: Option<&str>,
        wait: Duration,
        cancel: &CancelFlag,
    ) -> Outcome {
        if let Some(run) = self.slot().as_ref() {
            return already_active(tool, run);
        }
        let keys: Vec<String> = devices
            .iter()
            .flat_map(|d| d.lock_keys.iter().chain(&d.host_keys).cloned())
            .collect();
        let Acquired {
            resources,
            reclaimed,
        } = match locks.acquire_unless(&keys, wait, label, cancel) {
            Ok(acquired) => acquired,
            Err(busy) => return busy.into_outcome(tool),
        };
        let mut slot = self.slot();
        if let Some(run) = slot.as_ref() {
            // Another start opened a run while this one waited.
            locks.release(&resources);
            return already_active(tool, run);
        }
        if cancel.is_cancelled() {
            locks.release(&resources);
            return Outcome::refused(
                tool,
                ErrorType::Interrupted,
                "The call was cancelled (or ran past its deadline) while it waited for the devices; no run was opened.",
            )
            .with("cancelled", true)
            .not_contacted();
        }
        let run = Run {
            label: label.map(str::to_owned),
            started_at: now_millis(),
            devices,
            held: resources,
        };
        let mut owner = serde_json::to_value(locks.owner()).unwrap_or(Value::Null);
        if let Some(label) = label {
            owner["label"] = json!(label);
        }
        let mut outcome = Outcome::ok(
            tool,
            format!(
                "{} device(s) are held for this run until bench_run_stop.",
                run.keys().len()
            ),
        )
        .with("declared_devices", json!(run.keys()))
        .with("run_label", json!(label))
        .with("run_started_at", run.started_at.as_str())
        .with("owner", owner)
        .with("devices", json!(run.devices));
        let warnings: Vec<&str> = run
            .devices
            .iter()
            .filter_map(|d| d.identity_warning.as_deref())
            .collect();
        if !warnings.is_empty() {
            outcome.set("warnings", json!(warnings));
        }
        if !reclaimed.is_empty() {
            outcome.set("reclaimed", json!(reclaimed));
        }
        *slot = Some(run);
        outcome
    }
}

/// The refusal of a start while `run` is open on this server.
fn already_active(tool: &str, run: &Run) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::RunAlreadyActive,
        "A run is already open on this server.",
    )
    .with("declared_devices", json!(run.keys()))
    .with_remediation(["Call bench_run_stop first, then start the new run."])
    .not_contacted()
}

impl RunSlot {
    /// Ends the run and gives back its hold on each device; ending no run is not an error. A
    /// session still open on one of them keeps it: those are `still_held_devices`, and the leases
    /// `leases_holding` names for them are `open_leases`.
    pub fn stop(
        &self,
        locks: &DeviceLocks,
        tool: &str,
        leases_holding: impl FnOnce(&[String]) -> Vec<String>,
    ) -> Outcome {
        let Some(run) = self.slot().take() else {
            return Outcome::ok(tool, "No run was open.")
                .with("released_devices", json!([]))
                .with("run_was_active", false);
        };
        let keys = run.keys();
        locks.release(&run.held);
        let held = locks.held();
        let still_held: Vec<String> = keys.iter().filter(|k| held.contains(k)).cloned().collect();
        if still_held.is_empty() {
            return Outcome::ok(tool, format!("{} device(s) were released.", keys.len()))
                .with("released_devices", json!(keys))
                .with("run_was_active", true);
        }
        let open_leases = leases_holding(&still_held);
        Outcome::ok(
            tool,
            format!(
                "The run ended, but {} open session(s) keep {} of its device(s) held; stop those sessions to free them.",
                open_leases.len().max(1),
                still_held.len()
            ),
        )
        .with("released_devices", json!(keys))
        .with("run_was_active", true)
        .with("open_leases", json!(open_leases))
        .with("still_held_devices", json!(still_held))
    }

    pub fn status(&self, locks: &DeviceLocks, tool: &str) -> Outcome {
        let held = locks.held();
        match self.current() {
            None => Outcome::ok(tool, "No run is open.")
                .with("run_active", false)
                .with("declared_devices", json!([]))
                .with("held_devices", json!(held)),
            Some(run) => Outcome::ok(
                tool,
                format!(
                    "A run holds {} device(s) until bench_run_stop or until this server ends.",
                    run.keys().len()
                ),
            )
            .with("run_active", true)
            .with("declared_devices", json!(run.keys()))
            .with("run_label", json!(run.label))
            .with("run_started_at", run.started_at.as_str())
            .with(
                "owner",
                serde_json::to_value(locks.owner()).unwrap_or(Value::Null),
            )
            .with("held_devices", json!(held))
            .with("devices", json!(run.devices)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::{LockRoot, Owner};
    use crate::testkit::{Fixture, NULL_EXECUTABLE, executable_line};

    const UART: &str = "com_ports:\n  dut_uart:\n    device: \"/dev/serial/by-id/usb-ST_STLINK_0669-if02\"\n    serial_number: \"0669FF\"\n";

    /// A workspace whose configuration names one openocd probe and one UART, and that
    /// configuration loaded.
    fn bench() -> (Fixture, LoadedConfig) {
        let fx = Fixture::new();
        let openocd = fx.tool("openocd", "exit 0");
        let text = fx
            .starter_with(&[
                (NULL_EXECUTABLE, &executable_line(&openocd)),
                ("probe_id: null", "probe_id: \"ABC1\""),
            ])
            .replacen("com_ports: {}\n", UART, 1);
        fx.write_config(&text);
        let loaded = fx.load();
        (fx, loaded)
    }

    fn locks(fx: &Fixture) -> DeviceLocks {
        DeviceLocks::new(LockRoot::for_home(&fx.home), Owner::this_process("mcp"))
    }

    /// What `bench_run_start` resolves `selectors`, a JSON array, to.
    fn resolved(
        loaded: &LoadedConfig,
        selectors: &Value,
    ) -> Result<Vec<DeclaredDevice>, Box<Outcome>> {
        let selectors = selectors.as_array().cloned().unwrap_or_default();
        resolve(loaded, "bench_run_start", &selectors)
    }

    /// `slot` starting a run of `devices` through `locks`, not waiting for a device held.
    fn start(
        slot: &RunSlot,
        locks: &DeviceLocks,
        devices: &[DeclaredDevice],
        label: Option<&str>,
    ) -> Outcome {
        slot.start(
            locks,
            "bench_run_start",
            devices.to_vec(),
            label,
            Duration::ZERO,
            &CancelFlag::default(),
        )
    }

    #[test]
    fn an_esptool_debugger_claims_its_com_ports_key_and_no_toolchain_key() {
        let (_fx, loaded) = bench();
        let mut config = loaded.config.clone();
        let esp = config.debuggers.values_mut().next().expect("a debugger");
        esp.kind = ahil_config::DebuggerType::Esptool;
        esp.probe_id = None;
        esp.com_port = Some("dut_uart".into());
        let esp = esp.clone();
        assert_eq!(
            claimed_keys(&config, &esp, Some(Path::new("/usr/bin/esptool"))),
            ["com:serial:0669ff"]
        );
        assert_eq!(debugger_identity(&esp, None).0, "com_port");
        let openocd = loaded.config.debuggers.values().next().expect("a debugger");
        assert_eq!(claimed_keys(&loaded.config, openocd, None), ["probe:abc1"]);
    }

    #[test]
    fn a_debugger_selector_without_id_names_the_only_debugger() {
        let (_fx, loaded) = bench();
        let devices = resolved(&loaded, &json!([{"kind": "debugger"}])).expect("resolves");
        assert_eq!(devices[0].id, "dut");
        assert_eq!(devices[0].lock_key, "probe:abc1");
        assert_eq!(devices[0].identity_source, "probe_id");
    }

    #[test]
    fn an_unknown_entry_is_refused_before_any_lock_is_taken() {
        let (_fx, loaded) = bench();
        let selectors = json!([{"kind": "debugger"}, {"kind": "uart", "id": "nope"}]);
        let refusal = resolved(&loaded, &selectors).expect_err("nope is not configured");
        assert_eq!(refusal.error_type.as_deref(), Some("unknown_device"));
        assert_eq!(
            refusal.to_value()["configured_devices"],
            json!(["dut_uart"])
        );
    }

    #[test]
    fn a_run_holds_its_devices_until_it_stops() {
        let (fx, loaded) = bench();
        let selectors = json!([{"kind": "debugger"}, {"kind": "uart", "id": "dut_uart"}]);
        let devices = resolved(&loaded, &selectors).expect("resolves");
        let mine = locks(&fx);
        let theirs = locks(&fx);
        let slot = RunSlot::default();
        let started = start(&slot, &mine, &devices, Some("t1"));
        assert!(started.ok, "{}", started.to_value());
        assert_eq!(
            started.to_value()["declared_devices"],
            json!(["com:serial:0669ff", "probe:abc1"])
        );
        let other = RunSlot::default();
        let refused = start(&other, &theirs, &devices, None);
        assert_eq!(refused.error_type.as_deref(), Some("device_busy"));
        assert!(
            refused.summary.contains("running t1"),
            "{}",
            refused.summary
        );

        let again = start(&slot, &mine, &devices, None);
        assert_eq!(again.error_type.as_deref(), Some("run_already_active"));

        let stopped = slot.stop(&mine, "bench_run_stop", |_| Vec::new());
        assert_eq!(stopped.to_value()["run_was_active"], json!(true));
        assert!(start(&other, &theirs, &devices, None).ok);
    }

    #[test]
    fn a_run_covers_only_what_it_declared() {
        let (_fx, loaded) = bench();
        let devices = resolved(&loaded, &json!([{"kind": "debugger"}])).expect("resolves");
        let run = Run {
            label: None,
            started_at: String::new(),
            devices,
            held: Vec::new(),
        };
        assert!(run.covers(&["probe:abc1".to_owned()]));
        assert!(!run.covers(&["com:serial:0669ff".to_owned()]));
    }

    #[test]
    fn a_debugger_known_only_by_its_executable_also_holds_the_references_legacy_probe_key() {
        let exe = Some(Path::new("/usr/bin/openocd"));
        assert_eq!(
            debugger_keys(&Debugger::default(), exe),
            ["probe-exe:/usr/bin/openocd", "probe:/usr/bin/openocd"]
        );
        let by_probe = Debugger {
            probe_id: Some("ABC1".into()),
            ..Debugger::default()
        };
        assert_eq!(debugger_keys(&by_probe, exe), ["probe:abc1"]);
    }

    #[test]
    fn a_pyocd_probe_named_with_its_type_also_holds_the_bare_serial_other_backends_lock() {
        let pyocd = Debugger {
            kind: ahil_config::DebuggerType::Pyocd,
            probe_id: Some("stlink:0669FF".into()),
            ..Debugger::default()
        };
        let stlink = Debugger {
            kind: ahil_config::DebuggerType::Stlink,
            probe_id: Some("0669FF".into()),
            ..Debugger::default()
        };
        let ours = debugger_keys(&pyocd, None);
        assert_eq!(
            ours[0], "probe:stlink:0669ff",
            "the reference's key comes first"
        );
        assert!(
            debugger_keys(&stlink, None)
                .iter()
                .all(|k| ours.contains(k)),
            "{ours:?}"
        );
    }
}
