//! Description reload: take the bench description (target, debuggers, com_ports, can_buses) from the
//! file as it is now, and keep every grant and every other section from the configuration the server
//! started with. A device the server did not know arrives with every grant false.

use std::sync::{Arc, RwLock};

use ahil_config::{Config, ConfigError, Environment, LoadedConfig, load_authoritative};
use serde_json::Value;

use super::ratchet::config_surface;

/// The sections a reload takes from disk.
pub const RELOADED_SECTIONS: &[&str] = &["target", "debuggers", "com_ports", "can_buses"];

/// The sections a reload leaves as the server loaded them, and why.
pub const NOT_RELOADED: &[(&str, &str)] = &[
    (
        "permissions",
        "grants are read once at startup; a restart applies them",
    ),
    (
        "version",
        "the rules a file is read under change only with a restart",
    ),
    (
        "workspace_root",
        "the workspace binding is fixed for the life of the server",
    ),
    (
        "state_root",
        "evidence and locks stay where the server started them",
    ),
    (
        "debug",
        "the debugger and symbol grants are read once at startup",
    ),
    (
        "artifacts",
        "upload grants and roots are read once at startup",
    ),
    ("validation", "image checks are read once at startup"),
    ("recovery", "the recovery policy is read once at startup"),
    (
        "reports",
        "the audit trail's place is fixed for the life of the server",
    ),
    (
        "logs",
        "the audit trail's place is fixed for the life of the server",
    ),
    (
        "<entry>.permissions",
        "device grants are read once at startup; new devices get every grant false",
    ),
];

/// The description the gate decides with: the startup configuration until a reload replaces it.
#[derive(Default)]
pub struct DescriptionSlot {
    reloaded: RwLock<Option<Arc<LoadedConfig>>>,
}

impl DescriptionSlot {
    /// The reloaded configuration, if a reload happened.
    pub fn current(&self) -> Option<Arc<LoadedConfig>> {
        self.reloaded
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn install(&self, loaded: LoadedConfig) {
        *self
            .reloaded
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(loaded));
    }
}

/// What one reload did.
pub struct Reloaded {
    pub loaded: LoadedConfig,
    /// `<section>[.<entry>]` that differ from the description in force before.
    pub description_changes: Vec<String>,
    /// Grant keys whose value in the file differs from the one in force.
    pub permission_differences: Vec<String>,
    /// Sections outside the description whose file value differs from the one in force.
    pub restart_required_for: Vec<String>,
}

/// Reads the file fresh (every loader check applies) and builds the merged configuration, then
/// installs it in `slot`.
pub fn reload(
    in_force: &LoadedConfig,
    env: &Environment,
    slot: &DescriptionSlot,
) -> Result<Reloaded, ConfigError> {
    let fresh = load_authoritative(&in_force.workspace, env)?;
    let reloaded = merge(in_force, fresh);
    slot.install(reloaded.loaded.clone());
    Ok(reloaded)
}

fn merge(in_force: &LoadedConfig, fresh: LoadedConfig) -> Reloaded {
    let old = &in_force.config;
    let disk = &fresh.config;
    let mut config = old.clone();
    config.target = disk.target.clone();
    config.debuggers.clone_from(&disk.debuggers);
    for (name, entry) in &mut config.debuggers {
        entry.permissions = old
            .debuggers
            .get(name)
            .map(|d| d.permissions)
            .unwrap_or_default();
    }
    config.com_ports.clone_from(&disk.com_ports);
    for (name, port) in &mut config.com_ports {
        port.permissions = old
            .com_ports
            .get(name)
            .map(|p| p.permissions)
            .unwrap_or_default();
    }
    config.can_buses.clone_from(&disk.can_buses);
    for (name, bus) in &mut config.can_buses {
        let before = old.can_buses.get(name);
        bus.permissions = before.map(|b| b.permissions).unwrap_or_default();
        for (share, body) in bus.shares.iter_mut().flatten() {
            body.permissions = before
                .and_then(|b| b.shares.as_ref())
                .and_then(|s| s.get(share))
                .map(|s| s.permissions)
                .unwrap_or_default();
        }
    }

    let description_changes = description_changes(old, &config);
    let in_force_surface = config_surface(old);
    let file_surface = config_surface(disk);
    let mut keys: Vec<&String> = in_force_surface.keys().chain(file_surface.keys()).collect();
    keys.sort();
    keys.dedup();
    // Keys only, as the reference answers them; each is false in force unless the startup file opened
    // it, so the key alone says which way it differs.
    let permission_differences: Vec<String> = keys
        .into_iter()
        .filter(|key| {
            in_force_surface.get(*key).copied().unwrap_or(false)
                != file_surface.get(*key).copied().unwrap_or(false)
        })
        .cloned()
        .collect();
    // What only a restart applies: the differing grants by key, then other sections that moved.
    let mut restart_required_for = permission_differences.clone();
    restart_required_for.extend(
        outside_description_changes(&config, disk)
            .into_iter()
            .filter(|section| section != "permissions"),
    );

    // The digest names the document in force only when the merge equals the file; otherwise the
    // grants still come from the startup file and the status must keep saying the file moved on.
    let same_as_file = config == *disk;
    let loaded = LoadedConfig {
        config,
        digest: if same_as_file {
            fresh.digest.clone()
        } else {
            in_force.digest.clone()
        },
        loaded_at: in_force.loaded_at.clone(),
        executables: ahil_config::PinnedExecutables {
            gdb: in_force.executables.gdb.clone(),
            ..fresh.executables.clone()
        },
        ..fresh
    };
    Reloaded {
        loaded,
        description_changes,
        permission_differences,
        restart_required_for,
    }
}

fn to_json(config: &Config) -> Value {
    serde_json::to_value(config).unwrap_or(Value::Null)
}

fn description_changes(old: &Config, new: &Config) -> Vec<String> {
    let (old, new) = (to_json(old), to_json(new));
    let mut changes = Vec::new();
    if old.get("target") != new.get("target") {
        changes.push("target".to_owned());
    }
    for section in &RELOADED_SECTIONS[1..] {
        let empty = serde_json::Map::new();
        let before = old
            .get(*section)
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let after = new
            .get(*section)
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
        names.dedup();
        let mut seen = std::collections::BTreeSet::new();
        for name in names {
            if seen.insert(name) && before.get(name) != after.get(name) {
                changes.push(format!("{section}.{name}"));
            }
        }
    }
    changes
}

/// Top-level sections (besides the description) where the file says something the server does not
/// enforce.
fn outside_description_changes(merged: &Config, disk: &Config) -> Vec<String> {
    let (merged, disk) = (to_json(merged), to_json(disk));
    let sections: Vec<&String> = disk
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    sections
        .into_iter()
        .filter(|s| !RELOADED_SECTIONS.contains(&s.as_str()) && *s != "provenance")
        .filter(|s| merged.get(s.as_str()) != disk.get(s.as_str()))
        .cloned()
        .collect()
}
