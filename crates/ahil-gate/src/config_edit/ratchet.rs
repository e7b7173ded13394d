//! The ratchet: over MCP a permission moves only from true to false; describing the bench and
//! narrowing grants each need their own project grant. Pure functions over the document tree, so the
//! same code decides for the tool, the CLI and the property test.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::identity::{close_grants, redirected, workspace_of};
use super::keys::{KeyRule, Right, classify};

/// One requested `{key, value}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: String,
    pub value: Value,
}

/// The grants a writer holds, already the tighter of the server's and the file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    pub description: bool,
    pub permissions: bool,
    /// Keys that name a program (the operator's adoption); never true over MCP.
    pub programs: bool,
}

/// Why an agent's change set was refused; nothing is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The keys need a grant that is false (`permission_denied`).
    Denied { right: Right, keys: Vec<String> },
    /// The keys would open a permission (`permission_widening_denied`).
    Widening { keys: Vec<String> },
    /// The keys name a program, script or library, which only the operator sets
    /// (`operator_only_key`).
    OperatorOnly { keys: Vec<String> },
    /// A key or value no field-wise write accepts (`invalid_argument`).
    Invalid { key: String, reason: String },
    /// A permission of an entry the file does not have (`<section>.<name>`, `invalid_argument`): a
    /// permission does not create a device, and a mistyped entry must not read as narrowed.
    UnknownEntry { key: String, entry: String },
}

/// What an accepted change set did to the document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Keys whose value changed, sorted.
    pub changed: Vec<String>,
    /// `<section>.<name>` of entries the changes created (every grant false).
    pub created_entries: Vec<String>,
    /// Permission keys that moved, with their values before and after.
    pub permissions_changed: Vec<(String, bool, bool)>,
    /// `<section>.<name>` of existing entries the changes pointed at another device; their grants
    /// were closed.
    pub redirected_entries: Vec<String>,
}

/// Checks an agent's changes and applies them to `document` (a file of `version`).
pub fn apply_agent_changes(
    document: &mut Value,
    version: u8,
    rights: Rights,
    changes: &[Change],
) -> Result<Applied, Refused> {
    let rules = classify_for(document, changes, version)?;
    let programs: Vec<String> = rules
        .iter()
        .filter(|r| r.operator_only)
        .map(|r| r.key.clone())
        .collect();
    if !rights.programs && !programs.is_empty() {
        return Err(Refused::OperatorOnly { keys: programs });
    }
    for right in [Right::Permissions, Right::Description] {
        let open = match right {
            Right::Description => rights.description,
            Right::Permissions => rights.permissions,
        };
        let keys: Vec<String> = rules
            .iter()
            .filter(|r| r.right == right)
            .map(|r| r.key.clone())
            .collect();
        if !open && !keys.is_empty() {
            return Err(Refused::Denied { right, keys });
        }
    }
    let widening: Vec<String> = rules
        .iter()
        .zip(changes)
        .filter(|(rule, change)| rule.right == Right::Permissions && change.value != json!(false))
        .map(|(rule, _)| rule.key.clone())
        .collect();
    if !widening.is_empty() {
        return Err(Refused::Widening { keys: widening });
    }
    for (rule, change) in rules.iter().zip(changes) {
        if rule.right == Right::Description && (change.value.is_object() || change.value.is_array())
        {
            return Err(Refused::Invalid {
                key: rule.key.clone(),
                reason: "takes a single scalar value".into(),
            });
        }
    }
    let before = permission_surface(document);
    let applied = apply(document, version, &rules, changes);
    // The request check above is the rule; this diff proves the document obeys it whatever the
    // keys touched (a created entry, an alias).
    let after = permission_surface(document);
    let opened: Vec<String> = after
        .iter()
        .filter(|(key, now)| **now && !before.get(*key).copied().unwrap_or(false))
        .map(|(key, _)| key.clone())
        .collect();
    if !opened.is_empty() {
        return Err(Refused::Widening { keys: opened });
    }
    Ok(applied)
}

/// The first permission key, in request order, whose entry neither the file nor an earlier
/// description change of the same request has (the reference's order: a device is described
/// first, and its new entry starts with every grant false).
fn permission_of_a_missing_entry(document: &Value, rules: &[KeyRule]) -> Option<Refused> {
    const ENTRY_SECTIONS: &[&str] = &["debuggers", "com_ports", "can_buses", "power_supplies"];
    let mut described: Vec<(&str, &str)> = Vec::new();
    for rule in rules {
        if rule.right != Right::Permissions {
            if let Some((section, name)) = &rule.entry {
                described.push((section.name(), name.as_str()));
            }
            continue;
        }
        // `<section>.<name>.permissions.<flag>`; a name may hold dots, a flag never does.
        let Some((section, name)) = ENTRY_SECTIONS.iter().find_map(|section| {
            let rest = rule.key.strip_prefix(section)?.strip_prefix('.')?;
            let (name, _) = rest.rsplit_once(".permissions.")?;
            Some((*section, name))
        }) else {
            continue;
        };
        let exists = document.get(section).and_then(|s| s.get(name)).is_some();
        if !exists && !described.contains(&(section, name)) {
            return Some(Refused::UnknownEntry {
                key: rule.key.clone(),
                entry: format!("{section}.{name}"),
            });
        }
    }
    None
}

