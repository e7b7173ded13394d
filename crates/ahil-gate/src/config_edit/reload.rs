//! Description reload: take the bench description (target, debuggers, com_ports, can_buses) from the
//! file as it is now, and keep every grant and every other section from the configuration the server
//! started with. A device the server did not know arrives with every grant false.

use std::path::Path;
use std::sync::{Arc, RwLock};

use ahil_config::{
    Config, ConfigError, DEFAULT_INTERFACE_CFG, DEFAULT_TARGET_CFG, Environment, LoadedConfig,
    load_authoritative,
};
use indexmap::IndexMap;
use serde_json::Value;

use super::identity::redirected;
use super::keys::Section;
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
        "power_supplies",
        "a supply's port, limits and grants are read once at startup",
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
    /// Sections outside the description whose file value differs from the one in force, and
    /// program keys the file changed (a reload never re-pins a program).
    pub restart_required_for: Vec<String>,
    /// `<section>.<name>` of entries the file points at another device: in force with every grant
    /// false until the operator grants them and restarts the server.
    pub redirected_entries: Vec<String>,
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
    let mut executables = ahil_config::PinnedExecutables {
        gdb: in_force.executables.gdb.clone(),
        ..fresh.executables.clone()
    };
    let mut kept = Kept::default();
    config.debuggers = IndexMap::new();
    for (name, entry) in &disk.debuggers {
        let Some(mut entry) = kept.entry(
            "debuggers",
            name,
            (old.debuggers.get(name), entry),
            &old.workspace_root,
        ) else {
            executables.debuggers.shift_remove(name);
            executables.gdb_servers.shift_remove(name);
            continue;
        };
        if kept.pinned_as_before("debuggers", name) {
            let before = &old.debuggers[name];
            entry.kind = before.kind;
            entry.executable.clone_from(&before.executable);
            entry
                .gdb_server_executable
                .clone_from(&before.gdb_server_executable);
            entry.interface_cfg.clone_from(&before.interface_cfg);
            entry.target_cfg.clone_from(&before.target_cfg);
            repin(&mut executables, &in_force.executables, "debuggers", name);
        }
        entry.permissions = kept.grants(
            "debuggers",
            name,
            old.debuggers.get(name).map(|d| d.permissions),
        );
        config.debuggers.insert(name.clone(), entry);
    }
    config.com_ports = IndexMap::new();
    for (name, port) in &disk.com_ports {
        let mut port = port.clone();
        let before = old.com_ports.get(name);
        let ws = &old.workspace_root;
        if before.is_some_and(|b| redirected("com_ports", &to_json(b), &to_json(&port), ws)) {
            kept.redirected.push(format!("com_ports.{name}"));
        }
        port.permissions = kept.grants("com_ports", name, before.map(|p| p.permissions));
        config.com_ports.insert(name.clone(), port);
    }
    config.can_buses = IndexMap::new();
    for (name, bus) in &disk.can_buses {
        let before = old.can_buses.get(name);
        let Some(mut bus) = kept.entry("can_buses", name, (before, bus), &old.workspace_root)
        else {
            executables.can_buses.shift_remove(name);
            continue;
        };
        if let Some(before) = before.filter(|_| kept.pinned_as_before("can_buses", name)) {
            bus.adapter = before.adapter;
            bus.executable.clone_from(&before.executable);
            bus.pcanbasic_dll.clone_from(&before.pcanbasic_dll);
            repin(&mut executables, &in_force.executables, "can_buses", name);
        }
        bus.permissions = kept.grants("can_buses", name, before.map(|b| b.permissions));
        let open = !kept.redirected.contains(&format!("can_buses.{name}"));
        for (share, body) in bus.shares.iter_mut().flatten() {
            body.permissions = before
                .filter(|_| open)
                .and_then(|b| b.shares.as_ref())
                .and_then(|s| s.get(share))
                .map(|s| s.permissions)
                .unwrap_or_default();
        }
        config.can_buses.insert(name.clone(), bus);
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
    restart_required_for.extend(kept.programs.iter().cloned());
    if old.debug.gdb_executable != disk.debug.gdb_executable {
        restart_required_for.push("debug.gdb_executable".to_owned());
    }
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
        executables,
        ..fresh
    };
    Reloaded {
        loaded,
        description_changes,
        permission_differences,
        restart_required_for,
        redirected_entries: kept.redirected,
    }
}

