//! `project_config_adopt_hardware`: read the attached board and fill the configuration's unset
//! description keys from it. Only `apply: true` writes, through the same field-wise writer and ratchet
//! as `project_config_set`; a COM port it creates arrives with every grant false. A key that already
//! holds another value is reported (`kept`), never overwritten.
//!
//! The emulated board of a `type: qemu` debugger gives its controller and UART. A probe backend that
//! can list its probes (pyOCD, STM32CubeProgrammer, probe-rs; OpenOCD only with an explicit
//! `probe_id`, since its list is every USB serial device) gives the probe's serial as `probe_id`, the
//! autodetected toolchain as `executable`, and the host serial port that carries the same USB serial
//! number (an ST-LINK's virtual COM port). The listing runs under the debugger's device lock and opens
//! no target.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::Path;
use std::time::Duration;

use ahil_config::write::{Stamp, edit_config};
use ahil_config::{
    Actor, Config, Debugger, DebuggerType, Environment, LoadedConfig, ProjectPermissions,
};
use ahil_drivers::error::Contact;
use ahil_drivers::probe::Budget;
use ahil_drivers::probe_cli::CliSettings;
use ahil_drivers::process::CancelFlag;
use ahil_drivers::qemu::{BoardPaths, BoardState};
use serde_json::{Value, json};

use super::{Acted, Context, DriverJob, Plan, Work};
use crate::config_edit::{Change, Rights, apply_agent_changes};
use crate::envelope::Outcome;
use crate::policy::Action;

/// Controllers of the QEMU machines we emulate.
const MACHINE_CONTROLLERS: &[(&str, &str)] = &[
    ("netduinoplus2", "stm32f405"),
    ("stm32vldiscovery", "stm32f100"),
];

/// The gate's margin over the listing's own budget, so the driver's timeout answers first.
const MARGIN: Duration = Duration::from_secs(5);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ProjectConfigAdoptHardware])?;
    let apply = ctx.args.arg_bool("apply").unwrap_or(false);
    let action = Action::ConfigAdoptHardware { apply };
    let target = Target::from_args(ctx.args);
    let listed = chosen(&ctx.loaded.config, &target).filter(|(_, entry)| lists(entry.kind));
    let Some((name, entry)) = listed else {
        return Ok(super::local_plan(action, move || adopt(ctx, apply, None)));
    };
    // Checked before the listing claims the debugger's lock, which would count as an open hold.
    let refusal = apply
        .then(|| super::config_set::open_run_refusal(ctx))
        .flatten();
    let executable = ctx.loaded.executables.debugger(name).map(Path::to_path_buf);
    let resources =
        crate::ownership::runs::claimed_keys(&ctx.loaded.config, entry, executable.as_deref());
    let (Some(executable), None) = (executable, refusal.as_ref()) else {
        let outcome = refusal.unwrap_or_else(|| no_executable(ctx.tool.name(), name, entry));
        return Ok(super::local_plan(action, move || outcome));
    };
    let (backend, timeout) = lister(entry, executable);
    let tool = ctx.tool;
    let loaded = ctx.loaded.clone();
    let env = ctx.env.clone();
    let held = ctx.loaded.config.permissions;
    let run_listing = move |cancel: CancelFlag| {
        let budget = Budget::new(timeout).with_cancel(cancel);
        let found = match backend.list_probes(&budget) {
            Ok(listing) => Discovered::from(listing),
            Err(error) => return super::probe_cli::failed(backend.as_ref(), tool, error, None),
        };
        let stamp = Stamp {
            actor: Actor::Agent,
            via: "mcp:project_config_adopt_hardware",
        };
        let write = apply.then_some((stamp, Some(held)));
        Acted {
            outcome: run(
                tool.name(),
                &loaded,
                &env,
                &target,
                write,
                Some(&found),
                true,
            ),
            contact: Some(Contact::none("listing probes opens no target")),
        }
    };
    Ok(Plan {
        action,
        device: None,
        also: Vec::new(),
        resources,
        work: Work::Driver(DriverJob {
            deadline: timeout + MARGIN,
            if_abandoned: Contact::none("listing probes opens no target"),
            run: Box::new(run_listing),
        }),
    })
}

/// The entry's backend, to list probes with (no probe selected), and its timeout.
fn lister(
    entry: &Debugger,
    executable: std::path::PathBuf,
) -> (Box<dyn ahil_drivers::probe_cli::CliProbe>, Duration) {
    let timeout = Duration::try_from_secs_f64(entry.timeout_s).unwrap_or(Duration::from_mins(1));
    let settings = CliSettings {
        executable,
        probe_id: None,
        timeout,
    };
    (
        super::probe_cli::backend_for(entry, settings, Vec::new()),
        timeout,
    )
}

