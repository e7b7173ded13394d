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

// One flag a line, so the table reads as one.
#[rustfmt::skip]
#[test]
fn a_flag_that_fails_a_result_is_named_as_its_check_and_its_passing_value_passes() {
    use HardwareState::{Unchanged, Unknown};
    type Edit = fn(&mut Outcome);
    let cases: [(SuccessCheck, Edit, Option<Edit>); 6] = [
        (SuccessCheck::TargetOk, |o| o.target_ok = Some(false), Some(|o| o.target_ok = Some(true))),
        (SuccessCheck::AuditOk, |o| o.audit_ok = Some(false), None),
        (SuccessCheck::CleanupOk, |o| o.cleanup_ok = Some(false), None),
        (SuccessCheck::CleanupRequired, |o| o.cleanup_required = Some(true), Some(|o| o.cleanup_required = Some(false))),
        (SuccessCheck::Quarantined, |o| o.quarantined = Some(true), None),
        (SuccessCheck::HardwareState, |o| o.hardware_state = Some(Unknown), Some(|o| o.hardware_state = Some(Unchanged))),
    ];
    for (check, failing, passing) in cases {
        let mut outcome = green();
        failing(&mut outcome);
        assert_eq!(failed_success_check(&outcome), Some(check), "{check:?}");
        if let Some(passing) = passing {
            passing(&mut outcome);
            assert!(overall_success(&outcome), "{check:?} passing");
        }
    }
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

fn with_commit(mut outcome: Outcome, committed: bool) -> Outcome {
    outcome.side_effect_committed = Some(committed);
    outcome
}

#[test]
fn a_target_that_stopped_abnormally_still_committed_the_effect() {
    let mut outcome = Outcome::refused("debug_continue", ErrorType::UnexpectedStop, "hard fault");
    outcome.target_ok = Some(false);
    assert_eq!(marked(outcome).1, Some(SideEffectStatus::Committed));
}

// One outcome a line, so the table reads as one.
#[rustfmt::skip]
#[test]
fn an_outcome_is_marked_committed_not_started_partial_or_unknown_as_its_effect_went() {
    use SideEffectStatus::{Committed, NotStarted, Partial, Unknown};
    let refused = |tool, error| Outcome::refused(tool, error, "no");
    let not_started = (Some(false), Some(NotStarted), Some(true));
    let cases = [
        ("a successful effect", Outcome::ok("flash_firmware", "done"), (Some(true), Some(Committed), Some(false))),
        ("a refusal by permission", refused("reset_target", ErrorType::layer("permission_denied")), not_started),
        ("a refusal of an argument", refused("reset_target", ErrorType::layer("invalid_argument")), not_started),
        ("a refusal as unsupported", refused("reset_target", ErrorType::layer("not_supported")), not_started),
        ("a refusal as busy", refused("reset_target", ErrorType::layer("resource_busy")), not_started),
        ("a refusal of no artifact", refused("reset_target", ErrorType::layer("artifact_not_found")), not_started),
        ("a quarantine refusal", refused("reset_target", ErrorType::ResourceQuarantined), (Some(false), Some(NotStarted), Some(false))),
        ("an explicit no commit", with_commit(refused("com_write", ErrorType::SerialWriteFailed), false), not_started),
        ("an explicit commit on failure", with_commit(refused("com_write", ErrorType::SerialWriteIncomplete), true), (Some(true), Some(Partial), Some(false))),
        ("any other failure", refused("flash_firmware", ErrorType::Timeout), (None, Some(Unknown), Some(false))),
        ("an existing status", refused("flash_firmware", ErrorType::DebuggerNotFound).not_contacted(), not_started),
        ("a tool without effects", Outcome::ok("debugger_info", "fine"), (None, None, None)),
    ];
    for (case, outcome, expected) in cases {
        assert_eq!(marked(outcome), expected, "{case}");
    }
}

#[test]
fn an_interrupted_result_keeps_its_effect_and_drops_the_earlier_advice() {
    let mut outcome = Outcome::ok("flash_firmware", "Flashed.").with("image_written", true);
    outcome.side_effect_status = Some(SideEffectStatus::Committed);
    outcome.next_step = Some("Read the port.".into());
    outcome.interrupt("Cancelled while the capture waited.");
    let value = outcome.to_value();
    assert_eq!(value["ok"], json!(false));
    assert_eq!(value["error_type"], json!("interrupted"));
    assert_eq!(value["cancelled"], json!(true));
    assert_eq!(
        value["summary"],
        json!("Cancelled while the capture waited.")
    );
    assert_eq!(value["side_effect_status"], json!("committed"));
    assert_eq!(value["image_written"], json!(true));
    assert!(value.get("next_step").is_none(), "{value}");
}
