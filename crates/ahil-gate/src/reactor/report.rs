//! The run's result document: one report per run, written through the audit trail (trusted copy,
//! workspace views, and its own `reports/runs/<handle>.json` that later runs never overwrite), plus
//! the optional JUnit XML and the recovery block of a failed run.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::View;
use super::junit;
use super::steps::Exec;
use crate::ErrorType;
use crate::envelope::Outcome;
use crate::fsio::WriteError;

/// The recovery a failed run gets (a stopped run gets none), while the run still holds its
/// devices and after its sessions were closed: as the recovery policy allows, a reset into halt and a
/// probe of the bound debugger, each through the gate like any step.
pub async fn recover_after_failed_run(
    exec: &Exec<'_>,
    view: &View<'_>,
    declared: &Value,
    failed_error_type: Option<&str>,
) -> Value {
    let loaded = view.loaded();
    let config = &loaded.config;
    let policy = crate::incidents::policy_name(loaded);
    let source = if loaded.auto_recover_explicit {
        "config"
    } else {
        "default"
    };
    let bound = config.auto_bound_debugger();
    // `declared_devices` names lock keys; the run held the debugger if one of its keys is there.
    let debugger_declared = bound.is_some_and(|(name, debugger)| {
        let executable = crate::snapshot::pinned_debugger_executable(loaded, name);
        let keys = crate::ownership::runs::debugger_keys(debugger, executable.as_deref());
        declared.as_array().is_some_and(|d| {
            d.iter()
                .any(|k| k.as_str().is_some_and(|k| keys.iter().any(|key| key == k)))
        })
    });
    let mut block = json!({
        "attempted": false,
        "actions": [],
        "devices": bound.map(|(name, _)| vec![name]).unwrap_or_default(),
        "auto_recover_policy": policy,
        "auto_recover_policy_source": source,
        "failed_error_type": failed_error_type,
        "incident_resolved": false,
        "incident_open": false,
    });
    let skip = |mut block: Value, why: &str| {
        block["outcome"] = "skipped".into();
        block["reason_not_attempted"] = why.into();
        block["summary"] = "No recovery was attempted after the failed step; its result says what state the board was left in.".into();
        block
    };
    let failed = |mut block: Value, action: &str, why: &str| {
        block["outcome"] = "failed".into();
        block["failed_action"] = action.into();
        block["summary"] = format!("Recovery failed at {action} ({why}).").into();
        block
    };
    let Some((_, debugger)) = bound.filter(|_| debugger_declared) else {
        return skip(block, "no_debugger_in_run");
    };
    if config.recovery.auto_recover == ahil_config::AutoRecover::Off {
        return skip(block, "auto_recover_policy_off");
    }
    if config.reads_need_permission() && !debugger.permissions.allow_probe {
        return skip(block, "probe_not_permitted");
    }
    let reset = config.recovery.auto_recover == ahil_config::AutoRecover::ResetHalt
        && debugger.permissions.allow_reset;
    let mut actions = vec!["reap_processes"];
    block["attempted"] = true.into();
    if !reset && config.recovery.auto_recover == ahil_config::AutoRecover::ResetHalt {
        block["reset_skipped"] = "allow_reset_missing".into();
    }
    if reset {
        actions.push("reset_halt");
        let done = exec.call("reset_target", json!({"mode": "halt"})).await;
        if !done.ok {
            block["actions"] = json!(actions);
            let why = done.error_type.as_deref().unwrap_or("unknown");
            return failed(block, "reset_halt", why);
        }
    }
    actions.push("probe_target");
    let probe = exec.call("probe_target", json!({})).await;
    block["actions"] = json!(actions);
    if !(probe.ok && probe.detail("target_detected") == Some(&Value::Bool(true))) {
        let why = probe.error_type.as_deref().unwrap_or("target not detected");
        return failed(block, "probe_target", why);
    }
    block["outcome"] = "recovered".into();
    block["safe_state_predicate"] = (if reset {
        "reset_halt"
    } else {
        "readonly_probe"
    })
    .into();
    block["summary"] = "After the failed step the server proved the board answers (the steps in actions succeeded).".into();
    block
}

