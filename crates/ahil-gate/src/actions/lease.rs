//! `hardware_lease_status` (who holds this bench, is an incident open, what settles it; drives no
//! device) and `hardware_recover` (clears what an agent may clear, with the operator's words where
//! the reason needs them). The CLI's `lease-status` and `recover` share this code.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::sync::Arc;

use ahil_config::LoadedConfig;
use serde_json::{Map, Value, json};

use super::{Context, Plan};
use crate::envelope::Outcome;
use crate::incidents;
use crate::ownership::coordination::{Coordinator, Incident, Observed, Recovery, RecoveryRefusal};
use crate::ownership::places::Places;
use crate::ownership::reasons::{self, ReasonClass};
use crate::ownership::{DeviceLocks, runs};
use crate::policy::Action;
use crate::snapshot::pinned_debugger_executable;

const OPERATOR_COMMAND: &str = "agentic-hil recover --confirm-safe-state --quarantine-id <id>";

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[ToolId::HardwareLeaseStatus, ToolId::HardwareRecover],
    )?;
    let coordinator = Arc::clone(ctx.coordinator);
    let loaded = ctx.loaded;
    if ctx.tool == ToolId::HardwareLeaseStatus {
        let ownership = Arc::clone(ctx.ownership);
        let places = ctx.places.cloned();
        return Ok(super::local_plan(Action::ReadState, move || {
            let doc = status(loaded, &coordinator, &ownership.locks, places.as_deref());
            Outcome::from_doc("hardware_lease_status", doc)
        }));
    }
    // Nothing standing answers the same for everyone; only a real recovery needs allow_recover.
    let observed = match coordinator.observe() {
        Ok(observed) => observed,
        Err(err) => return Err(Box::new(invalid_state(ctx.tool.name(), &err))),
    };
    let Some(incident) = observed.incident.filter(Incident::stands) else {
        return Ok(super::local_plan(Action::ReadState, || {
            Outcome::from_doc("hardware_recover", nothing_to_recover())
        }));
    };
    let statement = ctx.args.arg_str("operator_statement").map(str::to_owned);
    let accept = ctx.args.arg_bool("accept_config_change").unwrap_or(false);
    Ok(super::local_plan(Action::Recover, move || {
        agent_recover(&coordinator, &incident, statement, accept)
    }))
}

fn agent_recover(
    coordinator: &Coordinator,
    incident: &Incident,
    statement: Option<String>,
    accept_config_change: bool,
) -> Outcome {
    let all_no_contact = incident
        .reasons
        .iter()
        .all(|r| reasons::class_of(r) == ReasonClass::NoContact);
    let attestation = if all_no_contact {
        "no_contact_reason_class"
    } else if !incident.stands() && statement.is_some() {
        "operator_statement_via_agent"
    } else {
        let physical: Vec<&String> = incident
            .reasons
            .iter()
            .filter(|r| !reasons::agent_clearable(r.as_str()))
            .collect();
        let clearable: Vec<&String> = incident
            .reasons
            .iter()
            .filter(|r| reasons::agent_clearable(r.as_str()))
            .collect();
        let mut outcome = Outcome::refused(
            "hardware_recover",
            ErrorType::RecoveryRequiresPhysicalCheck,
            "This incident needs a person to check the bench: an agent cannot clear it on its own word.",
        )
        .with("quarantine_id", incident.quarantine_id.clone())
        .with("physical_check_reasons", json!(physical))
        .with("agent_clearable_reasons", json!(clearable))
        .with("operator_command", OPERATOR_COMMAND)
        .with_next_step(if incident.stands() {
            "The evidence chain is damaged: only the operator can clear this, at their shell, with the operator_command."
        } else {
            "Ask the operator to check the bench; pass their words as operator_statement, or let them run the operator_command."
        })
        .not_contacted();
        if !incident.stands() {
            outcome.set("missing_argument", "operator_statement");
        }
        incidents::add_reasons(&mut outcome, &incident.reasons);
        return outcome;
    };
    let request = Recovery {
        quarantine_id: Some(incident.quarantine_id.clone()),
        accept_config_change,
        actor: "agent",
        via: "mcp:hardware_recover",
        attestation,
        operator_statement: statement,
    };
    match coordinator.recover(&request) {
        Ok(done) => Outcome::from_doc("hardware_recover", done),
        Err(refused) => recovery_refusal("hardware_recover", refused),
    }
}

