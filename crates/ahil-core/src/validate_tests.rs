use super::*;
use serde_json::json;

fn violation(schema: &Value, arguments: &Value) -> (String, &'static str) {
    let found = first_violation(schema, arguments).expect("a violation was expected");
    (found.field(), found.validator)
}

fn object(properties: &Value) -> Value {
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

#[test]
fn conforming_arguments_pass() {
    let schema = object(&json!({"mode": {"type": "string", "enum": ["run", "halt"]}}));
    assert_eq!(first_violation(&schema, &json!({"mode": "run"})), None);
    assert_eq!(first_violation(&schema, &json!({})), None);
}

#[test]
fn an_unexpected_member_names_itself() {
    let schema = object(&json!({}));
    assert_eq!(
        violation(&schema, &json!({"foo": 1})),
        ("foo".into(), "additionalProperties")
    );
}

#[test]
fn a_missing_required_member_names_itself() {
    let mut schema = object(&json!({"devices": {"type": "array"}}));
    schema["required"] = json!(["devices"]);
    assert_eq!(
        violation(&schema, &json!({})),
        ("devices".into(), "required")
    );
}

#[test]
fn two_missing_members_report_the_first_the_schema_requires() {
    let mut schema = object(&json!({"b": {}, "a": {}}));
    schema["required"] = json!(["b", "a"]);
    assert_eq!(violation(&schema, &json!({})).0, "b");
}

#[test]
fn an_enum_miss_lists_the_allowed_values() {
    let schema = object(&json!({"mode": {"type": "string", "enum": ["run", "halt", "init"]}}));
    let found = first_violation(&schema, &json!({"mode": "bogus"})).expect("violation");
    assert_eq!((found.field().as_str(), found.validator), ("mode", "enum"));
    assert_eq!(
        found.allowed_values,
        Some(vec![json!("run"), json!("halt"), json!("init")])
    );
}

#[test]
fn integers_refuse_fractions_and_booleans_but_accept_two_point_zero() {
    let schema = object(&json!({"n": {"type": "integer", "minimum": 1}}));
    assert_eq!(violation(&schema, &json!({"n": 1.5})), ("n".into(), "type"));
    assert_eq!(
        violation(&schema, &json!({"n": true})),
        ("n".into(), "type")
    );
    assert_eq!(first_violation(&schema, &json!({"n": 2.0})), None);
}

#[test]
fn numbers_accept_integers() {
    let schema = object(&json!({"t": {"type": "number", "minimum": 0}}));
    assert_eq!(first_violation(&schema, &json!({"t": 3})), None);
    assert_eq!(violation(&schema, &json!({"t": "3"})), ("t".into(), "type"));
}

#[test]
fn minimum_and_maximum_are_inclusive() {
    let schema = object(&json!({"w": {"type": "number", "minimum": 0, "maximum": 900}}));
    assert_eq!(first_violation(&schema, &json!({"w": 0})), None);
    assert_eq!(first_violation(&schema, &json!({"w": 900})), None);
    assert_eq!(
        violation(&schema, &json!({"w": 900.5})),
        ("w".into(), "maximum")
    );
    assert_eq!(
        violation(&schema, &json!({"w": -0.1})),
        ("w".into(), "minimum")
    );
}

#[test]
fn min_length_counts_characters_not_bytes() {
    let schema = object(&json!({"s": {"type": "string", "minLength": 2, "maxLength": 2}}));
    assert_eq!(first_violation(&schema, &json!({"s": "éé"})), None);
    assert_eq!(
        violation(&schema, &json!({"s": "é"})),
        ("s".into(), "minLength")
    );
    assert_eq!(
        violation(&schema, &json!({"s": "abc"})),
        ("s".into(), "maxLength")
    );
}

#[test]
fn patterns_are_checked() {
    let schema = object(&json!({"symbol": {
        "type": "string",
        "pattern": "^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$"
    }}));
    assert_eq!(
        first_violation(&schema, &json!({"symbol": "ns::counter"})),
        None
    );
    assert_eq!(
        violation(&schema, &json!({"symbol": "1abc"})),
        ("symbol".into(), "pattern")
    );
}

#[test]
fn an_unanchored_pattern_is_a_search() {
    let schema = json!({"type": "string", "not": {"pattern": "(?:^|[/\\\\])\\.\\.(?:$|[/\\\\])"}});
    assert_eq!(first_violation(&schema, &json!("src/main.c")), None);
    assert_eq!(
        violation(&schema, &json!("src/../x.c")),
        ("$".into(), "not")
    );
}

#[test]
fn a_one_of_with_no_or_two_matches_fails_at_the_root() {
    let mut schema =
        object(&json!({"image_path": {"type": "string"}, "artifact_id": {"type": "string"}}));
    schema["oneOf"] = json!([{"required": ["image_path"]}, {"required": ["artifact_id"]}]);
    assert_eq!(violation(&schema, &json!({})), ("$".into(), "oneOf"));
    assert_eq!(
        violation(&schema, &json!({"image_path": "a", "artifact_id": "b"})),
        ("$".into(), "oneOf")
    );
    assert_eq!(first_violation(&schema, &json!({"artifact_id": "b"})), None);
}

#[test]
fn nested_array_items_report_indexed_paths() {
    let mut schema = object(&json!({"devices": {
        "type": "array",
        "minItems": 1,
        "items": {"type": "object", "additionalProperties": false, "required": ["kind"],
                  "properties": {"kind": {"type": "string", "enum": ["debugger", "uart"]}}}
    }}));
    schema["required"] = json!(["devices"]);
    assert_eq!(
        violation(&schema, &json!({"devices": []})),
        ("devices".into(), "minItems")
    );
    assert_eq!(
        violation(
            &schema,
            &json!({"devices": [{"kind": "uart"}, {"kind": "x"}]})
        ),
        ("devices[1].kind".into(), "enum")
    );
    assert_eq!(
        violation(&schema, &json!({"devices": [{"kind": "uart", "zz": 1}]})),
        ("devices[0].zz".into(), "additionalProperties")
    );
    assert_eq!(
        violation(&schema, &json!({"devices": [{}]})),
        ("devices[0].kind".into(), "required")
    );
}

#[test]
fn root_errors_come_before_member_errors() {
    let schema = object(&json!({"port_id": {"type": "string"}}));
    assert_eq!(
        violation(&schema, &json!({"port_id": 5, "zz": 1})),
        ("zz".into(), "additionalProperties")
    );
}

#[test]
fn type_unions_accept_any_listed_type() {
    let schema = json!({"type": ["string", "null"]});
    assert_eq!(first_violation(&schema, &Value::Null), None);
    assert_eq!(violation(&schema, &json!(1)), ("$".into(), "type"));
}

#[test]
fn max_items_is_checked() {
    let schema = json!({"type": "array", "maxItems": 1});
    assert_eq!(violation(&schema, &json!([1, 2])), ("$".into(), "maxItems"));
}

#[test]
fn non_object_arguments_are_an_invalid_argument() {
    let refusal = validate_arguments("debugger_info", &object(&json!({})), &mut json!([1]))
        .expect_err("arrays are not arguments");
    assert_eq!(refusal.error_type.as_deref(), Some("invalid_argument"));
    assert_eq!(refusal.detail("field"), Some(&json!("$")));
}

#[test]
fn the_refusal_carries_field_validator_and_allowed_values() {
    let schema = object(&json!({"mode": {"type": "string", "enum": ["run", "halt"]}}));
    let refusal = validate_arguments("reset_target", &schema, &mut json!({"mode": "x"}))
        .expect_err("bad mode");
    let value = refusal.to_value();
    assert_eq!(value["error_type"], json!("invalid_argument"));
    assert_eq!(value["field"], json!("mode"));
    assert_eq!(value["validator"], json!("enum"));
    assert_eq!(value["allowed_values"], json!(["run", "halt"]));
    assert_eq!(
        value["summary"],
        json!("Tool arguments failed schema validation.")
    );
    assert_eq!(value["retry_safe"], json!(true));
}

#[test]
fn the_non_finite_check_runs_first_and_names_its_path() {
    // serde_json cannot hold NaN, so the walk is exercised on a path with only finite numbers.
    assert_eq!(
        first_non_finite(&json!({"a": [1.5, 2]}), &mut Vec::new()),
        None
    );
    let found = Violation {
        path: vec![PathStep::Key("t".into())],
        validator: "finite",
        member: None,
        allowed_values: None,
    };
    assert_eq!(found.field(), "t");
}

#[test]
fn an_overflowing_number_marked_by_the_framing_is_refused_as_non_finite_by_name() {
    let schema = json!({"type": "object", "properties": {"wait_s": {"type": "number"}}, "additionalProperties": false});
    let violation = first_violation(&schema, &json!({"wait_s": NON_FINITE_MARKER}))
        .expect("the marker is a violation");
    assert_eq!(violation.validator, "finite");
    assert_eq!(violation.field(), "wait_s");
}

#[test]
fn a_whole_float_where_an_integer_is_asked_is_used_as_that_integer() {
    let schema = object(&json!({
        "n": {"type": "integer"},
        "t": {"type": "number"},
        "ids": {"oneOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
        "at": {"type": "object", "properties": {"line": {"type": "integer"}}},
    }));
    let mut used = json!({"n": 2.0, "t": 3.0, "ids": [256.0, -0.0], "at": {"line": 10.0}});
    validate_arguments("t", &schema, &mut used).expect("the arguments conform");
    assert_eq!(used["n"].as_u64(), Some(2));
    assert_eq!(used["ids"][0].as_u64(), Some(256));
    assert_eq!(used["ids"][1].as_u64(), Some(0));
    assert_eq!(used["at"]["line"].as_u64(), Some(10));
    assert!(used["t"].is_f64(), "a number stays as sent: {used}");
}