/// Whether adopting `kind` lists probes (the emulated board is read from its state directory).
fn lists(kind: DebuggerType) -> bool {
    matches!(
        kind,
        DebuggerType::Openocd | DebuggerType::Pyocd | DebuggerType::Stlink | DebuggerType::ProbeRs
    )
}

/// The debugger an adoption is about: the named one, or the only one the configuration binds.
fn chosen<'c>(config: &'c Config, target: &Target) -> Option<(&'c str, &'c Debugger)> {
    let name = target
        .debugger_id
        .as_deref()
        .or_else(|| config.auto_bound_debugger().map(|(id, _)| id))?;
    config
        .debuggers
        .get_key_value(name)
        .map(|(name, entry)| (name.as_str(), entry))
}

/// The entry names no program to list probes with. The starter entry `init` wrote is never
/// autodetected (a program is the operator's to name); while the host's USB devices show no probe
/// either, the answer is the reference's for that bench, `probe_inventory_incomplete`: nothing to
/// adopt from a reading that cannot prove there is no probe.
fn no_executable(tool: &str, name: &str, entry: &Debugger) -> Outcome {
    let probe_in_sight =
        entry.is_placeholder_starter() && !crate::bootstrap::usb_probes().is_empty();
    no_executable_seeing(tool, name, entry, probe_in_sight)
}

/// [`no_executable`] once the host's USB devices were read: `probe_in_sight` when they show a probe.
fn no_executable_seeing(tool: &str, name: &str, entry: &Debugger, probe_in_sight: bool) -> Outcome {
    if entry.is_placeholder_starter() && !probe_in_sight {
        return Outcome::refused(
            tool,
            ErrorType::ProbeInventoryIncomplete,
            "The host's USB devices show no debug probe, and that reading is not an authoritative count: a probe behind another vendor's id does not appear. Nothing was adopted.",
        )
        .with("backend", entry.kind.as_str())
        .with("probes", json!([]))
        .with("complete", false)
        .with_next_step(format!(
            "Plug the probe in and call again, or ask the operator to name its program in debuggers.{name}.executable (and its probe_id)."
        ))
        .not_started(true);
    }
    Outcome::refused(
        tool,
        ErrorType::DebuggerNotFound,
        format!(
            "No {} executable was found for `{name}`, so its probes cannot be listed.",
            entry.kind.as_str()
        ),
    )
    .with("backend", entry.kind.as_str())
    .with_next_step(format!(
        "Ask the operator to install the tool or name it in debuggers.{name}.executable, then call again."
    ))
    .not_started(true)
}

/// The probes a backend listed, for an adoption.
#[derive(Debug, Clone)]
pub struct Discovered {
    pub probes: Vec<String>,
    /// False when the list may hold devices that are not probes (OpenOCD's USB serial inventory).
    pub complete: bool,
}

impl From<ahil_drivers::probe_cli::Listing> for Discovered {
    fn from(listing: ahil_drivers::probe_cli::Listing) -> Self {
        Self {
            probes: listing.probes.into_iter().map(|p| p.id).collect(),
            complete: listing.complete,
        }
    }
}

/// Lists the chosen debugger's probes now, for the operator's `adopt-hardware` (which already holds
/// the bench's locks). `Ok(None)` when the adoption lists nothing (the emulated board).
pub fn discover_now(
    tool: ToolId,
    loaded: &LoadedConfig,
    target: &Target,
) -> Result<Option<Discovered>, Box<Outcome>> {
    let Some((name, entry)) = chosen(&loaded.config, target).filter(|(_, entry)| lists(entry.kind))
    else {
        return Ok(None);
    };
    let Some(executable) = loaded.executables.debugger(name) else {
        return Err(Box::new(no_executable(tool.name(), name, entry)));
    };
    let (backend, timeout) = lister(entry, executable.to_path_buf());
    match backend.list_probes(&Budget::new(timeout)) {
        Ok(listing) => Ok(Some(Discovered::from(listing))),
        Err(error) => Err(Box::new(
            super::probe_cli::failed(backend.as_ref(), tool, error, None).outcome,
        )),
    }
}

