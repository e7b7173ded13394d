//! Our plan schema against the reference's (printed by the installed reference): the same step kinds under
//! the same `$defs` names, the same keys per kind, the same required keys, defaults and
//! version markers. Descriptions are ours and are not compared.

mod reference;

use ahil_config::plan::{PLAN_VERSIONS, plan_json_schema};
use serde_json::{Value, json};

fn reference() -> Value {
    reference::reference_schema("test-schema")
}

/// Follows `$ref` into `$defs`, keeping keys written beside the `$ref` (the reference
/// puts `x-since-version` there).
fn deref(root: &Value, v: &Value) -> Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let mut target = deref(root, &root["$defs"][r.trim_start_matches("#/$defs/")]);
            if let (Value::Object(t), Value::Object(beside)) = (&mut target, v) {
                for (k, x) in beside {
                    if k != "$ref" {
                        t.insert(k.clone(), x.clone());
                    }
                }
            }
            target
        }
        None => v.clone(),
    }
}

fn sorted_keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

/// Compares two object schemas key by key, recursing into nested objects and into the
/// object alternatives of a `oneOf`.
fn compare(rroot: &Value, oroot: &Value, r: &Value, o: &Value, at: &str, out: &mut Vec<String>) {
    let (r, o) = (deref(rroot, r), deref(oroot, o));
    for key in [
        "required",
        "default",
        "x-since-version",
        "const",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "minLength",
        "pattern",
        "type",
    ] {
        if r.get(key) != o.get(key) {
            out.push(format!(
                "{at}.{key}: reference {:?} ours {:?}",
                r.get(key),
                o.get(key)
            ));
        }
    }
    for key in ["oneOf", "anyOf", "dependentRequired", "dependentSchemas"] {
        if r.get(key).is_some() != o.get(key).is_some() {
            out.push(format!("{at}: {key} present in only one schema"));
        }
    }
    if let (Some(rp), Some(op)) = (r.get("properties"), o.get("properties")) {
        if sorted_keys(rp) != sorted_keys(op) {
            out.push(format!(
                "{at}: reference {:?} ours {:?}",
                sorted_keys(rp),
                sorted_keys(op)
            ));
        }
        for k in sorted_keys(rp) {
            if let (Some(rv), Some(ov)) = (rp.get(&k), op.get(&k)) {
                compare(rroot, oroot, rv, ov, &format!("{at}.{k}"), out);
            }
        }
    }
    if let (Some(Value::Array(ra)), Some(Value::Array(oa))) = (r.get("oneOf"), o.get("oneOf"))
        && ra.len() == oa.len()
    {
        for (i, (rv, ov)) in ra.iter().zip(oa).enumerate() {
            compare(rroot, oroot, rv, ov, &format!("{at}.oneOf[{i}]"), out);
        }
    }
}

#[test]
fn every_step_kind_has_the_reference_name_and_the_reference_keys() {
    let theirs = reference();
    let ours = plan_json_schema();
    // Our own kinds (marked x-agentic-hil-only) come after the reference's and are not its.
    let refs = |s: &Value| -> Vec<String> {
        s["$defs"]["steps"]["items"]["oneOf"]
            .as_array()
            .expect("steps are a oneOf of step kinds")
            .iter()
            .filter_map(|r| r["$ref"].as_str().map(str::to_owned))
            .filter(|r| s["$defs"][r.trim_start_matches("#/$defs/")]["x-agentic-hil-only"] != true)
            .collect()
    };
    let listed = ours["$defs"]["steps"]["items"]["oneOf"]
        .as_array()
        .expect("steps are a oneOf of step kinds");
    assert_eq!(
        listed[..refs(&ours).len()]
            .iter()
            .filter_map(|r| r["$ref"].as_str())
            .collect::<Vec<_>>(),
        refs(&ours),
        "our own kinds come after the reference's"
    );
    assert_eq!(
        listed.len(),
        refs(&ours).len() + 1,
        "one kind of ours: rttExpect"
    );
    assert_eq!(
        refs(&theirs),
        refs(&ours),
        "same step kinds in the same order"
    );
    let mut problems = Vec::new();
    for r in refs(&theirs) {
        let name = r.trim_start_matches("#/$defs/");
        compare(
            &theirs,
            &ours,
            &theirs["$defs"][name],
            &ours["$defs"][name],
            name,
            &mut problems,
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_root_and_the_step_list_match_the_reference() {
    let theirs = reference();
    let ours = plan_json_schema();
    assert_eq!(
        sorted_keys(&theirs["properties"]),
        sorted_keys(&ours["properties"])
    );
    assert_eq!(theirs["required"], ours["required"]);
    assert_eq!(theirs["additionalProperties"], ours["additionalProperties"]);
    assert_eq!(
        theirs["properties"]["version"]["enum"],
        ours["properties"]["version"]["enum"]
    );
    assert_eq!(ours["properties"]["version"]["enum"], json!(PLAN_VERSIONS));
    assert_eq!(
        theirs["properties"]["name"],
        json!({"type": "string", "minLength": 1})
    );
    assert_eq!(ours["properties"]["name"]["minLength"], 1);
    for key in ["minItems", "maxItems", "type"] {
        assert_eq!(
            theirs["$defs"]["steps"][key], ours["$defs"]["steps"][key],
            "{key}"
        );
    }
    assert_eq!(theirs["$id"], ours["$id"]);
}

#[test]
fn every_description_is_our_own_words() {
    fn descriptions(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "description" {
                        if let Some(s) = x.as_str() {
                            out.push(s.to_owned());
                        }
                    } else {
                        descriptions(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| descriptions(x, out)),
            _ => {}
        }
    }
    let (mut theirs, mut ours) = (Vec::new(), Vec::new());
    descriptions(&reference(), &mut theirs);
    descriptions(&plan_json_schema(), &mut ours);
    for d in &ours {
        assert!(!theirs.contains(d), "copied description: {d}");
    }
}

#[test]
fn the_comparison_notices_a_missing_key_and_a_changed_default() {
    let theirs = reference();
    let mut ours = plan_json_schema();
    ours["$defs"]["flash"]["properties"]
        .as_object_mut()
        .expect("flash has properties")
        .remove("reset_after_flash");
    ours["$defs"]["reset"]["properties"]["mode"]["default"] = json!("halt");
    ours["$defs"]["canRead"]["properties"]["timeout_s"]
        .as_object_mut()
        .expect("timeout_s is an object")
        .remove("x-since-version");
    let mut problems = Vec::new();
    for name in ["flash", "reset", "canRead"] {
        compare(
            &theirs,
            &ours,
            &theirs["$defs"][name],
            &ours["$defs"][name],
            name,
            &mut problems,
        );
    }
    assert_eq!(problems.len(), 3, "{problems:?}");
}