/// What a reload keeps from the configuration in force: programs it does not re-pin, and the
/// entries whose device changed.
#[derive(Default)]
struct Kept {
    /// `<section>.<name>.<field>` (or a whole new `<section>.<name>`) that names a program the
    /// file changed; only a restart pins it.
    programs: Vec<String>,
    /// `<section>.<name>` of entries now naming another device; every grant is false.
    redirected: Vec<String>,
    /// `<section>.<name>` whose programs stay as pinned at startup.
    as_before: Vec<String>,
}

impl Kept {
    /// The entry a reload takes from the file, or `None` for a new one that names a program (it
    /// arrives with a restart). Records what changed on the way.
    fn entry<T: Clone + serde::Serialize>(
        &mut self,
        section: &'static str,
        name: &str,
        (before, disk): (Option<&T>, &T),
        workspace: &Path,
    ) -> Option<T> {
        let at = format!("{section}.{name}");
        let now = to_json(disk);
        let Some(before) = before.map(to_json) else {
            if names_a_program(section, &now) {
                self.programs.push(at);
                return None;
            }
            return Some(disk.clone());
        };
        if redirected(section, &before, &now, workspace) {
            self.redirected.push(at.clone());
        }
        let section_kind = match section {
            "debuggers" => Section::Debuggers,
            _ => Section::CanBuses,
        };
        let changed: Vec<String> = section_kind
            .program_fields()
            .iter()
            .filter(|field| before.get(**field) != now.get(**field))
            .map(|field| format!("{at}.{field}"))
            .collect();
        if changed.is_empty() {
            if before.get(kind_field(section)) == now.get(kind_field(section)) {
                self.as_before.push(at);
            }
        } else {
            self.programs.extend(changed);
            self.as_before.push(at);
        }
        Some(disk.clone())
    }

    fn pinned_as_before(&self, section: &str, name: &str) -> bool {
        self.as_before.contains(&format!("{section}.{name}"))
    }

    /// The grants in force for an entry: none for a new or redirected one.
    fn grants<P: Default>(&self, section: &str, name: &str, before: Option<P>) -> P {
        let redirected = self.redirected.contains(&format!("{section}.{name}"));
        before.filter(|_| !redirected).unwrap_or_default()
    }
}

/// The field that picks which program an entry's section runs by default.
fn kind_field(section: &str) -> &'static str {
    if section == "debuggers" {
        "type"
    } else {
        "adapter"
    }
}

/// Whether a new entry names a program rather than leaving it to the fixed names its type has.
fn names_a_program(section: &str, entry: &Value) -> bool {
    let set = |field: &str| entry.get(field).is_some_and(|v| !v.is_null());
    match section {
        "debuggers" => {
            set("executable")
                || set("gdb_server_executable")
                || entry.get("interface_cfg") != Some(&Value::from(DEFAULT_INTERFACE_CFG))
                || entry.get("target_cfg") != Some(&Value::from(DEFAULT_TARGET_CFG))
        }
        _ => set("executable") || set("pcanbasic_dll"),
    }
}

