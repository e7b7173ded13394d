"""The plugin's check of a result against its tool's outputSchema names the first bad field."""

from pytest_agentic_hil.schema import first_violation

SCHEMA = {
    "type": "object",
    "required": ["ok", "tool", "summary"],
    "properties": {
        "ok": {"type": "boolean"},
        "tool": {"type": "string"},
        "summary": {"type": "string"},
        "hardware_state": {"enum": ["unchanged", "unknown"]},
        "bytes_read": {"type": "integer", "minimum": 0},
        "data": {"type": "object", "properties": {"text": {"type": "string"}}},
        "frames": {"type": "array", "items": {"type": "object", "properties": {"dlc": {"type": "integer"}}}},
    },
}
GOOD = {"ok": True, "tool": "com_read", "summary": "Read.", "bytes_read": 2, "data": {"text": "ok"}, "extra": 1}


def test_a_result_matching_its_schema_passes_with_undeclared_fields_left_open():
    assert first_violation(SCHEMA, GOOD) is None


def test_a_wrongly_typed_declared_field_is_named_by_its_path():
    assert first_violation(SCHEMA, dict(GOOD, bytes_read="2")) == "`bytes_read` (type)"
    assert first_violation(SCHEMA, dict(GOOD, data={"text": 7})) == "`data.text` (type)"
    assert first_violation(SCHEMA, dict(GOOD, frames=[{"dlc": 8}, {"dlc": "8"}])) == "`frames[1].dlc` (type)"
    assert first_violation(SCHEMA, dict(GOOD, bytes_read=True)) == "`bytes_read` (type)"


def test_a_missing_envelope_field_and_a_value_outside_its_enum_are_refused():
    missing = {k: v for k, v in GOOD.items() if k != "summary"}
    assert first_violation(SCHEMA, missing) == "`summary` (required)"
    assert first_violation(SCHEMA, dict(GOOD, hardware_state="fine")) == "`hardware_state` (enum)"
    assert first_violation(SCHEMA, dict(GOOD, bytes_read=-1)) == "`bytes_read` (minimum)"
