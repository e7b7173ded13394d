//! The operator's side of the ratchet: `agentic-hil grant` / `revoke` move named permissions either way,
//! and `agentic-hil config-reload` previews what a running server's description reload would take.
//! Neither is reachable over MCP.

use crate::ErrorType;
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use ahil_config::write::{Stamp, WriteError, edit_config};
use ahil_config::{Actor, ConfigError, Environment, LoadedConfig, load_authoritative};
use serde_json::{Value, json};

use super::keys::classify;
use super::ratchet::{Change, Refused, apply_operator_changes, config_surface, permission_surface};
use super::refusals::{config_refusal, replace_failed};
use super::reload::{DescriptionSlot, NOT_RELOADED, RELOADED_SECTIONS, reload};
use crate::envelope::Outcome;
use crate::ownership::Ownership;
use crate::ownership::runs::debugger_keys;

/// `grant` (true) or `revoke` (false) of `keys`, all or nothing.
pub fn set_permissions(
    workspace: &Path,
    env: &Environment,
    keys: &[String],
    value: bool,
) -> Outcome {
    let verb = if value { "grant" } else { "revoke" };
    let tool = format!("agentic-hil {verb}");
    let loaded = match load_authoritative(workspace, env) {
        Ok(loaded) => loaded,
        Err(e) => return config_refusal(&tool, &e),
    };
    let version = loaded.config.version;
    let here: Vec<String> = config_surface(&loaded.config).into_keys().collect();
    let mut changes = Vec::new();
    let mut rejected = Vec::new();
    for key in keys {
        let canonical = canonical_key(key);
        match classify(&canonical, version) {
            Ok(rule) if rule.right == super::Right::Permissions => changes.push(Change {
                key: canonical,
                value: Value::Bool(value),
            }),
            Ok(_) => rejected.push(json!({"key": key, "reason": "not a permission; description keys change with project_config_set"})),
            Err(e) => rejected.push(json!({"key": key, "reason": e.reason})),
        }
    }
    if !rejected.is_empty() {
        return Outcome::refused(
            &tool,
            ErrorType::InvalidArgument,
            "Some keys are not permissions of this configuration; nothing was changed.",
        )
        .with("command", tool.as_str())
        .with("field", "keys")
        .with("rejected_keys", Value::Array(rejected))
        .with("permission_keys_here", json!(here))
        .not_started(true);
    }

    // Holding every device of the bench proves no run or session (here or in another process) is
    // using a grant while it moves.
    let ownership = Ownership::for_process(env, "operator-cli");
    let devices = bench_keys(&loaded);
    if let Err(busy) = ownership.locks.acquire(&devices, Duration::ZERO) {
        return Outcome::refused(
            &tool,
            ErrorType::PermissionChangeInOpenRun,
            "A run or session holds a device of this bench; grants cannot move under it.",
        )
        .with("open_holds", json!(busy.summary()))
        .not_started(true);
    }
    let via = format!("cli:{verb}");
    let actor = if std::io::stdin().is_terminal() {
        Actor::Human
    } else {
        Actor::Cli
    };
    let mut before = Value::Null;
    let result = edit_config(
        &loaded.workspace,
        &loaded.path,
        env,
        Stamp { actor, via: &via },
        |doc, _| {
            before = doc.clone();
            apply_operator_changes(doc, version, &changes).map(|a| a.changed)
        },
    );
    ownership.locks.release(&devices);
    let written = match result {
        Ok(w) => w,
        Err(WriteError::Refused(Refused::Invalid { key, reason })) => {
            return Outcome::refused(
                &tool,
                ErrorType::InvalidArgument,
                format!("`{key}` {reason}; nothing was changed."),
            )
            .with("permission_keys_here", json!(here))
            .not_started(true);
        }
        Err(WriteError::Refused(Refused::UnknownEntry { key, entry })) => {
            return Outcome::refused(
                &tool,
                ErrorType::InvalidArgument,
                format!(
                    "`{entry}` is not in this configuration, and a permission does not create a device; nothing was changed."
                ),
            )
            .with("command", tool.as_str())
            .with("field", entry.as_str())
            .with("unknown_entry", entry.as_str())
            .with("key", key)
            .with_next_step("Describe the device in the configuration first, then grant its permission.")
            .not_started(true);
        }
        Err(WriteError::Refused(_)) => {
            return Outcome::refused(
                &tool,
                ErrorType::InvalidArgument,
                "The keys could not be applied; nothing was changed.",
            )
            .not_started(true);
        }
        Err(WriteError::Current(e) | WriteError::Invalid(e)) => return config_refusal(&tool, &e),
        Err(WriteError::ChangedUnderneath) => {
            return Outcome::refused(
                &tool,
                ErrorType::ConfigChangedUnderneath,
                "The configuration file changed while the grants were being written; nothing was written.",
            )
            .with_next_step("Run the command again; it reads the file afresh.")
            .not_started(true);
        }
        Err(WriteError::Io(e)) => return replace_failed(&tool, &e).not_started(false),
    };
    let before = permission_surface(&before);
    let (mut moved, mut unchanged) = (Vec::new(), Vec::new());
    for change in &changes {
        let previous = before.get(&change.key).copied().unwrap_or(false);
        let row = json!({"key": change.key, "previous_value": previous, "value": value});
        if written.changed_keys.contains(&change.key) {
            moved.push(row);
        } else {
            unchanged.push(row);
        }
    }
    let summary = if written.written {
        format!(
            "{} {} permission(s); restart the MCP server to enforce them.",
            if value { "Granted" } else { "Revoked" },
            moved.len()
        )
    } else {
        "Every permission already held that value; nothing was written.".to_owned()
    };
    // Against the document read before the write, as the reference does: a grant that was
    // written is `changed` with `reload_required`, since a running server still enforces the old.
    let status = serde_json::to_value(loaded.status()).unwrap_or(Value::Null);
    let mut outcome = Outcome::ok(&tool, summary)
        .with("command", tool.as_str())
        .with("changed", Value::Array(moved))
        .with("path", loaded.display_path.as_str())
        .with("workspace_root", loaded.workspace.display().to_string())
        .with("unchanged", Value::Array(unchanged))
        .with("provenance", written.provenance)
        .with("restart_required", written.written)
        .with(
            "next_steps",
            json!(if written.written {
                vec!["Restart the MCP server (or the agent host) so it enforces the new grants."]
            } else {
                Vec::new()
            }),
        );
    outcome.config_status = Some(status);
    outcome
}

