//! The input schemas of the tools, and the bounds every number in them carries.

use serde_json::{Value, json};

// Every number a tool takes has a maximum, in its schema and so in the check before dispatch.
/// Seconds any COM or CAN read waits, as their actions clamp it.
pub(super) const MAX_READ_WAIT_S: u64 = 60;
/// Bytes one COM read or capture returns; the port's `max_buffer_bytes` bounds it further.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;
/// Frames one CAN read returns; the bus's `max_buffer_frames` bounds it further.
pub(super) const MAX_READ_FRAMES: u64 = 1024 * 1024;
/// Seconds a debug step may be given; the debugger's own `timeout_s` bounds it further.
pub(super) const MAX_DEBUG_TIMEOUT_S: u64 = 3600;
/// Highest supply channel number.
pub(super) const MAX_CHANNEL: u64 = 255;
/// Volts or amperes a set point may name; the supply's effective limit bounds it further.
pub(super) const MAX_SET_POINT: u64 = 1000;
/// Alternatives one wait names (`until`, `until_id`, a capture's `until`): it ends at the first.
const MAX_ALTERNATIVES: u64 = 8;
/// Largest integer an f64 holds exactly: a configuration number past it cannot be written back as sent.
pub(super) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

pub(super) fn hardware_recover_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "operator_statement": text("What the operator said about the bench, asked in chat and passed word for word; the ledger records it as theirs."),
            "accept_config_change": {
                "type": "boolean",
                "default": false,
                "description": "True only after the operator reviewed the two digests a config_changed refusal names; recorded in the ledger.",
            },
        },
        "additionalProperties": false,
    })
}

pub(super) fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// A string argument that may not be empty: a name, a path, a handle.
pub(super) fn text(about: &str) -> Value {
    json!({"type": "string", "minLength": 1, "description": about})
}

/// An integer from 1 to `max`: a count of what a read returns, a channel number.
fn from_one_to(max: u64, about: &str) -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": max, "description": about})
}

/// A number from 0 to `max`: seconds to wait, a set point.
fn from_zero_to(max: u64, about: &str) -> Value {
    json!({"type": "number", "minimum": 0, "maximum": max, "description": about})
}

/// `item`, or a list of 1 to [`MAX_ALTERNATIVES`] of them: what a wait ends at, the first of them.
fn one_or_several(item: &Value, about: &str) -> Value {
    json!({
        "oneOf": [item, {"type": "array", "minItems": 1, "maxItems": MAX_ALTERNATIVES, "items": item}],
        "description": about,
    })
}

/// The text a read waits for, at most 256 bytes each.
fn until_text(about: &str) -> Value {
    one_or_several(
        &json!({"type": "string", "minLength": 1, "maxLength": 256}),
        about,
    )
}

/// Seconds a COM or CAN read waits, at most [`MAX_READ_WAIT_S`].
fn read_wait(about: &str) -> Value {
    from_zero_to(MAX_READ_WAIT_S, about)
}

pub(super) fn config_adopt_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apply": {"type": "boolean", "default": false, "description": "false only proposes; true writes the carried keys."},
            "probe_id": text("The probe to read (the emulated board is `qemu:<debugger>`)."),
            "debugger_id": text("The debuggers entry to fill; needed when there are several."),
            "com_port_id": text("The com_ports entry for the board's UART; default the one naming it, else the only one, else a new `<debugger>_uart`."),
        },
        "additionalProperties": false,
    })
}

pub(super) fn config_set_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "changes": {
                "type": "array",
                "minItems": 1,
                "description": "{key, value} pairs applied together; each key once.",
                "items": {
                    "type": "object",
                    "properties": {
                        "key": text("A dotted key from project_config_describe."),
                        "value": {"type": ["string", "number", "integer", "boolean", "null"], "maximum": MAX_SAFE_INTEGER, "description": "One scalar; a permission key takes only false."},
                    },
                    "required": ["key", "value"],
                    "additionalProperties": false,
                },
            },
        },
        "required": ["changes"],
        "additionalProperties": false,
    })
}

pub(super) fn artifact_upload_schema() -> Value {
    let text = json!({"type": "string", "minLength": 1});
    json!({
        "type": "object",
        "properties": {"image_path": text, "filename": text, "data_base64": text},
        "additionalProperties": false,
        "oneOf": [{"required": ["image_path"]}, {"required": ["filename", "data_base64"]}],
    })
}

