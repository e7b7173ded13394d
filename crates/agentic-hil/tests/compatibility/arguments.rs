//! Argument validation, side by side: every tool both servers have, on the bench `init` writes
//! (nothing bound, no port, bus or supply), called with arguments its published input schema
//! refuses: a required member missing, a member of the wrong type, an unknown member, a number
//! out of range, an empty string, a value outside an enum or a pattern; and path arguments that
//! leave the workspace. The rows are generated from the schemas (`tests/golden/tools_list.json`)
//! and a valid base call per tool; one server per implementation runs them all.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::driver::{Step, compare, tool};
use crate::support::World;

const TOOLS_LIST: &str = include_str!("../golden/tools_list.json");

/// A call of each tool both servers list that its schema accepts, on the bench `init` writes: it
/// is refused there for a reason of the bench (nothing is configured), never of the arguments.
/// `server_upgrade` is left out: a call it took would replace the installation.
#[rustfmt::skip]
const BASE: &[(&str, &str)] = &[
    ("debugger_info", "{}"),
    ("project_config_describe", "{}"),
    ("project_config_create", "{}"),
    ("project_config_set", r#"{"changes": [{"key": "debuggers.dut.permissions.allow_nothing", "value": false}]}"#),
    ("project_config_adopt_hardware", "{}"),
    ("project_config_reload_description", "{}"),
    ("artifact_upload", r#"{"image_path": "fw/missing.elf"}"#),
    ("bench_run_start", r#"{"devices": [{"kind": "uart", "id": "nope"}]}"#),
    ("bench_run_stop", "{}"),
    ("bench_run_status", "{}"),
    ("debugger_probes_list", "{}"),
    ("probe_target", "{}"),
    ("flash_firmware", r#"{"image_path": "fw/missing.elf"}"#),
    ("reset_target", "{}"),
    ("debug_start_session", r#"{"image_path": "fw/missing.elf"}"#),
    ("debug_stop_session", "{}"),
    ("debug_get_session_status", "{}"),
    ("debug_set_breakpoint", r#"{"location": "main"}"#),
    ("debug_list_breakpoints", "{}"),
    ("debug_clear_breakpoints", "{}"),
    ("debug_continue", "{}"),
    ("debug_halt", "{}"),
    ("debug_get_stop_reason", "{}"),
    ("debug_symbol_info", r#"{"symbol": "main"}"#),
    ("debug_symbol_value", r#"{"symbol": "main"}"#),
    ("debug_dump_symbol_ihex", r#"{"symbol": "main", "output_path": "dump.hex"}"#),
    ("get_last_report", "{}"),
    ("classify_last_error", "{}"),
    ("hardware_lease_status", "{}"),
    ("hardware_recover", "{}"),
    ("com_ports_list", "{}"),
    ("com_session_start", r#"{"port_id": "nope"}"#),
    ("com_session_stop", r#"{"port_id": "nope"}"#),
    ("com_write", r#"{"port_id": "nope", "text": "x"}"#),
    ("com_read", r#"{"port_id": "nope"}"#),
    ("can_buses_list", "{}"),
    ("can_session_start", r#"{"bus_id": "nope"}"#),
    ("can_session_stop", r#"{"bus_id": "nope"}"#),
    ("can_send", r#"{"bus_id": "nope", "frame_id": 1}"#),
    ("can_read", r#"{"bus_id": "nope"}"#),
    ("power_supply_status", r#"{"supply_id": "nope"}"#),
    ("power_supply_set", r#"{"supply_id": "nope"}"#),
    ("power_supply_output", r#"{"supply_id": "nope", "on": false}"#),
    ("power_supply_cycle", r#"{"supply_id": "nope", "off_s": 1}"#),
    ("test_reactor_run", r#"{"test_config_path": "plans/missing.yaml"}"#),
    ("test_reactor_status", "{}"),
    ("test_reactor_stop", r#"{"run": "nope"}"#),
];

/// Tools only ours has (docs/COMPATIBILITY.md, "ours-alone"), and the one never called.
const NOT_COMPARED: &[&str] = &[
    "rtt_channels_list",
    "rtt_session_start",
    "rtt_session_stop",
    "rtt_write",
    "rtt_read",
    "server_upgrade",
];

/// Members that name a file: each also gets a path that leaves the workspace, an absolute one, and
/// one that climbs out through a subdirectory.
const PATH_MEMBERS: &[&str] = &["image_path", "output_path", "test_config_path", "filename"];
const ESCAPES: &[(&str, &str)] = &[
    ("parent", "../x.elf"),
    ("absolute", "/etc/passwd"),
    ("climbing", "fw/../../x.elf"),
];

/// Compared beside `isError` and `error_type`: which argument a schema refusal names, and how.
const FIELDS: &[&str] = &["field", "validator"];

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A value no branch of `schema` admits by type.
fn wrong_type(schema: &Value) -> Value {
    match schema["type"].as_str() {
        Some("string") => json!(7),
        Some("integer" | "number") => json!("1"),
        Some("boolean") => json!("yes"),
        Some("array" | "object") => json!("x"),
        _ => json!(true),
    }
}

/// The variants of one member: (label, value), each one the schema refuses or a path escape.
fn variants(name: &str, schema: &Value) -> Vec<(String, Value)> {
    let mut out = vec![("of the wrong type".to_owned(), wrong_type(schema))];
    if let Some(min) = schema["minimum"].as_f64() {
        out.push(("below its minimum".into(), json!(min - 1.0)));
    }
    if let Some(max) = schema["maximum"].as_f64() {
        out.push(("above its maximum".into(), json!(max + 1.0)));
    }
    if schema["type"] == "integer" {
        out.push(("not a whole number".into(), json!(1.5)));
    }
    if schema["minLength"].as_u64() == Some(1) {
        out.push(("empty".into(), json!("")));
    }
    if schema["enum"].is_array() {
        out.push(("outside its enum".into(), json!("bogus")));
    }
    if schema["pattern"].is_string() {
        out.push(("outside its pattern".into(), json!("1 bad")));
    }
    if PATH_MEMBERS.contains(&name) {
        for (label, path) in ESCAPES {
            out.push(((*label).to_owned(), json!(path)));
        }
    }
    out
}

fn schemas() -> Vec<(&'static str, Value)> {
    let list: Vec<Value> = serde_json::from_str(TOOLS_LIST).expect("the golden tool list");
    list.into_iter()
        .map(|t| {
            let name = leak(t["name"].as_str().expect("a name").to_owned());
            (name, t["inputSchema"].clone())
        })
        .filter(|(name, _)| !NOT_COMPARED.contains(name))
        .collect()
}

fn base(name: &str) -> Map<String, Value> {
    let (_, args) = BASE
        .iter()
        .find(|(tool, _)| *tool == name)
        .unwrap_or_else(|| panic!("{name} has a base call"));
    serde_json::from_str(args).expect("a base call is a JSON object")
}

/// Every row of one tool.
fn rows(name: &'static str, schema: &Value) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut push = |what: String, args: Value| {
        steps.push(tool(
            leak(format!("args/{name} {what}")),
            name,
            args,
            FIELDS,
        ));
    };
    let base = base(name);
    for required in schema["required"].as_array().into_iter().flatten() {
        let required = required.as_str().expect("a member name");
        let mut args = base.clone();
        args.remove(required);
        push(format!("without {required}"), Value::Object(args));
    }
    let mut args = base.clone();
    args.insert("bogus".into(), json!(1));
    push("with an unknown member".into(), Value::Object(args));
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (member, member_schema) in &properties {
        for (label, value) in variants(member, member_schema) {
            let mut args = base.clone();
            args.insert(member.clone(), value);
            push(format!("{member} {label}"), Value::Object(args));
        }
    }
    steps
}

/// Objects inside the arguments, whose members get the same rows: (tool, a base call, where the
/// object sits in it, where its schema sits in the tool's).
#[rustfmt::skip]
const NESTED: &[(&str, &str, &str, &str)] = &[
    ("flash_firmware", r#"{"image_path": "fw/missing.elf", "reset_after_flash": true, "capture": {"port_id": "nope"}}"#, "/capture", "/properties/capture"),
    ("bench_run_start", r#"{"devices": [{"kind": "uart", "id": "nope"}]}"#, "/devices/0", "/properties/devices/items"),
    ("project_config_set", r#"{"changes": [{"key": "debuggers.dut.permissions.allow_nothing", "value": false}]}"#, "/changes/0", "/properties/changes/items"),
    ("debug_set_breakpoint", r#"{"location": {"file": "main.c", "line": 3}}"#, "/location", "/properties/location/oneOf/3"),
];

/// The rows of one object inside a tool's arguments.
fn nested_rows(
    schemas: &[(&'static str, Value)],
    row: &(&'static str, &str, &str, &str),
) -> Vec<Step> {
    let (name, base, at, schema_at) = *row;
    let schema = schemas
        .iter()
        .find(|(tool, _)| *tool == name)
        .and_then(|(_, schema)| schema.pointer(schema_at))
        .unwrap_or_else(|| panic!("{name} has a schema at {schema_at}"));
    let base: Value = serde_json::from_str(base).expect("a nested base call is JSON");
    let mut steps = Vec::new();
    let mut push = |what: String, edit: &dyn Fn(&mut Map<String, Value>)| {
        let mut args = base.clone();
        let object = args
            .pointer_mut(at)
            .and_then(Value::as_object_mut)
            .expect("the base call has the object");
        edit(object);
        steps.push(tool(
            leak(format!("args/{name} {at} {what}")),
            name,
            args,
            FIELDS,
        ));
    };
    for required in schema["required"].as_array().into_iter().flatten() {
        let required = required.as_str().expect("a member name");
        push(format!("without {required}"), &|o| {
            o.remove(required);
        });
    }
    push("with an unknown member".into(), &|o| {
        o.insert("bogus".into(), json!(1));
    });
    for (member, member_schema) in schema["properties"].as_object().into_iter().flatten() {
        for (label, value) in variants(member, member_schema) {
            push(format!("{member} {label}"), &|o| {
                o.insert(member.clone(), value.clone());
            });
        }
    }
    steps
}

/// Shapes the generated rows do not reach: members inside arrays and objects, and the rules across
/// members. (Arguments that are not an object never reach ours as a call: rmcp answers them with a
/// JSON-RPC error, where the reference answers `invalid_argument`.)
fn nested() -> Vec<Step> {
    let run = |devices: Value| json!({"devices": devices});
    vec![
        tool(
            "args/bench_run_start with no devices",
            "bench_run_start",
            run(json!([])),
            FIELDS,
        ),
        tool(
            "args/bench_run_start a device without kind",
            "bench_run_start",
            run(json!([{"id": "nope"}])),
            FIELDS,
        ),
        tool(
            "args/bench_run_start a device of an unknown kind",
            "bench_run_start",
            run(json!([{"kind": "toaster", "id": "nope"}])),
            FIELDS,
        ),
        tool(
            "args/bench_run_start a device with an unknown member",
            "bench_run_start",
            run(json!([{"kind": "uart", "id": "nope", "bogus": 1}])),
            FIELDS,
        ),
        tool(
            "args/project_config_set no changes",
            "project_config_set",
            json!({"changes": []}),
            FIELDS,
        ),
        tool(
            "args/project_config_set a change without value",
            "project_config_set",
            json!({"changes": [{"key": "debuggers.dut.permissions.allow_flash"}]}),
            FIELDS,
        ),
        tool(
            "args/com_read until empty",
            "com_read",
            json!({"port_id": "nope", "until": ""}),
            FIELDS,
        ),
        tool(
            "args/com_read until nine texts",
            "com_read",
            json!({"port_id": "nope", "until": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}),
            FIELDS,
        ),
        tool(
            "args/can_send frame_id not a number",
            "can_send",
            json!({"bus_id": "nope", "frame_id": "0xZZ"}),
            FIELDS,
        ),
        tool(
            "args/flash_firmware image_path and artifact_id",
            "flash_firmware",
            json!({"image_path": "fw/missing.elf", "artifact_id": "x.elf"}),
            FIELDS,
        ),
        tool(
            "args/flash_firmware neither image_path nor artifact_id",
            "flash_firmware",
            json!({}),
            FIELDS,
        ),
        tool(
            "args/flash_firmware capture without a port",
            "flash_firmware",
            json!({"image_path": "fw/missing.elf", "capture": {"until": "x"}}),
            FIELDS,
        ),
        tool(
            "args/debug_set_breakpoint a file line climbing out",
            "debug_set_breakpoint",
            json!({"location": {"file": "../main.c", "line": 3}}),
            FIELDS,
        ),
        tool(
            "args/debug_set_breakpoint line zero",
            "debug_set_breakpoint",
            json!({"location": {"file": "main.c", "line": 0}}),
            FIELDS,
        ),
    ]
}

#[test]
fn arguments_outside_each_tools_schema_are_refused_as_the_reference_does() {
    let schemas = schemas();
    for (tool, _) in BASE {
        assert!(
            schemas.iter().any(|(name, _)| name == tool),
            "{tool} has a base call but is not listed"
        );
    }
    let mut steps: Vec<Step> = schemas
        .iter()
        .flat_map(|(name, schema)| rows(name, schema))
        .collect();
    steps.extend(NESTED.iter().flat_map(|row| nested_rows(&schemas, row)));
    steps.extend(nested());
    let mut cases: Vec<&str> = steps.iter().map(|s| s.case).collect();
    cases.sort_unstable();
    cases.dedup();
    assert_eq!(cases.len(), steps.len(), "every case is named once");
    compare("args/", &|_: &World, _: &Path| (), &steps);
}