/// A refused recovery as a result.
pub fn recovery_refusal(tool: &str, refused: RecoveryRefusal) -> Outcome {
    let mut outcome = Outcome::refused(tool, ErrorType::layer(refused.error_type), refused.summary)
        .not_contacted();
    for (key, value) in refused.details {
        outcome.set(&key, value);
    }
    outcome
}

fn invalid_state(tool: &str, err: &std::io::Error) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::CoordinationStateInvalid,
        "A lease record under the state root cannot be read; it is never ignored.",
    )
    .with("detail", err.to_string())
    .with_next_step(
        "Ask the operator to run `agentic-hil lease-status`, then `agentic-hil recover --retire-records`.",
    )
    .not_started(false)
}

/// The answer when no incident stands.
pub fn nothing_to_recover() -> Value {
    json!({
        "ok": true,
        "tool": "hardware_recover",
        "was_quarantined": false,
        "nothing_to_recover": true,
        "resources": [],
        "summary": "Nothing stands on this bench: there is no incident to recover.",
    })
}

/// Every configured device as people name it (its primary key), with every machine-wide key it
/// locks, that primary key first: a debugger's legacy keys, a port's host keys.
pub fn configured_devices(loaded: &LoadedConfig) -> Vec<(String, Vec<String>)> {
    let config = &loaded.config;
    let nodes = crate::ownership::device_keys::Nodes::resolve(config);
    let mut devices = Vec::new();
    for (name, debugger) in &config.debuggers {
        let executable = pinned_debugger_executable(loaded, name);
        let keys = runs::debugger_keys(debugger, executable.as_deref());
        devices.push((keys[0].clone(), keys));
    }
    for (name, port) in &config.com_ports {
        let primary = port.lock_key(name);
        let mut keys = vec![primary.clone()];
        keys.extend(crate::ownership::device_keys::port_host_keys(
            port, name, &nodes,
        ));
        devices.push((primary, keys));
    }
    for bus in config.can_buses.values() {
        devices.push((bus.lock_key(), vec![bus.lock_key()]));
    }
    devices
}

