//! Claude Code write refusals for a project's configuration directory and state root: rules in
//! `~/.claude/settings.json` `permissions.deny` so the agent's own edit tools cannot touch the policy
//! or the evidence. Which rules we added is kept in a ledger beside the configurations, so uninstall
//! removes those and never a rule the operator wrote.

use std::path::{Path, PathBuf};

use ahil_config::Environment;
use serde_json::{Map, Value, json};

use super::journal::Journal;

fn settings_file(env: &Environment) -> PathBuf {
    env.home.join(".claude/settings.json")
}

fn ledger_file(env: &Environment) -> PathBuf {
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

fn ledger(env: &Environment) -> Vec<String> {
    read_object(&ledger_file(env))
        .ok()
        .and_then(|map| map.get("rules").cloned())
        .and_then(|rules| serde_json::from_value(rules).ok())
        .unwrap_or_default()
}

fn deny_list(settings: &mut Map<String, Value>) -> Result<&mut Vec<Value>, String> {
    let permissions = settings
        .entry("permissions")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or("`permissions` is not an object")?;
    permissions
        .entry("deny")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| "`permissions.deny` is not a list".to_owned())
}

fn write_json(path: &Path, map: &Map<String, Value>, journal: &mut Journal) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(map).map_err(|e| e.to_string())?;
    text.push('\n');
    journal
        .write(path, text.as_bytes())
        .map_err(|e| e.to_string())
}

/// Adds the rules not already there; returns how many were added.
pub fn add(env: &Environment, dirs: &[&Path], journal: &mut Journal) -> Result<usize, String> {
    let path = settings_file(env);
    let shown = env.display_path(&path);
    let mut settings = read_object(&path).map_err(|e| format!("{shown}: {e}"))?;
    let deny = deny_list(&mut settings).map_err(|e| format!("{shown}: {e}"))?;
    let mut added = Vec::new();
    for dir in dirs {
        let rule = Value::String(rule_for(dir));
        if !deny.contains(&rule) {
            deny.push(rule.clone());
            added.push(rule);
        }
    }
    if added.is_empty() {
        return Ok(0);
    }
    write_json(&path, &settings, journal).map_err(|e| format!("{shown}: {e}"))?;
    let mut recorded = ledger(env);
    recorded.extend(added.iter().filter_map(|r| r.as_str().map(str::to_owned)));
    let mut book = Map::new();
    book.insert("rules".into(), json!(recorded));
    write_json(&ledger_file(env), &book, journal)?;
    Ok(added.len())
}

/// Takes out the rules the ledger says we added; returns how many were removed.
pub fn remove(env: &Environment, journal: &mut Journal) -> Result<usize, String> {
    let recorded = ledger(env);
    if recorded.is_empty() {
        return Ok(0);
    }
    let path = settings_file(env);
    let shown = env.display_path(&path);
    let mut settings = read_object(&path).map_err(|e| format!("{shown}: {e}"))?;
    let mut removed = 0;
    if let Some(deny) = settings
        .get_mut("permissions")
        .and_then(|p| p.get_mut("deny"))
        .and_then(Value::as_array_mut)
    {
        let before = deny.len();
        deny.retain(|rule| {
            !rule
                .as_str()
                .is_some_and(|r| recorded.iter().any(|x| x == r))
        });
        removed = before - deny.len();
    }
    if removed > 0 {
        write_json(&path, &settings, journal).map_err(|e| format!("{shown}: {e}"))?;
    }
    journal
        .remove(&ledger_file(env))
        .map_err(|e| e.to_string())?;
    Ok(removed)
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
