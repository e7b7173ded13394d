//! `agentic-hil doctor`: load the configuration fresh and say whether this bench can work, without
//! touching hardware (the only programs run are the pinned toolchains' `--version`).
//!
//! Bench binding follows the reference's verdicts: a debugger entry is unbound when it pins no
//! executable (the untouched starter entry is never autodetected; any other entry whose toolchain
//! was not found drives nothing), and a COM port is unbound while its `device` is null. A placeholder
//! `target.controller` is reported but refuses nothing.

use std::fs::{self, OpenOptions};
use std::path::Path;
use std::time::Duration;

use ahil_config::{Config, ConfigError, ExecutableState, LoadedConfig};
use ahil_drivers::debugger_version;
use serde_json::{Map, Value, json};

use crate::actions::debugger_info::backend_of;
use crate::config_edit::layer_refusal;
use crate::envelope::Outcome;

const TOOL: &str = "agentic_hil_doctor";

/// Why the doctor's digest is not a running server's (the reference's words, shortened).
const RUNNING_SERVER_COMPARISON: &str = "This is the configuration as it is on disk right now; the command line reads it fresh on every invocation. A running MCP server does not: it keeps serving what it parsed at startup. Compare the `loaded_digest` here with `config_status.loaded_digest` in that server's `debugger_info`; if they differ, `project_config_reload_description` on that server adopts a changed `target`, `debuggers`, `com_ports` or `can_buses`, and a restart adopts everything else, every `permissions:` block included. `agentic-hil config-reload` previews what that call would take.";

/// One checked aspect of the bench.
struct Finding {
    name: &'static str,
    ok: bool,
    summary: String,
    details: Map<String, Value>,
}

impl Finding {
    fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".into(), json!(self.name));
        object.insert("ok".into(), json!(self.ok));
        object.insert("summary".into(), json!(self.summary));
        object.extend(self.details.clone());
        Value::Object(object)
    }
}

/// Check the workspace's bench. `ok` is false whenever the bench cannot work (UNBOUND included).
/// The CLI loads the configuration itself and runs [`check`] through the pipeline; this is the
/// same verdict for the unit tests.
#[cfg(test)]
pub(crate) fn doctor(workspace: &Path, env: &ahil_config::Environment) -> Outcome {
    match ahil_config::load_authoritative(workspace, env) {
        Ok(loaded) => check(&loaded),
        Err(error) => config_error(&error),
    }
}