/// Every machine-wide key the configuration's devices lock.
pub fn configured_keys(loaded: &LoadedConfig) -> Vec<String> {
    let mut keys: Vec<String> = configured_devices(loaded)
        .into_iter()
        .flat_map(|(_, keys)| keys)
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The lease status document (`hardware_lease_status`, CLI `lease-status`); with a `labgrid`
/// section, each place as the coordinator and this process see it (`labgrid`).
pub fn status(
    loaded: &LoadedConfig,
    coordinator: &Coordinator,
    locks: &DeviceLocks,
    places: Option<&Places>,
) -> Value {
    let observed = match coordinator.observe() {
        Ok(observed) => observed,
        Err(err) => return invalid_state("hardware_lease_status", &err).to_value(),
    };
    let nodes = crate::ownership::device_keys::Nodes::resolve(&loaded.config);
    let holds: Vec<Value> = configured_keys(loaded)
        .iter()
        .filter_map(|key| {
            let mut hold = locks.peek(key)?;
            if let Some(configured) =
                crate::ownership::device_keys::configured_key_for(&loaded.config, key, &nodes)
            {
                hold["configured_key"] = json!(configured);
            }
            Some(hold)
        })
        .collect();
    let held_devices: Vec<Value> = holds
        .iter()
        .filter_map(|h| h.get("resource").cloned())
        .collect();
    let Observed {
        owner_active,
        held_by_us,
        snapshot_atomic,
        incident,
        record,
        released_dead_owner,
    } = observed;
    let stands = incident.as_ref().is_some_and(Incident::stands);
    let reasons: Vec<String> = incident
        .as_ref()
        .map(|i| i.reasons.clone())
        .unwrap_or_default();
    let auto_recoverable = incident.as_ref().is_some_and(|i| {
        !i.stands()
            && matches!(
                incidents::decide(loaded, i, 0),
                incidents::Decision::Attempt { .. }
            )
    });
    // The coordination service's own state, in the reference's words: the one answering is open.
    let lifecycle = if incident.is_some() {
        "cleanup_required"
    } else {
        "open"
    };
    let mut doc = Map::new();
    doc.insert("ok".into(), true.into());
    doc.insert("tool".into(), "hardware_lease_status".into());
    doc.insert(
        "project_resource".into(),
        coordinator.project_resource().into(),
    );
    doc.insert("owner_active".into(), owner_active.into());
    doc.insert("owner_is_this_process".into(), held_by_us.into());
    doc.insert(
        "bench_held".into(),
        (owner_active || !held_devices.is_empty()).into(),
    );
    doc.insert("held_devices".into(), Value::Array(held_devices));
    doc.insert(
        "standing_incidents".into(),
        Value::Array(coordinator.foreign_incidents(&configured_keys(loaded))),
    );
    doc.insert("device_holds".into(), Value::Array(holds));
    doc.insert("snapshot_atomic".into(), snapshot_atomic.into());
    doc.insert("blocked".into(), incident.is_some().into());
    doc.insert("incident_stands".into(), stands.into());
    doc.insert("cleanup_reasons".into(), json!(reasons));
    doc.insert("auto_recoverable".into(), auto_recoverable.into());
    doc.insert(
        "auto_recover_policy".into(),
        incidents::policy_name(loaded).into(),
    );
    doc.insert(
        "quarantine_id".into(),
        json!(incident.as_ref().map(|i| i.quarantine_id.clone())),
    );
    doc.insert("lifecycle_state".into(), lifecycle.into());
    let leases = record
        .as_ref()
        .and_then(|r| r.get("leases").cloned())
        .unwrap_or_else(|| json!([]));
    let record = record.map(|mut r| {
        if let Some(map) = r.as_object_mut() {
            map.remove("workspace");
            map.remove("config_path");
        }
        r
    });
    doc.insert("record".into(), record.unwrap_or(Value::Null));
    doc.insert("leases".into(), leases);
    if let Some(released) = released_dead_owner {
        doc.insert("released_dead_owner".into(), released);
    }
    if let Some(places) = places {
        doc.insert("labgrid".into(), places.status());
    }
    if incident.is_some() {
        doc.insert("cleanup_required".into(), true.into());
        doc.insert(
            "quarantine_guidance".into(),
            reasons::guidance_for(&reasons),
        );
    }
    let (summary, next_step) = match &incident {
        Some(i) if i.stands() => (
            "An incident stands on this bench: its evidence was lost, so stimulus is refused.".to_owned(),
            format!(
                "Ask the operator to check the bench and run `agentic-hil recover --confirm-safe-state --quarantine-id {}`.",
                i.quarantine_id
            ),
        ),
        Some(_) => (
            "An incident is open on this bench; the next hardware call settles it as the recovery policy allows.".to_owned(),
            "Call probe_target (or the tool you need): the server recovers or stands the incident down and says which.".to_owned(),
        ),
        None if owner_active && !held_by_us => (
            "Another agentic-hil process holds this bench right now.".to_owned(),
            "Wait for it to finish, or ask who holds it (device_holds names the holder).".to_owned(),
        ),
        None => (
            "No incident is open on this bench.".to_owned(),
            "Nothing to do; use the bench.".to_owned(),
        ),
    };
    doc.insert("summary".into(), summary.into());
    doc.insert("next_step".into(), next_step.into());
    Value::Object(doc)
}