/// Which probe and entries an adoption is about (the tool's optional arguments, the CLI's flags).
/// The fields are the arguments' names.
#[allow(clippy::struct_field_names)]
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub debugger_id: Option<String>,
    pub probe_id: Option<String>,
    pub com_port_id: Option<String>,
}

impl Target {
    fn from_args(args: &Value) -> Self {
        let arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        Self {
            debugger_id: arg("debugger_id"),
            probe_id: arg("probe_id"),
            com_port_id: arg("com_port_id"),
        }
    }
}

/// What the board says, key by key, and what the file says now.
struct Proposal {
    debugger_id: String,
    com_port_id: Option<String>,
    creates_com_port: bool,
    carried: Vec<Change>,
    already_current: Vec<Value>,
    kept: Vec<Value>,
    unavailable: Vec<Value>,
}

fn adopt(ctx: &Context<'_>, apply: bool, discovered: Option<&Discovered>) -> Outcome {
    if apply && let Some(refusal) = super::config_set::open_run_refusal(ctx) {
        return refusal;
    }
    let held = ctx.loaded.config.permissions;
    let stamp = Stamp {
        actor: Actor::Agent,
        via: "mcp:project_config_adopt_hardware",
    };
    run(
        ctx.tool.name(),
        ctx.loaded,
        ctx.env,
        &Target::from_args(ctx.args),
        apply.then_some((stamp, Some(held))),
        discovered,
        true,
    )
}