/// Writes the report through the audit trail and fills `report_path` / `canonical_report_path`,
/// or marks the outcome `audit_ok: false`.
pub fn write(view: &View<'_>, outcome: &mut Outcome, handle: &str) {
    let Value::Object(mut report) = outcome.to_value() else {
        return;
    };
    report.insert("run_handle".into(), handle.into());
    let in_force = outcome.config_in_force.clone().unwrap_or(Value::Null);
    match view.audit.write_report(&mut report, &in_force) {
        Ok(written) => {
            outcome.report_path = Some(written.report_path);
            outcome.audit_ok = Some(true);
            if let Some(path) = report.get("canonical_report_path") {
                outcome.set("canonical_report_path", path.clone());
                outcome.summary.push_str(
                    " This run's own report is kept separately; later runs do not overwrite it.",
                );
            }
        }
        Err(err) => {
            outcome.audit_ok = Some(false);
            outcome.report_path = None;
            outcome.set("audit_error", err.to_value());
        }
    }
}

/// The canonical per-run report's display path (`<state_root>/…`), known before it exists.
pub fn canonical_path(view: &View<'_>, handle: &str) -> String {
    let path = view
        .audit
        .project_dir()
        .join("reports")
        .join("runs")
        .join(format!("{}.json", crate::audit::safe_filename(handle)));
    let shown = path
        .strip_prefix(view.audit.state_root())
        .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
    format!("<state_root>/{shown}")
}

/// Writes the JUnit XML to `target` (workspace-relative or absolute inside the workspace).
pub fn write_junit(view: &View<'_>, outcome: &mut Outcome, target: &Path, planned: &[&str]) {
    let workspace = &view.loaded().workspace;
    let path = ahil_config::absolute_lexical(target, workspace);
    let shown = path
        .strip_prefix(workspace)
        .map(|p| p.display().to_string());
    let Ok(shown) = shown else {
        outcome.set(
            "junit_xml_error",
            json!({"error_type": "output_validation_failed", "summary": "The JUnit path must be inside the workspace."}),
        );
        return;
    };
    // CI publishes the XML: step summaries pass the same output step as the reports.
    let scrubbed = view.audit.sink().scrub(&outcome.to_value());
    let doc = junit::document(scrubbed.as_value(), planned);
    // The workspace is the agent's: a folder on the way may be a link it planted (or swaps in
    // while the run goes on), so the file is written beneath the workspace without following one.
    let relative = Path::new(&shown);
    match crate::fsio::write_beneath(workspace, relative, doc.as_bytes(), || {}) {
        Ok(()) => outcome.set("junit_xml", shown),
        Err(WriteError::Link(at)) => outcome.set(
            "junit_xml_error",
            json!({"error_type": "output_validation_failed", "summary": format!("The JUnit XML was not written: `{at}` in the workspace is a symbolic link.")}),
        ),
        Err(WriteError::Io(err)) => {
            let error_type = ErrorType::JunitXmlWriteFailed;
            outcome.set(
                "junit_xml_error",
                json!({"error_type": error_type.as_str(), "summary": "The JUnit XML could not be written where --junit-xml said.", "backend_error": err.to_string()}),
            );
            // The CI job reads the file, not the run: a run that passed without it has not passed
            // for that job. A run that failed keeps its own error_type.
            if outcome.ok {
                outcome.ok = false;
                outcome.set_error(error_type);
                outcome
                    .summary
                    .push_str(" The JUnit XML could not be written; `junit_xml_error` says why.");
            }
        }
    }
}

/// The record's verdict fields from the final outcome.
pub fn verdict(outcome: &Outcome) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert(
        "run_ok".into(),
        crate::envelope::overall_success(outcome).into(),
    );
    doc.insert("error_type".into(), json!(outcome.error_type));
    // Written out as null when absent, so a reader sees the verdict's full shape.
    for key in ["failed_step", "stopped_after_step"] {
        doc.insert(
            key.into(),
            outcome.detail(key).cloned().unwrap_or(Value::Null),
        );
    }
    if let Some(value) = outcome.detail("canonical_report_path") {
        doc.insert("canonical_report_path".into(), value.clone());
    }
    doc
}
