//! Every number a tool takes has a published maximum, and the check before dispatch holds it; a
//! capture reads no more than its port's buffer cap.

use std::path::PathBuf;

use ahil_config::{Environment, canonical_config_path, default_state_root, render_init_config};
use ahil_gate::validate::first_violation;
use ahil_gate::{Bench, tools};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Every numeric schema in `schema`, with where it sits.
fn numeric_schemas(schema: &Value, at: &str, out: &mut Vec<(String, Value)>) {
    match schema {
        Value::Object(map) => {
            let numeric = match map.get("type") {
                Some(Value::String(t)) => t == "integer" || t == "number",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer" || t == "number"),
                _ => false,
            };
            if numeric {
                out.push((at.to_owned(), schema.clone()));
            }
            for (key, sub) in map {
                numeric_schemas(sub, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                numeric_schemas(sub, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn every_numeric_schema() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for provisioned in [true, false] {
        for spec in tools(provisioned) {
            numeric_schemas(&spec.input_schema, &spec.name, &mut out);
        }
    }
    assert!(out.len() > 20, "the catalogue's numbers were found");
    out
}

/// The smallest value past `max` the schema's type can carry: max + 1 for an integer, the next
/// float up for a number.
fn one_past(schema: &Value, max: f64) -> Value {
    let integer_only = schema["type"] == "integer";
    if integer_only {
        // Every integer maximum here is far below 2^53, so max + 1 is exact.
        json!(max + 1.0)
    } else {
        json!(f64::from_bits(max.to_bits() + 1))
    }
}

#[test]
fn every_number_a_tool_takes_has_a_maximum_and_one_past_it_is_refused() {
    for (at, schema) in every_numeric_schema() {
        let max = schema["maximum"]
            .as_f64()
            .unwrap_or_else(|| panic!("{at} publishes no maximum: {schema}"));
        let past = one_past(&schema, max);
        let refused = first_violation(&schema, &past);
        assert_eq!(
            refused.map(|v| v.validator),
            Some("maximum"),
            "{at}: {past} is past its maximum {max}"
        );
        let at_max = first_violation(&schema, &json!(max));
        assert!(
            at_max.as_ref().is_none_or(|v| v.validator != "maximum"),
            "{at}: the maximum itself is allowed"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_number_past_a_maximum_is_refused(which in any::<prop::sample::Index>(), over in 1.0f64..1e308) {
        let schemas = every_numeric_schema();
        let (at, schema) = &schemas[which.index(schemas.len())];
        let max = schema["maximum"].as_f64().expect("a maximum");
        let value = json!(max + over);
        prop_assert_eq!(first_violation(schema, &value).map(|v| v.validator), Some("maximum"), "{}: {}", at, value);
    }
}

struct World {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    tools: PathBuf,
    env: Environment,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let home = root.path().join("home");
        let workspace = root.path().join("ws");
        let tools = root.path().join("tools");
        for dir in [&home, &workspace, &tools] {
            std::fs::create_dir_all(dir).expect("world dirs");
        }
        let env = Environment {
            home,
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            path: Some(tools.clone().into_os_string()),
        };
        Self {
            _root: root,
            workspace,
            tools,
            env,
        }
    }

    /// The starter with an OpenOCD that records it ran, and a port `uart` holding `buffer` bytes.
    fn bench(&self, buffer: u64) -> (Bench, PathBuf) {
        let ran = self.tools.join("openocd-ran");
        let openocd = self.tools.join("openocd");
        std::fs::write(
            &openocd,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", ran.display()),
        )
        .expect("fake openocd");
        make_executable(&openocd);
        let starter = render_init_config(&self.workspace, &default_state_root(&self.env));
        let ports = format!(
            "com_ports:\n  uart:\n    device: \"/dev/null\"\n    identity_source: device\n    max_buffer_bytes: {buffer}\n"
        );
        let text = starter.replacen("com_ports: {}", &ports, 1).replacen(
            "    executable: null",
            &format!("    executable: \"{}\"", openocd.display()),
            1,
        );
        let path = canonical_config_path(&self.workspace, &self.env);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("config dir");
        std::fs::write(&path, text).expect("config");
        let loaded =
            ahil_config::load_authoritative(&self.workspace, &self.env).expect("the config loads");
        (Bench::provisioned(loaded, self.env.clone()), ran)
    }
}

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path).expect("metadata").permissions();
    perms.set_mode(0o755);
    std::fs::set_permissions(path, perms).expect("chmod");
}

#[tokio::test]
async fn a_capture_asking_more_than_its_ports_buffer_is_refused_before_the_debugger_runs() {
    let world = World::new();
    let (bench, ran) = world.bench(64);
    std::fs::create_dir_all(world.workspace.join("build")).expect("build dir");
    let refused = bench
        .call(
            "flash_firmware",
            json!({"image_path": "build/fw.elf", "reset_after_flash": true,
                   "capture": {"port_id": "uart", "max_bytes": 65}}),
        )
        .await
        .to_value();
    assert_eq!(refused["error_type"], "invalid_argument", "{refused}");
    assert_eq!(refused["field"], "capture.max_bytes", "{refused}");
    assert_eq!(refused["max_buffer_bytes"], 64, "{refused}");
    assert!(!ran.exists(), "the refusal came before OpenOCD ran");
}

#[tokio::test]
async fn com_read_refuses_a_wait_of_1e308_and_a_count_of_2_to_the_64_plus_5() {
    let world = World::new();
    let (bench, _) = world.bench(64);
    let huge: Value = serde_json::from_str("18446744073709551621").expect("a JSON number");
    for (field, value) in [("wait_timeout_s", json!(1e308)), ("max_bytes", huge)] {
        let mut args = json!({"port_id": "uart"});
        args[field] = value;
        let refused = bench.call("com_read", args).await.to_value();
        assert_eq!(refused["error_type"], "invalid_argument", "{refused}");
        assert_eq!(refused["field"], field, "{refused}");
        assert_eq!(refused["validator"], "maximum", "{refused}");
    }
}