/// Proposes, and with `write` writes: `(stamp, grants the writer holds)`; `None` grants is the
/// operator, who needs none for the description. An `agent`'s adoption never writes a key that
/// names a program: those are listed as `operator_only`.
pub fn run(
    tool: &str,
    loaded: &LoadedConfig,
    env: &Environment,
    target: &Target,
    write: Option<(Stamp<'_>, Option<ProjectPermissions>)>,
    discovered: Option<&Discovered>,
    agent: bool,
) -> Outcome {
    let mut proposal = match propose(tool, loaded, target, discovered) {
        Ok(p) => p,
        Err(refusal) => return *refusal,
    };
    let (programs, carried) = split_programs(
        std::mem::take(&mut proposal.carried),
        loaded.config.version,
        agent,
    );
    proposal.carried = carried;
    let program_keys: Vec<String> = programs.iter().map(|c| c.key.clone()).collect();
    if write.is_some() && proposal.carried.is_empty() && !program_keys.is_empty() {
        return super::config_set::operator_only(tool, &program_keys)
            .with("debugger_id", proposal.debugger_id.as_str());
    }
    let operator_only: Vec<Value> = programs
        .iter()
        .map(|c| json!({"key": c.key, "discovered_value": c.value, "error_type": "operator_only_key", "operator_command": "agentic-hil adopt-hardware"}))
        .collect();
    let carried: Vec<Value> = proposal
        .carried
        .iter()
        .map(|c| json!({"key": c.key, "value": c.value}))
        .collect();
    let mut outcome = Outcome::ok(tool, "")
        .with("debugger_id", proposal.debugger_id.as_str())
        .with("com_port_id", json!(proposal.com_port_id))
        .with("creates_com_port", proposal.creates_com_port)
        .with("carried", Value::Array(carried))
        .with(
            "already_current",
            Value::Array(proposal.already_current.clone()),
        )
        .with("kept", Value::Array(proposal.kept.clone()))
        .with("operator_only", Value::Array(operator_only))
        .with("unavailable", Value::Array(proposal.unavailable.clone()));
    let Some((stamp, held)) = write.filter(|_| !proposal.carried.is_empty()) else {
        outcome.summary = if proposal.carried.is_empty() {
            "The configuration already says everything the board tells; nothing to write."
                .to_owned()
        } else {
            format!(
                "The board fills {} key(s); nothing was written (apply to write them).",
                proposal.carried.len()
            )
        };
        outcome.set("applied", false);
        return outcome.not_contacted();
    };
    let mut applied = None;
    let result = edit_config(
        &loaded.workspace,
        &loaded.path,
        env,
        stamp,
        |doc, current| {
            let description = held.is_none_or(|h| {
                h.allow_config_description_write
                    && current.permissions.allow_config_description_write
            });
            let rights = Rights {
                description,
                permissions: false,
                programs: !agent,
            };
            let done = apply_agent_changes(doc, current.version, rights, &proposal.carried)?;
            let keys = done.changed.clone();
            applied = Some(done);
            Ok(keys)
        },
    );
    let written = match result {
        Ok(w) => w,
        Err(err) => return super::config_set::refusal(tool, err),
    };
    let applied = applied.unwrap_or_default();
    outcome.summary = format!(
        "Wrote {} key(s) from the board; reload the description (or restart) to use them.",
        written.changed_keys.len()
    );
    super::config_set::with_applied(outcome.with("applied", true), &applied)
        .with("provenance", written.provenance)
        .with(
            "write",
            json!({"path": loaded.display_path, "keys": written.changed_keys}),
        )
        .with("reload_required", true)
        .with(
            "next_steps",
            json!([
                "Call project_config_reload_description to put the adopted description in force."
            ]),
        )
        .not_contacted()
}

/// An agent's adoption carries no key that names a program: those are split off, to be reported.
fn split_programs(carried: Vec<Change>, version: u8, agent: bool) -> (Vec<Change>, Vec<Change>) {
    carried.into_iter().partition(|c| {
        agent && crate::config_edit::classify(&c.key, version).is_ok_and(|r| r.operator_only)
    })
}

fn propose(
    tool: &str,
    loaded: &LoadedConfig,
    target: &Target,
    discovered: Option<&Discovered>,
) -> Result<Proposal, Box<Outcome>> {
    let config = &loaded.config;
    let refuse = |error_type: ErrorType, summary: String| {
        Box::new(Outcome::refused(tool, error_type, summary).not_started(true))
    };
    let named = target
        .debugger_id
        .as_deref()
        .or_else(|| config.auto_bound_debugger().map(|(id, _)| id));
    let debugger_id = match named {
        Some(id) => id.to_owned(),
        None => {
            return Err(refuse(
                ErrorType::InvalidArgument,
                "Several debuggers are configured; name one with debugger_id.".into(),
            ));
        }
    };
    let Some(entry) = config.debuggers.get(&debugger_id) else {
        // The argument that named it, as the reference says (`--debugger` on the command line).
        let configured: Vec<&String> = config.debuggers.keys().collect();
        return Err(Box::new(
            (*refuse(
                ErrorType::UnknownDevice,
                format!("No debugger `{debugger_id}` is configured."),
            ))
            .with("field", "debugger_id")
            .with("configured_debuggers", json!(configured)),
        ));
    };
    if let Some(found) = discovered.filter(|_| lists(entry.kind)) {
        return propose_probe(tool, loaded, &debugger_id, entry, target, found);
    }
    if entry.kind != DebuggerType::Qemu {
        return Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::NotSupported,
                format!(
                    "Adopting hardware reads an emulated board or a probe listing; a `{}` entry (`{debugger_id}`) gives neither.",
                    entry.kind.as_str()
                ),
            )
            .with("backend", entry.kind.as_str())
            .not_started(true),
        ));
    }
    if let Some(probe) = target.probe_id.as_deref()
        && probe != format!("qemu:{debugger_id}")
    {
        return Err(refuse(
            ErrorType::HardwareMismatch,
            format!("The board of `{debugger_id}` is `qemu:{debugger_id}`, not `{probe}`."),
        ));
    }
    let dir = config.board_dir(&debugger_id).unwrap_or_default();
    if !matches!(
        ahil_drivers::qemu::board::status(&dir),
        BoardState::Running { .. }
    ) {
        return Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::TargetNotDetected,
                format!("The emulated board of `{debugger_id}` is not running."),
            )
            .with_next_step("Ask the operator to run `agentic-hil sim start`, then call again.")
            .not_started(true),
        ));
    }
    let uart = BoardPaths::new(&dir).uart().display().to_string();
    let mut unavailable = Vec::new();
    let com_port_id = choose_port(config, target, &debugger_id, &mut unavailable, |p| {
        p.device.as_deref() == Some(uart.as_str())
    });
    let creates_com_port = com_port_id
        .as_ref()
        .is_some_and(|id| !config.com_ports.contains_key(id));

    let mut proposal = Proposal {
        debugger_id: debugger_id.clone(),
        com_port_id: com_port_id.clone(),
        creates_com_port,
        carried: Vec::new(),
        already_current: Vec::new(),
        kept: Vec::new(),
        unavailable,
    };
    let machine = entry.qemu_machine();
    match MACHINE_CONTROLLERS.iter().find(|(m, _)| *m == machine) {
        Some((_, controller)) => consider(
            &mut proposal,
            "target.controller",
            (!config.is_placeholder_controller()).then(|| json!(config.target.controller)),
            json!(controller),
        ),
        None => proposal.unavailable.push(
            json!({"key": "target.controller", "reason": format!("the controller of machine `{machine}` is not known")}),
        ),
    }
    if let Some(id) = com_port_id {
        let port = config.com_ports.get(&id);
        consider(
            &mut proposal,
            &format!("com_ports.{id}.device"),
            port.and_then(|p| p.device.clone()).map(Value::from),
            json!(uart),
        );
        // A pty has no serial number: the port is named by its stable link, which only this board
        // creates, so the device itself is the identity (version 3 wants one said).
        let identity_set = port.is_some_and(|p| {
            p.serial_number.is_some()
                || p.resource_id.is_some()
                || p.declared_identity_source.is_some()
        });
        if !identity_set {
            consider(
                &mut proposal,
                &format!("com_ports.{id}.identity_source"),
                None,
                json!("device"),
            );
        }
    }
    Ok(proposal)
}

