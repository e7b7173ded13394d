use serde_json::{Value, json};

use super::*;
use crate::catalogue;
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};

/// Every `properties` member of `schema`, at any depth, with its dotted path.
fn declared(schema: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, member) in properties {
            let at = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            out.push((at.clone(), member.clone()));
            declared(member, &at, out);
        }
    }
    if let Some(items) = schema.get("items") {
        declared(items, &format!("{path}[]"), out);
    }
}

#[test]
fn every_listed_tool_declares_an_output_schema_with_fields_of_its_own() {
    for spec in catalogue::tools(true) {
        let schema = &spec.output_schema;
        assert_eq!(schema["type"], "object", "{}", spec.name);
        assert_eq!(schema["required"], json!(REQUIRED), "{}", spec.name);
        let id: ToolId = spec.name.parse().expect("a listed tool is declared");
        let (family, own) = tool_fields(id);
        assert!(
            !fields_of(family).is_empty() || !fields_of(own).is_empty(),
            "{} publishes only the envelope: declare its own result fields in catalogue_output",
            spec.name
        );
        assert_eq!(schema, &output_schema(id), "{}", spec.name);
    }
}

#[test]
fn every_declared_field_is_typed() {
    for spec in catalogue::tools(true) {
        let mut fields = Vec::new();
        declared(&spec.output_schema, "", &mut fields);
        for (path, member) in fields {
            assert!(
                member.get("type").is_some()
                    || member.get("enum").is_some()
                    || member.get("const").is_some(),
                "{}: `{path}` has no type",
                spec.name
            );
        }
    }
}

#[test]
fn no_schema_uses_a_keyword_the_test_clients_cannot_check() {
    // The test clients validate with `validate.rs`; a keyword it does not know would pass anything.
    const KNOWN: &[&str] = &[
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "minimum",
        "description",
    ];
    for spec in catalogue::tools(true) {
        let mut fields = vec![(String::new(), spec.output_schema.clone())];
        declared(&spec.output_schema, "", &mut fields);
        for (path, member) in fields {
            for keyword in member.as_object().into_iter().flat_map(|m| m.keys()) {
                assert!(
                    KNOWN.contains(&keyword.as_str()),
                    "{}: `{path}` uses `{keyword}`",
                    spec.name
                );
            }
        }
    }
}

#[test]
fn the_envelope_schema_types_every_field_the_envelope_can_write() {
    let mut full = Outcome::refused("probe_target", crate::ErrorType::Timeout, "x")
        .with_causes(["a"])
        .with_remediation(["b"])
        .with_do_not(["c"])
        .with_next_step("d");
    full.target_contacted = Some(true);
    full.side_effect_committed = Some(true);
    full.side_effect_status = Some(SideEffectStatus::Partial);
    full.hardware_state = Some(HardwareState::Unknown);
    full.retry_safe = Some(false);
    full.audit_ok = Some(false);
    full.cleanup_ok = Some(false);
    full.cleanup_required = Some(true);
    full.quarantined = Some(true);
    full.lease_state = Some("expired".into());
    full.target_ok = Some(false);
    full.config_in_force = Some(json!({}));
    full.config_status = Some(json!({"state": "unchanged"}));
    full.config_stale = Some(true);
    full.report_path = Some("r".into());
    full.log_path = Some("l".into());
    full.started_at = Some("s".into());
    full.finished_at = Some("f".into());
    full.elapsed_ms = Some(3);
    let document = full.to_value();
    let properties = envelope_properties();
    for key in document
        .as_object()
        .expect("an envelope is an object")
        .keys()
    {
        assert!(
            properties.contains_key(key),
            "`{key}` is not in the envelope schema"
        );
    }
    assert_eq!(check_result("probe_target", &document), Ok(()));
}

#[test]
fn a_refusal_before_contact_matches_every_tools_schema() {
    for spec in catalogue::tools(true) {
        let refused = Outcome::refused(
            &spec.name,
            crate::ErrorType::PermissionDenied,
            "Not allowed.",
        )
        .with_remediation(["Ask the operator."])
        .not_contacted();
        assert_eq!(
            check_result(&spec.name, &refused.to_value()),
            Ok(()),
            "{}",
            spec.name
        );
    }
}

#[test]
fn a_result_with_a_wrongly_typed_declared_field_is_rejected_naming_its_path() {
    let read = |bytes_read: Value, text: Value| {
        Outcome::ok("com_read", "Read.")
            .with("bytes_read", bytes_read)
            .with(
                "data",
                json!({"hex": "6f6b", "text": text, "encoding": "utf-8"}),
            )
            .to_value()
    };
    assert_eq!(
        check_result("com_read", &read(json!(2), json!("ok"))),
        Ok(())
    );
    let problem = check_result("com_read", &read(json!("2"), json!("ok")))
        .expect_err("a count sent as a string is refused");
    assert!(problem.contains("`bytes_read` (type)"), "{problem}");
    let problem = check_result("com_read", &read(json!(2), json!(7)))
        .expect_err("a nested field of the wrong type is refused");
    assert!(problem.contains("`data.text` (type)"), "{problem}");
}

#[test]
fn a_result_without_the_envelopes_required_fields_is_rejected() {
    let problem = check_result("probe_target", &json!({"ok": true, "tool": "probe_target"}))
        .expect_err("a result with no summary is refused");
    assert!(problem.contains("`summary` (required)"), "{problem}");
    let problem = check_result(
        "probe_target",
        &json!({"ok": true, "tool": "probe_target", "summary": "x", "hardware_state": "fine"}),
    )
    .expect_err("an envelope value outside its enum is refused");
    assert!(problem.contains("`hardware_state` (enum)"), "{problem}");
}

#[test]
fn the_published_schema_only_names_fields_the_detailed_schema_types_the_same_way() {
    for spec in catalogue::tools(true) {
        let id: ToolId = spec.name.parse().expect("a listed tool is declared");
        let detailed = detailed_schema(Some(id));
        for (name, published) in spec.output_schema["properties"]
            .as_object()
            .expect("an outputSchema has properties")
        {
            let full = &detailed["properties"][name];
            assert_eq!(published["type"], full["type"], "{}: `{name}`", spec.name);
            assert_eq!(published["enum"], full["enum"], "{}: `{name}`", spec.name);
        }
    }
}

#[test]
fn the_whole_listing_stays_well_under_120_kilobytes() {
    // Hosts load every tool's schemas at each connection; the output schemas in full made 327 KB.
    let listing: Vec<Value> = catalogue::tools(true)
        .iter()
        .map(catalogue::ToolSpec::to_mcp_value)
        .collect();
    let size = serde_json::to_string(&listing).expect("serializes").len();
    assert!(size < 110_000, "tools/list is {size} bytes");
}