/// Puts back the pins in force for the entry `name` of `section` (or none, where it had none): a
/// debugger's own program and its gdb server's, or a bus's bridge.
fn repin(
    now: &mut ahil_config::PinnedExecutables,
    in_force: &ahil_config::PinnedExecutables,
    section: &str,
    name: &str,
) {
    let tables = if section == "debuggers" {
        vec![
            (&mut now.debuggers, &in_force.debuggers),
            (&mut now.gdb_servers, &in_force.gdb_servers),
        ]
    } else {
        vec![(&mut now.can_buses, &in_force.can_buses)]
    };
    for (now, in_force) in tables {
        match in_force.get(name) {
            Some(state) => {
                now.insert(name.to_owned(), state.clone());
            }
            None => {
                now.shift_remove(name);
            }
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(extra: &str) -> LoadedConfig {
        let text = ahil_config::render_init_config(
            std::path::Path::new("/tmp/ws"),
            std::path::Path::new("/tmp/state"),
        )
        .replace("can_buses: {}\n", extra);
        LoadedConfig {
            config: ahil_config::parse_config(text.as_bytes()).expect("parses"),
            path: "/tmp/config.yaml".into(),
            display_path: "/tmp/config.yaml".into(),
            digest: String::new(),
            loaded_at: String::new(),
            workspace: "/tmp/ws".into(),
            from_override: false,
            auto_recover_explicit: false,
            executables: ahil_config::PinnedExecutables::default(),
        }
    }

    /// The starter file with the debugger `dut` naming another program.
    fn dut_program_changed() -> LoadedConfig {
        let mut disk = loaded("can_buses: {}\n");
        disk.config
            .debuggers
            .get_mut("dut")
            .expect("starter")
            .executable = Some("/usr/bin/env".into());
        disk
    }

    const BUS: &str = "can_buses:\n  bus:\n    adapter: socketcan\n    channel: can0\n    permissions:\n      allow_write: true\n";

    #[test]
    fn a_new_entry_that_names_a_program_arrives_only_with_a_restart() {
        let before = loaded("can_buses: {}\n");
        let bridge = "can_buses:\n  bridge:\n    adapter: process\n    channel: b0\n    executable: /usr/bin/env\n";
        let merged = merge(&before, loaded(bridge));
        assert!(merged.loaded.config.can_buses.is_empty());
        assert_eq!(merged.restart_required_for, ["can_buses.bridge"]);
    }

    #[test]
    fn a_changed_debugger_program_stays_as_pinned_and_waits_for_a_restart() {
        let before = loaded("can_buses: {}\n");
        let mut disk = dut_program_changed();
        disk.config.debug.gdb_executable = Some("/usr/bin/env".into());
        let merged = merge(&before, disk);
        assert_eq!(merged.loaded.config.debuggers["dut"].executable, None);
        assert_eq!(merged.loaded.config.debug.gdb_executable, None);
        assert!(
            merged
                .restart_required_for
                .contains(&"debuggers.dut.executable".to_owned())
        );
        assert!(
            merged
                .restart_required_for
                .contains(&"debug.gdb_executable".to_owned())
        );
    }

    #[test]
    fn a_changed_debugger_program_keeps_both_programs_pinned_at_startup() {
        let pinned = |path: &str| ahil_config::ExecutableState::Pinned { path: path.into() };
        let mut before = loaded("can_buses: {}\n");
        before
            .executables
            .debuggers
            .insert("dut".into(), pinned("/opt/startup/openocd"));
        before
            .executables
            .gdb_servers
            .insert("dut".into(), pinned("/opt/startup/gdb-server"));
        let mut disk = dut_program_changed();
        disk.executables
            .debuggers
            .insert("dut".into(), pinned("/usr/bin/env"));
        let merged = merge(&before, disk);
        let executables = &merged.loaded.executables;
        assert_eq!(executables.debuggers["dut"], pinned("/opt/startup/openocd"));
        assert_eq!(
            executables.gdb_servers["dut"],
            pinned("/opt/startup/gdb-server")
        );
    }

    #[test]
    fn a_bus_moved_to_another_channel_loses_its_grant_in_force() {
        let before = loaded(BUS);
        let merged = merge(&before, loaded(&BUS.replace("can0", "can1")));
        assert_eq!(merged.redirected_entries, ["can_buses.bus"]);
        assert!(
            !merged.loaded.config.can_buses["bus"]
                .permissions
                .allow_write
        );
        let same = merge(&before, loaded(BUS));
        assert!(same.redirected_entries.is_empty());
        assert!(same.loaded.config.can_buses["bus"].permissions.allow_write);
    }
}
