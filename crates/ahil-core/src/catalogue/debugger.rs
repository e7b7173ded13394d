//! The declarations of the tools for probes, flashing and debug sessions, in `tools/list` order.

use super::schemas::{
    debug_continue_schema, debug_dump_symbol_ihex_schema, debug_halt_schema,
    debug_set_breakpoint_schema, debug_start_session_schema, debug_stop_session_schema,
    debug_symbol_schema, flash_firmware_schema, reset_target_schema,
};
use super::{Declaration, Gate, Kind, Lease, ToolId, Touched, need};

/// Reads the probe or the target and proves when it never reached it.
const PROBE_READ: Gate = Gate::leased(
    Lease::Call,
    "debugger_readonly_target_state_unconfirmed",
    "hardware_exception_audit_broken",
)
.audited()
.proves_no_contact()
.needs(&[need(Touched::Debugger, "allow_probe")]);

/// Changes the target through the probe (flash, reset) and proves when it never reached it.
const TARGET_EFFECT: Gate = Gate::leased(
    Lease::Call,
    "debugger_result_unconfirmed",
    "hardware_exception_audit_broken",
)
.audited()
.reports_effect()
.proves_no_contact();

/// Answers from what the open debug session knows.
const SESSION_READ: Gate = Gate::leased(
    Lease::Call,
    "debug_session_result_unconfirmed",
    "debug_audit_broken",
)
.needs(&[need(Touched::Debugger, "allow_probe")]);

/// Reads the target's memory through the open session.
const SYMBOL_READ: Gate = SESSION_READ.audited();

/// Acts on the core through the open session (a breakpoint, a resume) and reports whether it did.
const fn session_effect(unconfirmed: &'static str) -> Gate {
    Gate::leased(Lease::Call, unconfirmed, "debug_audit_broken")
        .audited()
        .reports_effect()
}

