//! `agentic-hil check-plan`: load plans exactly as a test run would, before any hardware is involved.

use std::path::{Path, PathBuf};

use ahil_config::plan::{DEFAULT_PLAN_PATH, load_plan};
use serde_json::{Map, Value, json};

pub fn check(workspace: &Path, plans: &[PathBuf]) -> Value {
    let default = [PathBuf::from(DEFAULT_PLAN_PATH)];
    let plans = if plans.is_empty() {
        &default[..]
    } else {
        plans
    };
    let results: Vec<Value> = plans.iter().map(|p| check_one(workspace, p)).collect();
    let refused = results.iter().filter(|r| r["ok"] == false).count();
    let summary = if refused == 0 {
        format!("{} plan(s) load.", results.len())
    } else {
        format!("{refused} of {} plan(s) are refused.", results.len())
    };
    let mut doc =
        json!({"ok": refused == 0, "tool": "check_plan", "summary": summary, "plans": results});
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
    }
    doc
}

fn check_one(workspace: &Path, plan: &Path) -> Value {
    match load_plan(workspace, plan) {
        Ok(loaded) => json!({
            "ok": true,
            "path": loaded.display_path,
            "name": loaded.name,
            "version": loaded.plan.version,
            "steps": loaded.plan.steps.len(),
            "test_config_sha256": loaded.sha256,
        }),
        Err(err) => {
            let mut out = Map::new();
            out.insert("ok".into(), Value::Bool(false));
            out.insert("path".into(), plan.display().to_string().into());
            out.insert("error_type".into(), err.error_type().into());
            out.insert("summary".into(), err.summary().into());
            for (key, value) in err.details() {
                out.entry(key).or_insert(value);
            }
            out.insert("remediation".into(), json!(err.remediation()));
            Value::Object(out)
        }
    }
}
