use super::*;
use crate::ErrorType;
use serde_json::json;

fn green() -> Outcome {
    Outcome::ok("probe_target", "fine")
}

#[test]
fn a_plain_ok_result_succeeds() {
    assert!(overall_success(&green()));
    assert_eq!(failed_success_check(&green()), None);
}

#[test]
fn ok_false_fails_the_first_check() {
    let outcome = Outcome::refused("probe_target", ErrorType::Timeout, "slow");
    assert_eq!(failed_success_check(&outcome), Some(SuccessCheck::Ok));
}

#[test]
fn target_ok_false_fails_even_when_ok() {
    let mut outcome = green();
    outcome.target_ok = Some(false);
    assert_eq!(failed_success_check(&outcome), Some(SuccessCheck::TargetOk));
    outcome.target_ok = Some(true);
    assert!(overall_success(&outcome));
}

#[test]
fn a_failed_audit_fails() {
    let mut outcome = green();
    outcome.audit_ok = Some(false);
    assert_eq!(failed_success_check(&outcome), Some(SuccessCheck::AuditOk));
}

#[test]
fn a_failed_cleanup_fails() {
    let mut outcome = green();
    outcome.cleanup_ok = Some(false);
    assert_eq!(
        failed_success_check(&outcome),
        Some(SuccessCheck::CleanupOk)
    );
}

#[test]
fn required_cleanup_fails() {
    let mut outcome = green();
    outcome.cleanup_required = Some(true);
    assert_eq!(
        failed_success_check(&outcome),
        Some(SuccessCheck::CleanupRequired)
    );
    outcome.cleanup_required = Some(false);
    assert!(overall_success(&outcome));
}

#[test]
fn a_quarantine_fails() {
    let mut outcome = green();
    outcome.quarantined = Some(true);
    assert_eq!(
        failed_success_check(&outcome),
        Some(SuccessCheck::Quarantined)
    );
}

#[test]
fn only_active_or_released_leases_pass() {
    for (state, passes) in [
        ("active", true),
        ("released", true),
        ("cleanup_required", false),
        ("lost", false),
    ] {
        let mut outcome = green();
        outcome.lease_state = Some(state.to_owned());
        assert_eq!(overall_success(&outcome), passes, "lease_state {state}");
    }
    assert_eq!(
        failed_success_check_value(&json!({"ok": true, "lease_state": 3})),
        Some(SuccessCheck::LeaseState)
    );
    assert!(overall_success_value(
        &json!({"ok": true, "lease_state": null})
    ));
}

#[test]
fn unknown_or_partial_effects_fail() {
    for (status, passes) in [
        (SideEffectStatus::NotStarted, true),
        (SideEffectStatus::Committed, true),
        (SideEffectStatus::Partial, false),
        (SideEffectStatus::Unknown, false),
    ] {
        let mut outcome = green();
        outcome.side_effect_status = Some(status);
        assert_eq!(overall_success(&outcome), passes, "{status:?}");
    }
}

#[test]
fn unknown_hardware_state_fails() {
    let mut outcome = green();
    outcome.hardware_state = Some(HardwareState::Unknown);
    assert_eq!(
        failed_success_check(&outcome),
        Some(SuccessCheck::HardwareState)
    );
    outcome.hardware_state = Some(HardwareState::Unchanged);
    assert!(overall_success(&outcome));
}

#[test]
fn the_first_failing_check_is_named_in_order() {
    let document =
        json!({"ok": true, "audit_ok": false, "quarantined": true, "hardware_state": "unknown"});
    assert_eq!(
        failed_success_check_value(&document).map(SuccessCheck::name),
        Some("audit_ok")
    );
}

#[test]
fn ok_must_be_the_boolean_true() {
    assert!(!overall_success_value(&json!({"ok": "true"})));
    assert!(!overall_success_value(&json!({})));
}

#[test]
fn not_contacted_sets_the_whole_marker() {
    let value = Outcome::refused("flash_firmware", ErrorType::DebuggerNotFound, "missing")
        .not_contacted()
        .to_value();
    assert_eq!(value["target_contacted"], json!(false));
    assert_eq!(value["side_effect_committed"], json!(false));
    assert_eq!(value["side_effect_status"], json!("not_started"));
    assert_eq!(value["hardware_state"], json!("unchanged"));
    assert_eq!(value["retry_safe"], json!(true));
}