/// The operator's `grant` / `revoke`: permission keys only, either direction, no grant needed.
pub fn apply_operator_changes(
    document: &mut Value,
    version: u8,
    changes: &[Change],
) -> Result<Applied, Refused> {
    let rules = classify_for(document, changes, version)?;
    if let Some(rule) = rules.iter().find(|r| r.right != Right::Permissions) {
        return Err(Refused::Invalid {
            key: rule.key.clone(),
            reason: "is not a permission".into(),
        });
    }
    if let Some((rule, _)) = rules
        .iter()
        .zip(changes)
        .find(|(_, c)| !c.value.is_boolean())
    {
        return Err(Refused::Invalid {
            key: rule.key.clone(),
            reason: "takes true or false".into(),
        });
    }
    Ok(apply(document, version, &rules, changes))
}

/// The rule of each change to `document`: a permission names a device the file describes and
/// never creates one, over MCP and from the operator's `grant` alike.
fn classify_for(
    document: &Value,
    changes: &[Change],
    version: u8,
) -> Result<Vec<KeyRule>, Refused> {
    let rules = classify_all(changes, version)?;
    match permission_of_a_missing_entry(document, &rules) {
        Some(refused) => Err(refused),
        None => Ok(rules),
    }
}

fn classify_all(changes: &[Change], version: u8) -> Result<Vec<KeyRule>, Refused> {
    let mut seen = std::collections::BTreeSet::new();
    changes
        .iter()
        .map(|change| {
            if !seen.insert(change.key.as_str()) {
                return Err(Refused::Invalid {
                    key: change.key.clone(),
                    reason: "appears more than once".into(),
                });
            }
            classify(&change.key, version).map_err(|e| Refused::Invalid {
                key: e.key,
                reason: e.reason.into(),
            })
        })
        .collect()
}

