//! What each tool answers: the MCP `outputSchema` of its `structuredContent`.
//!
//! Every result, success or refusal, is the gate's envelope ([`crate::envelope::Outcome`]) with the
//! tool's own fields beside it, so each schema is the envelope's properties plus the tool's, typed. The
//! envelope stays open (`additionalProperties` is not false): a refusal may carry evidence fields no
//! schema lists, and an agent must not lose a result because a rarer path named one more field. The
//! test clients validate every result they see against these schemas ([`check_result`]).
//!
//! A schema is built from four layers, later ones adding to earlier: the envelope, the evidence the
//! pipeline may add to any result (`evidence.rs`), the fields a family of tools shares, and the tool's
//! own. Fields and types were taken from the actions and checked against every result the test suite
//! produces; a field is declared where it may appear, never required beyond the envelope's three.

mod bench;
mod config;
mod debug;
mod evidence;
mod io;

use serde_json::{Map, Value, json};

use crate::validate;

/// The fields every result has: the call's verdict, the tool that answered, one sentence.
const REQUIRED: [&str; 3] = ["ok", "tool", "summary"];

/// The outputSchema of `tool`: the envelope plus the tool's own fields. An unknown name gets the
/// envelope alone (that is what an `unknown_tool` refusal carries).
pub fn output_schema(tool: &str) -> Value {
    let mut properties = envelope_properties();
    let mut add = |layer: Value| {
        if let Value::Object(fields) = layer {
            properties.extend(fields);
        }
    };
    add(evidence::evidence());
    if let Some((family, own)) = tool_fields(tool) {
        add(family);
        add(own);
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": REQUIRED,
    })
}

/// The fields `tool`'s family shares and its own; `None` for a name no module declares.
fn tool_fields(tool: &str) -> Option<(Value, Value)> {
    config::fields(tool)
        .or_else(|| debug::fields(tool))
        .or_else(|| io::fields(tool))
        .or_else(|| bench::fields(tool))
}

/// Whether `result` (a `structuredContent` answered to a call of `tool`) matches the tool's
/// outputSchema; else the path of the first bad field and the keyword it broke.
pub fn check_result(tool: &str, result: &Value) -> Result<(), String> {
    match validate::first_violation(&output_schema(tool), result) {
        None => Ok(()),
        Some(violation) => Err(format!(
            "the `{tool}` result does not match its outputSchema at `{}` ({})",
            violation.field(),
            violation.validator
        )),
    }
}

/// Whether the tool declares fields of its own or of its family (beyond the envelope and the
/// pipeline's evidence); the catalogue test requires it of every tool.
pub fn declares_fields(tool: &str) -> bool {
    let filled = |layer: &Value| layer.as_object().is_some_and(|fields| !fields.is_empty());
    tool_fields(tool).is_some_and(|(family, own)| filled(&family) || filled(&own))
}

fn text() -> Value {
    json!({"type": "string"})
}

fn flag() -> Value {
    json!({"type": "boolean"})
}

fn lines() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// A list whose items the tests never showed (so they are left open).
fn list() -> Value {
    json!({"type": "array"})
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

fn number() -> Value {
    json!({"type": "number"})
}

/// The run a call held: the one the agent opened, or the implicit one the gate opened for the call.
fn implicit_run() -> Value {
    json!({
        "type": "object",
        "properties": {
            "implicit": flag(),
            "declared_devices": lines(),
            "run_label": {"type": ["string", "null"]},
            "run_started_at": text(),
            "aborted": flag(),
        },
    })
}

/// Who holds a device: the owner record of a run or lease.
fn owner() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner_id": text(),
            "pid": count(),
            "host": text(),
            "frontend": text(),
            "label": text(),
        },
    })
}

/// An object whose members are open (keyed by configured ids, or the backend's own).
fn object() -> Value {
    json!({"type": "object"})
}

/// The envelope's fields (see `Outcome`), each typed and in the order the envelope writes them.
fn envelope_properties() -> Map<String, Value> {
    let properties = json!({
        "ok": {"type": "boolean", "description": "The call's own verdict; continue only while isError is false."},
        "tool": text(),
        "summary": text(),
        "error_type": {"type": "string", "description": "Stable snake_case name of the failure."},
        "likely_causes": lines(),
        "remediation": lines(),
        "do_not": lines(),
        "next_step": text(),
        "target_contacted": flag(),
        "side_effect_committed": flag(),
        "side_effect_status": {"enum": ["not_started", "committed", "partial", "unknown"]},
        "hardware_state": {"enum": ["unchanged", "unknown"]},
        "retry_safe": flag(),
        "audit_ok": flag(),
        "cleanup_ok": flag(),
        "cleanup_required": flag(),
        "quarantined": flag(),
        "lease_state": text(),
        "target_ok": flag(),
        "config_in_force": {"type": "object"},
        "config_status": {"type": "object"},
        "config_stale": flag(),
        "report_path": text(),
        "log_path": text(),
        "started_at": text(),
        "finished_at": text(),
        "elapsed_ms": {"type": "integer", "minimum": 0},
    });
    match properties {
        Value::Object(map) => map,
        _ => unreachable!("a json! object literal is an object"),
    }
}

#[cfg(test)]
#[path = "catalogue_output_tests.rs"]
mod tests;
