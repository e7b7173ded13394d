//! Document checks that run before the shape check, in the reference's order.
//!
//! These name removed sections and version rules explicitly, so a file written for an
//! older release gets a migration hint rather than a bare "unknown field".

use serde_json::{Value, json};

use crate::error::{ConfigError, Refusal};
use crate::node::{Node, Path};

const PROJECT_GRANTS: [&str; 5] = [
    "allow_config_write",
    "allow_config_description_write",
    "allow_config_permissions_write",
    "allow_recover",
    "allow_upgrade",
];

pub(crate) const SUPPORTED_VERSIONS: [i128; 3] = [1, 2, 3];

fn invalid(field: &str, summary: &str) -> Refusal {
    Refusal::new(summary).at(field)
}

/// Runs the checks in order and returns the config version (absent means 1).
pub(crate) fn precheck(root: &Node) -> Result<u8, ConfigError> {
    let Node::Map(_) = root else {
        return Err(ConfigError::invalid(
            // The reference names no field here; neither do we.
            Refusal::new("The configuration root must be a mapping of keys to values."),
        ));
    };
    check_bridge_args(root)?;
    check_removed_sections(root)?;
    check_empty_roots(root)?;
    let version = check_version(root)?;
    if version >= 2 {
        check_read_grants(root, version)?;
    }
    check_finite(root, &Path::root())?;
    Ok(version)
}

fn check_bridge_args(root: &Node) -> Result<(), ConfigError> {
    for (name, bus) in root.get("can_buses").map(Node::entries).unwrap_or_default() {
        if bus.get("args").is_some() {
            let field = format!("can_buses.{name}.args");
            return Err(ConfigError::invalid(
                invalid(&field, "A CAN process bridge takes no `args`; its argument list would come from the policy file itself.")
                    .fix("Remove `args` and point `executable` at an operator-owned wrapper outside the workspace."),
            ));
        }
    }
    Ok(())
}

fn check_removed_sections(root: &Node) -> Result<(), ConfigError> {
    let removed: [(&str, &str, Value); 3] = [
        (
            "debugger",
            "The single top-level `debugger` block was removed; probes are named entries under `debuggers`.",
            json!({"debugger": "debuggers.<name>", "debugger.permissions": "debuggers.<name>.permissions"}),
        ),
        (
            "devices",
            "The `devices` block was removed; probes, COM ports and CAN buses are addressed by their own names.",
            json!({"devices": "debuggers.<name>, com_ports.<name>, can_buses.<name>"}),
        ),
        (
            "adapters",
            "The `adapters` block was removed; this release has no test adapters.",
            json!({"adapters": "remove the block"}),
        ),
    ];
    for (key, summary, migration) in removed {
        if root.get(key).is_some() {
            return Err(ConfigError::invalid(
                invalid(key, summary)
                    .with("migration", migration)
                    .fix(format!(
                        "Remove `{key}` and declare each device under its own section."
                    )),
            ));
        }
    }
    if let Some(Node::Map(grants)) = root.get("permissions")
        && grants
            .iter()
            .any(|(k, _)| !PROJECT_GRANTS.contains(&k.as_str()))
    {
        return Err(ConfigError::invalid(
                invalid("permissions", "Device grants moved out of the top-level `permissions` block; it holds only the five project grants.")
                    .with("migration", device_grant_migration())
                    .with("allowed_fields", json!(sorted(&PROJECT_GRANTS)))
                    .fix("Move each device grant to the `permissions` block of the device it authorizes."),
            ));
    }
    if root.get("windows_path_trust").is_some() {
        return Err(ConfigError::invalid(
            invalid("windows_path_trust", "`windows_path_trust` was removed with the path ownership check it selected; it has no effect.")
                .with("migration", json!({"windows_path_trust": "remove the key"}))
                .fix("Delete the `windows_path_trust` key."),
        ));
    }
    Ok(())
}

fn sorted(keys: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = keys.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v
}

fn device_grant_migration() -> Value {
    json!({
        "allow_probe": "debuggers.<name>.permissions.allow_probe (version 1 only)",
        "allow_flash": "debuggers.<name>.permissions.allow_flash",
        "allow_reset": "debuggers.<name>.permissions.allow_reset",
        "allow_raw_debugger_commands": "debuggers.<name>.permissions.allow_raw_debugger_commands",
        "allow_mass_erase": "debuggers.<name>.permissions.allow_mass_erase",
        "allow_com_read": "com_ports.<name>.permissions.allow_read (version 1 only)",
        "allow_com_write": "com_ports.<name>.permissions.allow_write",
        "allow_can_read": "can_buses.<name>.permissions.allow_read (version 1 only)",
        "allow_can_write": "can_buses.<name>.permissions.allow_write",
        "allow_adapter_read": "remove (adapters were removed)",
        "allow_adapter_write": "remove (adapters were removed)",
    })
}