fn apply(document: &mut Value, version: u8, rules: &[KeyRule], changes: &[Change]) -> Applied {
    let before = permission_surface(document);
    let mut applied = Applied::default();
    // Entries that existed before the changes, as they were: one the changes point at another
    // device loses its grants, since the operator granted the device it named then.
    let mut touched: Vec<(&'static str, String, Value)> = Vec::new();
    for (rule, change) in rules.iter().zip(changes) {
        if let Some((section, name)) = &rule.entry {
            let entries = object_at(document, &[section.name()]);
            if let Some(entry) = entries.get(name)
                && !touched
                    .iter()
                    .any(|(s, n, _)| *s == section.name() && n == name)
            {
                touched.push((section.name(), name.clone(), entry.clone()));
            }
            if !entries.contains_key(name) {
                let flags: Map<String, Value> = section
                    .flags(version)
                    .into_iter()
                    .map(|f| (f.to_owned(), Value::Bool(false)))
                    .collect();
                entries.insert(name.clone(), json!({"permissions": flags}));
                applied
                    .created_entries
                    .push(format!("{}.{name}", section.name()));
            }
        }
        let path = split_key(rule);
        let (last, parents) = path.split_last().expect("a key has a field");
        let parent = object_at(document, parents);
        if parent.get(*last) != Some(&change.value) {
            parent.insert((*last).to_owned(), change.value.clone());
            applied.changed.push(rule.key.clone());
        }
    }
    let workspace = workspace_of(document);
    for (section, name, was) in touched {
        let entry = object_at(document, &[section]).get_mut(&name);
        if let Some(entry) = entry.filter(|now| redirected(section, &was, now, &workspace)) {
            close_grants(entry);
            applied.redirected_entries.push(format!("{section}.{name}"));
        }
    }
    let after = permission_surface(document);
    applied.permissions_changed = after
        .iter()
        .filter_map(|(key, now)| {
            let was = before.get(key).copied().unwrap_or(false);
            (was != *now).then(|| (key.clone(), was, *now))
        })
        .collect();
    applied.changed.sort();
    applied
}

/// The key as path segments; the entry name stays whole even when it holds dots.
fn split_key(rule: &KeyRule) -> Vec<&str> {
    match &rule.entry {
        Some((section, name)) => {
            let rest = &rule.key[section.name().len() + name.len() + 2..];
            let mut path = vec![section.name(), name.as_str()];
            path.extend(rest.split('.'));
            path
        }
        None => rule.key.split('.').collect(),
    }
}

/// The object at `path`, created (or replaced, if something else stood there) on the way.
fn object_at<'v>(document: &'v mut Value, path: &[&str]) -> &'v mut Map<String, Value> {
    let mut node = document;
    for part in path {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        node = node
            .as_object_mut()
            .expect("made an object")
            .entry((*part).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    node.as_object_mut().expect("made an object")
}

/// The grants of a loaded configuration, as its version spells them: the typed model also holds the
/// version-1 read grants, which later versions refuse by name, so those are left out there.
pub fn config_surface(config: &ahil_config::Config) -> BTreeMap<String, bool> {
    let mut surface = permission_surface(&serde_json::to_value(config).unwrap_or(Value::Null));
    if config.version >= 2 {
        surface.retain(|key, _| !key.ends_with(".allow_probe") && !key.ends_with(".allow_read"));
    }
    surface
}

/// Every permission in the document as `dotted key -> granted`; an absent key is false.
pub fn permission_surface(document: &Value) -> BTreeMap<String, bool> {
    let mut surface = BTreeMap::new();
    let mut flags = |prefix: String, block: Option<&Value>| {
        for (flag, value) in block.and_then(Value::as_object).into_iter().flatten() {
            surface.insert(format!("{prefix}.{flag}"), value.as_bool().unwrap_or(false));
        }
    };
    flags("permissions".into(), document.get("permissions"));
    for (section, flag) in [
        ("debug", "allow_all_symbols"),
        ("artifacts", "allow_upload"),
    ] {
        let value = document.get(section).and_then(|s| s.get(flag));
        flags(
            section.into(),
            Some(&json!({flag: value.and_then(Value::as_bool).unwrap_or(false)})),
        );
    }
    for section in ["debuggers", "com_ports", "can_buses", "power_supplies"] {
        for (name, entry) in document
            .get(section)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            flags(
                format!("{section}.{name}.permissions"),
                entry.get("permissions"),
            );
            for (share, body) in entry
                .get("shares")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                flags(
                    format!("{section}.{name}.shares.{share}.permissions"),
                    body.get("permissions"),
                );
            }
        }
    }
    surface
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({
            "version": 3,
            "permissions": {"allow_config_description_write": true, "allow_config_permissions_write": true},
            "debuggers": {"dut": {"permissions": {"allow_flash": true, "allow_mass_erase": false}}},
            "com_ports": {},
        })
    }

    const OPEN: Rights = Rights {
        description: true,
        permissions: true,
        programs: false,
    };

    /// The grants `doc` opens and closes.
    const FLASH: &str = "debuggers.dut.permissions.allow_flash";
    const MASS_ERASE: &str = "debuggers.dut.permissions.allow_mass_erase";

    fn change(key: &str, value: Value) -> Change {
        Change {
            key: key.into(),
            value,
        }
    }

    /// An agent's write of `value` to `key` into a version 3 document `d`, with `rights`.
    fn agent_sets(
        d: &mut Value,
        rights: Rights,
        key: &str,
        value: Value,
    ) -> Result<Applied, Refused> {
        apply_agent_changes(d, 3, rights, &[change(key, value)])
    }

    /// The request itself is judged, not only the resulting file: `true` written over a grant
    /// that is already true opens nothing, yet an agent may still only ever write `false`.
    #[test]
    fn a_permission_key_takes_only_false_even_over_a_grant_already_true() {
        for value in [json!(true), json!("false"), json!(0)] {
            let mut d = doc();
            let refused = agent_sets(&mut d, OPEN, FLASH, value.clone());
            assert_eq!(
                refused,
                Err(Refused::Widening {
                    keys: vec![FLASH.into()]
                }),
                "{value}"
            );
            assert_eq!(d, doc(), "a refused change left the document touched");
        }
    }

    #[test]
    fn a_permission_can_be_closed_but_never_opened_by_an_agent() {
        let mut d = doc();
        let applied = agent_sets(&mut d, OPEN, FLASH, json!(false)).expect("narrowing is allowed");
        assert_eq!(
            applied.permissions_changed,
            [(FLASH.to_owned(), true, false)]
        );
        let refused = agent_sets(&mut d, OPEN, MASS_ERASE, json!(true));
        assert_eq!(
            refused,
            Err(Refused::Widening {
                keys: vec![MASS_ERASE.into()]
            })
        );
    }

    #[test]
    fn each_kind_of_key_needs_its_own_grant() {
        let mut d = doc();
        let closed = Rights {
            description: false,
            permissions: true,
            programs: false,
        };
        assert_eq!(
            agent_sets(&mut d, closed, "target.name", json!("b")),
            Err(Refused::Denied {
                right: Right::Description,
                keys: vec!["target.name".into()]
            })
        );
        let frozen = Rights {
            description: true,
            permissions: false,
            programs: false,
        };
        assert!(matches!(
            agent_sets(&mut d, frozen, "permissions.allow_recover", json!(false)),
            Err(Refused::Denied {
                right: Right::Permissions,
                ..
            })
        ));
        assert_eq!(d, doc(), "a refusal leaves the document alone");
    }

    #[test]
    fn a_key_under_a_new_name_creates_the_entry_with_every_grant_false() {
        let mut d = doc();
        let applied = agent_sets(
            &mut d,
            OPEN,
            "com_ports.uart.1.device",
            json!("/dev/ttyACM0"),
        )
        .expect("applied");
        assert_eq!(applied.created_entries, ["com_ports.uart.1"]);
        assert_eq!(
            d["com_ports"]["uart.1"],
            json!({"permissions": {"allow_write": false}, "device": "/dev/ttyACM0"})
        );
    }

    #[test]
    fn a_key_that_names_a_program_is_refused_to_an_agent_with_every_grant() {
        for key in ["debuggers.dut.executable", "debug.gdb_executable"] {
            let mut d = doc();
            assert_eq!(
                agent_sets(&mut d, OPEN, key, json!("/usr/bin/env")),
                Err(Refused::OperatorOnly {
                    keys: vec![key.to_owned()]
                }),
                "{key}"
            );
            assert_eq!(d, doc(), "a refusal leaves the document alone");
        }
        let operator = Rights {
            programs: true,
            ..OPEN
        };
        let mut d = doc();
        agent_sets(
            &mut d,
            operator,
            "debuggers.dut.executable",
            json!("/usr/bin/openocd"),
        )
        .expect("the operator's adoption may name the program");
    }

    #[test]
    fn an_entry_pointed_at_another_device_loses_every_grant() {
        let mut d = doc();
        d["debuggers"]["dut"]["probe_id"] = json!("A");
        let applied =
            agent_sets(&mut d, OPEN, "debuggers.dut.probe_id", json!("B")).expect("applied");
        assert_eq!(applied.redirected_entries, ["debuggers.dut"]);
        assert_eq!(
            d["debuggers"]["dut"]["permissions"]["allow_flash"],
            json!(false)
        );
        let mut same = doc();
        same["debuggers"]["dut"]["probe_id"] = json!("A");
        let applied = agent_sets(
            &mut same,
            OPEN,
            "debuggers.dut.connect_mode",
            json!("under_reset"),
        )
        .expect("applied");
        assert!(applied.redirected_entries.is_empty());
        assert_eq!(
            same["debuggers"]["dut"]["permissions"]["allow_flash"],
            json!(true)
        );
    }

    #[test]
    fn repeated_or_unknown_keys_are_invalid_arguments() {
        let mut d = doc();
        let twice = [
            change("target.name", json!("a")),
            change("target.name", json!("b")),
        ];
        assert!(matches!(
            apply_agent_changes(&mut d, 3, OPEN, &twice),
            Err(Refused::Invalid { .. })
        ));
        assert!(matches!(
            agent_sets(&mut d, OPEN, "state_root", json!("/x")),
            Err(Refused::Invalid { .. })
        ));
    }

    #[test]
    fn a_permission_of_an_entry_the_file_lacks_is_refused_naming_the_entry() {
        for (key, entry) in [
            ("debuggers.dtu.permissions.allow_flash", "debuggers.dtu"),
            (
                "com_ports.uart.1.permissions.allow_write",
                "com_ports.uart.1",
            ),
            (
                "power_supplies.bench.permissions.allow_set",
                "power_supplies.bench",
            ),
        ] {
            let mut d = doc();
            assert_eq!(
                agent_sets(&mut d, OPEN, key, json!(false)),
                Err(Refused::UnknownEntry {
                    key: key.into(),
                    entry: entry.into()
                }),
                "{key}"
            );
            assert_eq!(d, doc(), "{key}: nothing was created");
        }
        // Described first in the same request, the entry exists when its grant is narrowed.
        let mut d = doc();
        let both = [
            change("com_ports.uart.1.device", json!("/dev/ttyACM0")),
            change("com_ports.uart.1.permissions.allow_write", json!(false)),
        ];
        let applied =
            apply_agent_changes(&mut d, 3, OPEN, &both).expect("described, then narrowed");
        assert_eq!(applied.created_entries, ["com_ports.uart.1"]);
    }

    #[test]
    fn the_operator_may_open_a_permission() {
        let mut d = doc();
        let applied =
            apply_operator_changes(&mut d, 3, &[change(MASS_ERASE, json!(true))]).expect("granted");
        assert_eq!(applied.changed, [MASS_ERASE]);
        assert!(apply_operator_changes(&mut d, 3, &[change("target.name", json!(true))]).is_err());
    }
}
