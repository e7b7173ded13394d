//! `project_config_describe`: what the configuration in force grants, and which keys
//! `project_config_set` may change under which grant.

use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::Config;
use serde_json::{Map, Value, json};

use super::{Acted, Context, Plan, Work};
use crate::envelope::Outcome;

const DESCRIPTION: &str = "allow_config_description_write";
const PERMISSIONS: &str = "allow_config_permissions_write";

use crate::config_edit::keys::{
    CAN_FIELDS, COM_FIELDS, DEBUGGER_FIELDS, DEBUGGER_OWN_FLAGS, PROJECT_FLAGS, RTT_FIELDS,
};

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ProjectConfigDescribe])?;
    Ok(Plan::read_state(Work::Local(Box::new(move || {
        Acted::local(describe(ctx))
    }))))
}

/// One settable key and the grant that opens it.
struct KeyRule {
    key: String,
    right: &'static str,
}

/// Every key `project_config_set` can reach in this document, description keys first, each group in
/// file order, permission flags sorted within their block.
fn key_rules(config: &Config) -> Vec<KeyRule> {
    let mut rules = Vec::new();
    let mut add = |key: String, right: &'static str| rules.push(KeyRule { key, right });
    add("target.controller".into(), DESCRIPTION);
    add("target.name".into(), DESCRIPTION);
    for (name, debugger) in &config.debuggers {
        for field in DEBUGGER_FIELDS {
            add(format!("debuggers.{name}.{field}"), DESCRIPTION);
        }
        // Ours alone: listed only where the file already has an rtt section.
        if debugger.rtt.is_some() {
            for field in RTT_FIELDS {
                add(format!("debuggers.{name}.rtt.{field}"), DESCRIPTION);
            }
        }
    }
    for name in config.com_ports.keys() {
        for field in COM_FIELDS {
            add(format!("com_ports.{name}.{field}"), DESCRIPTION);
        }
    }
    for name in config.can_buses.keys() {
        for field in CAN_FIELDS {
            add(format!("can_buses.{name}.{field}"), DESCRIPTION);
        }
    }
    add("debug.gdb_executable".into(), DESCRIPTION);
    for flag in PROJECT_FLAGS {
        add(format!("permissions.{flag}"), PERMISSIONS);
    }
    let v1 = config.version <= 1;
    for (name, debugger) in &config.debuggers {
        let mut flags = vec![
            "allow_debug_execution",
            "allow_flash",
            "allow_mass_erase",
            "allow_raw_debugger_commands",
            "allow_reset",
        ];
        if v1 {
            flags.push("allow_probe");
        }
        // Ours alone, as the rtt section is: listed where the file uses RTT.
        if debugger.rtt.is_some() || debugger.permissions.allow_rtt_write {
            flags.extend_from_slice(DEBUGGER_OWN_FLAGS);
        }
        flags.sort_unstable();
        for flag in flags {
            add(format!("debuggers.{name}.permissions.{flag}"), PERMISSIONS);
        }
    }
    let io_flags: &[&str] = if v1 {
        &["allow_read", "allow_write"]
    } else {
        &["allow_write"]
    };
    for (section, names) in [
        ("com_ports", config.com_ports.keys().collect::<Vec<_>>()),
        ("can_buses", config.can_buses.keys().collect::<Vec<_>>()),
    ] {
        for name in names {
            for flag in io_flags {
                add(format!("{section}.{name}.permissions.{flag}"), PERMISSIONS);
            }
        }
    }
    add("debug.allow_all_symbols".into(), PERMISSIONS);
    add("artifacts.allow_upload".into(), PERMISSIONS);
    rules
}

fn program_fields(section: &str) -> &'static [&'static str] {
    match section {
        "debuggers" => crate::config_edit::keys::DEBUGGER_PROGRAM_FIELDS,
        "can_buses" => crate::config_edit::keys::CAN_PROGRAM_FIELDS,
        _ => &[],
    }
}

