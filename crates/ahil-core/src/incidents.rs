//! What the gate does with an incident: the recovery policy decides whether the server may prove
//! the bench safe itself (a verified reset into halt, then a probe), and anything it does not prove
//! is stood down at the end of the call, unless the evidence chain is damaged, which stands.
//!
//! This module decides and describes; `bench.rs` runs the recovery actions through the same driver
//! code as the tools.

use crate::ErrorType;
use ahil_config::{AutoRecover, LoadedConfig};
use serde_json::{Value, json};

use crate::envelope::Outcome;
use crate::ownership::coordination::{Incident, strings};
use crate::ownership::reasons::{self, ReasonClass};

/// What the policy allows for one incident.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run these steps against the bound debugger.
    Attempt { debugger: String, reset_halt: bool },
    /// Nothing is attempted, for this reason (`reason_not_attempted`).
    Skip(&'static str),
}

/// The policy's word on `incident`.
pub fn decide(loaded: &LoadedConfig, incident: &Incident, attempts: u8) -> Decision {
    let config = &loaded.config;
    if config.recovery.auto_recover == AutoRecover::Off {
        return Decision::Skip("auto_recover_policy_off");
    }
    let [reason] = incident.reasons.as_slice() else {
        return Decision::Skip("several_reasons");
    };
    let Some((name, debugger)) = config.auto_bound_debugger() else {
        return Decision::Skip("no_bound_debugger");
    };
    // Resetting a probe proves nothing about a serial port or a bus: recovery acts only on an
    // incident that names the debugger's own device.
    let executable = crate::snapshot::pinned_debugger_executable(loaded, name);
    let keys = crate::ownership::runs::debugger_keys(debugger, executable.as_deref());
    if !incident.resources.iter().any(|r| keys.contains(r)) {
        return Decision::Skip("no_debugger_in_incident");
    }
    if attempts >= config.recovery.max_attempts {
        return Decision::Skip("max_attempts_reached");
    }
    if config.reads_need_permission() && !debugger.permissions.allow_probe {
        return Decision::Skip("probe_not_permitted");
    }
    let class = reasons::class_of(reason);
    match class {
        ReasonClass::Retryable => Decision::Attempt {
            debugger: name.to_owned(),
            reset_halt: false,
        },
        ReasonClass::NoContact | ReasonClass::ResetHalt => {
            if config.recovery.auto_recover == AutoRecover::Readonly {
                Decision::Skip("reason_needs_reset_halt")
            } else if !debugger.permissions.allow_reset {
                Decision::Skip("allow_reset_missing")
            } else {
                Decision::Attempt {
                    debugger: name.to_owned(),
                    reset_halt: class == ReasonClass::ResetHalt,
                }
            }
        }
        ReasonClass::AuditBroken | ReasonClass::Event | ReasonClass::Operator => {
            Decision::Skip("reason_not_recoverable")
        }
    }
}

/// `auto_recover_policy` as results name it.
pub fn policy_name(loaded: &LoadedConfig) -> &'static str {
    match loaded.config.recovery.auto_recover {
        AutoRecover::Off => "off",
        AutoRecover::Readonly => "readonly",
        AutoRecover::ResetHalt => "reset_halt",
    }
}

fn policy_source(loaded: &LoadedConfig) -> &'static str {
    if loaded.auto_recover_explicit {
        "config"
    } else {
        "default"
    }
}

/// The `recovery` block of a result.
pub struct Block<'a> {
    pub loaded: &'a LoadedConfig,
    pub incident: &'a Incident,
}

impl Block<'_> {
    pub fn skipped(&self, why: &str) -> Value {
        json!({
            "attempted": false,
            "actions": [],
            "outcome": "skipped",
            "devices": self.incident.resources,
            "auto_recover_policy": policy_name(self.loaded),
            "auto_recover_policy_source": policy_source(self.loaded),
            "reason_not_attempted": why,
            "incident_resolved": false,
            "incident_open": false,
            "summary": "No recovery was attempted; the incident was stood down at the end of the call and recorded in the ledger.",
        })
    }

    pub fn recovered(&self, actions: &[&str], reset_halt: bool) -> Value {
        json!({
            "attempted": true,
            "actions": actions,
            "outcome": "recovered",
            "devices": self.incident.resources,
            "auto_recover_policy": policy_name(self.loaded),
            "auto_recover_policy_source": policy_source(self.loaded),
            "safe_state_predicate": if reset_halt { "reset_halt" } else { "readonly_probe" },
            "incident_resolved": true,
            "incident_open": false,
            "resolved_reason": self.incident.reasons.first(),
            "resolved_quarantine_id": self.incident.quarantine_id,
            "summary": "The server proved the bench safe (the steps in actions succeeded) and resolved the incident.",
        })
    }

    pub fn failed(&self, actions: &[&str], failed_action: &str, failure: &Outcome) -> Value {
        json!({
            "attempted": true,
            "actions": actions,
            "outcome": "failed",
            "devices": self.incident.resources,
            "auto_recover_policy": policy_name(self.loaded),
            "auto_recover_policy_source": policy_source(self.loaded),
            "failed_action": failed_action,
            "failed_error_type": failure.error_type,
            "incident_resolved": false,
            "incident_open": false,
            "summary": format!(
                "Recovery failed at {failed_action} ({}); the incident was stood down and recorded in the ledger.",
                failure.error_type.as_deref().unwrap_or("unknown")
            ),
        })
    }
}