/// The doctor's checks of a loaded bench: what the operator-only tool `agentic_hil_doctor` runs
/// through the pipeline.
pub(crate) fn check(loaded: &LoadedConfig) -> Outcome {
    let (debuggers_finding, targets_finding, mut debuggers) = check_debuggers(loaded);
    let binding_finding = check_binding(loaded);
    // The binding verdict also stands alone at the top, where the reference's doctor puts it.
    let binding = binding_finding.to_value();
    let state_root_finding = check_state_root(&loaded.config.state_root);
    // So does the state root's: an operator's script reads `state_root.ok`. Its path is named
    // `<state_root>`, never the machine's (the reference prints it absolute).
    let mut state_root = state_root_finding.to_value();
    state_root["field"] = json!("state_root");
    state_root["path"] = json!("<state_root>");
    // The records and the report state live under the root: a walk over a root that refuses
    // writes would answer nothing while looking like an all-clear.
    let (report_state, standing, report_state_finding) =
        under_the_root(loaded, state_root_finding.ok);
    let config = &loaded.config;
    let grants = sections::permission_summary(config);
    let com_ports = sections::com_ports(config, &grants);
    let access_finding = denied_access(&com_ports);
    let findings: Vec<Finding> = [debuggers_finding]
        .into_iter()
        .chain(targets_finding)
        .chain([state_root_finding])
        .chain(report_state_finding)
        .chain([binding_finding])
        .chain(standing_finding(&standing))
        .chain(access_finding)
        .collect();
    let unhealthy: Vec<&str> = findings.iter().filter(|f| !f.ok).map(|f| f.name).collect();
    let ok = unhealthy.is_empty();
    let summary = if ok {
        format!(
            "Configuration loaded; {} debugger(s) checked; the bench is bound.",
            debuggers.len()
        )
    } else {
        findings
            .iter()
            .filter(|f| !f.ok)
            .map(|f| f.summary.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Like the reference, an unhealthy bench is `ok: false` without an error_type: nothing failed,
    // the findings say what is missing.
    let mut outcome = Outcome::ok(TOOL, summary);
    outcome.ok = ok;
    if let Some(next) = findings
        .iter()
        .find_map(|f| f.details.get("next_step").and_then(Value::as_str))
    {
        outcome.next_step = Some(next.to_owned());
    }
    outcome.config_status = serde_json::to_value(loaded.status()).ok();
    if let Some(Value::Object(status)) = &mut outcome.config_status {
        // A command line reads the file fresh: no description was reloaded into it.
        status
            .entry("description_reloaded_at")
            .or_insert(Value::Null);
        status.insert(
            "compare_with_running_server".into(),
            json!(RUNNING_SERVER_COMPARISON),
        );
    }
    for (name, entry) in &mut debuggers {
        entry["permissions"] = grants["debuggers"][name].clone();
        if let Some(scripts) = config
            .debuggers
            .get(name)
            .and_then(sections::openocd_scripts)
        {
            entry["scripts"] = scripts;
        }
    }
    let warnings = sections::warnings(config);
    if !warnings.is_empty() {
        outcome = outcome.with("warnings", json!(warnings));
    }
    if let Some(report_state) = report_state {
        outcome = outcome.with("report_state", report_state);
    }
    outcome
        .with("config_path", loaded.display_path.as_str())
        .with("findings", Value::Array(findings.iter().map(Finding::to_value).collect()))
        .with("unhealthy", json!(unhealthy))
        .with("bench_binding", binding)
        .with("state_root", state_root)
        .with(
            "target",
            json!({"name": loaded.config.target.name, "controller": loaded.config.target.controller}),
        )
        .with("debugger", sections::debugger_check(&debuggers))
        .with("debuggers", Value::Object(debuggers))
        .with("com_ports", com_ports)
        .with("can_buses", sections::can_buses(config, &grants))
        .with("standing_incidents", Value::Array(standing))
}

/// What lives under the state root, asked only where the root accepts writes (a walk over one
/// that does not would answer nothing while looking like an all-clear): the report state, the
/// incidents other projects left on this bench's devices, and the report state's finding when it
/// does not read.
fn under_the_root(
    loaded: &LoadedConfig,
    usable: bool,
) -> (Option<Value>, Vec<Value>, Option<Finding>) {
    if !usable {
        return (None, Vec::new(), None);
    }
    let report_state = sections::report_state(loaded);
    let finding = (report_state["ok"] != json!(true)).then(|| Finding {
        name: "report_state",
        ok: false,
        summary: report_state["summary"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        details: Map::new(),
    });
    (
        Some(report_state),
        sections::standing_incidents(loaded),
        finding,
    )
}

/// The finding for incidents that stand on this bench's devices: its next hardware call is
/// refused for them, though no other check looks at them.
fn standing_finding(standing: &[Value]) -> Option<Finding> {
    (!standing.is_empty()).then(|| Finding {
        name: "standing_incident",
        ok: false,
        summary: format!(
            "{} unresolved incident(s) of another project stand on a device this bench declares; its next hardware call is refused until that project recovers.",
            standing.len()
        ),
        details: Map::new(),
    })
}

/// The finding for a port node this account may not open, one sentence per port.
fn denied_access(com_ports: &Value) -> Option<Finding> {
    let denied: Vec<&str> = com_ports
        .as_object()
        .into_iter()
        .flat_map(|ports| ports.values())
        .filter(|port| port["device_access"]["ok"] == json!(false))
        .filter_map(|port| port["device_access"]["summary"].as_str())
        .collect();
    (!denied.is_empty()).then(|| Finding {
        name: "device_access",
        ok: false,
        summary: denied.join(" "),
        details: Map::new(),
    })
}

/// The doctor's answer when the configuration does not load: nothing is run.
pub fn config_error(error: &ConfigError) -> Outcome {
    // The details lead with the error's `field` when it names one.
    layer_refusal(TOOL, error.error_type(), error.summary(), error.details())
        .with_remediation(error.remediation())
}

/// Run each pinned toolchain's `--version`, and ask pyOCD whether it knows the configured target;
/// entries without a toolchain are the binding check's business.
/// The target finding is there only when pyOCD was asked about a configured target.
fn check_debuggers(loaded: &LoadedConfig) -> (Finding, Option<Finding>, Map<String, Value>) {
    let config = &loaded.config;
    let bound = config.auto_bound_debugger().map(|(name, _)| name);
    let mut entries = Map::new();
    let mut failed = Vec::new();
    let mut unknown_targets = Vec::new();
    let mut targets_unanswered = Vec::new();
    let mut targets_asked = 0usize;
    let mut checked = 0usize;
    for (name, debugger) in &config.debuggers {
        let mut entry = Map::new();
        entry.insert("type".into(), json!(debugger.kind.as_str()));
        entry.insert("probe_id".into(), json!(debugger.probe_id));
        entry.insert("bound".into(), json!(bound == Some(name.as_str())));
        let state = loaded.executables.debuggers.get(name);
        entry.insert("executable_state".into(), json!(state_name(state)));
        if let (Some(path), Some(backend)) =
            (loaded.executables.debugger(name), backend_of(debugger.kind))
        {
            let timeout =
                Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_secs(10));
            let check = match debugger_version(backend, path, timeout, None) {
                Ok(report) => json!({"ok": true, "version": report.version}),
                Err(error) => {
                    failed.push(name.clone());
                    json!({"ok": false, "error_type": error.error_type(), "summary": error.to_string()})
                }
            };
            entry.insert("check".into(), check);
            checked += 1;
            if debugger.kind == ahil_config::DebuggerType::Pyocd {
                let pyocd = ahil_drivers::pyocd::PyOcd::new(
                    ahil_drivers::probe_cli::CliSettings {
                        executable: path.to_path_buf(),
                        probe_id: None,
                        timeout,
                    },
                    debugger.target_type.as_deref(),
                );
                let support = pyocd.target_support(&ahil_drivers::probe::Budget::new(
                    timeout.max(Duration::from_secs(30)),
                ));
                if support.is_unsupported() {
                    unknown_targets.push(name.clone());
                }
                match support {
                    ahil_drivers::pyocd::TargetSupport::NotConfigured => {}
                    ahil_drivers::pyocd::TargetSupport::Undetermined { .. } => {
                        targets_asked += 1;
                        targets_unanswered.push(name.clone());
                    }
                    _ => targets_asked += 1,
                }
                entry.insert("target_support".into(), support.to_value());
            }
        } else if debugger.kind == ahil_config::DebuggerType::Esptool
            && let Some(path) = loaded.executables.debugger(name)
        {
            let timeout =
                Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_secs(10));
            let probe = ahil_drivers::esptool::Esptool::new(
                ahil_drivers::probe_cli::CliSettings {
                    executable: path.to_path_buf(),
                    probe_id: None,
                    timeout,
                },
                "",
                None,
            );
            let budget = ahil_drivers::probe::Budget::new(timeout);
            let check = match probe.installed_version(&budget) {
                Ok(version) => json!({"ok": true, "version": version}),
                Err(error) => {
                    failed.push(name.clone());
                    json!({"ok": false, "error_type": error.error_type(), "summary": error.to_string()})
                }
            };
            entry.insert("check".into(), check);
            checked += 1;
        }
        entries.insert(name.clone(), Value::Object(entry));
    }
    let finding = Finding {
        name: "debuggers",
        ok: failed.is_empty(),
        summary: if checked == 0 {
            "No debugger names a toolchain yet, so none was run.".to_owned()
        } else if failed.is_empty() {
            format!("{checked} debugger toolchain(s) answered `--version`.")
        } else {
            format!("The toolchain check failed for: {}.", failed.join(", "))
        },
        details: Map::new(),
    };
    let targets = if targets_asked == 0 {
        None
    } else if unknown_targets.is_empty() {
        Some(Finding {
            name: "target_support",
            ok: true,
            summary: if targets_unanswered.is_empty() {
                format!("pyOCD knows the {targets_asked} configured target_type(s).")
            } else {
                format!(
                    "pyOCD could not say whether it knows the target_type of: {} (not a failure).",
                    targets_unanswered.join(", ")
                )
            },
            details: Map::new(),
        })
    } else {
        let mut details = Map::new();
        details.insert(
            "next_step".into(),
            json!("Correct target_type, or install the part's pack with the install_commands under debuggers.<name>.target_support."),
        );
        Some(Finding {
            name: "target_support",
            ok: false,
            summary: format!(
                "pyOCD does not know the configured target_type of: {}.",
                unknown_targets.join(", ")
            ),
            details,
        })
    };
    (finding, targets, entries)
}

fn state_name(state: Option<&ExecutableState>) -> &'static str {
    match state {
        Some(ExecutableState::Pinned { .. }) => "pinned",
        Some(ExecutableState::Unbound { .. }) => "unbound",
        Some(ExecutableState::Disabled { .. }) | None => "disabled",
    }
}

