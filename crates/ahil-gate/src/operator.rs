//! The operator's commands for bench ownership: `lease-status` (what holds the bench, what stands)
//! and `recover --confirm-safe-state` (the person at the bench vouches for its state). They read
//! and write the same records as the MCP tools, as the `operator-cli` frontend, and each leaves a
//! report as a tool call does. They touch coordination records, never a device, so they claim no
//! device lock.

use std::path::Path;

use ahil_config::{ConfigError, Environment, LoadedConfig};
use serde_json::{Map, Value, json};

use crate::actions::lease;
use crate::audit::Audit;
use crate::envelope::Outcome;
use crate::ownership::Ownership;
use crate::ownership::coordination::{Coordinator, Incident, Recovery};
use crate::snapshot::Snapshot;

/// What `recover` was asked.
#[derive(Debug, Clone, Default)]
pub struct RecoverOptions {
    pub confirm_safe_state: bool,
    pub quarantine_id: Option<String>,
    pub accept_config_change: bool,
    pub retire_records: bool,
}

/// `agentic-hil lease-status`.
pub fn lease_status(workspace: &Path, env: &Environment) -> Value {
    let loaded = match ahil_config::load_authoritative(workspace, env) {
        Ok(loaded) => loaded,
        Err(err) => return config_refusal("hardware_lease_status", &err),
    };
    let coordinator = Coordinator::new(&loaded, "operator-cli");
    let ownership = Ownership::for_process(env, "operator-cli");
    let places = crate::ownership::places::Places::for_config(&loaded.config);
    let status = lease::status(&loaded, &coordinator, &ownership.locks, places.as_deref());
    recorded(&loaded, "hardware_lease_status", &json!({}), status)
}

/// `agentic-hil recover`.
pub fn recover(workspace: &Path, env: &Environment, options: &RecoverOptions) -> Value {
    if !options.confirm_safe_state {
        return json!({
            "ok": false,
            "tool": "hardware_recover",
            "error_type": "operator_confirmation_required",
            "summary": "Recovery releases a quarantined bench only on the operator's confirmation: pass --confirm-safe-state after checking the board.",
            "retry_safe": true,
        });
    }
    let loaded = match ahil_config::load_authoritative(workspace, env) {
        Ok(loaded) => loaded,
        Err(err) => return config_refusal("hardware_recover", &err),
    };
    let args = json!({
        "confirm_safe_state": options.confirm_safe_state,
        "quarantine_id": options.quarantine_id,
        "accept_config_change": options.accept_config_change,
        "retire_records": options.retire_records,
    });
    let answer = recover_confirmed(&loaded, options);
    recorded(&loaded, "hardware_recover", &args, answer)
}

fn recover_confirmed(loaded: &LoadedConfig, options: &RecoverOptions) -> Value {
    let coordinator = Coordinator::new(loaded, "operator-cli");
    if options.retire_records {
        let mut keys = lease::configured_keys(loaded);
        keys.push("debugger-discovery:all".into());
        return match coordinator.retire_records(&keys) {
            Ok(retired) => json!({
                "ok": true,
                "tool": "hardware_recover",
                "records_retired": retired,
                "summary": format!("{} unreadable lease record(s) were set aside under coordination/records/retired; nothing was deleted.", retired.len()),
            }),
            Err(err) => json!({
                "ok": false,
                "tool": "hardware_recover",
                "error_type": "coordination_state_invalid",
                "summary": "The lease records could not be set aside.",
                "detail": err.to_string(),
            }),
        };
    }
    let observed = match coordinator.observe() {
        Ok(observed) => observed,
        Err(err) => {
            return json!({
                "ok": false,
                "tool": "hardware_recover",
                "error_type": "coordination_state_invalid",
                "summary": "A lease record under the state root cannot be read; `recover --retire-records` sets unreadable ones aside.",
                "detail": err.to_string(),
            });
        }
    };
    if !observed.incident.as_ref().is_some_and(Incident::stands) {
        return lease::nothing_to_recover();
    }
    let request = Recovery {
        quarantine_id: options.quarantine_id.clone(),
        accept_config_change: options.accept_config_change,
        actor: "human",
        via: "cli:recover",
        attestation: "operator_confirmation",
        operator_statement: None,
    };
    match coordinator.recover(&request) {
        Ok(done) => done,
        Err(refused) => {
            let mut doc = Map::new();
            doc.insert("ok".into(), false.into());
            doc.insert("tool".into(), "hardware_recover".into());
            doc.insert("error_type".into(), refused.error_type.into());
            doc.insert("summary".into(), refused.summary.into());
            doc.extend(refused.details);
            Value::Object(doc)
        }
    }
}

/// The command's report, as a tool call leaves one. Written after the command and never before it:
/// the pipeline's audit readiness would refuse a recovery while the evidence cannot be written, and
/// the incident it clears may be exactly that (`audit_broken`). A report that cannot be written
/// marks the answer `audit_ok: false`.
fn recorded(loaded: &LoadedConfig, tool: &str, args: &Value, mut answer: Value) -> Value {
    let mut outcome = Outcome::from_doc(tool, answer.clone());
    outcome.config_in_force = Some(Snapshot::take(loaded).in_force);
    crate::audit::record(&Audit::for_config(loaded), &mut outcome, args);
    if let Value::Object(doc) = &mut answer {
        if let Some(path) = outcome.report_path.take() {
            doc.insert("report_path".into(), path.into());
        }
        if outcome.audit_ok == Some(false) {
            doc.insert("audit_ok".into(), false.into());
            if let Some(error) = outcome.detail("audit_error") {
                doc.insert("audit_error".into(), error.clone());
            }
        }
    }
    answer
}

fn config_refusal(tool: &str, err: &ConfigError) -> Value {
    err.document(("tool", tool.into()))
}