pub(super) fn bench_run_start_schema() -> Value {
    let text = json!({"type": "string", "minLength": 1});
    json!({
        "type": "object",
        "properties": {
            "devices": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["debugger", "uart", "can", "power_supply"]},
                        "id": text,
                        "participant": text,
                    },
                    "required": ["kind"],
                    "additionalProperties": false,
                },
            },
            "label": text,
            "wait_s": {"type": "number", "minimum": 0, "maximum": 900},
        },
        "required": ["devices"],
        "additionalProperties": false,
    })
}

pub(super) fn supply_id_schema() -> Value {
    text("A power_supplies entry name; any other gives unknown_device.")
}

pub(super) fn supply_channel_schema(about: &str) -> Value {
    from_one_to(MAX_CHANNEL, about)
}

pub(super) fn power_supply_status_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "supply_id": supply_id_schema(),
            "channel": supply_channel_schema("Channel from 1; without it every channel is read."),
        },
        "required": ["supply_id"],
        "additionalProperties": false,
    })
}

pub(super) fn power_supply_set_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "supply_id": supply_id_schema(),
            "channel": supply_channel_schema("Channel from 1; needed only on a supply with several channels."),
            "voltage_v": from_zero_to(MAX_SET_POINT, "Voltage set point in volts, exactly on the type's step grid, at most the effective limit."),
            "current_a": from_zero_to(MAX_SET_POINT, "Current set point in amperes, exactly on the type's step grid, at most the effective limit."),
        },
        "required": ["supply_id"],
        "additionalProperties": false,
    })
}

pub(super) fn power_supply_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "supply_id": supply_id_schema(),
            "channel": supply_channel_schema("Channel from 1; needed only on a supply with several channels."),
            "on": {"type": "boolean", "description": "true for output on, false for off."},
        },
        "required": ["supply_id", "on"],
        "additionalProperties": false,
    })
}

pub(super) fn power_supply_cycle_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "supply_id": supply_id_schema(),
            "channel": supply_channel_schema("Channel from 1; needed only on a supply with several channels."),
            "off_s": {"type": "number", "minimum": 0.5, "maximum": 30, "description": "How long the output stays off, 0.5 to 30 s."},
        },
        "required": ["supply_id", "off_s"],
        "additionalProperties": false,
    })
}

pub(super) fn flash_firmware_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "image_path": text("Workspace-relative .elf, .hex or .bin inside artifacts.allowed_roots; a .bin is written at the entry's flash_address."),
            "artifact_id": text("An id answered by artifact_upload, instead of image_path; needs artifacts.allow_upload."),
            "reset_after_flash": {
                "type": "boolean",
                "default": false,
                "description": "Reset into run after the image is verified; needs allow_reset.",
            },
            "capture": {
                "type": "object",
                "properties": {
                    "port_id": text("The com_ports entry to read."),
                    "rtt_channel": text("Instead of port_id: an up channel of the debugger's rtt section, read from after the reset. On a defmt channel the flashed ELF's table decodes it: capture.text is the lines (until matches them), capture.frames the frames (undecodable ones decoded: false, with hex)."),
                    "until": until_text("Stop at this text (or the first of up to 8), as com_read does; without it, read for the whole wait_timeout_s."),
                    "wait_timeout_s": read_wait("Seconds to wait after the reset: 10 unless set, 60 at most."),
                    "max_bytes": from_one_to(MAX_READ_BYTES, "Most bytes returned: the port's (or rtt section's) max_buffer_bytes unless set, and never more."),
                },
                "additionalProperties": false,
                "oneOf": [{"required": ["port_id"]}, {"required": ["rtt_channel"]}],
                "description": "Read the board's UART across the flash (opened before it), or with rtt_channel its RTT after the reset; needs reset_after_flash.",
            },
        },
        "additionalProperties": false,
        "oneOf": [{"required": ["image_path"]}, {"required": ["artifact_id"]}],
    })
}