#[test]
fn unset_fields_are_omitted_and_details_follow_flat() {
    let value = Outcome::ok("debugger_info", "fine")
        .with("backend", "openocd")
        .with("probe_id", Value::Null)
        .to_value();
    let keys: Vec<&str> = value
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["ok", "tool", "summary", "backend", "probe_id"]);
}

#[test]
#[should_panic(expected = "envelope field")]
fn a_detail_cannot_shadow_a_core_field() {
    let _ = green().with("ok", false);
}

#[test]
fn likely_causes_keep_at_most_three() {
    let outcome = green().with_causes(["a", "b", "c", "d"]);
    assert_eq!(outcome.likely_causes, ["a", "b", "c"]);
}

fn marked(mut outcome: Outcome) -> (Option<bool>, Option<SideEffectStatus>, Option<bool>) {
    mark_side_effect(&mut outcome);
    (
        outcome.side_effect_committed,
        outcome.side_effect_status,
        outcome.retry_safe,
    )
}

#[test]
fn a_successful_effect_is_committed_and_not_retry_safe() {
    assert_eq!(
        marked(Outcome::ok("flash_firmware", "done")),
        (Some(true), Some(SideEffectStatus::Committed), Some(false))
    );
}

#[test]
fn a_target_that_stopped_abnormally_still_committed_the_effect() {
    let mut outcome = Outcome::refused("debug_continue", ErrorType::UnexpectedStop, "hard fault");
    outcome.target_ok = Some(false);
    assert_eq!(marked(outcome).1, Some(SideEffectStatus::Committed));
}

#[test]
fn refusals_before_any_effect_are_not_started_and_retry_safe() {
    for error in [
        "permission_denied",
        "invalid_argument",
        "not_supported",
        "resource_busy",
        "artifact_not_found",
    ] {
        assert_eq!(
            marked(Outcome::refused(
                "reset_target",
                ErrorType::layer(error),
                "no"
            )),
            (Some(false), Some(SideEffectStatus::NotStarted), Some(true)),
            "{error}"
        );
    }
}

#[test]
fn a_quarantine_refusal_is_not_started_but_not_retry_safe() {
    assert_eq!(
        marked(Outcome::refused(
            "reset_target",
            ErrorType::ResourceQuarantined,
            "no"
        )),
        (Some(false), Some(SideEffectStatus::NotStarted), Some(false))
    );
}

#[test]
fn an_explicit_no_commit_is_not_started() {
    let mut outcome = Outcome::refused("com_write", ErrorType::SerialWriteFailed, "no");
    outcome.side_effect_committed = Some(false);
    assert_eq!(
        marked(outcome),
        (Some(false), Some(SideEffectStatus::NotStarted), Some(true))
    );
}

#[test]
fn an_explicit_commit_on_failure_is_partial() {
    let mut outcome = Outcome::refused("com_write", ErrorType::SerialWriteIncomplete, "no");
    outcome.side_effect_committed = Some(true);
    assert_eq!(
        marked(outcome),
        (Some(true), Some(SideEffectStatus::Partial), Some(false))
    );
}

#[test]
fn any_other_failure_is_unknown() {
    assert_eq!(
        marked(Outcome::refused(
            "flash_firmware",
            ErrorType::Timeout,
            "slow"
        )),
        (None, Some(SideEffectStatus::Unknown), Some(false))
    );
}

#[test]
fn an_existing_status_is_left_alone() {
    let outcome =
        Outcome::refused("flash_firmware", ErrorType::DebuggerNotFound, "x").not_contacted();
    assert_eq!(
        marked(outcome),
        (Some(false), Some(SideEffectStatus::NotStarted), Some(true))
    );
}

#[test]
fn tools_without_effects_are_not_marked() {
    assert_eq!(
        marked(Outcome::ok("debugger_info", "fine")),
        (None, None, None)
    );
}