fn check_empty_roots(root: &Node) -> Result<(), ConfigError> {
    if let Some(Node::Seq(items)) = root.get("artifacts").and_then(|a| a.get("allowed_roots"))
        && items.is_empty()
    {
        return Err(ConfigError::invalid(
                invalid("artifacts.allowed_roots", "`artifacts.allowed_roots` is empty, which could mean nothing or everything; name at least one directory.")
                    .with("migration", json!({
                        "whole_workspace": ["."],
                        "some_directories": ["build"],
                        "uploads_only": "list the upload_directory",
                    }))
                    .fix("Write `[\".\"]` for the whole workspace, or list the build directories."),
            ));
    }
    Ok(())
}

fn check_version(root: &Node) -> Result<u8, ConfigError> {
    let Some(v) = root.get("version") else {
        return Ok(1);
    };
    match v {
        Node::Int(n) if SUPPORTED_VERSIONS.contains(n) => Ok(u8::try_from(*n).unwrap_or(1)),
        Node::Int(n) => Err(ConfigError::invalid(
            invalid(
                "version",
                "This configuration version is not supported; versions 1, 2 and 3 are.",
            )
            .with("value", v.to_json())
            .with("supported_versions", json!(SUPPORTED_VERSIONS))
            .fix(if *n > 3 {
                "A newer agentic-hil wrote this file: upgrade the installation, then try again."
            } else {
                "Set `version: 3` and follow the migration notes for versions 2 and 3."
            }),
        )),
        _ => Err(ConfigError::invalid(
            invalid("version", "`version` must be a whole number: 1, 2 or 3.")
                .with("value", v.to_json())
                .with("supported_versions", json!(SUPPORTED_VERSIONS)),
        )),
    }
}

fn check_read_grants(root: &Node, version: u8) -> Result<(), ConfigError> {
    let sections = [
        ("debuggers", "allow_probe"),
        ("com_ports", "allow_read"),
        ("can_buses", "allow_read"),
    ];
    for (section, key) in sections {
        for (name, entry) in root.get(section).map(Node::entries).unwrap_or_default() {
            if entry.get("permissions").and_then(|p| p.get(key)).is_some() {
                let field = format!("{section}.{name}.permissions.{key}");
                return Err(ConfigError::invalid(
                    invalid(&field, &format!("Version {version} has no read permission: reading needs no grant, a run's exclusive lock replaced it."))
                        .with("config_version", version)
                        .with("migration", json!({
                            "remove": format!("{section}.<name>.permissions.{key}"),
                            "keep": "every write and state-changing permission is unchanged",
                            "instead": "declare the device in the test plan; it is locked for the whole run",
                        }))
                        .fix(format!("Delete `{field}`.")),
                ));
            }
        }
    }
    Ok(())
}

fn check_finite(node: &Node, at: &Path) -> Result<(), ConfigError> {
    match node {
        Node::Float(f) if !f.is_finite() => Err(ConfigError::invalid(
            invalid(
                &at.to_string(),
                "Configuration numbers must be finite; NaN and infinity are refused.",
            )
            .with("value", "non-finite"),
        )),
        Node::Seq(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_finite(item, &at.index(i))),
        Node::Map(entries) => entries
            .iter()
            .try_for_each(|(k, v)| check_finite(v, &at.key(k))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::parse_yaml;

    fn field_of(doc: &str) -> Option<String> {
        let node = parse_yaml(doc).expect("test documents are valid YAML");
        precheck(&node)
            .err()
            .and_then(|e| e.field().map(str::to_owned))
    }

    #[test]
    fn allow_probe_is_refused_in_version_two() {
        let doc = "version: 2\ndebuggers:\n  dut:\n    permissions: {allow_probe: false}\n";
        assert_eq!(
            field_of(doc).as_deref(),
            Some("debuggers.dut.permissions.allow_probe")
        );
    }

    #[test]
    fn allow_probe_is_accepted_in_version_one() {
        let doc = "debuggers:\n  dut:\n    permissions: {allow_probe: true}\n";
        assert_eq!(field_of(doc), None);
    }

    #[test]
    fn a_boolean_version_is_not_a_number() {
        assert_eq!(field_of("version: true\n").as_deref(), Some("version"));
        assert_eq!(field_of("version: 3.0\n").as_deref(), Some("version"));
    }

    #[test]
    fn non_finite_numbers_are_named_by_path() {
        assert_eq!(field_of("a:\n  b: [1, .inf]\n").as_deref(), Some("a.b[1]"));
    }

    #[test]
    fn a_list_root_is_refused() {
        let node = parse_yaml("- a\n").expect("valid YAML");
        assert_eq!(
            precheck(&node).map_err(|e| e.error_type()),
            Err("config_invalid")
        );
    }
}
