//! Claude Code write refusals for a project's configuration directory and state root: rules in
//! `~/.claude/settings.json` `permissions.deny` so the agent's own edit tools cannot touch the policy
//! or the evidence. Which rules we added is kept in a ledger beside the configurations, so uninstall
//! removes those and never a rule the operator wrote.

use std::path::{Path, PathBuf};

use ahil_config::Environment;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstRootNode};
use serde_json::{Map, Value, json};

use super::journal::Journal;
use super::jsonc;

fn settings_file(env: &Environment) -> PathBuf {
    env.home.join(".claude/settings.json")
}

pub fn ledger_file(env: &Environment) -> PathBuf {
    env.xdg_config_home
        .clone()
        .unwrap_or_else(|| env.home.join(".config"))
        .join("agentic-hil/claude-deny-rules.json")
}

/// `Edit(//abs/dir/**)`: Claude Code reads a leading `//` as an absolute path, and its Edit rules
/// cover every tool that writes files.
pub fn rule_for(dir: &Path) -> String {
    let text = dir.display().to_string();
    format!("Edit(//{}/**)", text.trim_start_matches('/'))
}

fn read_object(path: &Path) -> Result<Map<String, Value>, String> {
    match std::fs::read(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(err) => Err(err.to_string()),
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Map::new()),
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err("not a JSON object".to_owned()),
        },
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(err.to_string()),
    }
}

fn ledger(env: &Environment) -> Vec<String> {
    read_object(&ledger_file(env))
        .ok()
        .and_then(|map| map.get("rules").cloned())
        .and_then(|rules| serde_json::from_value(rules).ok())
        .unwrap_or_default()
}

/// `permissions.deny`, created on the way (and noted in `created`) when `created` is given.
fn deny_list(
    root: &CstRootNode,
    created: Option<&mut Vec<Vec<String>>>,
) -> Result<Option<CstArray>, String> {
    let top = jsonc::root_object(root)?;
    let creating = created.is_some();
    let mut made = Vec::new();
    let Some(permissions) = jsonc::walk(top, &["permissions"], creating.then_some(&mut made))?
    else {
        return Ok(None);
    };
    let deny = match permissions.get("deny") {
        Some(prop) => prop
            .value()
            .and_then(|node| node.as_array())
            .ok_or("`permissions.deny` is not a list")?,
        None if creating => {
            made.push(vec!["permissions".to_owned(), "deny".to_owned()]);
            permissions
                .array_value_or_create("deny")
                .ok_or("`permissions.deny` is not a list")?
        }
        None => return Ok(None),
    };
    if let Some(created) = created {
        created.extend(made);
    }
    Ok(Some(deny))
}

/// Why the settings file cannot be used as it stands: it does not read, is not JSON, is not an
/// object, or holds `permissions` / `permissions.deny` of another type. `None` when it can (an
/// absent file can). Such a file is the operator's to repair, never ours to replace.
pub fn unreadable(env: &Environment) -> Option<String> {
    let path = settings_file(env);
    let shown = env.display_path(&path);
    let shape = read_text(&path)
        .and_then(|text| jsonc::parse(&text))
        .and_then(|root| deny_list(&root, None).map(drop));
    shape.err().map(|e| format!("{shown}: {e}"))
}

/// Adds the rules not already there; returns how many were added and the key paths created.
pub fn add(
    env: &Environment,
    dirs: &[&Path],
    journal: &mut Journal,
) -> Result<(usize, Vec<Vec<String>>), String> {
    let path = settings_file(env);
    let shown = env.display_path(&path);
    let text = read_text(&path).map_err(|e| format!("{shown}: {e}"))?;
    let root = jsonc::parse(&text).map_err(|e| format!("{shown}: {e}"))?;
    let mut created = Vec::new();
    let deny = deny_list(&root, Some(&mut created))
        .map_err(|e| format!("{shown}: {e}"))?
        .expect("created on the way");
    let present: Vec<Value> = deny
        .elements()
        .iter()
        .filter_map(CstNode::to_serde_value)
        .collect();
    let mut added = Vec::new();
    for dir in dirs {
        let rule = rule_for(dir);
        if !present.contains(&Value::String(rule.clone())) && !added.contains(&rule) {
            deny.append(CstInputValue::String(rule.clone()));
            added.push(rule);
        }
    }
    if added.is_empty() {
        return Ok((0, Vec::new()));
    }
    journal
        .write(&path, root.to_string().as_bytes())
        .map_err(|e| format!("{shown}: {e}"))?;
    let mut recorded = ledger(env);
    recorded.extend(added.iter().cloned());
    let mut book =
        serde_json::to_string_pretty(&json!({"rules": recorded})).map_err(|e| e.to_string())?;
    book.push('\n');
    journal
        .write(&ledger_file(env), book.as_bytes())
        .map_err(|e| e.to_string())?;
    Ok((added.len(), created))
}

/// What became of the rules the ledger says we added.
pub enum Removed {
    /// This many were taken out (0 when none was left), and the ledger with them.
    Rules(usize),
    /// The settings file cannot be read as it stands (the reason); it and the ledger are kept, so
    /// a later uninstall, once the operator has repaired the file, still finds the rules.
    Kept(String),
}

/// Takes out the rules the ledger says we added.
pub fn remove(env: &Environment, journal: &mut Journal) -> Result<Removed, String> {
    let recorded = ledger(env);
    if recorded.is_empty() {
        return Ok(Removed::Rules(0));
    }
    let path = settings_file(env);
    let shown = env.display_path(&path);
    let readable = read_text(&path)
        .and_then(|text| jsonc::parse(&text))
        .and_then(|root| deny_list(&root, None).map(|deny| (root, deny)));
    let (root, deny) = match readable {
        Ok(read) => read,
        Err(e) => return Ok(Removed::Kept(format!("{shown}: {e}"))),
    };
    let mut removed = 0;
    if let Some(deny) = deny {
        for element in deny.elements() {
            if element
                .to_serde_value()
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|rule| recorded.iter().any(|r| r == rule))
            {
                element.remove();
                removed += 1;
            }
        }
    }
    if removed > 0 {
        journal
            .write(&path, root.to_string().as_bytes())
            .map_err(|e| format!("{shown}: {e}"))?;
    }
    journal
        .remove(&ledger_file(env))
        .map_err(|e| e.to_string())?;
    Ok(Removed::Rules(removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_names_the_directory_as_an_absolute_claude_path() {
        assert_eq!(
            rule_for(Path::new(
                "/home/op/.config/agentic-hil/projects/fw-0123456789"
            )),
            "Edit(//home/op/.config/agentic-hil/projects/fw-0123456789/**)"
        );
    }
}
