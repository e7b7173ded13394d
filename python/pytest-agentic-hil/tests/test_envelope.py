"""overall_success: the same nine checks, in the same order, as the server's continue predicate."""

import pytest

from pytest_agentic_hil import failed_success_check, overall_success

GOOD = {"ok": True, "tool": "probe_target", "summary": "ok"}


def test_an_ok_envelope_with_nothing_pending_succeeds():
    assert overall_success(GOOD)
    assert failed_success_check(GOOD) is None


@pytest.mark.parametrize(
    "field, value",
    [
        ("ok", False),
        ("ok", None),
        ("target_ok", False),
        ("audit_ok", False),
        ("cleanup_ok", False),
        ("cleanup_required", True),
        ("quarantined", True),
        ("lease_state", "blocked"),
        ("lease_state", 3),
        ("side_effect_status", "unknown"),
        ("side_effect_status", "partial"),
        ("hardware_state", "unknown"),
    ],
)
def test_one_bad_field_stops_the_caller_and_is_named(field, value):
    envelope = dict(GOOD, **{field: value})
    assert not overall_success(envelope)
    assert failed_success_check(envelope) == field


@pytest.mark.parametrize(
    "field, value",
    [
        ("lease_state", "active"),
        ("lease_state", "released"),
        ("lease_state", None),
        ("side_effect_status", "committed"),
        ("side_effect_status", "not_started"),
        ("hardware_state", "changed"),
        ("target_ok", True),
    ],
)
def test_normal_values_let_the_caller_go_on(field, value):
    assert overall_success(dict(GOOD, **{field: value}))


def test_the_first_failing_check_in_order_is_reported():
    envelope = dict(GOOD, ok=False, hardware_state="unknown", quarantined=True)
    assert failed_success_check(envelope) == "ok"
    assert failed_success_check(dict(envelope, ok=True)) == "quarantined"
