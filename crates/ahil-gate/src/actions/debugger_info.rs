//! `debugger_info`: is the bound debugger's toolchain there and does it run? `--version` only.

use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::Path;
use std::time::Duration;

use ahil_config::{Debugger, DebuggerType, Interface, LoadedConfig};
use ahil_drivers::{Backend, Contact, DriverError, debugger_version};
use serde_json::{Value, json};

use super::{Acted, Context, DriverJob, Plan, Work};
use crate::envelope::Outcome;
use crate::policy::{Action, Device, DeviceUse};
use crate::snapshot::{display_path, pinned_debugger_executable};

/// The gate's own margin over the driver's 10 s cap, so the driver's timeout answers first.
const GATE_DEADLINE: Duration = Duration::from_secs(15);

pub fn backend_of(kind: DebuggerType) -> Option<Backend> {
    match kind {
        DebuggerType::Openocd => Some(Backend::OpenOcd),
        DebuggerType::Pyocd => Some(Backend::PyOcd),
        DebuggerType::Stlink => Some(Backend::StLink),
        DebuggerType::Qemu => Some(Backend::Qemu),
        DebuggerType::Esptool | DebuggerType::ProbeRs => None,
    }
}

fn not_found_type(kind: DebuggerType) -> &'static str {
    match kind {
        DebuggerType::Openocd => "openocd_not_found",
        DebuggerType::Pyocd => "pyocd_not_found",
        DebuggerType::Stlink => "stm32_programmer_cli_not_found",
        DebuggerType::Esptool => "esptool_not_found",
        DebuggerType::Qemu => "qemu_not_found",
        DebuggerType::ProbeRs => "probe_rs_not_built",
    }
}

/// The debugger as the device a call touches.
pub fn device<'a>(name: &'a str, debugger: &Debugger) -> Device<'a> {
    Device::Debugger {
        name,
        grants: debugger.permissions,
    }
}

/// A call addressed to the debugger `name`, touching `also` beside it.
pub fn addressed<'a>(
    (name, debugger): (&'a str, &Debugger),
    action: Action<'a>,
    also: Vec<DeviceUse<'a>>,
    resources: Vec<String>,
    work: Work<'a>,
) -> Plan<'a> {
    Plan {
        action,
        device: Some(device(name, debugger)),
        also,
        resources,
        work,
    }
}

/// The MCP surface drives exactly one probe; with none or several configured, none is bound.
pub fn bound_debugger<'a>(ctx: &Context<'a>) -> Result<(&'a str, &'a Debugger), Box<Outcome>> {
    let config = &ctx.loaded.config;
    if let Some(bound) = config.auto_bound_debugger() {
        return Ok(bound);
    }
    let debuggers = &config.debuggers;
    let names: Vec<Value> = debuggers.keys().map(|k| json!(k)).collect();
    let summary = if debuggers.is_empty() {
        "No debugger is configured, so no debugger tool has a probe to use.".to_owned()
    } else {
        format!(
            "{} debuggers are configured and this surface drives exactly one, so none is bound.",
            debuggers.len()
        )
    };
    Err(Box::new(
        Outcome::refused(ctx.tool, ErrorType::NotSupported, summary)
            .with("configured_debuggers", Value::Array(names))
            .with_remediation([
                "The MCP tools drive exactly one probe: the operator keeps one `debuggers` entry for this workspace.",
                "With none, the operator adds a `debuggers` entry (agentic-hil init --force writes the starter one).",
            ])
            .with_do_not(["Do not delete debugger entries to leave one; that is the operator's decision."])
            .not_started(false),
    ))
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::DebuggerInfo])?;
    let (name, debugger) = bound_debugger(ctx)?;
    let device = Some(device(name, debugger));
    let loaded = ctx.loaded;
    let executable = pinned_debugger_executable(loaded, name);
    let resources = vec![debugger.lock_key(executable.as_deref().and_then(|p| p.to_str()))];
    let work = match (backend_of(debugger.kind), executable) {
        (None, Some(path)) if debugger.kind == DebuggerType::Esptool => {
            let shown = shown(loaded, &path);
            let timeout = Duration::try_from_secs_f64(debugger.timeout_s)
                .unwrap_or(GATE_DEADLINE)
                .min(GATE_DEADLINE);
            super::probe_cli::esptool_info(path, shown, timeout)
        }
        (None, None) if debugger.kind == DebuggerType::Esptool => {
            let outcome = not_found(name, debugger);
            Work::Local(Box::new(move || {
                Acted::new(
                    outcome,
                    Contact::none("no executable is pinned, so nothing ran"),
                )
            }))
        }
        (None, _) if debugger.kind == DebuggerType::ProbeRs => {
            Work::Local(Box::new(super::probe_rs::info))
        }
        (None, _) => Work::Local(Box::new(move || Acted {
            outcome: Outcome::refused(
                "debugger_info",
                ErrorType::NotSupported,
                "This build has no esptool backend, so an esptool entry cannot be checked.",
            )
            .with("backend", debugger.kind.as_str())
            .not_contacted(),
            contact: Some(Contact::none("no backend exists to run")),
        })),
        (Some(backend), None) => {
            let outcome = not_found(name, debugger);
            Work::Local(Box::new(move || {
                let _ = backend;
                Acted::new(
                    outcome,
                    Contact::none("no executable is pinned, so nothing ran"),
                )
            }))
        }
        (Some(backend), Some(path)) => {
            let shown = shown(loaded, &path);
            let facts = Facts::of(debugger, shown);
            let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(GATE_DEADLINE);
            Work::Driver(DriverJob {
                deadline: GATE_DEADLINE,
                if_abandoned: Contact::none("only `--version` was started"),
                run: Box::new(move |cancel| {
                    let result = debugger_version(backend, &path, timeout, Some(cancel));
                    answer(backend, &facts, result)
                }),
            })
        }
    };
    Ok(Plan {
        action: Action::DebuggerVersion,
        device,
        also: Vec::new(),
        resources,
        work,
    })
}