fn lookup<'v>(document: &'v Value, key: &str) -> Option<&'v Value> {
    key.split('.')
        .try_fold(document, |node, part| node.get(part))
}

/// The schema node of a dotted key: nested `properties`, map entries through `additionalProperties`,
/// `$ref`s into `$defs` resolved; the containers' own structure is stripped.
pub(super) fn value_schema(schema: &Value, key: &str) -> Value {
    let resolve = |node: &Value| -> Value {
        match node.get("$ref").and_then(Value::as_str) {
            Some(reference) => reference
                .strip_prefix("#/")
                .and_then(|p| p.split('/').try_fold(schema, |n, part| n.get(part)))
                .cloned()
                .unwrap_or(Value::Null),
            None => node.clone(),
        }
    };
    let mut node = resolve(schema);
    for part in key.split('.') {
        let next = node
            .get("properties")
            .and_then(|p| p.get(part))
            .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
            .or_else(|| {
                node.get("patternProperties")
                    .and_then(Value::as_object)
                    .and_then(|m| m.values().next())
            })
            .map(resolve);
        match next {
            Some(found) => node = found,
            None => return json!({}),
        }
    }
    if let Value::Object(members) = &mut node {
        for container in [
            "properties",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "required",
            "allOf",
            "$defs",
            "title",
        ] {
            members.remove(container);
        }
    }
    node
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

pub(crate) fn permissions_in_force(config: &Config) -> Value {
    let mut out = Map::new();
    if let Value::Object(project) = to_json(&config.permissions) {
        out.extend(project);
    }
    let section = |entries: Vec<(&String, Value)>| -> Value {
        Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), v)).collect())
    };
    out.insert(
        "debuggers".into(),
        section(
            config
                .debuggers
                .iter()
                .map(|(n, d)| (n, to_json(&d.permissions)))
                .collect(),
        ),
    );
    out.insert(
        "com_ports".into(),
        section(
            config
                .com_ports
                .iter()
                .map(|(n, p)| (n, to_json(&p.permissions)))
                .collect(),
        ),
    );
    out.insert(
        "can_buses".into(),
        section(
            config
                .can_buses
                .iter()
                .map(|(n, b)| (n, to_json(&b.permissions)))
                .collect(),
        ),
    );
    out.insert(
        "debug".into(),
        json!({"allow_all_symbols": config.debug.allow_all_symbols}),
    );
    out.insert(
        "artifacts".into(),
        json!({"allow_upload": config.artifacts.allow_upload}),
    );
    // The typed model also holds the version-1 read grants; later versions do not have them.
    if config.version >= 2 {
        for section in ["debuggers", "com_ports", "can_buses"] {
            if let Some(Value::Object(entries)) = out.get_mut(section) {
                for flags in entries.values_mut() {
                    if let Value::Object(flags) = flags {
                        flags.remove("allow_probe");
                        flags.remove("allow_read");
                    }
                }
            }
        }
    }
    Value::Object(out)
}

/// What this server holds on the bench now (a run, sessions); `null` when nothing.
fn open_holds(ctx: &Context<'_>) -> Value {
    let held = ctx.ownership.locks.held();
    let run = ctx.ownership.runs.current();
    if held.is_empty() && run.is_none() {
        return Value::Null;
    }
    json!({
        "devices": held,
        "run": run.map(|r| json!({"label": r.label, "started_at": r.started_at})),
    })
}

/// The operator's maximum holds: how long a run or a session stays open before the gate closes it
/// (`null`: until stopped). No field-wise write reaches them.
fn max_holds(config: &Config) -> Value {
    json!({
        "max_run_s": config.holds.max_run_s,
        "max_session_s": config.holds.max_session_s,
        "set_by": "operator",
    })
}

fn right_entry(permission: &str, granted: bool, covers: &str) -> Value {
    json!({"permission": permission, "key": format!("permissions.{permission}"), "granted": granted, "covers": covers})
}

