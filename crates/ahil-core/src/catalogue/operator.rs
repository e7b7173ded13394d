//! The operator's own commands that touch hardware, declared like tools so they run through the same
//! pipeline (device lock, audit record, envelope) as an agent's calls. They are never listed in
//! `tools/list` and an MCP server refuses them as unknown tools: only the `operator-cli` frontend
//! calls them (decision 0013).

use serde_json::{Value, json};

use super::schemas::text;
use super::{Declaration, Gate, Kind, ToolId};

/// Audited, no lease: the operator's command answers to the device lock (an agent's session or
/// run holding the board refuses it `device_busy`), and leaves a report, but takes no lease of its
/// own, so a standing incident never keeps the operator from stopping the emulated board.
const OPERATOR: Gate = Gate::LOCAL.audited();

fn sim_schema(with_image: bool) -> Value {
    let mut properties = json!({
        "debugger": text("The qemu debuggers entry; needed when there are several."),
    });
    if with_image {
        properties["image"] = text("The image the board boots (absolute, resolved by the CLI).");
    }
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

fn sim_start_schema() -> Value {
    sim_schema(true)
}

fn sim_debugger_schema() -> Value {
    sim_schema(false)
}

fn adopt_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "debugger_id": text("The debuggers entry to adopt; needed when several are bound."),
            "probe_id": text("The attached probe to adopt when several are listed."),
            "com_port_id": text("The com_ports entry the board's UART is written to."),
            "dry_run": {"type": "boolean", "description": "Only propose; write nothing."},
        },
        "additionalProperties": false,
    })
}

pub(super) const DECLARED: &[Declaration] = &[
    Declaration::new(ToolId::SimStart, "sim_start", Kind::ADDITIVE, OPERATOR)
        .schema(sim_start_schema)
        .operator_only()
        .about(
            "Start the emulated board",
            "`agentic-hil sim start`: start the emulated board of a qemu debugger under its device lock.",
        ),
    Declaration::new(ToolId::SimStop, "sim_stop", Kind::DESTRUCTIVE_IDEMPOTENT, OPERATOR)
        .schema(sim_debugger_schema)
        .operator_only()
        .about(
            "Stop the emulated board",
            "`agentic-hil sim stop`: stop the emulated board of a qemu debugger under its device lock.",
        ),
    Declaration::new(ToolId::SimStatus, "sim_status", Kind::ReadOnly, OPERATOR)
        .schema(sim_debugger_schema)
        .operator_only()
        .about(
            "Emulated board status",
            "`agentic-hil sim status`: whether the emulated board of a qemu debugger runs, under its device lock.",
        ),
    Declaration::new(ToolId::AdoptHardware, "adopt_hardware", Kind::IDEMPOTENT, OPERATOR)
        .schema(adopt_schema)
        .operator_only()
        .about(
            "Adopt the attached board",
            "`agentic-hil adopt-hardware`: fill the configuration from the attached board as the operator, holding every device of the bench.",
        ),
    Declaration::new(
        ToolId::DebuggerProbesBootstrap,
        "debugger_probes_bootstrap",
        Kind::ReadOnly,
        OPERATOR,
    )
    .operator_only()
    .about(
        "Probes before a configuration",
        "`agentic-hil debugger-probes` before `init`: the probes this host shows, listed by STM32CubeProgrammer or read from the USB inventory.",
    ),
    // Not audited: it opens no device and changes nothing, and a report of init's check (an
    // unbound bench is `ok: false`) would be the agent's first `get_last_report` and
    // `classify_last_error` answer after `init`.
    Declaration::new(ToolId::Doctor, "agentic_hil_doctor", Kind::ReadOnly, Gate::LOCAL)
        .operator_only()
        .about(
            "Check the bench",
            "`agentic-hil doctor` (and `init`'s check): run each pinned toolchain's `--version` and say whether the bench is bound; opens no device.",
        ),
];