/// Every hardware action is recorded under the state root, so it must accept a write.
fn check_state_root(state_root: &Path) -> Finding {
    let probe = state_root.join(format!(".agentic-hil-doctor-{}", std::process::id()));
    let result = fs::create_dir_all(state_root)
        .and_then(|()| OpenOptions::new().write(true).create_new(true).open(&probe))
        .and_then(|_| fs::remove_file(&probe));
    match result {
        Ok(()) => Finding {
            name: "state_root",
            ok: true,
            summary: "The state root accepts writes.".to_owned(),
            details: Map::new(),
        },
        Err(error) => Finding {
            name: "state_root",
            ok: false,
            summary: format!("The state root does not accept writes ({error})."),
            details: Map::new(),
        },
    }
}

fn check_binding(loaded: &LoadedConfig) -> Finding {
    let config = &loaded.config;
    let unbound_debuggers: Vec<&str> = config
        .debuggers
        .keys()
        .filter(|name| loaded.executables.debugger(name).is_none())
        .map(String::as_str)
        .collect();
    let unbound_ports: Vec<&str> = config
        .com_ports
        .iter()
        .filter(|(_, port)| port.device.is_none())
        .map(|(name, _)| name.as_str())
        .collect();
    let mut unbound = Vec::new();
    let mut reasons = Vec::new();
    for (field, entries, key, missing, consequence) in [
        (
            "debuggers",
            &unbound_debuggers,
            "executable",
            "names no executable",
            "declared debugger(s) name no toolchain, so nothing can flash, reset, probe or open a debug session on them",
        ),
        (
            "com_ports",
            &unbound_ports,
            "device",
            "names no device",
            "declared COM port(s) name no device, so every plan step and every COM tool call that opens one is refused `com_port_not_bound`",
        ),
    ] {
        if entries.is_empty() {
            continue;
        }
        let keys: Vec<String> = entries.iter().map(|n| format!("{field}.{n}")).collect();
        let unset: Vec<String> = keys.iter().map(|k| format!("{k}.{key}")).collect();
        unbound.push(json!({
            "field": field,
            "entries": entries,
            "summary": format!("{} {consequence}: {}", keys.len(), unset.join(", ")),
        }));
        reasons.push(format!("{} {missing}", keys.join(", ")));
    }
    let placeholders = placeholders(config);
    if !placeholders.is_empty() {
        reasons.push("target.controller is still a placeholder".to_owned());
    }
    let ok = unbound.is_empty();
    let mut details = Map::new();
    details.insert("field".into(), json!("bench_binding"));
    details.insert("unbound".into(), Value::Array(unbound));
    details.insert("placeholders".into(), Value::Array(placeholders));
    let summary = if ok && reasons.is_empty() {
        "Every declared device names its hardware.".to_owned()
    } else if ok {
        format!(
            "Bound; {} (nothing is refused for it).",
            reasons.join(" and ")
        )
    } else {
        // Starts with the key it names, lower case as written in the file.
        format!("{}.", reasons.join(" and "))
    };
    if !ok {
        // `adopt-hardware` fills these keys from the attached board once it exists; until then the
        // operator names them by hand.
        let step = unbound_debuggers.first().map_or_else(
            || "Name each port's device (or its /dev/serial/by-id path) in the configuration, then run: agentic-hil doctor".to_owned(),
            |name| {
                format!("Set debuggers.{name}.executable to the toolchain's absolute path (outside the workspace), attach the board, then run: agentic-hil doctor")
            },
        );
        details.insert("next_step".into(), json!(step));
        details.insert("verdict".into(), json!("unbound"));
    }
    Finding {
        name: "bench_binding",
        ok,
        summary,
        details,
    }
}

fn placeholders(config: &Config) -> Vec<Value> {
    if config.is_placeholder_controller() {
        vec![json!({
            "field": "target.controller",
            "value": config.target.controller,
            "summary": format!("`target.controller` is still the placeholder ({}), so this file does not say what part the bench is. Nothing is refused for it.", config.target.controller),
        })]
    } else {
        Vec::new()
    }
}

#[path = "doctor_sections.rs"]
mod sections;
pub(crate) use sections::permission_summary;

#[cfg(test)]
#[path = "doctor_tests.rs"]
mod tests;
