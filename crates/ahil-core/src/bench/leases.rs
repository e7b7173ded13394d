//! The gate's side of leases and incidents (which calls take a lease, and of which kind, is each
//! tool's declaration, `Gate::lease`): what a refused lease answers,
//! how the recovery policy runs against the bench, and how a lease ends (released, kept by a
//! session, or quarantined when the evidence was lost).

use crate::ErrorType;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use ahil_config::LoadedConfig;
use serde_json::{Value, json};

use super::{Provisioned, Tools, settle, stage_and_act};
use crate::audit;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;
use crate::incidents::{self, Block, Decision};
use crate::ownership::coordination::{Coordinator, End, Incident, Lease, Refused, Settled};
use crate::snapshot::Snapshot;

/// One server's coordinator, the leases its sessions keep between calls, and how often each
/// incident has been tried.
pub struct Leases {
    pub coordinator: Arc<Coordinator>,
    kept: Mutex<HashMap<String, Lease>>,
    attempts: Mutex<HashMap<String, u8>>,
}

impl Leases {
    pub fn new(loaded: &LoadedConfig, frontend: &str) -> Self {
        Self {
            coordinator: Arc::new(Coordinator::new(loaded, frontend)),
            kept: Mutex::default(),
            attempts: Mutex::default(),
        }
    }

    fn bump(&self, quarantine_id: &str) -> u8 {
        let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        let count = attempts.entry(quarantine_id.to_owned()).or_insert(0);
        let before = *count;
        *count = count.saturating_add(1);
        before
    }

    /// Ends every lease a session kept (at shutdown, after the sessions were closed).
    pub fn release_kept(&self) {
        let kept: Vec<Lease> = self
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, lease)| lease)
            .collect();
        for lease in kept {
            self.coordinator.release(&lease, &End::default());
        }
    }
}

fn session_key(resources: &[String]) -> String {
    resources.join("\n")
}

/// The answer when a lease is not granted.
pub fn refusal(tool: &str, refused: Refused) -> Outcome {
    match refused {
        Refused::Busy => Outcome::refused(
            tool,
            ErrorType::ResourceBusy,
            "Another agentic-hil process holds this configuration's bench right now.",
        )
        .with_next_step("Wait for the other process's call or session to end, then call this tool again.")
        .not_started(true),
        Refused::Standing(incident) => incidents::standing_refusal(tool, &incident),
        Refused::Foreign { resource } => {
            let mut outcome = Outcome::refused(
                tool,
                ErrorType::ResourceQuarantined,
                "This device belongs to another project's unresolved incident.",
            )
            .with("resource", resource)
            .with("quarantine_scope", "foreign_project")
            .with_next_step(
                "Ask the operator to recover the other project's incident (agentic-hil lease-status in that workspace).",
            )
            .not_contacted();
            outcome.retry_safe = Some(false);
            outcome
        }
        Refused::Invalid(err) => Outcome::refused(
            tool,
            ErrorType::CoordinationStateInvalid,
            "A lease record under the state root cannot be read or written; it is never ignored.",
        )
        .with("detail", err.to_string())
        .with_next_step("Ask the operator to run `agentic-hil lease-status` and, if it says so, `agentic-hil recover --retire-records`.")
        .not_started(false),
    }
}

/// Runs one tool's action for the server's own recovery: the same plan and driver code as a call,
/// without authorization (the policy decided) or a report of its own (the attestation is one).
async fn internal<T: Tools>(bench: &Provisioned<T>, tool: ToolId, args: Value) -> Outcome {
    let reloaded = bench.held.reloaded();
    let loaded = reloaded.as_deref().unwrap_or(&bench.loaded);
    let snapshot = Snapshot::take(loaded);
    let ctx = bench.context(tool, &args, loaded, &snapshot);
    let plan = match T::plan(&ctx) {
        Ok(plan) => plan,
        Err(refusal) => return *refusal,
    };
    let host_keys =
        crate::ownership::device_keys::host_keys(&loaded.config, &plan.resources, &snapshot.nodes);
    let hold = match bench
        .ownership
        .claim_for_call(tool.name(), &plan.resources, &host_keys)
    {
        Ok(hold) => hold,
        Err(refusal) => return *refusal,
    };
    let outcome = settle(stage_and_act(tool.name(), plan.work).await);
    drop(hold);
    outcome
}

