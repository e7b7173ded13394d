//! Fields that results of more than one family of tools carry alike: mostly what the gate's pipeline
//! adds whatever the tool (the lease it held, a busy device's holder, a refused permission or
//! argument, recovery after an incident), the session a call ran in, and a few names several families
//! use the same way.

use serde_json::{Map, Value, json};

use super::{absent_or, count, flag, lines, list, number, object, owner, text};

/// The shared fields, typed.
pub(super) fn evidence() -> Value {
    let mut fields = Map::new();
    for part in [ownership(), refusal(), shared()] {
        if let Value::Object(part) = part {
            fields.extend(part);
        }
    }
    Value::Object(fields)
}

/// The run, lease and devices a call held or waited for, and recovery after an incident.
fn ownership() -> Value {
    json!({
        "kind": text(),
        "id": text(),
        "configured_devices": lines(),
        "resource": text(),
        "waited_s": number(),
        "holder": owner(),
        "held_since": text(),
        "heartbeat_at": text(),
        "lease_id": text(),
        "resources": lines(),
        "safe_state_confirmed": flag(),
        "processes_reaped": flag(),
        "cleanup_reasons": lines(),
        "quarantine_id": {"type": ["null", "string"]},
        "recovery": {
            "type": "object",
            "properties": {
                "attempted": flag(),
                "actions": list(),
                "outcome": text(),
                "incident_resolved": flag(),
                "incident_open": flag(),
                "summary": text(),
            },
        },
        "incident_stood_down": flag(),
        "quarantine_guidance": {"type": "array", "items": {"type": "object"}},
        "max_hold_s": count(),
        "hold_expires_at": text(),
        "closed_because": {
            "type": "object",
            "properties": {
                "reason": text(),
                "hold": text(),
                "max_hold_s": count(),
                "held_since": text(),
            },
        },
        "holds_expired": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "hold": text(),
                    "reason": text(),
                    "summary": text(),
                    "closed_with": {"type": "object"},
                    "closed": flag(),
                    "error_type": {"type": ["null", "string"]},
                    "max_hold_s": count(),
                    "held_since": text(),
                    "closed_at": text(),
                    "report_path": {"type": ["null", "string"]},
                    "stop_attempt": count(),
                    "retry_at": text(),
                    "gave_up": flag(),
                },
            },
        },
    })
}

/// Why a call was refused: the permission, the argument, the configuration line, the backend's answer.
fn refusal() -> Value {
    json!({
        "field": text(),
        "permission": text(),
        "validator": text(),
        "backend_error_type": text(),
        "returncode": {"type": ["integer", "null"]},
        "reason": text(),
        "operator_command": text(),
        "backend_error": text(),
        "line": count(),
        "column": count(),
        "key": text(),
    })
}

/// Names several families use the same way: the artifact, the session, the port, the backend.
fn shared() -> Value {
    json!({
        "artifact": {
            "type": "object",
            "properties": {
                "source": text(),
                "path": text(),
                "resolved_path": text(),
                "sha256": text(),
                "integrity_sha256": text(),
                "size_bytes": count(),
                "validation": object(),
                "artifact_id": text(),
                "original_filename": text(),
                "source_path": text(),
            },
        },
        // The artifact checks that ran, by name (which ones depends on the format).
        "validation": object(),
        "session": absent_or(json!({
            "session_active": flag(),
            "started_at": text(),
            "adapter": text(),
            "adapter_status": {"type": ["object", "string"]},
            "backend": text(),
            "listen_only": flag(),
            "fd": flag(),
            "queued_frames": count(),
            "dropped_frames": count(),
            "received_frames": count(),
            "log_path": text(),
            "adapter_error": object(),
            "device": text(),
            "rx_buffer_bytes": count(),
            "overflow_bytes": count(),
            "modem_lines": object(),
            "node": text(),
            "session_id": text(),
            "status": text(),
            "mode": text(),
            "artifact": object(),
            "breakpoints": list(),
            "stop_reason": {"type": ["null", "string"]},
            "gdb_port": count(),
            "load_phase": text(),
            "firmware_load_status": text(),
        })),
        "until_matched": flag(),
        "already_active": flag(),
        "command": text(),
        "was_active": flag(),
        "port_id": text(),
        "identity": {
            "type": "object",
            "properties": {
                "device": text(),
                "status": text(),
                "summary": text(),
                "warning": text(),
                "expected_vid": count(),
                "expected_pid": count(),
            },
        },
        "configured_device": text(),
        "bytes_written": count(),
        "backend": text(),
        "mode": text(),
        "version": text(),
    })
}