pub(super) fn reset_target_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "mode": {
                "type": "string",
                "enum": ["run", "halt", "init"],
                "default": "run",
                "description": "run: the core executes after the reset; halt: it stops at the reset vector; init: OpenOCD's reset-init scripts (not_supported elsewhere).",
            },
        },
        "additionalProperties": false,
    })
}

pub(super) fn port_id_schema() -> Value {
    text("A com_ports entry name (com_ports_list shows them), never a device path.")
}

pub(super) fn com_session_start_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "port_id": port_id_schema(),
            "clear_buffer": {"type": "boolean", "default": true, "description": "Drop what was received before this call (default true); false keeps it for com_read."},
        },
        "required": ["port_id"],
        "additionalProperties": false,
    })
}

pub(super) fn com_port_only_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"port_id": port_id_schema()},
        "required": ["port_id"],
        "additionalProperties": false,
    })
}

pub(super) fn com_write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "port_id": port_id_schema(),
            "text": {"type": "string", "description": "Text in the port's encoding, sent as is (add \\r\\n yourself)."},
            "hex": {"type": "string", "description": "Bytes as hex pairs, whitespace ignored (\"0d 0a\")."},
        },
        "required": ["port_id"],
        "additionalProperties": false,
        "oneOf": [{"required": ["text"]}, {"required": ["hex"]}],
    })
}

pub(super) fn com_read_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "port_id": port_id_schema(),
            "max_bytes": from_one_to(MAX_READ_BYTES, "Most bytes returned (default the port's max_buffer_bytes, all its buffer holds); the rest stays buffered."),
            "wait_timeout_s": read_wait("Seconds to wait: default 0 (10 with until), 60 at most."),
            "until": until_text("Literal text (or up to 8) to wait for; the answer ends at the first match."),
        },
        "required": ["port_id"],
        "additionalProperties": false,
    })
}

pub(super) fn can_bus_id_schema() -> Value {
    text("A can_buses entry name (can_buses_list shows them).")
}

pub(super) fn can_participant_schema() -> Value {
    text(
        "On a bus with shares, the share this call acts as (may be left out while this server is exactly one participant); elsewhere can_participant_not_configured.",
    )
}

/// A CAN identifier as an integer, up to the largest 29-bit one.
fn can_id() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": 0x1FFF_FFFF})
}

pub(super) fn can_session_start_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bus_id": can_bus_id_schema(),
            "participant": can_participant_schema(),
            "clear_rx_queue": {"type": "boolean", "default": true, "description": "Discard frames received before this call (default true, also on a repeat call); the count is frames_drained."},
        },
        "required": ["bus_id"],
        "additionalProperties": false,
    })
}

pub(super) fn can_session_stop_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"bus_id": can_bus_id_schema(), "participant": can_participant_schema()},
        "required": ["bus_id"],
        "additionalProperties": false,
    })
}

pub(super) fn can_send_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bus_id": can_bus_id_schema(),
            "participant": can_participant_schema(),
            "frame_id": {
                "oneOf": [
                    can_id(),
                    {"type": "string", "pattern": "^(?:0[xX][0-9A-Fa-f]+|[0-9]+)$"},
                ],
                "description": "Identifier: integer, decimal string or 0x string; up to 0x7FF, or 0x1FFFFFFF with extended.",
            },
            "extended": {"type": "boolean", "default": false, "description": "29-bit identifier (default 11-bit)."},
            "rtr": {"type": "boolean", "default": false, "description": "Remote request frame; FD buses refuse it."},
            "data_hex": {"type": "string", "default": "", "description": "Payload as hex pairs, whitespace ignored; classic at most 8 bytes, FD 0-8,12,16,20,24,32,48,64."},
        },
        "required": ["bus_id", "frame_id"],
        "additionalProperties": false,
    })
}

pub(super) fn can_read_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bus_id": can_bus_id_schema(),
            "participant": can_participant_schema(),
            "max_frames": from_one_to(MAX_READ_FRAMES, "Most frames returned, at most the bus's max_buffer_frames (the default)."),
            "wait_timeout_s": read_wait("Seconds to wait: default 0 and at most the bus timeout_s; with until_id default 10, at most 60."),
            "until_id": one_or_several(&can_id(), "Identifier (or up to 8) to wait for; the answer ends at the first frame carrying one."),
        },
        "required": ["bus_id"],
        "additionalProperties": false,
    })
}