pub(super) const DECLARED: &[Declaration] = &[
    Declaration::new(ToolId::DebuggerProbesList, "debugger_probes_list", Kind::ReadOnly, PROBE_READ)
        .about(
            "List connected debug probes",
            "List the probes the bound debugger's backend can see, each with the probe_id to put in \
its entry; addresses no board. For a qemu debugger that is the emulated board, when `agentic-hil sim start` \
runs it; for OpenOCD, the host's USB inventory of known probe vendors (complete false). Returns backend, \
probes and complete. Fails with probe_discovery_failed, timeout, not_supported or permission_denied. Next: \
probe_target.",
        ),
    Declaration::new(ToolId::ProbeTarget, "probe_target", Kind::IDEMPOTENT, PROBE_READ)
        .about(
            "Probe the target",
            "Connect to the board through the bound debugger and confirm it answers \
(target_detected), without resetting or flashing it; the core is left running or halted as found. \
Fails with target_not_detected (nothing answers), adapter_not_found (no probe), \
target_state_unconfirmed, debugger_not_found, timeout, device_busy (held by another program) or \
not_supported. Next: flash_firmware or reset_target.",
        ),
    Declaration::new(
        ToolId::FlashFirmware,
        "flash_firmware",
        Kind::DESTRUCTIVE,
        TARGET_EFFECT.needs(&[
            need(Touched::Debugger, "allow_flash"),
            need(Touched::Debugger, "allow_reset"),
            // A capture on RTT reads the debugger as rtt_read does (allow_probe in a version 1 file).
            need(Touched::Debugger, "allow_probe"),
            need(Touched::ComPort, "allow_read"),
            need(Touched::Uploads, "allow_upload"),
        ]),
    )
    .schema(flash_firmware_schema)
    .about(
        "Flash firmware",
        "Write an image (image_path, or artifact_id from artifact_upload) to the board and verify it \
by reading it back; every call writes again. Needs allow_flash, and allow_reset for reset_after_flash; refused \
while raw commands or mass erase are allowed on the probe. capture reads a COM port (its read grant \
and lock taken with the flash's) from before the flash, or an RTT channel from after it, until a text after the reset. Fails with permission_denied, artifact_not_found, \
artifact_validation_failed, adapter_not_found, flash_failed, flash_erase_failed, verify_failed, timeout or \
device_busy; a failure after contact leaves \
hardware_state unknown.",
    ),
    Declaration::new(
        ToolId::ResetTarget,
        "reset_target",
        Kind::ADDITIVE,
        TARGET_EFFECT.needs(&[need(Touched::Debugger, "allow_reset")]),
    )
    .schema(reset_target_schema)
    .about(
        "Reset the target",
        "Reset the board through the bound debugger; flash is kept. mode run (default) lets the \
firmware start, halt stops the core at the reset vector, init is OpenOCD-only. Needs allow_reset. Fails with \
permission_denied, reset_failed, timeout, device_busy or not_supported. To check the board without a reset, \
use probe_target.",
    ),
    Declaration::new(
        ToolId::DebugStartSession,
        "debug_start_session",
        Kind::DESTRUCTIVE,
        Gate::leased(
            Lease::SessionStart,
            "debug_session_start_unconfirmed",
            "debug_audit_broken",
        )
        .audited()
        .reports_effect()
        .proves_no_contact()
        .needs(&[
            need(Touched::Debugger, "allow_probe"),
            need(Touched::Debugger, "allow_reset"),
            need(Touched::Debugger, "allow_flash"),
            need(Touched::Uploads, "allow_upload"),
        ]),
    )
    .schema(debug_start_session_schema)
    .about(
        "Start a debug session",
        "Start gdb on the bound debugger's board with the given ELF and leave the core halted; the \
session keeps the debugger's machine-wide lock until debug_stop_session, so flash and reset answer resource_busy \
meanwhile. Refused while allow_raw_debugger_commands or allow_mass_erase is set. Fails with \
session_already_active, artifact_validation_failed, target_not_detected, debugger_error or not_supported.",
    ),
    Declaration::new(
        ToolId::DebugStopSession,
        "debug_stop_session",
        Kind::IDEMPOTENT,
        Gate::leased(
            Lease::SessionStop,
            "debug_session_cleanup_unconfirmed",
            "debug_audit_broken",
        ),
    )
    .schema(debug_stop_session_schema)
    .about(
        "Stop the debug session",
        "Confirm the core is halted, drop the breakpoints, disconnect without resuming, end gdb and \
free the probe. Without a session it answers ok with active false. An unconfirmed halt gives halt_not_confirmed \
and keeps the session.",
    ),
    Declaration::new(
        ToolId::DebugGetSessionStatus,
        "debug_get_session_status",
        Kind::ReadOnly,
        SESSION_READ,
    )
    .about(
        "Debug session status",
        "Whether a debug session is open, the core's state as the session last saw it, its \
breakpoints and its last stop. Touches no hardware.",
    ),
    Declaration::new(
        ToolId::DebugSetBreakpoint,
        "debug_set_breakpoint",
        Kind::ADDITIVE,
        session_effect("debug_breakpoint_cleanup_unconfirmed")
            .needs(&[need(Touched::Debugger, "allow_probe")]),
    )
    .schema(debug_set_breakpoint_schema)
    .about(
        "Set a breakpoint",
        "Insert a breakpoint in the open session at a function or symbol (held to \
debug.allowed_symbols) or at file and line (needs debug.allow_all_symbols). Answers the breakpoint's id. Fails \
with session_not_active, permission_denied or symbol_not_found.",
    ),
    Declaration::new(
        ToolId::DebugListBreakpoints,
        "debug_list_breakpoints",
        Kind::ReadOnly,
        SESSION_READ,
    )
    .about(
        "List breakpoints",
        "The breakpoints the open session set, with their gdb numbers. Touches no hardware.",
    ),
    Declaration::new(
        ToolId::DebugClearBreakpoints,
        "debug_clear_breakpoints",
        Kind::IDEMPOTENT,
        Gate::leased(
            Lease::Containment,
            "debug_breakpoint_cleanup_unconfirmed",
            "debug_audit_broken",
        ),
    )
    .about(
        "Clear all breakpoints",
        "Delete every breakpoint of the open session and check with gdb that none remains; answers \
cleared. A breakpoint gdb still lists gives breakpoint_reconciliation_failed.",
    ),
    Declaration::new(
        ToolId::DebugContinue,
        "debug_continue",
        Kind::ADDITIVE,
        session_effect("debug_target_state_unconfirmed").needs(&[
            need(Touched::Debugger, "allow_probe"),
            need(Touched::Debugger, "allow_debug_execution"),
        ]),
    )
    .schema(debug_continue_schema)
    .about(
        "Continue the target",
        "Resume the halted core and wait for its next stop; needs allow_debug_execution. A known \
breakpoint answers ok with the stop and its frame; an unexpected breakpoint or an exception does not, and an \
exception stop is never resumed. Without a stop in time the core is halted again: timeout with halt_confirmed.",
    ),
    Declaration::new(
        ToolId::DebugHalt,
        "debug_halt",
        Kind::ADDITIVE,
        Gate::leased(
            Lease::Containment,
            "debug_target_state_unconfirmed",
            "debug_audit_broken",
        ),
    )
    .schema(debug_halt_schema)
    .about(
        "Halt the target",
        "Stop a running core and answer its stop; a core already stopped is not interrupted. An \
unconfirmed halt gives timeout with halt_confirmed false and target_state unknown.",
    ),
    Declaration::new(
        ToolId::DebugGetStopReason,
        "debug_get_stop_reason",
        Kind::ReadOnly,
        SESSION_READ,
    )
    .about(
        "Last stop reason",
        "The open session's last stop: its reason, breakpoint and frame. Before any stop it answers \
stop_reason_not_available. Touches no hardware.",
    ),
    Declaration::new(ToolId::DebugSymbolInfo, "debug_symbol_info", Kind::ReadOnly, SYMBOL_READ)
        .schema(debug_symbol_schema)
        .about(
            "Resolve a debug symbol",
            "Address and size of an allowlisted symbol from the session's ELF debug info; reads no \
memory. Fails with permission_denied (not in debug.allowed_symbols) or symbol_not_found.",
        ),
    Declaration::new(ToolId::DebugSymbolValue, "debug_symbol_value", Kind::ReadOnly, SYMBOL_READ)
        .schema(debug_symbol_schema)
        .about(
            "Read a symbol's value",
            "Read an allowlisted symbol's bytes from the halted target: hex in memory order, and at 1, 2, \
4 or 8 bytes its unsigned and signed readings in the ELF's byte order. Sizes over debug.max_dump_size_bytes are \
refused. Fails with permission_denied, symbol_not_found or memory_read_failed.",
        ),
    Declaration::new(
        ToolId::DebugDumpSymbolIhex,
        "debug_dump_symbol_ihex",
        Kind::DESTRUCTIVE,
        SYMBOL_READ,
    )
    .schema(debug_dump_symbol_ihex_schema)
    .about(
        "Dump a symbol as Intel HEX",
        "Read an allowlisted symbol's bytes from the halted target and write them, at their address, \
as Intel HEX to a .hex or .ihex path inside the workspace (under artifacts.allowed_roots unless \
validation.require_allowed_root is false); folders are created and a file replaced. Sizes over \
debug.max_dump_size_bytes are refused. Fails with output_validation_failed, permission_denied or symbol_not_found.",
    ),
];
