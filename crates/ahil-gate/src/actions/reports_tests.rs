use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::*;

fn audit(dir: &Path) -> Audit {
    let config = dir.join("config.yaml");
    let workspace = dir.join("ws");
    fs::create_dir_all(&workspace).expect("workspace");
    fs::write(&config, "x").expect("config");
    Audit::new(
        &dir.join("state"),
        &config,
        &workspace,
        ".agentic-hil/reports",
        ".agentic-hil/logs",
    )
}

fn write(audit: &Audit, value: Value) {
    let Value::Object(mut map) = value else {
        unreachable!("reports are objects")
    };
    audit
        .write_report(&mut map, &Value::Null)
        .expect("report written");
}

/// An audit in a fresh directory (which lives as long as the returned handle) with `reports`
/// written in order.
fn audit_with(reports: &[Value]) -> (tempfile::TempDir, Audit) {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = audit(dir.path());
    for report in reports {
        write(&audit, report.clone());
    }
    (dir, audit)
}

#[test]
fn both_tools_answer_report_not_found_before_anything_is_recorded() {
    let (_dir, audit) = audit_with(&[]);
    for outcome in [get_last_report(&audit), classify_last_error(&audit)] {
        assert_eq!(outcome.error_type.as_deref(), Some("report_not_found"));
        assert!(!outcome.ok);
    }
}

#[test]
fn the_last_report_comes_from_the_trusted_copy_not_the_workspace_file() {
    let (dir, audit) = audit_with(&[
        json!({"ok": true, "tool": "reset_target", "summary": "reset", "finished_at": "2026-01-01T00:00:01.000Z"}),
    ]);
    let mirror = dir.path().join("ws/.agentic-hil/reports/last-report.json");
    fs::write(
        &mirror,
        r#"{"ok": true, "tool": "reset_target", "summary": "forged"}"#,
    )
    .expect("forge");
    let outcome = get_last_report(&audit);
    assert!(outcome.ok);
    assert_eq!(
        outcome.detail("report").expect("report")["summary"],
        "reset"
    );
    assert_eq!(
        outcome.detail("workspace_report_state").expect("state"),
        "altered"
    );
}

#[test]
fn a_report_with_a_chained_log_carries_canonical_audit() {
    let (_dir, audit) = audit_with(&[]);
    let log = "com-1-dut.jsonl";
    audit
        .append_event(log, &json!({"event": "start"}))
        .expect("append");
    write(
        &audit,
        json!({"ok": false, "tool": "com_write", "error_type": "serial_write_failed",
        "summary": "write failed", "log_path": audit.log_path(log)}),
    );
    let outcome = get_last_report(&audit);
    let evidence = &outcome.detail("report").expect("report")["canonical_audit"];
    assert_eq!(evidence["workspace_log_verified"], true);
    assert_eq!(evidence["log_sequence"], 1);
    let classified = classify_last_error(&audit);
    assert_eq!(
        classified.detail("canonical_audit").expect("evidence")["log_sequence"],
        1
    );
}

#[test]
fn the_last_failure_is_kept_through_later_successes() {
    let (_dir, audit) = audit_with(&[
        json!({"ok": false, "tool": "probe_target", "error_type": "debugger_error",
        "target_error_type": "target_not_detected", "summary": "no target", "likely_causes": ["a", "b"],
        "backend_error_type": "openocd_error"}),
        json!({"ok": true, "tool": "reset_target", "summary": "reset"}),
    ]);
    let outcome = classify_last_error(&audit);
    assert!(outcome.ok);
    assert_eq!(outcome.error_type.as_deref(), Some("target_not_detected"));
    assert_eq!(outcome.summary, "no target");
    assert_eq!(outcome.likely_causes, ["a", "b"]);
    assert_eq!(
        outcome.detail("source_tool").expect("source"),
        "probe_target"
    );
    assert_eq!(
        outcome.detail("backend_error_type").expect("backend"),
        "openocd_error"
    );
    assert_eq!(
        outcome.report_path.as_deref(),
        Some(".agentic-hil/reports/last-report.json")
    );
}

#[test]
fn a_flash_whose_recovery_reset_failed_is_blamed_on_the_reset() {
    let (_dir, audit) = audit_with(&[
        json!({"ok": false, "tool": "flash_firmware", "error_type": "reset_failed",
        "summary": "flashed, reset failed", "recovery": {"reset": {"ok": false}}}),
    ]);
    assert_eq!(
        classify_last_error(&audit)
            .detail("source_tool")
            .expect("source"),
        "reset_target"
    );
}

#[test]
fn a_failure_without_an_error_type_is_classified_by_its_audit() {
    let (_dir, audit) = audit_with(&[
        json!({"ok": true, "tool": "com_read", "summary": "read", "audit_ok": false}),
    ]);
    assert_eq!(
        classify_last_error(&audit).error_type.as_deref(),
        Some("audit_failed")
    );
    write(
        &audit,
        json!({"ok": false, "tool": "probe_target", "summary": "?"}),
    );
    assert_eq!(
        classify_last_error(&audit).error_type.as_deref(),
        Some("unknown_debugger_error")
    );
}

#[test]
fn a_damaged_report_state_is_a_refusal_naming_the_repair() {
    let (dir, audit) = audit_with(&[]);
    let reports = audit.project_dir().join("reports");
    fs::create_dir_all(&reports).expect("dir");
    fs::write(reports.join("report-state.json"), "{").expect("damage");
    let mut outcome = get_last_report(&audit);
    crate::audit::errors::merge_advice(&mut outcome);
    assert_eq!(outcome.error_type.as_deref(), Some("report_state_damaged"));
    assert!(outcome.remediation[0].contains("report-state-repair"));
    let text = outcome.to_value().to_string();
    assert!(!text.contains(&*dir.path().to_string_lossy()), "{text}");
}