pub(super) const SYMBOL_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$";

pub(super) fn timeout_schema(about: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"timeout_s": from_zero_to(MAX_DEBUG_TIMEOUT_S, about)},
        "additionalProperties": false,
    })
}

pub(super) fn debug_start_session_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "image_path": text("The ELF the board runs, workspace-relative, inside artifacts.allowed_roots; or artifact_id."),
            "artifact_id": text("An ELF stored by artifact_upload, instead of image_path."),
            "mode": {
                "type": "string",
                "enum": ["attach", "reset_halt", "load"],
                "default": "attach",
                "description": "attach halts the running core without a reset; reset_halt resets into halt (needs allow_reset); load resets, writes the ELF and resets into halt (needs allow_reset and allow_flash).",
            },
            "timeout_s": from_zero_to(MAX_DEBUG_TIMEOUT_S, "Seconds for each start step; the debugger's timeout_s (10 s per gdb step at most) unless lower."),
        },
        "additionalProperties": false,
        "oneOf": [{"required": ["image_path"]}, {"required": ["artifact_id"]}],
    })
}

pub(super) fn debug_stop_session_schema() -> Value {
    timeout_schema(
        "Seconds per teardown step: 5, or the debugger's timeout_s if lower; 0.1 at least.",
    )
}

pub(super) fn debug_continue_schema() -> Value {
    timeout_schema(
        "Seconds to wait for a stop: the debugger's timeout_s unless lower; then a halt is requested.",
    )
}

pub(super) fn debug_halt_schema() -> Value {
    timeout_schema(
        "Seconds for the interrupt and its stop: 10, or the debugger's timeout_s if lower.",
    )
}

pub(super) fn debug_set_breakpoint_schema() -> Value {
    let name = json!({"type": "string", "pattern": SYMBOL_PATTERN});
    json!({
        "type": "object",
        "properties": {
            "location": {
                "oneOf": [
                    name,
                    {"type": "object", "additionalProperties": false, "required": ["symbol"], "properties": {"symbol": name}},
                    {"type": "object", "additionalProperties": false, "required": ["function"], "properties": {"function": name}},
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["file", "line"],
                        "properties": {
                            "file": {"type": "string", "pattern": "^[A-Za-z0-9_./\\\\:-]+$", "not": {"pattern": "(?:^|[/\\\\])\\.\\.(?:$|[/\\\\])"}},
                            "line": {"type": "integer", "minimum": 1, "maximum": i32::MAX},
                        },
                    },
                ],
                "description": "A function or symbol name (held to debug.allowed_symbols), or {file, line} (needs debug.allow_all_symbols).",
            },
        },
        "additionalProperties": false,
        "required": ["location"],
    })
}

pub(super) fn debug_symbol_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "symbol": {"type": "string", "pattern": SYMBOL_PATTERN, "description": "A C identifier (or ::-qualified name) listed in debug.allowed_symbols, or any with debug.allow_all_symbols."},
        },
        "additionalProperties": false,
        "required": ["symbol"],
    })
}

pub(super) fn debug_dump_symbol_ihex_schema() -> Value {
    let mut schema = debug_symbol_schema();
    schema["properties"]["output_path"] =
        text("Workspace-relative path ending .hex or .ihex, no `..` segment.");
    schema["required"] = json!(["symbol", "output_path"]);
    schema
}

pub(super) fn test_reactor_run_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "test_config_path": text("The plan file, workspace-relative (default `.agentic-hil/testconfig.yaml`); it must be inside the workspace."),
            "detach": {"type": "boolean", "default": false, "description": "false: answer when the plan ended, with every step. true: answer once a worker process holds the plan's devices, with the run handle."},
        },
        "additionalProperties": false,
    })
}

pub(super) fn test_reactor_run_handle_schema(required: bool) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "run": text("The handle test_reactor_run answered (`run-` and 16 hex digits)."),
        },
        "additionalProperties": false,
    });
    if required {
        schema["required"] = json!(["run"]);
    }
    schema
}

pub(super) fn test_reactor_status_schema() -> Value {
    test_reactor_run_handle_schema(false)
}

pub(super) fn test_reactor_stop_schema() -> Value {
    test_reactor_run_handle_schema(true)
}