/// Marks a result whose incident was stood down: the reasons stay on the result with guidance,
/// the bench is not held. Only an incident this call raised makes the call need cleanup; one it
/// met (a dead owner's) is reported, and the call's own success stands.
pub fn mark_stood_down(outcome: &mut Outcome, incident: &Incident, raised_here: bool) {
    if raised_here {
        outcome.cleanup_required = Some(true);
    }
    outcome.quarantined = Some(false);
    outcome.set("incident_stood_down", true);
    add_reasons(outcome, &incident.reasons);
    outcome.set("quarantine_id", incident.quarantine_id.clone());
}

/// Adds `reasons` to the result's `cleanup_reasons` and their guidance.
pub fn add_reasons(outcome: &mut Outcome, reasons: &[String]) {
    let mut all = strings(outcome.detail("cleanup_reasons"));
    for reason in reasons {
        if !all.contains(reason) {
            all.push(reason.clone());
        }
    }
    outcome.set("quarantine_guidance", reasons::guidance_for(&all));
    outcome.set("cleanup_reasons", json!(all));
}

/// The refusal while an incident stands.
pub fn standing_refusal(tool: &str, incident: &Incident) -> Outcome {
    let mut outcome = Outcome::refused(
        tool,
        ErrorType::ResourceQuarantined,
        "The bench is quarantined: an earlier call's evidence could not be written, so no stimulus is allowed until the operator confirms its state.",
    )
    .with("resources", json!(incident.resources))
    .with("quarantine_id", incident.quarantine_id.clone())
    .with_next_step(format!(
        "Stop and ask the operator to check the bench and run `agentic-hil recover --confirm-safe-state --quarantine-id {}`.",
        incident.quarantine_id
    ))
    .not_contacted();
    outcome.retry_safe = Some(false);
    outcome.cleanup_required = Some(true);
    outcome.quarantined = Some(true);
    add_reasons(&mut outcome, &incident.reasons);
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Fixture;

    /// An incident on the bound debugger's own device.
    fn incident(reason: &str) -> Incident {
        let fixture = Fixture::new();
        fixture.write_config(&fixture.starter());
        let loaded = fixture.load();
        let (name, debugger) = loaded.config.auto_bound_debugger().expect("bound");
        let executable = crate::snapshot::pinned_debugger_executable(&loaded, name);
        let keys = crate::ownership::runs::debugger_keys(debugger, executable.as_deref());
        Incident::new(vec![reason.into()], keys)
    }

    fn loaded(edits: &[(&str, &str)]) -> LoadedConfig {
        let fixture = Fixture::new();
        fixture.write_config(&fixture.starter_with(edits));
        fixture.load()
    }

    #[test]
    fn the_default_policy_resets_into_halt_only_with_allow_reset() {
        let granted = loaded(&[]);
        assert_eq!(
            decide(
                &granted,
                &incident("owner_process_exited_without_release"),
                0
            ),
            Decision::Attempt {
                debugger: granted
                    .config
                    .auto_bound_debugger()
                    .expect("bound")
                    .0
                    .to_owned(),
                reset_halt: true
            }
        );
        let withheld = loaded(&[("allow_reset: true", "allow_reset: false")]);
        assert_eq!(
            decide(&withheld, &incident("debugger_result_unconfirmed"), 0),
            Decision::Skip("allow_reset_missing")
        );
        assert!(matches!(
            decide(&withheld, &incident("debug_target_state_unconfirmed"), 0),
            Decision::Attempt {
                reset_halt: false,
                ..
            }
        ));
    }

    #[test]
    fn an_incident_on_a_serial_port_is_not_settled_by_resetting_the_probe() {
        let granted = loaded(&[]);
        let on_port = Incident::new(
            vec!["owner_process_exited_without_release".into()],
            vec!["com:/dev/ttyusb0".into()],
        );
        assert_eq!(
            decide(&granted, &on_port, 0),
            Decision::Skip("no_debugger_in_incident")
        );
    }

    #[test]
    fn nothing_recovers_an_audit_break_or_an_exhausted_incident() {
        let granted = loaded(&[]);
        assert_eq!(
            decide(&granted, &incident("com_write_audit_broken"), 0),
            Decision::Skip("reason_not_recoverable")
        );
        assert_eq!(
            decide(&granted, &incident("debugger_result_unconfirmed"), 3),
            Decision::Skip("max_attempts_reached")
        );
    }
}
