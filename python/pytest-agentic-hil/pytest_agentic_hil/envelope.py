"""The continue predicate over a result envelope, the same nine checks the server applies."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

Envelope = Mapping[str, Any]

_NORMAL_LEASE_STATES = ("active", "released")


def _checks() -> "list[tuple[str, Callable[[Any], bool]]]":
    # Evaluated in this order; the first that fails names the reason.
    return [
        ("ok", lambda v: v is True),
        ("target_ok", lambda v: v is not False),
        ("audit_ok", lambda v: v is not False),
        ("cleanup_ok", lambda v: v is not False),
        ("cleanup_required", lambda v: v is not True),
        ("quarantined", lambda v: v is not True),
        ("lease_state", lambda v: v is None or v in _NORMAL_LEASE_STATES),
        ("side_effect_status", lambda v: v not in ("unknown", "partial")),
        ("hardware_state", lambda v: v != "unknown"),
    ]


def failed_success_check(envelope: Envelope) -> Optional[str]:
    """The name of the first field that stops a caller from going on, or None when it may."""
    for field, passes in _checks():
        if not passes(envelope.get(field)):
            return field
    return None


def overall_success(envelope: Envelope) -> bool:
    """Whether a caller may go on: `ok` and a clean audit, no cleanup or quarantine pending, a lease
    in a normal state, and a known effect and hardware state."""
    return failed_success_check(envelope) is None
