//! `agentic-hil check-plan`: load plans exactly as a test run would, before any hardware is involved,
//! and say which devices a plan names that this workspace's configuration does not declare (a
//! failure with `--strict`).

use std::path::{Path, PathBuf};

use ahil_config::plan::{DEFAULT_PLAN_PATH, Step, load_plan};
use ahil_config::{Config, Environment};
use serde_json::{Value, json};

pub fn check(workspace: &Path, env: &Environment, plans: &[PathBuf], strict: bool) -> Value {
    let default = [PathBuf::from(DEFAULT_PLAN_PATH)];
    let plans = if plans.is_empty() {
        &default[..]
    } else {
        plans
    };
    let config = crate::logs::load_config(workspace, env);
    let declared = config.as_ref().ok().map(|loaded| &loaded.config);
    let results: Vec<Value> = plans
        .iter()
        .map(|p| check_one(workspace, p, declared))
        .collect();
    let refused = results.iter().filter(|r| r["ok"] == false).count();
    let naming: Vec<String> = results
        .iter()
        .filter_map(|r| r["unconfigured_devices"].as_array())
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let with_findings = results
        .iter()
        .filter(|r| r["unconfigured_devices"].is_array())
        .count();
    let ok = refused == 0 && !(strict && with_findings > 0);
    let summary = summary(results.len(), refused, with_findings, &naming, strict);
    let configuration = match &config {
        Ok(loaded) => json!({
            "ok": true,
            "summary": "This workspace's configuration was read, so each plan's device names were compared against what it declares.",
            "debuggers": loaded.config.debuggers.keys().collect::<Vec<_>>(),
            "com_ports": loaded.config.com_ports.keys().collect::<Vec<_>>(),
            "can_buses": loaded.config.can_buses.keys().collect::<Vec<_>>(),
        }),
        Err(error) => json!({
            "ok": false,
            "error_type": error.error_type(),
            "summary": format!(
                "{} No device names were compared against a configuration; the plans were checked for loadability only.",
                error.summary()
            ),
        }),
    };
    let mut doc = json!({
        "ok": ok, "tool": "check_plan", "summary": summary, "strict": strict,
        "configuration": configuration, "plans": results,
    });
    if refused > 0 {
        // The first refusal leads, so a person reads the fault before the list.
        let first = doc["plans"]
            .as_array()
            .and_then(|all| all.iter().find(|r| r["ok"] == false))
            .cloned()
            .unwrap_or(Value::Null);
        doc["error_type"] = first["error_type"].clone();
        doc["field"] = first["field"].clone();
        doc["remediation"] = first["remediation"].clone();
    } else if !ok {
        doc["error_type"] = "unknown_device".into();
        doc["remediation"] = json!([
            "Declare the device in the operator's configuration, or check the plan against the bench it was written for."
        ]);
    }
    doc
}

fn summary(
    plans: usize,
    refused: usize,
    with_findings: usize,
    naming: &[String],
    strict: bool,
) -> String {
    if refused > 0 {
        return format!("{refused} of {plans} plan(s) are refused.");
    }
    if with_findings == 0 {
        return format!("{plans} plan(s) load.");
    }
    let mut names = naming.to_vec();
    names.sort();
    names.dedup();
    let names = names.join(", ");
    if strict {
        format!(
            "{with_findings} of {plans} plan(s) name device(s) this workspace's configuration does not declare ({names}); --strict makes that a failure."
        )
    } else {
        format!(
            "{plans} plan(s) load; {with_findings} of them name device(s) this workspace's configuration does not declare ({names}), which --strict makes a failure."
        )
    }
}

fn check_one(workspace: &Path, plan: &Path, declared: Option<&Config>) -> Value {
    let mut doc = check_loaded(workspace, plan, declared);
    // `plan` is the argument as the operator wrote it, the key the reference reports it under;
    // `path` is where it resolved inside the workspace.
    doc["plan"] = plan.display().to_string().into();
    doc
}

fn check_loaded(workspace: &Path, plan: &Path, declared: Option<&Config>) -> Value {
    match load_plan(workspace, plan) {
        Ok(loaded) => {
            let mut doc = json!({
                "ok": true,
                "path": loaded.display_path,
                "name": loaded.name,
                "version": loaded.plan.version,
                "steps": loaded.plan.steps.len(),
                "test_config_sha256": loaded.sha256,
            });
            if let Some(config) = declared {
                let missing = unconfigured(&loaded.plan.steps, config);
                if !missing.is_empty() {
                    doc["summary"] = format!(
                        "Loads, and names {} device(s) this workspace's configuration does not declare: {}.",
                        missing.len(),
                        missing.join(", ")
                    )
                    .into();
                    doc["unconfigured_devices"] = json!(missing);
                }
            }
            doc
        }
        Err(err) => err.document(("path", plan.display().to_string().into())),
    }
}

/// The device names `steps` (and the steps of every `repeat` in them) use that `config` declares
/// neither as a debugger, a COM port nor a CAN bus, in the order they first appear.
fn unconfigured(steps: &[Step], config: &Config) -> Vec<String> {
    let mut missing = Vec::new();
    let mut pending: Vec<&Step> = steps.iter().rev().collect();
    while let Some(step) = pending.pop() {
        if let Step::Repeat { steps, .. } = step {
            pending.extend(steps.iter().rev());
            continue;
        }
        let Some(route) = step.route() else { continue };
        let name = &route.name;
        let declared = config.debuggers.contains_key(name)
            || config.com_ports.contains_key(name)
            || config.can_buses.contains_key(name);
        if !declared && !missing.contains(name) {
            missing.push(name.clone());
        }
    }
    missing
}
