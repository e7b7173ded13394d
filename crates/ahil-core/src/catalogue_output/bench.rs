//! Probe, flash and reset; bench runs and leases; reports, recovery and the test reactor.

use serde_json::{Value, json};

use super::{absent_or, count, flag, implicit_run, lines, list, number, object, owner, text};

/// Fields these tools share: the run, the probe's confirmation, the reactor run record.
pub(super) fn bench_family() -> Value {
    json!({
        "declared_devices": lines(),
        "run_label": {"type": ["null", "string"]},
        "run_started_at": text(),
        "owner": owner(),
        "devices": {"type": "array", "items": {"type": "object"}},
        "held_devices": lines(),
        "probe_id": {"type": ["null", "string"]},
        "supported_versions": text(),
        "timed_out": flag(),
        "success_confirmed": flag(),
        "driver_elapsed_ms": count(),
        "operation_result": {
            "type": "object",
            "properties": {
                "confirmed": flag(),
                "matched_success_text": list(),
                "expected_success_text": list(),
            },
        },
        "backend_message": text(),
        "held_by": text(),
        "probe_rs_message": text(),
        "core_state": text(),
        "state": text(),
        "detached": flag(),
        "name": text(),
        "test_config_path": text(),
        "canonical_report_path": text(),
        "failed_step": {"type": ["integer", "null"]},
        "updated_at": text(),
        "stop_requested_at": {"type": ["null", "string"]},
        "progress": {
            "type": "object",
            "properties": {
                "step": count(),
                "action": text(),
                "route": text(),
            },
        },
        "run_ok": flag(),
        "stopped_after_step": {"type": ["integer", "null"]},
        "run_finished_at": text(),
    })
}

/// `debugger_info`'s own fields.
pub(super) fn debugger_info() -> Value {
    json!({
        "executable": text(),
        "run": implicit_run(),
        "driver_log": text(),
    })
}

/// `bench_run_start`'s own fields.
pub(super) fn bench_run_start() -> Value {
    json!({
        "warnings": lines(),
        "reclaimed": {"type": "array", "items": {"type": "object"}},
    })
}

/// `bench_run_stop`'s own fields.
pub(super) fn bench_run_stop() -> Value {
    json!({
        "released_devices": lines(),
        "run_was_active": flag(),
        "open_leases": lines(),
        "still_held_devices": lines(),
    })
}

/// `bench_run_status`'s own fields.
pub(super) fn bench_run_status() -> Value {
    json!({
        "run_active": flag(),
    })
}

/// `debugger_probes_list`'s own fields.
pub(super) fn debugger_probes_list() -> Value {
    json!({
        "probes": {"type": "array", "items": {"type": "object"}},
        "complete": flag(),
        "note": text(),
        "run": implicit_run(),
        "com_port_device": text(),
    })
}

/// `probe_target`'s own fields.
pub(super) fn probe_target() -> Value {
    json!({
        "run": implicit_run(),
        "target_detected": flag(),
        "backend_warnings": lines(),
        "target": text(),
    })
}

/// `reset_target`'s own fields.
pub(super) fn reset_target() -> Value {
    json!({
        "run": implicit_run(),
        "supported_modes": lines(),
    })
}

/// `get_last_report`'s own fields.
pub(super) fn get_last_report() -> Value {
    json!({
        "report": object(),
        "workspace_report_state": text(),
    })
}

/// `hardware_recover`'s own fields.
pub(super) fn hardware_recover() -> Value {
    json!({
        "physical_check_reasons": lines(),
        "agent_clearable_reasons": list(),
        "was_quarantined": flag(),
        "nothing_to_recover": flag(),
    })
}

/// `test_reactor_status`'s own fields.
pub(super) fn test_reactor_status() -> Value {
    json!({
        "run": text(),
        "runs": {"type": "array", "items": {"type": "object"}},
        "active_runs": list(),
    })
}

/// `test_reactor_stop`'s own fields.
pub(super) fn test_reactor_stop() -> Value {
    json!({
        "run": text(),
        "stop_requested": flag(),
    })
}

/// The operator's `sim_start`, `sim_stop` and `sim_status` fields.
pub(super) fn sim() -> Value {
    json!({
        "debugger": text(),
        "running": flag(),
        "was_running": flag(),
        "machine": text(),
        "vm_status": text(),
        "pid": count(),
        "image": text(),
    })
}

/// The operator's `agentic_hil_doctor` fields.
pub(super) fn doctor() -> Value {
    json!({
        "config_path": text(),
        "findings": {"type": "array", "items": {"type": "object"}},
        "unhealthy": list(),
        "bench_binding": object(),
        "state_root": object(),
        "report_state": object(),
        "warnings": list(),
        "standing_incidents": list(),
        "installation": object(),
        "mcp": object(),
        "target": object(),
        "debugger": object(),
        "debuggers": object(),
        "com_ports": object(),
        "can_buses": object(),
    })
}

