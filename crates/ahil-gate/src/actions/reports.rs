//! `get_last_report` and `classify_last_error`: read the trusted report state under the state root,
//! never the workspace copies, and attach the verdict on the workspace mirrors.

use crate::ErrorType;
use crate::catalogue::ToolId;
use serde_json::{Map, Value};

use super::{Acted, Context, Plan, Work};
use crate::audit::{Audit, AuditError, errors, report};
use crate::envelope::Outcome;

/// Both tools read local state only.
pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[ToolId::GetLastReport, ToolId::ClassifyLastError],
    )?;
    let audit = Audit::for_config(ctx.loaded);
    let tool = ctx.tool;
    Ok(Plan::read_state(Work::Local(Box::new(move || Acted {
        outcome: if tool == ToolId::ClassifyLastError {
            classify_last_error(&audit)
        } else {
            get_last_report(&audit)
        },
        contact: None,
    }))))
}

fn unreadable(tool: &str, err: &AuditError) -> Outcome {
    let error_type = match err {
        AuditError::ReportStateDamaged { .. } => ErrorType::ReportStateDamaged,
        AuditError::UnsafePath { .. } => ErrorType::UnsafeConfiguredPath,
        _ => ErrorType::ReportUnreadable,
    };
    Outcome::refused(
        tool,
        error_type,
        format!("The trusted report state could not be read: {err}."),
    )
    .with("audit_error", err.to_value())
}

fn not_found(tool: &str, summary: &str) -> Outcome {
    Outcome::refused(tool, ErrorType::ReportNotFound, summary)
}

/// `canonical_audit` for a report with a top-level `log_path` whose canonical copy exists.
fn canonical_audit(audit: &Audit, report: &Value) -> Option<Value> {
    let log_path = report.get("log_path")?.as_str()?;
    audit.log_evidence(log_path)
}

/// The last report, as the trusted state holds it.
pub fn get_last_report(audit: &Audit) -> Outcome {
    const TOOL: ToolId = ToolId::GetLastReport;
    let state = match report::load_state(audit) {
        Ok(state) => state,
        Err(err) => return unreadable(TOOL.name(), &err),
    };
    let Some(mut last) = state.last_report else {
        return not_found(
            TOOL.name(),
            "No report has been written yet in this project.",
        );
    };
    let mirror = audit.report_mirror_state(&last);
    if let (Some(evidence), Value::Object(map)) = (canonical_audit(audit, &last), &mut last) {
        map.insert("canonical_audit".into(), evidence);
    }
    let tool = last
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    Outcome::ok(TOOL, format!("The last recorded report, from {tool}."))
        .with("report", last)
        .with("workspace_report_state", mirror)
}

/// Which tool a failure is blamed on. A flash whose recovery reset failed is blamed on the reset:
/// the flash may have succeeded, and the board is left in whatever state the failed reset left it.
fn source_tool(report: &Value) -> String {
    let tool = report
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let recovery_reset_failed = report.get("recovery").is_some_and(|recovery| {
        let reset = recovery.get("reset");
        reset.and_then(|r| r.get("ok")) == Some(&Value::Bool(false))
            || recovery.get("reset_ok") == Some(&Value::Bool(false))
    });
    if tool == ToolId::FlashFirmware.name() && recovery_reset_failed {
        "reset_target".into()
    } else {
        tool.into()
    }
}

fn text(report: &Value, key: &str) -> Option<String> {
    report.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `target_error_type`, else `error_type`, else `audit_failed` for a bad audit, else
/// `unknown_debugger_error`.
fn classified_type(report: &Value) -> String {
    text(report, "target_error_type")
        .or_else(|| text(report, "error_type"))
        .unwrap_or_else(|| {
            if report.get("audit_ok") == Some(&Value::Bool(false)) {
                "audit_failed".into()
            } else {
                "unknown_debugger_error".into()
            }
        })
}

/// The last failure, kept through later successes, classified.
pub fn classify_last_error(audit: &Audit) -> Outcome {
    const TOOL: ToolId = ToolId::ClassifyLastError;
    let state = match report::load_state(audit) {
        Ok(state) => state,
        Err(err) => return unreadable(TOOL.name(), &err),
    };
    let Some(failure) = state.last_failure else {
        return not_found(
            TOOL.name(),
            "No failure has been recorded yet in this project.",
        );
    };
    let error_type = classified_type(&failure);
    let summary = text(&failure, "summary").unwrap_or_else(|| "The last call failed.".into());
    let mut outcome = Outcome::ok(TOOL, summary);
    outcome.error_type = Some(error_type);
    if let Some(causes) = failure.get("likely_causes").and_then(Value::as_array) {
        outcome.likely_causes = causes
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .take(3)
            .collect();
    }
    outcome.report_path = text(&failure, "report_path");
    outcome.log_path = text(&failure, "log_path");
    let mut details = Map::new();
    details.insert("source_tool".into(), source_tool(&failure).into());
    for key in ["backend_error_type", "failed_step", "step_error_type"] {
        if let Some(value) = failure.get(key) {
            details.insert(key.into(), value.clone());
        }
    }
    if let Some(evidence) = canonical_audit(audit, &failure) {
        details.insert("canonical_audit".into(), evidence);
    }
    for (key, value) in details {
        outcome.set(&key, value);
    }
    errors::merge_advice(&mut outcome);
    outcome
}

#[cfg(test)]
#[path = "reports_tests.rs"]
mod tests;