/// Which COM entry the board's serial port is: the one named, one that already says it is this port,
/// the only one configured, or a new `<debugger>_uart`; `None` (with the reason noted) when several
/// could be.
fn choose_port(
    config: &Config,
    target: &Target,
    debugger_id: &str,
    unavailable: &mut Vec<Value>,
    is_this: impl Fn(&ahil_config::ComPort) -> bool,
) -> Option<String> {
    let named = target.com_port_id.clone();
    let recognised = || {
        config
            .com_ports
            .iter()
            .find(|(_, port)| is_this(port))
            .map(|(name, _)| name.clone())
    };
    named.or_else(recognised).or_else(|| match config.com_ports.len() {
        0 => Some(format!("{debugger_id}_uart")),
        1 => config.com_ports.keys().next().cloned(),
        _ => {
            unavailable.push(json!({"key": "com_ports", "reason": "several ports are configured and none names the board's serial port; name one with com_port_id"}));
            None
        }
    })
}

/// The host serial port a probe's own USB device also offers (an ST-LINK's virtual COM port carries
/// the probe's serial number).
fn probe_serial_port(probe: &str) -> Option<ahil_drivers::serial::HostPort> {
    super::com_ports::host_ports()
        .ok()?
        .into_iter()
        .find(|port| {
            port.serial_number
                .as_deref()
                .is_some_and(|serial| serial.eq_ignore_ascii_case(probe))
        })
}

