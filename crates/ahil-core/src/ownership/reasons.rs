//! Why a lease ended without proof of a safe bench, and what each reason allows.
//!
//! Every reason has a class. The class decides who may settle an incident that names it: a
//! read-only re-read (`Retryable`), nobody needed because the backend proved no contact
//! (`NoContact`), a verified reset into halt (`ResetHalt`), only the operator at their shell
//! (`AuditBroken`: the evidence chain is damaged, so nothing the server says can be trusted),
//! nobody because it is just a note (`Event`), or the operator's word (`Operator`).

use serde_json::{Value, json};

/// Who may settle an incident naming a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasonClass {
    /// A read-only re-read of the target settles it.
    Retryable,
    /// The backend proved nothing touched the target; an agent may clear it.
    NoContact,
    /// Needs a verified reset into halt.
    ResetHalt,
    /// The evidence chain is damaged: the incident stands until the operator recovers it.
    AuditBroken,
    /// Recorded on the result only; never an incident.
    Event,
    /// In no automatic set: an operator's statement settles it; it stands down after the call.
    Operator,
}

/// The class of `reason`. Unknown reasons are treated as needing the operator, never as safe.
pub fn class_of(reason: &str) -> ReasonClass {
    if reason.contains("audit_broken") {
        return ReasonClass::AuditBroken;
    }
    match reason {
        "lease_release_unconfirmed" | "released_dead_owner_no_contact" => ReasonClass::NoContact,
        "debugger_readonly_result_unconfirmed"
        | "debug_session_result_unconfirmed"
        | "debug_breakpoint_cleanup_unconfirmed"
        | "debug_target_state_unconfirmed"
        | "debug_session_cleanup_unconfirmed"
        | "debug_backend_cleanup_exception"
        | "com_buffer_clear_unconfirmed" => ReasonClass::Retryable,
        "owner_process_exited_without_release"
        | "debugger_readonly_target_state_unconfirmed"
        | "debugger_result_unconfirmed"
        | "debugger_call_exception"
        | "debug_session_start_unconfirmed"
        | "debug_shutdown_reporting_failed" => ReasonClass::ResetHalt,
        "com_open_cleanup_unconfirmed"
        | "com_cleanup_unconfirmed"
        | "can_open_cleanup_unconfirmed"
        | "can_adapter_cleanup_unconfirmed"
        | "serial_write_incomplete" => ReasonClass::Event,
        _ => ReasonClass::Operator,
    }
}

/// Whether any of `reasons` keeps an incident standing past the call that raised it.
pub fn any_standing<S: AsRef<str>>(reasons: &[S]) -> bool {
    reasons
        .iter()
        .any(|r| class_of(r.as_ref()) == ReasonClass::AuditBroken)
}

/// Whether an agent may clear every reason without the operator's statement.
pub fn agent_clearable<S: AsRef<str>>(reason: S) -> bool {
    class_of(reason.as_ref()) == ReasonClass::NoContact
}

/// Guidance for one reason: what was attempted, what is confirmed, what is unknown, and what a
/// person should check at the bench. Added to results at reporting time, never stored.
pub fn guidance(reason: &str) -> Value {
    let (attempted, confirmed, unknown, physical_check) = match class_of(reason) {
        ReasonClass::AuditBroken => (
            "The action ran, but its report or log could not be written.",
            "Nothing: without the evidence, the server cannot vouch for what the bench did.",
            "What the hardware did during the call, and whether the evidence on disk was tampered with.",
            "Check the board by hand and the audit directory's permissions and links, then run \
             `agentic-hil recover --confirm-safe-state --quarantine-id <id>`.",
        ),
        ReasonClass::NoContact => (
            "The call was stopped before it reached the target.",
            "The backend proved it never touched the target.",
            "Nothing about the target.",
            "None needed; `hardware_recover` clears it.",
        ),
        ReasonClass::Retryable => (
            "A read or a session command whose answer did not arrive.",
            "The session's earlier state.",
            "Whether the last command took effect.",
            "None usually: a read-only probe of the target settles it.",
        ),
        ReasonClass::ResetHalt => (
            "An action that may have changed the target (flash, reset, run control) or an owner that \
             exited mid-call.",
            "Nothing about the target after the failure.",
            "The core's state: running, halted, or partly programmed.",
            "A verified reset into halt followed by a probe settles it; otherwise look at the board.",
        ),
        ReasonClass::Event => (
            "Closing or writing to a device.",
            "The device was released by this server.",
            "Whether the adapter finished its last operation.",
            "None: this is recorded on the result only.",
        ),
        ReasonClass::Operator => (
            "An action whose effect could not be confirmed.",
            "Nothing beyond what the result says.",
            "What the hardware did.",
            "Look at the bench; the operator can confirm with `agentic-hil recover --confirm-safe-state`, \
             or an agent can pass the operator's words to `hardware_recover` as operator_statement.",
        ),
    };
    json!({
        "reason": reason,
        "attempted": attempted,
        "confirmed": confirmed,
        "unknown": unknown,
        "physical_check": physical_check,
    })
}

/// Guidance for every reason in `reasons`, deduplicated in order.
pub fn guidance_for<S: AsRef<str>>(reasons: &[S]) -> Value {
    let mut seen: Vec<&str> = Vec::new();
    for reason in reasons {
        if !seen.contains(&reason.as_ref()) {
            seen.push(reason.as_ref());
        }
    }
    Value::Array(seen.into_iter().map(guidance).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_audit_broken_family_stands() {
        assert!(any_standing(&["com_write_audit_broken"]));
        assert!(any_standing(&[
            "debugger_result_unconfirmed",
            "machine_recovery_audit_broken"
        ]));
        assert!(!any_standing(&[
            "owner_process_exited_without_release",
            "safe_state_unconfirmed"
        ]));
    }

    #[test]
    fn an_unknown_reason_is_never_treated_as_safe() {
        assert_eq!(class_of("something_new"), ReasonClass::Operator);
        assert!(!agent_clearable("something_new"));
    }

    #[test]
    fn every_reason_a_tool_raises_has_a_class_that_is_not_an_event() {
        for declared in crate::catalogue::declarations().filter(|d| d.gate.is_leased()) {
            let (tool, gate) = (declared.name, declared.gate);
            assert_ne!(class_of(gate.unconfirmed), ReasonClass::Event, "{tool}");
            assert_eq!(
                class_of(gate.audit_broken),
                ReasonClass::AuditBroken,
                "{tool}"
            );
        }
    }
}