/// Settles `incident` as the policy allows and returns the result's `recovery` block. Whatever
/// recovery does not prove is stood down; the ledger records either.
pub async fn recover<T: Tools>(bench: &Provisioned<T>, incident: &Incident) -> Value {
    let coordinator = &bench.leases.coordinator;
    let block = Block {
        loaded: &bench.loaded,
        incident,
    };
    let attempts = bench.leases.bump(&incident.quarantine_id);
    let (debugger, reset_halt) = match incidents::decide(&bench.loaded, incident, attempts) {
        Decision::Skip(why) => {
            let _ = coordinator.settle(incident, &Settled::StoodDown);
            return block.skipped(why);
        }
        Decision::Attempt {
            debugger,
            reset_halt,
        } => (debugger, reset_halt),
    };
    let mut steps = vec!["reap_processes"];
    if reset_halt {
        steps.push("reset_halt");
        let reset = crate::cancel::shielded(internal(
            bench,
            ToolId::ResetTarget,
            json!({"mode": "halt"}),
        ))
        .await;
        if !reset.ok {
            let _ = coordinator.settle(incident, &Settled::StoodDown);
            return block.failed(&steps, "reset_halt", &reset);
        }
    }
    steps.push("probe_target");
    let probe = crate::cancel::shielded(internal(bench, ToolId::ProbeTarget, json!({}))).await;
    if !probe.ok || probe.detail("target_detected") != Some(&Value::Bool(true)) {
        let _ = coordinator.settle(incident, &Settled::StoodDown);
        return block.failed(&steps, "probe_target", &probe);
    }
    // The attestation is written before the incident moves: without it, nothing was proven.
    let reason = incident.reasons.first().cloned().unwrap_or_default();
    let mut attestation = Outcome::ok(
        "hardware_recover",
        "The server proved the bench safe after an incident and resolved it.",
    )
    .with("recovery", "machine_attested")
    .with("reason", reason.clone())
    .with("quarantine_id", incident.quarantine_id.clone())
    .with("safe_state_confirmed", true)
    .with("processes_reaped", true)
    .with(
        "safe_state_predicate",
        if reset_halt {
            "reset_halt"
        } else {
            "readonly_probe"
        },
    )
    .with("auto_recover_policy", incidents::policy_name(&bench.loaded))
    .with(
        "verification",
        json!({"tool": "probe_target", "debugger": debugger, "target_detected": true}),
    );
    attestation.target_contacted = Some(true);
    audit::record(&bench.audit, &mut attestation, &json!({}));
    if attestation.audit_ok == Some(false) {
        let broken = Incident {
            quarantine_id: incident.quarantine_id.clone(),
            reasons: vec!["machine_recovery_audit_broken".into()],
            resources: incident.resources.clone(),
        };
        let _ = coordinator.open_incident(&broken);
        return block.failed(&steps, "attestation_report", &attestation);
    }
    if coordinator
        .settle(incident, &Settled::Resolved { reason })
        .is_err()
    {
        return block.failed(&steps, "recovery_ledger", &attestation);
    }
    block.recovered(&steps, reset_halt)
}

/// Puts a recovery block on the result, and the stand-down marks when it did not resolve.
pub fn apply(outcome: &mut Outcome, block: Value, incident: &Incident, raised_here: bool) {
    let resolved = block.get("incident_resolved") == Some(&Value::Bool(true));
    if !resolved {
        incidents::mark_stood_down(outcome, incident, raised_here);
    }
    outcome.set("recovery", block);
}

/// The lease's own status, in every leased result as the reference gives it. What an incident, a
/// recovery or the action already said stands; the rest is what a clean lease says of itself.
pub fn merge_status(outcome: &mut Outcome, lease: &Lease) {
    let unsettled = outcome.hardware_state == Some(crate::envelope::HardwareState::Unknown)
        || outcome.cleanup_required == Some(true)
        || outcome.quarantined == Some(true);
    let clean = [
        ("resources", json!(lease.resources)),
        ("safe_state_confirmed", json!(!unsettled)),
        ("processes_reaped", json!(true)),
        ("cleanup_reasons", json!([])),
        ("quarantine_id", Value::Null),
    ];
    for (key, value) in clean {
        if outcome.detail(key).is_none() {
            outcome.set(key, value);
        }
    }
    outcome.cleanup_required.get_or_insert(false);
    outcome.quarantined.get_or_insert(false);
}

/// Ends the call's lease: a session start keeps it for the session; a session stop ends the
/// session's too; lost evidence quarantines it.
pub fn end<T: Tools>(bench: &Provisioned<T>, tool: ToolId, lease: Lease, outcome: &mut Outcome) {
    let gate = tool.gate();
    let leases = &bench.leases;
    // Lost evidence of a call that may have touched the bench: nothing the server says about
    // that call can be trusted, so the bench stands quarantined.
    let standing = if outcome.audit_ok == Some(false) && outcome.target_contacted != Some(false) {
        vec![gate.audit_broken.to_owned()]
    } else {
        Vec::new()
    };
    let key = session_key(&lease.resources);
    if standing.is_empty() && outcome.ok && gate.starts_session() {
        let mut kept = leases.kept.lock().unwrap_or_else(PoisonError::into_inner);
        match kept.entry(key.clone()) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(lease);
                outcome.lease_state = Some("active".into());
                return;
            }
            // A repeated start finds the session's lease already kept: this call's own one ends,
            // and the answer names the session's, which the session still holds.
            std::collections::hash_map::Entry::Occupied(slot) => {
                let session_lease = slot.get().id.clone();
                drop(kept);
                leases.coordinator.release(
                    &lease,
                    &End {
                        standing_reasons: Vec::new(),
                    },
                );
                outcome.set("lease_id", session_lease);
                outcome.lease_state = Some("active".into());
                return;
            }
        }
    }
    let status = leases.coordinator.release(
        &lease,
        &End {
            standing_reasons: standing.clone(),
        },
    );
    if gate.stops_session() {
        let kept = leases
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        if let Some(kept) = kept {
            leases.coordinator.release(
                &kept,
                &End {
                    standing_reasons: standing.clone(),
                },
            );
        }
    }
    if standing.is_empty() {
        outcome.lease_state = Some("released".into());
        return;
    }
    outcome.lease_state = Some("quarantined".into());
    outcome.quarantined = Some(true);
    outcome.cleanup_required = Some(true);
    if let Some(id) = status.get("quarantine_id").and_then(Value::as_str) {
        outcome.set("quarantine_id", id.to_owned());
        outcome.next_step = Some(format!(
            "The evidence of this call was lost, so the bench is quarantined. Stop and ask the operator to check it and run `agentic-hil recover --confirm-safe-state --quarantine-id {id}`."
        ));
    }
    incidents::add_reasons(outcome, &standing);
}