/// A probe backend's proposal: the probe's serial as `probe_id`, the autodetected toolchain as
/// `executable`, and the serial port the probe's USB device offers, when it offers one. An entry that
/// names another probe than the one attached is refused whole.
fn propose_probe(
    tool: &str,
    loaded: &LoadedConfig,
    debugger_id: &str,
    entry: &Debugger,
    target: &Target,
    found: &Discovered,
) -> Result<Proposal, Box<Outcome>> {
    let refuse = |error_type: ErrorType, summary: String| {
        Box::new(
            Outcome::refused(tool, error_type, summary)
                .with("backend", entry.kind.as_str())
                .with("candidate_probe_ids", json!(found.probes))
                .not_started(true),
        )
    };
    if let (Some(asked), Some(configured)) = (&target.probe_id, &entry.probe_id)
        && asked != configured
    {
        return Err(refuse(
            ErrorType::HardwareMismatch,
            format!(
                "debuggers.{debugger_id} names probe `{configured}`, not `{asked}`; adoption fills unset keys and never replaces a probe."
            ),
        ));
    }
    let wanted = target.probe_id.as_deref().or(entry.probe_id.as_deref());
    // pyOCD selects a probe by any unambiguous part of its UID; the others name it whole.
    let attached = |id: &str| -> Option<String> {
        if entry.kind == DebuggerType::Pyocd {
            ahil_drivers::pyocd::select_uid(id, &found.probes).ok()
        } else {
            found
                .probes
                .iter()
                .find(|p| p.eq_ignore_ascii_case(id))
                .cloned()
        }
    };
    let probe = match (wanted, found.probes.as_slice()) {
        (Some(id), _) if let Some(uid) = attached(id) => uid,
        (Some(id), _) => {
            let whose = if target.probe_id.is_some() {
                "The probe named"
            } else {
                "The configured probe"
            };
            return Err(refuse(
                ErrorType::HardwareMismatch,
                format!("{whose} (`{id}`) is not among the attached probes."),
            ));
        }
        (None, []) => {
            return Err(refuse(
                ErrorType::AdapterNotFound,
                format!("No {} probe is attached.", entry.kind.as_str()),
            ));
        }
        (None, [only]) if found.complete => only.clone(),
        (None, _) => {
            let why = if found.complete {
                "Several probes are attached"
            } else {
                "This backend's list holds every USB serial device, not only probes"
            };
            return Err(refuse(
                ErrorType::InvalidArgument,
                format!(
                    "{why}; name the board's probe with probe_id (one of candidate_probe_ids)."
                ),
            ));
        }
    };
    let config = &loaded.config;
    let mut unavailable = vec![
        json!({"key": "target.controller", "reason": "a probe listing does not name the controller"}),
    ];
    let serial_port = probe_serial_port(&probe);
    let com_port_id = if let Some(host) = &serial_port {
        choose_port(config, target, debugger_id, &mut unavailable, |p| {
            p.serial_number
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(&probe))
                || p.device.as_deref() == Some(host.device.as_str())
                || p.device.as_deref() == host.stable_device.as_deref()
        })
    } else {
        unavailable.push(json!({"key": "com_ports", "reason": "no serial port on this host carries the probe's serial number; set the board's port by hand"}));
        None
    };
    let mut proposal = Proposal {
        debugger_id: debugger_id.to_owned(),
        creates_com_port: com_port_id
            .as_ref()
            .is_some_and(|id| !config.com_ports.contains_key(id)),
        com_port_id: com_port_id.clone(),
        carried: Vec::new(),
        already_current: Vec::new(),
        kept: Vec::new(),
        unavailable,
    };
    consider(
        &mut proposal,
        &format!("debuggers.{debugger_id}.probe_id"),
        entry.probe_id.clone().map(Value::from),
        json!(probe),
    );
    // probe-rs is linked in: its entry names no executable.
    if let Some(path) = loaded
        .executables
        .debugger(debugger_id)
        .filter(|_| entry.kind != DebuggerType::ProbeRs)
    {
        consider(
            &mut proposal,
            &format!("debuggers.{debugger_id}.executable"),
            entry.executable.clone().map(Value::from),
            json!(path.display().to_string()),
        );
    }
    if let (Some(id), Some(host)) = (com_port_id, serial_port) {
        let port = config.com_ports.get(&id);
        consider(
            &mut proposal,
            &format!("com_ports.{id}.device"),
            port.and_then(|p| p.device.clone()).map(Value::from),
            json!(host.stable_device.clone().unwrap_or(host.device.clone())),
        );
        consider(
            &mut proposal,
            &format!("com_ports.{id}.serial_number"),
            port.and_then(|p| p.serial_number.clone()).map(Value::from),
            json!(host.serial_number),
        );
    }
    Ok(proposal)
}

/// Sorts one key into carried (unset), already_current (same) or kept (another value stays).
fn consider(proposal: &mut Proposal, key: &str, current: Option<Value>, discovered: Value) {
    match current {
        None => proposal.carried.push(Change {
            key: key.to_owned(),
            value: discovered,
        }),
        Some(value) if value == discovered => {
            proposal
                .already_current
                .push(json!({"key": key, "value": value}));
        }
        Some(value) => proposal
            .kept
            .push(json!({"key": key, "current_value": value, "discovered_value": discovered})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_starter_entry_is_an_incomplete_inventory_only_while_no_probe_is_in_sight() {
        let starter = Debugger::default();
        assert!(starter.is_placeholder_starter());
        let refused = |entry: &Debugger, in_sight| {
            no_executable_seeing("project_config_adopt_hardware", "dut", entry, in_sight).to_value()
        };
        assert_eq!(
            refused(&starter, false)["error_type"],
            "probe_inventory_incomplete"
        );
        assert_eq!(refused(&starter, true)["error_type"], "debugger_not_found");
        let named = Debugger {
            probe_id: Some("0483:3748:ABC".into()),
            ..Debugger::default()
        };
        for in_sight in [false, true] {
            assert_eq!(
                refused(&named, in_sight)["error_type"],
                "debugger_not_found"
            );
        }
    }

    #[test]
    fn an_agents_adoption_carries_no_program_and_the_operators_does() {
        let carried = || {
            ["debuggers.dut.probe_id", "debuggers.dut.executable"]
                .map(|key| Change {
                    key: key.to_owned(),
                    value: json!("x"),
                })
                .to_vec()
        };
        let (programs, rest) = split_programs(carried(), 3, true);
        assert_eq!(programs[0].key, "debuggers.dut.executable");
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].key, "debuggers.dut.probe_id");
        let (programs, rest) = split_programs(carried(), 3, false);
        assert!(programs.is_empty());
        assert_eq!(rest.len(), 2);
    }
}
