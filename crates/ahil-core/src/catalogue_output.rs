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
//! `tools/list` publishes a loosened, smaller form of that detailed schema ([`output_schema`]).

mod bench;
mod config;
mod debug;
mod evidence;
mod io;
mod rtt;

use serde_json::{Map, Value, json};

use crate::catalogue::ToolId;
use crate::validate;

/// The fields every result has: the call's verdict, the tool that answered, one sentence.
const REQUIRED: [&str; 3] = ["ok", "tool", "summary"];

/// The envelope's fields `tools/list` names: the verdict and what to do next, and whether the
/// hardware was touched. The rest of the envelope (advice lists, paths, times, configuration
/// status) is the same for every tool and documented once (docs/ARCHITECTURE.md), not 48 times.
const PUBLISHED_ENVELOPE: [&str; 9] = [
    "ok",
    "tool",
    "summary",
    "error_type",
    "next_step",
    "target_contacted",
    "side_effect_status",
    "hardware_state",
    "retry_safe",
];

/// The outputSchema `tools/list` publishes for `id`: compact, because a host reads all 48 of them
/// at every connection (the listing was 327 KB with every layer in full). The verdict fields of the
/// envelope and the family's fields are typed loosely (their type only, no nested detail), the
/// tool's own fields in full; the rest of the envelope and the pipeline's evidence are left to the
/// open object. It only loosens [`detailed_schema`], so a result that matches the detailed schema
/// matches this one ([`check_result`] checks both).
pub fn output_schema(id: ToolId) -> Value {
    let (family, own) = tool_fields(id);
    let mut envelope = envelope_properties();
    envelope.retain(|name, _| PUBLISHED_ENVELOPE.contains(&name.as_str()));
    let mut properties = loosely(envelope);
    properties.extend(loosely(fields_of(family)));
    properties.extend(fields_of(own));
    object_schema(&properties)
}

/// The schema the test clients check every result against: every layer typed in full. An unknown
/// name gets the envelope and the evidence alone (that is what an `unknown_tool` refusal carries).
fn detailed_schema(tool: Option<ToolId>) -> Value {
    let mut properties = envelope_properties();
    properties.extend(fields_of(evidence::evidence()));
    if let Some(id) = tool {
        let (family, own) = tool_fields(id);
        properties.extend(fields_of(family));
        properties.extend(fields_of(own));
    }
    object_schema(&properties)
}

fn object_schema(properties: &Map<String, Value>) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": REQUIRED,
    })
}

fn fields_of(layer: Value) -> Map<String, Value> {
    match layer {
        Value::Object(fields) => fields,
        _ => Map::new(),
    }
}

/// Each field's type alone (or its enum): what a field is, without what it contains.
fn loosely(fields: Map<String, Value>) -> Map<String, Value> {
    fields
        .into_iter()
        .map(|(name, member)| {
            let kept = ["type", "enum"]
                .into_iter()
                .filter_map(|keyword| Some((keyword.to_owned(), member.get(keyword)?.clone())))
                .collect();
            (name, Value::Object(kept))
        })
        .collect()
}