/// `agentic-hil adopt-hardware`: the operator's adoption, run by the operator-only tool
/// `adopt_hardware`, whose call holds every device of the bench ([`device_keys`]) while this reads
/// and writes; with `dry_run` it only proposes.
pub(crate) fn adopt_held(
    tool: crate::catalogue::ToolId,
    loaded: &LoadedConfig,
    env: &Environment,
    target: &crate::actions::config_adopt::Target,
    dry_run: bool,
) -> Outcome {
    let actor = if std::io::stdin().is_terminal() {
        Actor::Human
    } else {
        Actor::Cli
    };
    let stamp = Stamp {
        actor,
        via: "cli:adopt-hardware",
    };
    match crate::actions::config_adopt::discover_now(tool, loaded, target) {
        Ok(discovered) => crate::actions::config_adopt::run(
            tool.name(),
            loaded,
            env,
            target,
            (!dry_run).then_some((stamp, None)),
            discovered.as_ref(),
            false,
        ),
        Err(refusal) => *refusal,
    }
}

/// `section.entry.allow_x` is shorthand for `section.entry.permissions.allow_x`.
fn canonical_key(key: &str) -> String {
    for section in ["debuggers.", "com_ports.", "can_buses."] {
        if let Some(rest) = key.strip_prefix(section)
            && !rest.contains(".permissions.")
            && let Some((name, flag)) = rest.rsplit_once('.')
            && flag.starts_with("allow_")
        {
            return format!("{section}{name}.permissions.{flag}");
        }
    }
    key.to_owned()
}

/// The machine-wide lock keys of every configured device, with the host nodes their names lead to.
fn bench_keys(loaded: &LoadedConfig) -> Vec<String> {
    let mut keys = configured_keys(loaded);
    // A session that holds a port by the node its link names must stop a grant moving too.
    let nodes = crate::ownership::device_keys::Nodes::resolve(&loaded.config);
    let host = crate::ownership::device_keys::host_keys(&loaded.config, &keys, &nodes);
    keys.extend(host);
    physical(keys)
}