/// `classify_last_error`'s own fields.
pub(super) fn classify_last_error() -> Value {
    json!({
        "source_tool": text(),
        "step_error_type": text(),
        "canonical_audit": object(),
    })
}

/// `flash_firmware`'s own fields.
pub(super) fn flash_firmware_fields() -> Value {
    json!({
        "verify": flag(),
        "reset_after_flash": flag(),
        "run": implicit_run(),
        "erase_abort_point": {
            "type": "object",
            "properties": {
                "reading": text(),
                "evidence_line": text(),
                "evidence_rule": text(),
            },
        },
        "programmer_output": {
            "type": "object",
            "properties": {
                "returncode": count(),
                "stdout": text(),
                "stderr": text(),
            },
        },
        "capture": {
            "type": "object",
            "properties": {
                "port_id": text(),
                "rtt_channel": text(),
                "debugger": text(),
                "control_block_address": text(),
                "text": text(),
                "matched": {"type": ["null", "string"]},
                "until": list(),
                "until_matched": flag(),
                "until_wait_s": number(),
                "bytes_read": count(),
                "overflow_bytes": count(),
                "data": object(),
                "capture_ms": count(),
                "error": object(),
            },
        },
        "image_written": flag(),
    })
}

/// `hardware_lease_status`'s own fields.
pub(super) fn lease_status_fields() -> Value {
    json!({
        "project_resource": text(),
        "owner_active": flag(),
        "owner_is_this_process": flag(),
        "bench_held": flag(),
        "standing_incidents": list(),
        "device_holds": {"type": "array", "items": {"type": "object"}},
        "snapshot_atomic": flag(),
        "blocked": flag(),
        "incident_stands": flag(),
        "auto_recoverable": flag(),
        "auto_recover_policy": text(),
        "lifecycle_state": text(),
        "record": absent_or(json!({
            "version": count(),
            "state": text(),
            "owner_marker": text(),
            "owner_pid": count(),
            "owner_started_at": text(),
            "frontend": text(),
            "quarantined_at": text(),
            "audit_ok": flag(),
            "config_sha256": text(),
            "project_resource": text(),
            "resources": list(),
            "updated_at": text(),
            "leases": list(),
            "quarantine_id": text(),
            "reason": text(),
            "cleanup_reasons": list(),
        })),
        "leases": {"type": "array", "items": {"type": "object"}},
        "labgrid": labgrid_status(),
    })
}

/// The `labgrid` part of `hardware_lease_status`: each configured place as the coordinator and
/// this gate see it.
fn labgrid_status() -> Value {
    let place = json!({
        "type": "object",
        "required": ["place", "devices", "summary"],
        "properties": {
            "place": text(),
            "devices": lines(),
            "summary": text(),
            "labgrid_owner": {"type": ["null", "string"]},
            "held_by_us": flag(),
            "holder": {"enum": ["this_server", "live_server", "dead_server"]},
            // `call`, `run`, `session`; each reservation's `token`, `owner`, `state` (docs/TOOLS.md).
            "held_for": lines(),
            "reservations": list(),
            "labgrid_unavailable": text(),
            "labgrid_place_not_found": flag(),
        },
    });
    json!({
        "type": "object",
        "properties": {
            "coordinator": text(),
            "user": text(),
            "places": {"type": "array", "items": place},
        },
    })
}

/// `test_reactor_run`'s own fields.
pub(super) fn reactor_run_fields() -> Value {
    json!({
        "run": text(),
        "steps": {"type": "array", "items": {"type": "object"}},
        "cleanup": {"type": "array", "items": {"type": "object"}},
        "cleanup_errors": list(),
        "test_config_sha256": text(),
        "step_error_type": text(),
        "validation_error": {
            "type": "object",
            "properties": {
                "error_type": text(),
                "step": count(),
                "field": text(),
                "route": {"type": ["null", "string"]},
                "action": text(),
                "summary": text(),
            },
        },
        "value": {
            "type": ["array", "boolean", "null", "number", "object", "string"],
        },
        "migration": object(),
        "allowed_values": {"type": "array", "items": {"type": ["number", "string"]}},
        "limit": number(),
        "expected_type": text(),
        "rejected_fields": lines(),
        "allowed_fields": lines(),
        "exactly_one_of": lines(),
        "at_least_one_of": lines(),
        "because_of": text(),
        "requires": text(),
        "exclusive_fields": lines(),
        "plan_version": count(),
        "requires_plan_version": count(),
        "route_keys": lines(),
    })
}
