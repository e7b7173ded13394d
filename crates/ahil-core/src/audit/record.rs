//! Stage 7 of the gate (which calls are audited is each tool's declaration, `Gate::audited`): the refusal when the audit cannot be written before
//! an action, and the report written after it.

use crate::ErrorType;
use serde_json::Value;

use super::{Audit, AuditError};
use crate::envelope::{Outcome, overall_success};

/// The refusal when evidence cannot be written before the action: nothing was started.
pub fn unavailable(tool: &str, err: &AuditError) -> Outcome {
    let mut outcome = Outcome::refused(
        tool,
        ErrorType::AuditUnavailable,
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
    log_transcript(audit, outcome);
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
                outcome.set_error(ErrorType::AuditFailedAfterAction);
            }
            if outcome.target_contacted != Some(false) {
                outcome.cleanup_required = Some(true);
                audit_broken_hook(outcome, &err);
            }
            debug_assert!(!overall_success(outcome));
        }
    }
}

/// A driver's transcript (`driver_log`, taken out of the answer) goes to the tool's chained log, and
/// the answer names it in `log_path`, so get_last_report can verify it. A log that cannot be written
/// marks the result `audit_ok: false` like a lost report.
fn log_transcript(audit: &Audit, outcome: &mut Outcome) {
    let Some(Value::String(text)) = outcome.details.shift_remove("driver_log") else {
        return;
    };
    let name = format!("{}.jsonl", outcome.tool);
    // The transcript names sockets under the state root and the private staging copy; the log is
    // mirrored into the workspace, so neither location is written out.
    let sink = audit
        .sink()
        .clone()
        .with_root(&std::env::temp_dir(), "<tmp>");
    let event = sink
        .scrub(&serde_json::json!({
            "tool": outcome.tool,
            "ok": outcome.ok,
            "error_type": outcome.error_type,
            "transcript": text,
        }))
        .into_value();
    match audit.append_event(&name, &event) {
        Ok(_) => outcome.log_path = Some(audit.log_path(&name)),
        Err(err) => {
            outcome.audit_ok = Some(false);
            outcome.set("audit_error", err.to_value());
        }
    }
}

/// Seam for the bench-ownership issue: evidence of an action that may have touched the bench was
/// lost, which raises the standing `audit_broken` quarantine there.
pub fn audit_broken_hook(_outcome: &Outcome, _err: &AuditError) {}
