//! The operator's own commands that touch hardware, declared like tools so they run through the same
//! pipeline (device lock, audit record, envelope) as an agent's calls. They are never listed in
//! `tools/list` and an MCP server refuses them as unknown tools: only the `operator-cli` frontend
//! calls them (decision 0013).

use serde_json::{Value, json};

use super::{Availability, Declaration, Gate, Kind, ToolId};

/// Audited, no lease: the operator's command answers to the device lock (an agent's session or
/// run holding the board refuses it `device_busy`), and leaves a report, but takes no lease of its
/// own, so a standing incident never keeps the operator from stopping the emulated board.
const OPERATOR: Gate = Gate::LOCAL.audited();

fn sim_schema(with_image: bool) -> Value {
    let mut properties = json!({
        "debugger": {"type": "string", "minLength": 1, "description": "The qemu debuggers entry; needed when there are several."},
    });
    if with_image {
        properties["image"] = json!({"type": "string", "minLength": 1, "description": "The image the board boots (absolute, resolved by the CLI)."});
    }
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

fn sim_start_schema() -> Value {
    sim_schema(true)
}

fn sim_debugger_schema() -> Value {
    sim_schema(false)
}

pub(super) const DECLARED: &[Declaration] = &[
    Declaration {
        id: ToolId::SimStart,
        name: "sim_start",
        title: "Start the emulated board",
        description: "`agentic-hil sim start`: start the emulated board of a qemu debugger under its device lock.",
        kind: Kind::Effect {
            destructive: false,
            idempotent: false,
        },
        open_world: false,
        schema: sim_start_schema,
        availability: Availability::Operator,
        gate: OPERATOR,
    },
    Declaration {
        id: ToolId::SimStop,
        name: "sim_stop",
        title: "Stop the emulated board",
        description: "`agentic-hil sim stop`: stop the emulated board of a qemu debugger under its device lock.",
        kind: Kind::Effect {
            destructive: true,
            idempotent: true,
        },
        open_world: false,
        schema: sim_debugger_schema,
        availability: Availability::Operator,
        gate: OPERATOR,
    },
    Declaration {
        id: ToolId::SimStatus,
        name: "sim_status",
        title: "Emulated board status",
        description: "`agentic-hil sim status`: whether the emulated board of a qemu debugger runs, under its device lock.",
        kind: Kind::ReadOnly,
        open_world: false,
        schema: sim_debugger_schema,
        availability: Availability::Operator,
        gate: OPERATOR,
    },
];
