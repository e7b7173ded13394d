//! Our JSON Schema of a test plan, rendered from the same shapes the loader checks with.

use serde_json::{Map, Value, json};

use super::catalogue::{MAX_STEPS, OURS, catalogue};
use super::load::root_shape;
use super::shape::render;

/// The JSON Schema (draft 2020-12) of a test plan file. Each step kind is a `$defs` entry
/// named as in the reference schema; `x-since-version` marks what a plan version added.
pub fn plan_json_schema() -> Value {
    let mut defs = Map::new();
    let refs: Vec<Value> = catalogue()
        .iter()
        .map(|k| json!({"$ref": format!("#/$defs/{}", k.def)}))
        .collect();
    defs.insert(
        "steps".into(),
        json!({
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_STEPS,
            "description": "Steps run in order; the run stops at the first that fails.",
            "items": {"oneOf": refs},
        }),
    );
    for k in catalogue() {
        let mut def = render(&k.shape);
        if OURS.contains(&k.action) {
            def["x-agentic-hil-only"] = json!(true);
        }
        defs.insert(k.def.to_owned(), def);
    }
    let mut out = Map::new();
    out.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    out.insert(
        "$id".into(),
        json!("https://agentic-hil.local/schemas/testconfig.schema.json"),
    );
    out.insert("title".into(), json!("agentic-hil test plan"));
    if let Value::Object(root) = render(&root_shape()) {
        out.extend(root);
    }
    out.insert("$defs".into(), Value::Object(defs));
    Value::Object(out)
}