/// The file no longer loads: nothing can be listed or changed, and the server still enforces what
/// it loaded.
fn file_refusal(ctx: &Context<'_>, error: &ahil_config::ConfigError) -> Outcome {
    let mut outcome = Outcome::refused(
        ctx.tool,
        ErrorType::layer(error.error_type()),
        format!(
            "The configuration file no longer loads ({}); no key can be listed or changed until it does. This server still enforces the configuration it loaded, shown as permissions_in_force.",
            error.summary().trim_end_matches('.')
        ),
    )
    .with("document_source", "loaded_policy")
    .with("path", ctx.loaded.display_path.as_str())
    .with("permissions_in_force", permissions_in_force(&ctx.loaded.config))
    .with_remediation([
        "Ask the operator to correct the file (agentic-hil doctor names the fault), then call project_config_describe again.",
    ])
    .not_started(true);
    for (key, value) in error.details() {
        if !matches!(key.as_str(), "path" | "summary" | "error_type") {
            outcome.set(&key, value);
        }
    }
    outcome
}

fn describe(ctx: &Context<'_>) -> Outcome {
    let loaded = ctx.loaded;
    let config = &loaded.config;
    let document = serde_json::to_value(config).unwrap_or(Value::Null);
    let schema = ahil_config::config_json_schema();
    // A write checks the grant both in force and in the file (a closed grant freezes at once), so
    // the answer here does too; and a file that no longer loads lists no key at all.
    let file = match ahil_config::load_config_file(&loaded.path) {
        Ok(file) => file,
        Err(error) => return file_refusal(ctx, &error),
    };
    let on_disk = file.permissions;
    let file_document = serde_json::to_value(&file).unwrap_or(Value::Null);
    let granted = |right: &str| match right {
        DESCRIPTION => {
            config.permissions.allow_config_description_write
                && on_disk.allow_config_description_write
        }
        PERMISSIONS => {
            config.permissions.allow_config_permissions_write
                && on_disk.allow_config_permissions_write
        }
        _ => false,
    };
    let mut writable = Vec::new();
    let mut locked = Vec::new();
    for rule in key_rules(config) {
        // The file's value is what a write changes; the one in force differs until a reload or a
        // restart, and then both are shown.
        let in_force = lookup(&document, &rule.key).cloned().unwrap_or(Value::Null);
        let in_file = lookup(&file_document, &rule.key)
            .cloned()
            .unwrap_or(Value::Null);
        let mut entry = json!({
            "key": rule.key,
            "right": rule.right,
            "current_value": in_file,
            "value_schema": value_schema(&schema, &rule.key),
        });
        if entry["current_value"] != in_force {
            entry["value_in_force"] = in_force;
        }
        if crate::config_edit::classify(&rule.key, config.version).is_ok_and(|r| r.operator_only) {
            entry["locked_by"] = json!("operator");
            entry["error_type"] = json!("operator_only_key");
            entry["operator_command"] = json!(crate::config_edit::keys::OPERATOR_ONLY_COMMAND);
            locked.push(entry);
        } else if granted(rule.right) {
            writable.push(entry);
        } else {
            entry["unlocked_by"] = json!(format!("permissions.{}", rule.right));
            locked.push(entry);
        }
    }
    let patterns: Vec<Value> = [("debuggers", DEBUGGER_FIELDS), ("com_ports", COM_FIELDS), ("can_buses", CAN_FIELDS)]
        .iter()
        .map(|(section, fields)| {
            json!({
                "key": format!("{section}.<name>.<field>"),
                "right": DESCRIPTION,
                "granted": granted(DESCRIPTION),
                "fields": fields.iter().filter(|f| !program_fields(section).contains(f)).collect::<Vec<_>>(),
                "operator_only_fields": program_fields(section),
                "note": format!("A key under a `{section}` name that does not exist creates that entry with every permission false; operator_only_fields name programs and only the operator sets them."),
            })
        })
        .collect();
    let blocked = super::config_set::open_run_refusal(ctx).is_some();
    let next_steps = super::next_steps(&[
        (
            blocked,
            "A run or session of this server holds the bench: writes are refused until it is stopped.",
        ),
        (
            true,
            "Send keys from writable_keys as project_config_set changes; each value is checked against value_schema first.",
        ),
        (
            !granted(DESCRIPTION),
            "Describing the bench is closed (permissions.allow_config_description_write is false): report it and leave it to the operator.",
        ),
        (
            true,
            "Permissions can only be narrowed over MCP: project_config_set writes false into a permission, never true.",
        ),
    ]);
    let summary = format!(
        "{} key(s) are writable through project_config_set and {} are locked; each locked key names the grant that opens it (or `locked_by: operator`).",
        writable.len(),
        locked.len()
    );
    Outcome::ok(ctx.tool, summary)
        // The listed values are the file's (what a write changes); the grants in force beside them.
        .with("document_source", "disk")
        .with("permissions_in_force", permissions_in_force(config))
        .with("path", loaded.display_path.as_str())
        .with("workspace_root", loaded.workspace.display().to_string())
        .with("config_version", config.version)
        .with(
            "rights",
            json!([
                right_entry(DESCRIPTION, granted(DESCRIPTION), "Change the bench description field-wise (target, probes, ports, buses); never a permission."),
                right_entry(PERMISSIONS, granted(PERMISSIONS), "Narrow permissions field-wise: only false may be written."),
            ]),
        )
        .with(
            "regeneration",
            right_entry(
                "allow_config_write",
                config.permissions.allow_config_write,
                "Regenerate the whole file from hardware discovery with project_config_create.",
            ),
        )
        .with("writable_keys", Value::Array(writable))
        .with("locked_keys", Value::Array(locked))
        .with("new_entry_patterns", Value::Array(patterns))
        .with("open_holds", open_holds(ctx))
        .with("max_holds", max_holds(&ctx.loaded.config))
        .with("writes_blocked_by_open_run", blocked)
        .with("reference", "agentic-hil://reference/config-shape")
        .with("next_steps", next_steps)
        .not_started(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_schema_is_found_through_map_entries_and_refs() {
        let schema = json!({
            "$defs": {"debugger": {"type": "object", "properties": {
                "probe_id": {"type": ["string", "null"], "default": null}}}},
            "properties": {"debuggers": {"type": "object", "additionalProperties": {"$ref": "#/$defs/debugger"}}}
        });
        assert_eq!(
            value_schema(&schema, "debuggers.dut.probe_id"),
            json!({"type": ["string", "null"], "default": null})
        );
        assert_eq!(value_schema(&schema, "debuggers.dut.nothing"), json!({}));
    }

    /// The keys described for a file of `version` with one debugger, `dut`.
    fn dut_keys(version: u8) -> Vec<String> {
        let mut config = Config {
            version,
            ..Config::default()
        };
        config
            .debuggers
            .insert("dut".into(), ahil_config::Debugger::default());
        key_rules(&config).into_iter().map(|r| r.key).collect()
    }

    #[test]
    fn description_keys_come_before_permission_keys_and_flags_are_sorted() {
        let keys = dut_keys(3);
        let first_permission = keys
            .iter()
            .position(|k| k == "permissions.allow_config_description_write");
        let last_description = keys.iter().position(|k| k == "debug.gdb_executable");
        assert!(last_description < first_permission);
        let flags: Vec<&String> = keys
            .iter()
            .filter(|k| k.starts_with("debuggers.dut.permissions."))
            .collect();
        let mut sorted = flags.clone();
        sorted.sort();
        assert_eq!(flags, sorted);
        assert!(
            !keys.iter().any(|k| k.ends_with("allow_probe")),
            "allow_probe is version 1 only"
        );
    }

    #[test]
    fn version_one_files_also_list_the_read_grants() {
        let keys = dut_keys(1);
        assert!(keys.contains(&"debuggers.dut.permissions.allow_probe".to_owned()));
    }
}