/// The executable's path as a result shows it (never absolute under the workspace, the
/// configuration's directory or the state root).
fn shown(loaded: &LoadedConfig, path: &Path) -> String {
    display_path(
        path,
        &loaded.workspace,
        loaded.path.parent(),
        &loaded.config.state_root,
    )
}

/// The entry's fields the answer repeats, owned so the blocking job can carry them.
struct Facts {
    executable: String,
    probe_id: Option<String>,
    target_type: Option<String>,
    interface: &'static str,
}

impl Facts {
    fn of(debugger: &Debugger, executable: String) -> Self {
        Self {
            executable,
            probe_id: debugger.probe_id.clone(),
            target_type: debugger.target_type.clone(),
            interface: match debugger.interface {
                Interface::Swd => "SWD",
                Interface::Jtag => "JTAG",
            },
        }
    }
}

fn not_found(name: &str, debugger: &Debugger) -> Outcome {
    let key = format!("debuggers.{name}.executable");
    let summary = if debugger.is_placeholder_starter() {
        format!("`{key}` names no toolchain yet, so there is nothing to run.")
    } else {
        format!(
            "The {} toolchain for `{key}` was not found.",
            debugger.kind.as_str()
        )
    };
    Outcome::refused("debugger_info", ErrorType::DebuggerNotFound, summary)
        .with("backend", debugger.kind.as_str())
        .with("backend_error_type", not_found_type(debugger.kind))
        .with_causes([
            format!("{key} is not set"),
            "the toolchain is not installed".to_owned(),
            "the toolchain is installed outside the system's program directories".to_owned(),
        ])
        .with_remediation([
            format!("The operator sets `{key}` to the absolute path of the toolchain (outside the workspace)."),
            "Then run `agentic-hil doctor` to confirm it runs.".to_owned(),
        ])
        .with_do_not(["Do not copy a toolchain into the workspace and point the configuration at it."])
        .not_contacted()
}

fn answer(
    backend: Backend,
    facts: &Facts,
    result: Result<ahil_drivers::VersionReport, DriverError>,
) -> Acted {
    match result {
        Ok(report) => {
            let mut outcome = Outcome::ok(
                "debugger_info",
                format!("{} is available.", backend.product()),
            )
            .with("backend", backend.config_name())
            .with("executable", facts.executable.as_str())
            .with(
                "probe_id",
                facts.probe_id.clone().map_or(Value::Null, Value::String),
            );
            match backend {
                Backend::PyOcd => {
                    outcome.set(
                        "target_type",
                        facts.target_type.clone().map_or(Value::Null, Value::String),
                    );
                }
                Backend::StLink => outcome.set("interface", facts.interface),
                Backend::OpenOcd | Backend::Qemu | Backend::Esptool | Backend::ProbeRs => {}
            }
            outcome.set("version", report.version);
            Acted::new(outcome, report.contact)
        }
        Err(error) => {
            let contact = error.contact();
            let summary = match &error {
                DriverError::Timeout { limit, .. } => {
                    format!(
                        "The debugger's `--version` did not finish within {} s.",
                        limit.as_secs()
                    )
                }
                DriverError::DebuggerNotFound { detail, .. } => {
                    format!("The debugger executable could not be started: {detail}.")
                }
                DriverError::Backend { detail, .. } => {
                    format!("The debugger's version check failed: {detail}.")
                }
                DriverError::Io(e) => format!("The host refused the version check: {e}."),
                DriverError::Classified(c) => c.summary.clone(),
            };
            let mut outcome = Outcome::refused(
                "debugger_info",
                ErrorType::layer(error.error_type()),
                summary,
            )
            .with("backend", backend.config_name())
            .with("executable", facts.executable.as_str());
            if let DriverError::Backend { output, .. } = &error {
                outcome.set("backend_error_type", "unknown_debugger_error");
                outcome.set("backend_error", tail(output));
            }
            if let DriverError::Classified(classified) = &error {
                for (key, value) in &classified.details {
                    outcome.set(key, value.clone());
                }
            }
            outcome = outcome.with_remediation([
                "Run `agentic-hil doctor`: it repeats this check and shows what the toolchain printed.",
            ]);
            Acted::new(outcome, contact)
        }
    }
}

/// The last few lines of what the backend printed: the backend's own words for what went wrong.
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}