/// The fields `id`'s family shares and its own. Exhaustive on purpose: a new tool does not compile
/// until its result fields are declared here.
fn tool_fields(id: ToolId) -> (Value, Value) {
    use ToolId as T;
    match id {
        T::DebuggerInfo => (bench::bench_family(), bench::debugger_info()),
        T::ProjectConfigDescribe => (config::config_family(), config::project_config_describe()),
        T::ProjectConfigCreate => (config::config_family(), config::project_config_create()),
        T::ProjectConfigSet => (config::config_family(), config::project_config_set()),
        // The operator's adoption answers as the agent's does.
        T::ProjectConfigAdoptHardware | T::AdoptHardware => (
            config::config_family(),
            config::project_config_adopt_hardware(),
        ),
        T::ProjectConfigReloadDescription => (
            config::config_family(),
            config::project_config_reload_description(),
        ),
        T::ArtifactUpload => (config::config_family(), config::artifact_upload()),
        T::ServerUpgrade => (config::config_family(), config::server_upgrade()),
        T::DebugStartSession => (debug::debug_family(), debug::debug_start_session()),
        T::DebugStopSession => (debug::debug_family(), debug::debug_stop_session()),
        T::DebugSetBreakpoint => (debug::debug_family(), debug::debug_set_breakpoint()),
        T::DebugListBreakpoints => (debug::debug_family(), debug::debug_list_breakpoints()),
        T::DebugClearBreakpoints => (debug::debug_family(), debug::debug_clear_breakpoints()),
        T::DebugContinue => (debug::debug_family(), debug::debug_continue()),
        T::DebugSymbolValue => (debug::debug_family(), debug::debug_symbol_value()),
        T::DebugDumpSymbolIhex => (debug::debug_family(), debug::debug_dump_symbol_ihex()),
        T::DebugGetSessionStatus | T::DebugHalt | T::DebugGetStopReason | T::DebugSymbolInfo => {
            (debug::debug_family(), no_fields())
        }
        T::ComPortsList => (io::com_family(), io::com_ports_list()),
        T::ComSessionStart => (io::com_family(), io::com_session_start()),
        T::ComRead => (io::com_family(), io::com_read()),
        T::CanBusesList => (io::can_family(), io::can_buses_list()),
        T::CanSessionStart => (io::can_family(), io::can_session_start()),
        T::CanSessionStop => (io::can_family(), io::can_session_stop()),
        T::CanSend => (io::can_family(), io::can_send()),
        T::CanRead => (io::can_family(), io::can_read()),
        T::PowerSupplyStatus => (io::power_family(), io::power_supply_status()),
        T::PowerSupplySet => (io::power_family(), io::power_supply_set()),
        T::PowerSupplyOutput => (io::power_family(), io::power_supply_output()),
        T::PowerSupplyCycle => (io::power_family(), io::power_supply_cycle()),
        T::ComSessionStop | T::ComWrite => (io::com_family(), no_fields()),
        T::RttChannelsList => (rtt::rtt_family(), rtt::rtt_channels_list()),
        T::RttSessionStart | T::RttSessionStop => (rtt::rtt_family(), no_fields()),
        T::RttWrite => (rtt::rtt_family(), rtt::rtt_write()),
        T::RttRead => (rtt::rtt_family(), rtt::rtt_read()),
        T::BenchRunStart => (bench::bench_family(), bench::bench_run_start()),
        T::BenchRunStop => (bench::bench_family(), bench::bench_run_stop()),
        T::BenchRunStatus => (bench::bench_family(), bench::bench_run_status()),
        // Before `init` the listing answers in the configured listing's shape.
        T::DebuggerProbesList | T::DebuggerProbesBootstrap => {
            (bench::bench_family(), bench::debugger_probes_list())
        }
        T::ProbeTarget => (bench::bench_family(), bench::probe_target()),
        T::FlashFirmware => (bench::bench_family(), bench::flash_firmware_fields()),
        T::ResetTarget => (bench::bench_family(), bench::reset_target()),
        T::GetLastReport => (bench::bench_family(), bench::get_last_report()),
        T::HardwareLeaseStatus => (bench::bench_family(), bench::lease_status_fields()),
        T::HardwareRecover => (bench::bench_family(), bench::hardware_recover()),
        T::TestReactorRun => (bench::bench_family(), bench::reactor_run_fields()),
        T::TestReactorStatus => (bench::bench_family(), bench::test_reactor_status()),
        T::TestReactorStop => (bench::bench_family(), bench::test_reactor_stop()),
        T::SimStart | T::SimStop | T::SimStatus => (bench::bench_family(), bench::sim()),
        T::Doctor => (bench::bench_family(), bench::doctor()),
        T::ClassifyLastError => (bench::bench_family(), bench::classify_last_error()),
    }
}

/// Whether `result` (a `structuredContent` answered to a call of `tool`) matches the tool's
/// detailed schema and the one it publishes; else the path of the first bad field and the keyword
/// it broke.
pub fn check_result(tool: &str, result: &Value) -> Result<(), String> {
    let id = tool.parse::<ToolId>().ok();
    let published = id.map(output_schema);
    let violation = validate::first_violation(&detailed_schema(id), result)
        .or_else(|| validate::first_violation(published.as_ref()?, result));
    match violation {
        None => Ok(()),
        Some(violation) => Err(format!(
            "the `{tool}` result does not match its outputSchema at `{}` ({})",
            violation.field(),
            violation.validator
        )),
    }
}

/// A tool whose family's fields are all it answers.
fn no_fields() -> Value {
    json!({})
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

/// An object with these `properties`, or null where there is none (no provenance, no session).
fn absent_or(properties: Value) -> Value {
    let mut schema = json!({"type": ["null", "object"]});
    schema["properties"] = properties;
    schema
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
