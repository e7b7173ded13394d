//! Narrowing every grant over MCP, side by side: on the permission matrix's bench with every grant
//! open, `project_config_set` writes `false` into each permission key the file has (one call each,
//! the project's own grants last, `allow_config_permissions_write`, which freezes the rest, at the
//! very end), a key the version does not have, and a widening; both servers must answer alike.
//! One server per implementation and version.

use std::path::Path;

use serde_json::json;

use crate::driver::{Step, compare, tool};
use crate::permissions::write_bench;
use crate::support::World;

/// Permission keys of the bench's entries: (key, versions whose file has it).
#[rustfmt::skip]
const KEYS: &[(&str, &[u8])] = &[
    ("debuggers.dut.permissions.allow_probe", &[1]),
    ("debuggers.dut.permissions.allow_flash", &[1, 3]),
    ("debuggers.dut.permissions.allow_reset", &[1, 3]),
    ("debuggers.dut.permissions.allow_debug_execution", &[1, 3]),
    ("debuggers.dut.permissions.allow_mass_erase", &[1, 3]),
    ("com_ports.nowrite.permissions.allow_read", &[1]),
    ("com_ports.noread.permissions.allow_write", &[1]),
    ("com_ports.nowrite.permissions.allow_write", &[1, 3]),
    ("can_buses.nowrite.permissions.allow_read", &[1]),
    ("can_buses.noread.permissions.allow_write", &[1]),
    ("power_supplies.open.permissions.allow_set", &[3]),
    ("power_supplies.open.permissions.allow_output", &[3]),
    ("artifacts.allow_upload", &[1, 3]),
    ("debug.allow_all_symbols", &[1, 3]),
    ("permissions.allow_recover", &[1, 3]),
    ("permissions.allow_upgrade", &[1, 3]),
    ("permissions.allow_config_description_write", &[1, 3]),
];

/// Compared beside `isError` and `error_type`.
const FIELDS: &[&str] = &["field", "side_effect_status", "reload_required"];

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn set(key: &str, value: bool) -> serde_json::Value {
    json!({"changes": [{"key": key, "value": value}]})
}

fn steps(scope: &str, version: u8) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut push = |what: String, args: serde_json::Value| {
        let case = leak(format!("{scope}{what}"));
        steps.push(tool(case, "project_config_set", args, FIELDS));
    };
    push(
        "widening allow_mass_erase".into(),
        set("debuggers.dut.permissions.allow_mass_erase", true),
    );
    // Keys this version's file cannot have: a grant of version 1 in version 3, and back.
    let absent = if version == 1 {
        "power_supplies.open.permissions.allow_set"
    } else {
        "debuggers.dut.permissions.allow_probe"
    };
    push(format!("absent {absent}"), set(absent, false));
    push(
        "unknown com_ports.nowrite.permissions.allow_everything".into(),
        set("com_ports.nowrite.permissions.allow_everything", false),
    );
    // A mistyped entry must not read as narrowed; one described in the same call exists.
    push(
        "narrowing a grant of an entry the file lacks".into(),
        set("debuggers.dtu.permissions.allow_flash", false),
    );
    push(
        "describing an entry, then narrowing its grant".into(),
        json!({"changes": [
            {"key": "can_buses.extra.channel", "value": "sim-extra"},
            {"key": "can_buses.extra.permissions.allow_write", "value": false},
        ]}),
    );
    for (key, versions) in KEYS {
        if versions.contains(&version) {
            push(format!("narrowing {key}"), set(key, false));
        }
    }
    push(
        "widening after narrowing".into(),
        set("debuggers.dut.permissions.allow_flash", true),
    );
    push(
        "narrowing allow_config_permissions_write".into(),
        set("permissions.allow_config_permissions_write", false),
    );
    push(
        "narrowing once frozen".into(),
        set("artifacts.allow_upload", false),
    );
    steps
}

#[test]
fn narrowing_each_grant_over_mcp_answers_as_the_reference_does() {
    for version in [1_u8, 3] {
        let scope = leak(format!("narrow/v{version}/"));
        let bench = move |world: &World, _: &Path| write_bench(world, version, &[]);
        compare(scope, &bench, &steps(scope, version));
    }
}
