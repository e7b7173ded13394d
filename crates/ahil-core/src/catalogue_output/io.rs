//! The COM, CAN and power-supply tools: sessions, frames and bytes, supply readings.

use serde_json::{Value, json};

use super::{count, flag, implicit_run, lines, list, number, object, text};

/// Fields the COM tools share.
pub(super) fn com_family() -> Value {
    json!({
        "run": implicit_run(),
        "data": {
            "type": "object",
            "properties": {
                "hex": text(),
                "text": text(),
                "encoding": text(),
            },
        },
        "audit_error": {
            "type": "object",
            "properties": {
                "error_type": text(),
                "summary": text(),
            },
        },
    })
}

/// Fields the CAN tools share.
pub(super) fn can_family() -> Value {
    json!({
        "bus_id": text(),
        "configured_buses": lines(),
        "adapter": text(),
        "adapter_result": {
            "type": "object",
            "properties": {
                "ok": flag(),
                "queued_frames": count(),
                "dropped_frames": count(),
                "error_type": text(),
                "summary": text(),
                "protocol_version": count(),
                "backend": text(),
                "command": {"type": ["array", "string"]},
                "listen_only": flag(),
                "listen_only_enforcement": text(),
                "channel_open": flag(),
                "tool": text(),
                "bus_id": text(),
                "adapter": text(),
            },
        },
        "stderr_tail": text(),
        "first_contact_at": text(),
        "first_contact_by": text(),
        "run": implicit_run(),
    })
}

/// Fields the power-supply tools share.
pub(super) fn power_family() -> Value {
    json!({
        "run": implicit_run(),
        "read_back": {
            "type": "object",
            "properties": {
                "output_on": flag(),
                "voltage_v": text(),
                "current_a": text(),
            },
        },
        "supply_id": text(),
        "supply_type": text(),
        "channel": count(),
        "model": text(),
        "firmware": text(),
        "limits": object(),
        "protection": object(),
        "last_known_output": {
            "type": "object",
            "properties": {
                "channel": {"type": ["integer", "null"]},
                "output_on": {"type": ["boolean", "null"]},
                "read_at": {"type": ["null", "string"]},
            },
        },
        "measured": {
            "type": "object",
            "properties": {
                "voltage_v": text(),
                "current_a": text(),
            },
        },
        "channels": {"type": "array", "items": {"type": "object"}},
        "cause": text(),
        "missing_limits": lines(),
        "limit": text(),
        "stored_set_point": flag(),
    })
}

/// `com_ports_list`'s own fields.
pub(super) fn com_ports_list() -> Value {
    json!({
        "ports": object(),
        "available_com_ports": {
            "type": "object",
            "properties": {
                "ok": flag(),
                "tool": text(),
                "ports": list(),
                "legacy_stubs_hidden": number(),
                "summary": text(),
            },
        },
    })
}

/// `com_session_start`'s own fields.
pub(super) fn com_session_start() -> Value {
    json!({
        "power_supply": text(),
        "quarantine_scope": text(),
        "configured_ports": lines(),
    })
}

/// `com_read`'s own fields.
pub(super) fn com_read() -> Value {
    json!({
        "bytes_read": count(),
        "buffer_remaining_bytes": count(),
        "overflow_bytes": count(),
        "matched": text(),
    })
}

/// `can_buses_list`'s own fields.
pub(super) fn can_buses_list() -> Value {
    json!({
        "buses": object(),
        "supported_adapters": lines(),
    })
}

/// `can_session_start`'s own fields.
pub(super) fn can_session_start() -> Value {
    json!({
        "frames_drained": count(),
        "link_state": {
            "type": "object",
            "properties": {
                "interface": text(),
                "info_kind": {"type": ["null", "string"]},
                "up": flag(),
                "operstate": text(),
                "ctrlmode": list(),
            },
        },
        "listen_only_requested": flag(),
        "listen_only_confirmed": flag(),
        "cleanup_confirmed": flag(),
        "participant": text(),
    })
}

/// `can_session_stop`'s own fields.
pub(super) fn can_session_stop() -> Value {
    json!({
        "close_result": {
            "type": "object",
            "properties": {
                "safe_state_confirmed": flag(),
                "process_reaped": flag(),
                "report": object(),
            },
        },
        "adapter_error": {
            "type": "object",
            "properties": {
                "error_type": text(),
                "summary": text(),
            },
        },
    })
}

/// `can_send`'s own fields.
pub(super) fn can_send() -> Value {
    json!({
        "frame": {
            "type": "object",
            "properties": {
                "id": count(),
                "id_hex": text(),
                "extended": flag(),
                "rtr": flag(),
                "data_hex": text(),
                "dlc": count(),
            },
        },
        "bytes_requested": count(),
        "allowed_lengths": {"type": "array", "items": {"type": "number"}},
        "listen_only": flag(),
        "listen_only_enforcement": text(),
    })
}

/// `can_read`'s own fields.
pub(super) fn can_read() -> Value {
    json!({
        "frames_read": count(),
        "frames": {"type": "array", "items": {"type": "object"}},
        "dropped_frames": count(),
        "max_buffer_frames": count(),
        "matched_id": count(),
    })
}

/// `power_supply_status`'s own fields.
pub(super) fn power_supply_status() -> Value {
    json!({
        "writes_refused_reason": {"type": ["null", "string"]},
    })
}

/// `power_supply_set`'s own fields.
pub(super) fn power_supply_set() -> Value {
    json!({
        "requested": {
            "type": ["object", "string"],
            "properties": {
                "voltage_v": text(),
                "current_a": text(),
            },
        },
        "expected_idn_serial": text(),
        "reported_idn_serial": text(),
    })
}

/// `power_supply_output`'s own fields.
pub(super) fn power_supply_output() -> Value {
    json!({
        "requested": {
            "type": ["object", "string"],
            "properties": {"output_on": {"type": "boolean"}},
        },
        "was_on": flag(),
    })
}

/// `power_supply_cycle`'s own fields.
pub(super) fn power_supply_cycle() -> Value {
    json!({
        "requested": {
            "type": "object",
            "properties": {"output_on": {"type": "boolean"}},
        },
        "off_s": number(),
    })
}