/// The machine-wide lock keys of every configured device, by the names the configuration gives
/// them: the pipeline adds the host nodes they lead to when it claims them.
pub(crate) fn device_keys(loaded: &LoadedConfig) -> Vec<String> {
    physical(configured_keys(loaded))
}

fn configured_keys(loaded: &LoadedConfig) -> Vec<String> {
    let config = &loaded.config;
    let mut keys: Vec<String> = config
        .debuggers
        .iter()
        .flat_map(|(name, d)| debugger_keys(d, loaded.executables.debugger(name)))
        .collect();
    keys.extend(config.com_ports.iter().map(|(name, p)| p.lock_key(name)));
    keys.extend(config.can_buses.values().map(ahil_config::CanBus::lock_key));
    keys
}

fn physical(mut keys: Vec<String>) -> Vec<String> {
    keys.retain(|k| crate::ownership::device_lock::is_physical(k));
    keys.sort();
    keys.dedup();
    keys
}

/// `agentic-hil config-reload`: what a running server's description reload would take; writes nothing.
pub fn preview_reload(workspace: &Path, env: &Environment) -> Outcome {
    let tool = "agentic_hil_config_reload";
    // The preview compares the file with itself as a server would have loaded it at startup: the
    // grants a server enforces are the ones it loaded then, which this process cannot see, so the
    // preview reports what the reload takes and which grants the file holds.
    let loaded = match load_authoritative(workspace, env) {
        Ok(loaded) => loaded,
        Err(e) => return config_refusal(tool, &e),
    };
    let merged = match reload(&loaded, env, &DescriptionSlot::default()) {
        Ok(r) => r,
        Err(e) => return config_refusal(tool, &e),
    };
    let config = &merged.loaded.config;
    // `why` is the tool's key for it (and the reference's); `reason` is kept for older callers.
    let not_reloaded: Vec<Value> = NOT_RELOADED
        .iter()
        .map(|(section, why)| json!({"section": section, "why": why, "reason": why}))
        .collect();
    // The reload's own facts, as the tool answers them and the reference's preview does: what a
    // server that loaded this very file would take from it.
    let mut outcome = Outcome::ok(tool, "A running server's project_config_reload_description would take this description; nothing was written.")
        .with("scope", "preview")
        .with("reloaded", true)
        .with("description_changed", !merged.description_changes.is_empty())
        .with("description_changes", json!(merged.description_changes))
        .with("reloaded_sections", json!(RELOADED_SECTIONS))
        .with("permissions_reloaded", false)
        .with("permission_differences", json!(merged.permission_differences))
        .with("restart_required_for", json!(merged.restart_required_for))
        .with("path", loaded.display_path.as_str())
        .with("would_reload", json!({
            "target": {"name": config.target.name, "controller": config.target.controller},
            "debuggers": config.debuggers.keys().collect::<Vec<_>>(),
            "com_ports": config.com_ports.keys().collect::<Vec<_>>(),
            "can_buses": config.can_buses.keys().collect::<Vec<_>>(),
        }))
        .with("not_reloaded_sections", Value::Array(not_reloaded))
        .with("permissions_in_file", json!(config_surface(config)))
        .with("next_steps", json!([
            "Ask the agent to call project_config_reload_description, or restart the MCP server to apply grants too."
        ]));
    outcome.config_status = serde_json::to_value(loaded.status()).ok();
    outcome
}

/// A configuration that cannot be loaded, as a result document.
pub fn config_error(tool: &str, e: &ConfigError) -> Value {
    config_refusal(tool, e).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_permission_shorthand_gains_its_permissions_segment() {
        assert_eq!(
            canonical_key("debuggers.dut.allow_flash"),
            "debuggers.dut.permissions.allow_flash"
        );
        assert_eq!(
            canonical_key("com_ports.a.b.allow_write"),
            "com_ports.a.b.permissions.allow_write"
        );
        assert_eq!(
            canonical_key("debuggers.dut.permissions.allow_flash"),
            "debuggers.dut.permissions.allow_flash"
        );
        assert_eq!(
            canonical_key("permissions.allow_recover"),
            "permissions.allow_recover"
        );
    }
}
