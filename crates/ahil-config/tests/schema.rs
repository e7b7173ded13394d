//! Our JSON schema and defaults against the reference's schema (printed by the installed reference).

mod reference;

use ahil_config::{
    Artifacts, CanBus, CanFilter, CanShare, ComPort, Config, Debug, Debugger, DebuggerPermissions,
    IoPermissions, Logs, PowerSupply, PowerSupplyPermissions, ProjectPermissions, Recovery,
    Reports, Target, Validation, config_json_schema,
};
use serde_json::{Value, json};

fn reference() -> Value {
    reference::reference_schema("schema")
}

/// Resolves `$ref` into the reference's `$defs`.
fn deref<'a>(root: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => &root["$defs"][r.trim_start_matches("#/$defs/")],
        None => v,
    }
}

fn names(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

/// Compares property names of two object schemas, recursing into nested objects and
/// into map entries (`additionalProperties` objects).
/// Keys of our own that the reference does not know: the `qemu` debugger's, and RTT's.
const EXTENSIONS: &[(&str, &str)] = &[
    ("$.debuggers.*", "machine"),
    ("$.debuggers.*", "board_dir"),
    ("$.debuggers.*", "rtt"),
    ("$.debuggers.*.permissions", "allow_rtt_write"),
    ("$", "labgrid"),
    ("$", "holds"),
];

fn compare(rroot: &Value, r: &Value, ours: &Value, at: &str, out: &mut Vec<String>) {
    let r = deref(rroot, r);
    if let (Some(rp), Some(op)) = (r.get("properties"), ours.get("properties")) {
        let mut op_names = names(op);
        op_names.retain(|k| !EXTENSIONS.contains(&(at, k.as_str())));
        if names(rp) != op_names {
            out.push(format!(
                "{at}: reference {:?} ours {:?}",
                names(rp),
                op_names
            ));
        }
        for k in names(rp) {
            if op.get(&k).is_some() {
                compare(rroot, &rp[&k], &op[&k], &format!("{at}.{k}"), out);
            }
        }
    }
    if let (Some(ra), Some(oa)) = (
        r.get("additionalProperties"),
        ours.get("additionalProperties"),
    ) && ra.is_object()
        && oa.is_object()
    {
        compare(rroot, ra, oa, &format!("{at}.*"), out);
    }
    if let (Some(ri), Some(oi)) = (r.get("items"), ours.get("items")) {
        compare(rroot, ri, oi, &format!("{at}[]"), out);
    }
}

#[test]
fn our_schema_has_the_reference_property_names_at_every_level() {
    let r = reference();
    let ours = config_json_schema();
    let mut out = Vec::new();
    compare(&r, &r, &ours, "$", &mut out);
    assert!(out.is_empty(), "{}", out.join("\n"));
    assert_eq!(names(&r["properties"]).len(), 16);
}

#[test]
fn our_schema_copies_no_reference_description() {
    let r = reference().to_string();
    let ours = config_json_schema();
    let mut stack = vec![&ours];
    while let Some(v) = stack.pop() {
        if let Some(d) = v.get("description").and_then(Value::as_str) {
            assert!(
                d.len() < 120 && !r.contains(d),
                "description looks copied: {d}"
            );
        }
        match v {
            Value::Object(o) => stack.extend(o.values()),
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
}

/// Our typed defaults for each schema object, serialized.
fn our_defaults(at: &str) -> Option<Value> {
    let v = |x: Value| Some(x);
    match at {
        "$" => v(serde_json::to_value(Config::default()).ok()?),
        "permissions" => v(serde_json::to_value(ProjectPermissions::default()).ok()?),
        "target" => v(serde_json::to_value(Target::default()).ok()?),
        "debuggers.*" => v(serde_json::to_value(Debugger::default()).ok()?),
        "debuggers.*.permissions" => v(serde_json::to_value(DebuggerPermissions::default()).ok()?),
        "debug" => v(serde_json::to_value(Debug::default()).ok()?),
        "artifacts" => v(serde_json::to_value(Artifacts::default()).ok()?),
        "com_ports.*" => v(serde_json::to_value(ComPort::default()).ok()?),
        "com_ports.*.permissions"
        | "can_buses.*.permissions"
        | "can_buses.*.shares.*.permissions" => {
            v(serde_json::to_value(IoPermissions::default()).ok()?)
        }
        "can_buses.*" => v(serde_json::to_value(CanBus::default()).ok()?),
        "can_buses.*.shares.*" => v(serde_json::to_value(CanShare::default()).ok()?),
        "can_buses.*.shares.*.filter[]" => v(serde_json::to_value(CanFilter::default()).ok()?),
        "power_supplies.*" => v(serde_json::to_value(PowerSupply::default()).ok()?),
        "power_supplies.*.permissions" => {
            v(serde_json::to_value(PowerSupplyPermissions::default()).ok()?)
        }
        "validation" => v(serde_json::to_value(Validation::default()).ok()?),
        "reports" => v(serde_json::to_value(Reports::default()).ok()?),
        "logs" => v(serde_json::to_value(Logs::default()).ok()?),
        "recovery" => v(serde_json::to_value(Recovery::default()).ok()?),
        _ => None,
    }
}

fn walk_defaults(rroot: &Value, r: &Value, at: &str, checked: &mut usize, out: &mut Vec<String>) {
    let r = deref(rroot, r);
    if let Some(props) = r.get("properties").and_then(Value::as_object) {
        let ours = our_defaults(at);
        for (k, prop) in props {
            let prop = deref(rroot, prop);
            if let (Some(d), Some(ours)) = (prop.get("default"), ours.as_ref()) {
                // Nested objects default to `{}` in the reference: all their own defaults.
                let is_obj_default = d == &json!({});
                if !is_obj_default {
                    let got = &ours[k.as_str()];
                    let same = got == d || (got.as_f64().is_some() && got.as_f64() == d.as_f64());
                    if !same {
                        out.push(format!("{at}.{k}: reference {d} ours {got}"));
                    }
                    *checked += 1;
                }
            }
            let child = if at == "$" {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            walk_defaults(rroot, prop, &child, checked, out);
        }
    }
    if let Some(a) = r.get("additionalProperties").filter(|a| a.is_object()) {
        walk_defaults(rroot, a, &format!("{at}.*"), checked, out);
    }
    if let Some(i) = r.get("items") {
        walk_defaults(rroot, i, &format!("{at}[]"), checked, out);
    }
}

#[test]
fn every_reference_default_is_our_default() {
    let r = reference();
    let mut out = Vec::new();
    let mut checked = 0;
    walk_defaults(&r, &r, "$", &mut checked, &mut out);
    assert!(out.is_empty(), "{}", out.join("\n"));
    assert!(checked > 60, "only {checked} defaults compared");
}

#[test]
fn an_absent_frame_size_follows_fd() {
    let bench = "workspace_root: /w\nstate_root: /s\ncan_buses:\n  a: {channel: c}\n  b: {channel: c, fd: true}\n";
    let cfg = ahil_config::parse_config(bench.as_bytes()).expect("parses");
    assert_eq!(cfg.can_buses["a"].max_frame_data_bytes, 8);
    assert_eq!(cfg.can_buses["b"].max_frame_data_bytes, 64);
}
