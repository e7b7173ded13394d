//! The typed debug tools: the session, its stops and the symbols read through it.

use serde_json::{Value, json};

use super::{count, flag, implicit_run, lines, object, text};

/// Fields the debug tools share: the session, the stop, the symbol read.
pub(super) fn debug_family() -> Value {
    json!({
        "run": implicit_run(),
        "stop_reason": text(),
        "target_stop_reason": text(),
        "stop": {
            "type": "object",
            "properties": {
                "backend_stop_reason": text(),
                "backend_breakpoint_id": text(),
                "breakpoint_expected": flag(),
                "breakpoint_id": count(),
                "breakpoint": object(),
                "stop_reason": text(),
                "frame": object(),
                "exception_type": text(),
                "signal": object(),
            },
        },
        "halt_confirmed": flag(),
        "target_state": text(),
        "symbol": text(),
        "address": text(),
        "address_value": count(),
        "size_bytes": count(),
        "resolved_from": text(),
        "symbol_source": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "sha256": {"type": "string"}},
        },
        "active": flag(),
        "status": text(),
    })
}

/// `debug_start_session`'s own fields.
pub(super) fn debug_start_session() -> Value {
    json!({
        "listen_addresses": lines(),
        "server_output_tail": lines(),
        "load_phase": text(),
        "firmware_load_status": text(),
        "server_stderr_tail": lines(),
    })
}

/// `debug_stop_session`'s own fields.
pub(super) fn debug_stop_session() -> Value {
    json!({
        "halt_not_confirmed": flag(),
        "halt_confirmed_by": text(),
        "detach_resume_guard_confirmed": flag(),
        "gdb_disconnected": flag(),
    })
}

/// `debug_set_breakpoint`'s own fields.
pub(super) fn debug_set_breakpoint() -> Value {
    json!({
        "breakpoint": {
            "type": "object",
            "properties": {
                "id": count(),
                "backend_id": text(),
                "location": text(),
                "gdb_location": text(),
            },
        },
    })
}

/// `debug_list_breakpoints`'s own fields.
pub(super) fn debug_list_breakpoints() -> Value {
    json!({
        "breakpoints": {"type": "array", "items": {"type": "object"}},
    })
}

/// `debug_clear_breakpoints`'s own fields.
pub(super) fn debug_clear_breakpoints() -> Value {
    json!({
        "cleared": count(),
        "backend_reconciled": flag(),
    })
}

/// `debug_continue`'s own fields.
pub(super) fn debug_continue() -> Value {
    json!({
        "waited_ms": count(),
        "halt_requested": flag(),
        "halt_command_acknowledged": flag(),
        "target_error_type": text(),
        "suggested_actions": lines(),
    })
}

/// `debug_symbol_value`'s own fields.
pub(super) fn debug_symbol_value() -> Value {
    json!({
        "hex": text(),
        "byte_order": text(),
        "byte_order_from": text(),
        "value_unsigned": {"type": "integer"},
        "value_signed": {"type": "integer"},
        "symbol_table_lookup": text(),
        "hex_problem": text(),
    })
}

/// `debug_dump_symbol_ihex`'s own fields.
pub(super) fn debug_dump_symbol_ihex() -> Value {
    json!({
        "output": {
            "type": "object",
            "properties": {
                "path": text(),
                "resolved_path": text(),
            },
        },
    })
}
