//! Stage 7 of the gate: which calls are audited, the refusal when the audit cannot be written before
//! an action, and the report written after it.

use serde_json::Value;

use super::{Audit, AuditError};
use crate::envelope::{Outcome, overall_success};

/// Tools whose every call leaves a report (the hardware calls and the two that bind hardware).
pub const AUDITED_TOOLS: &[&str] = &[
    "debugger_probes_list",
    "probe_target",
    "flash_firmware",
    "reset_target",
    "debug_start_session",
    "debug_set_breakpoint",
    "debug_continue",
    "debug_symbol_info",
    "debug_symbol_value",
    "debug_dump_symbol_ihex",
    "com_session_start",
    "com_write",
    "com_read",
    "can_session_start",
    "can_send",
    "can_read",
    "project_config_adopt_hardware",
    "project_config_create",
];

/// Whether calls of `tool` are audited.
pub fn is_audited(tool: &str) -> bool {
    AUDITED_TOOLS.contains(&tool)
}

/// The refusal when evidence cannot be written before the action: nothing was started.
pub fn unavailable(tool: &str, err: &AuditError) -> Outcome {
    let mut outcome = Outcome::refused(
        tool,
        "audit_unavailable",
        "The action was not started because its report or log cannot be written.",
    )
    .with("audit_error", err.to_value())
    .not_contacted();
    outcome.audit_ok = Some(false);
    outcome
}

/// Writes the call's report (envelope plus redacted arguments). A report that cannot be written
/// after the action marks the result `audit_ok: false` and raises [`audit_broken_hook`].
pub fn record(audit: &Audit, outcome: &mut Outcome, args: &Value) {
    let Value::Object(mut report) = outcome.to_value() else {
        return;
    };
    report.insert("arguments".into(), args.clone());
    let in_force = outcome.config_in_force.clone().unwrap_or(Value::Null);
    match audit.write_report(&mut report, &in_force) {
        Ok(written) => {
            outcome.report_path = Some(written.report_path);
            outcome.audit_ok.get_or_insert(true);
        }
        Err(err) => {
            outcome.audit_ok = Some(false);
            outcome.report_path = None;
            outcome.set("audit_error", err.to_value());
            if outcome.error_type.is_none() {
                outcome.error_type = Some("audit_failed_after_action".into());
            }
            if outcome.target_contacted != Some(false) {
                outcome.cleanup_required = Some(true);
                audit_broken_hook(outcome, &err);
            }
            debug_assert!(!overall_success(outcome));
        }
    }
}

/// Seam for the bench-ownership issue: evidence of an action that may have touched the bench was
/// lost, which raises the standing `audit_broken` quarantine there.
pub fn audit_broken_hook(_outcome: &Outcome, _err: &AuditError) {}
