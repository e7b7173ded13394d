//! The configuration tools, `artifact_upload` and `server_upgrade`: what they wrote, where, and what to do next.

use serde_json::{Value, json};

use super::{absent_or, count, flag, implicit_run, lines, list, number, object, text};

/// Fields the configuration tools share.
pub(super) fn config_family() -> Value {
    json!({
        "created_entries": lines(),
        "redirected_entries": lines(),
        "permissions_changed": lines(),
        "permission_changes": {"type": "array", "items": {"type": "object"}},
        "provenance": absent_or(json!({
            "last_modified_by": text(),
            "last_modified_via": text(),
            "last_modified_at": text(),
            "last_modified_keys": list(),
            "modification_count": count(),
            "created_by": text(),
            "created_via": text(),
            "created_at": text(),
            "agentic_hil_version": text(),
        })),
        "reload_required": flag(),
        "next_steps": lines(),
        "path": text(),
        "workspace_root": text(),
        "permissions_in_force": {
            "type": "object",
            "properties": {
                "allow_config_write": flag(),
                "allow_config_description_write": flag(),
                "allow_config_permissions_write": flag(),
                "allow_recover": flag(),
                "allow_upgrade": flag(),
                "debuggers": object(),
                "com_ports": object(),
                "can_buses": object(),
                "debug": object(),
                "artifacts": object(),
            },
        },
        "reference": text(),
    })
}

/// `project_config_describe`'s own fields.
pub(super) fn project_config_describe() -> Value {
    json!({
        "document_source": text(),
        "config_version": count(),
        "rights": {"type": "array", "items": {"type": "object"}},
        "regeneration": {
            "type": "object",
            "properties": {
                "permission": text(),
                "key": text(),
                "granted": flag(),
                "covers": text(),
            },
        },
        "writable_keys": {"type": "array", "items": {"type": "object"}},
        "locked_keys": {"type": "array", "items": {"type": "object"}},
        "new_entry_patterns": {"type": "array", "items": {"type": "object"}},
        "open_holds": absent_or(json!({
            "devices": list(),
            "run": object(),
        })),
        "writes_blocked_by_open_run": flag(),
        "max_holds": {
            "type": "object",
            "properties": {
                "max_run_s": {"type": ["integer", "null"]},
                "max_session_s": {"type": ["integer", "null"]},
                "set_by": text(),
            },
        },
    })
}

/// `project_config_create`'s own fields.
pub(super) fn project_config_create() -> Value {
    json!({
        "created": flag(),
        "state_root": text(),
        "optional_override": text(),
        "permissions": object(),
        "narrowed_permissions": lines(),
        "dropped_entries": list(),
        "closed_entries": lines(),
        "hardware_discovery": {
            "type": "object",
            "properties": {
                "ran": list(),
                "debuggers": list(),
                "com_ports": list(),
                "skeleton": flag(),
            },
        },
    })
}

/// `project_config_set`'s own fields.
pub(super) fn project_config_set() -> Value {
    json!({
        "keys": lines(),
        "changes": {"type": "array", "items": {"type": "object"}},
        "written": flag(),
        "value_schema": {
            "type": "object",
            "properties": {
                // A JSON schema node's `type`: one name or a list of them.
                "type": {"type": ["array", "string"]},
                "default": {
                    "type": ["array", "boolean", "null", "number", "object", "string"],
                },
                "minimum": number(),
            },
        },
        "permissions_frozen": flag(),
        "open_holds": lines(),
    })
}

/// `project_config_adopt_hardware`'s own fields.
pub(super) fn project_config_adopt_hardware() -> Value {
    json!({
        "candidate_probe_ids": lines(),
        "run": implicit_run(),
        "debugger_id": text(),
        "com_port_id": {"type": ["null", "string"]},
        "creates_com_port": flag(),
        "carried": {"type": "array", "items": {"type": "object"}},
        "already_current": {"type": "array", "items": {"type": "object"}},
        "kept": list(),
        "operator_only": list(),
        "unavailable": {"type": "array", "items": {"type": "object"}},
        "applied": flag(),
        "write": {
            "type": "object",
            "properties": {
                "path": text(),
                "keys": list(),
            },
        },
    })
}

/// `project_config_reload_description`'s own fields.
pub(super) fn project_config_reload_description() -> Value {
    json!({
        "reloaded": flag(),
        "description_changed": flag(),
        "description_changes": lines(),
        "reloaded_sections": lines(),
        "not_reloaded_sections": {"type": "array", "items": {"type": "object"}},
        "permissions_reloaded": flag(),
        "permission_differences": lines(),
        "restart_required_for": lines(),
        "open_holds": lines(),
    })
}

/// `artifact_upload`'s own fields.
pub(super) fn artifact_upload() -> Value {
    json!({
        "artifact_id": text(),
    })
}

/// `server_upgrade`'s own fields.
pub(super) fn server_upgrade() -> Value {
    json!({
        "reinstall_command": text(),
        "open_holds": lines(),
        "upgraded_on_disk": flag(),
        "restart_required": flag(),
        "manager": text(),
        "previous_version": text(),
        "available_version": text(),
        "running_version": text(),
    })
}
