//! Which dotted configuration keys a field-wise write may reach, and the grant each needs.

use std::fmt;

/// Description fields of a `debuggers` entry a field-wise write may change.
pub const DEBUGGER_FIELDS: &[&str] = &[
    "type",
    "probe_id",
    "executable",
    "gdb_server_executable",
    "interface_cfg",
    "target_cfg",
    "connect_mode",
];
/// Description fields of a `com_ports` entry.
pub const COM_FIELDS: &[&str] = &[
    "device",
    "baudrate",
    "serial_number",
    "vid",
    "pid",
    "identity_source",
];
/// Description fields of a `can_buses` entry (every scalar but the grants).
pub const CAN_FIELDS: &[&str] = &[
    "adapter",
    "bitrate",
    "channel",
    "data_bitrate",
    "executable",
    "fd",
    "listen_only",
    "listen_only_enforcement",
    "max_buffer_frames",
    "max_frame_data_bytes",
    "pcanbasic_dll",
    "poll_interval_ms",
    "receive_own_messages",
    "resource_id",
    "timeout_s",
];
/// The project grants.
pub const PROJECT_FLAGS: &[&str] = &[
    "allow_config_description_write",
    "allow_config_permissions_write",
    "allow_config_write",
    "allow_recover",
    "allow_upgrade",
];
/// Device grants of a debugger in version 2 and later, sorted.
pub const DEBUGGER_FLAGS: &[&str] = &[
    "allow_debug_execution",
    "allow_flash",
    "allow_mass_erase",
    "allow_raw_debugger_commands",
    "allow_reset",
];

/// Grants a debugger may carry that a new entry is not written with: ours alone (a file that names
/// one is no longer one the reference loads), so they are set only where the operator put them.
pub const DEBUGGER_OWN_FLAGS: &[&str] = &["allow_rtt_write"];
/// Scalar fields of a debugger's `rtt` section a field-wise write may change (`channels` is a list:
/// the operator's).
pub const RTT_FIELDS: &[&str] = &[
    "control_block",
    "from_elf",
    "max_buffer_bytes",
    "max_write_bytes",
    "poll_interval_ms",
    "scan.size",
    "scan.start",
];

/// Fields that name a program the gate runs, a script it feeds one, or a library it loads: whoever
/// sets them chooses the code that runs, so only the operator sets them (never over MCP), and a
/// description reload never re-pins one.
pub const DEBUGGER_PROGRAM_FIELDS: &[&str] = &[
    "executable",
    "gdb_server_executable",
    "interface_cfg",
    "target_cfg",
];
/// A CAN bus's bridge program and the PCAN-Basic library it loads.
pub const CAN_PROGRAM_FIELDS: &[&str] = &["executable", "pcanbasic_dll"];
/// Top-level keys that name a program.
pub const PROGRAM_KEYS: &[&str] = &["debug.gdb_executable"];

/// What an agent is told to do about an operator-only key: no command sets one, so the operator
/// edits the file at their own shell, previews with `config-reload` and restarts the server.
pub const OPERATOR_ONLY_COMMAND: &str = "edit the configuration file at the operator's shell (agentic-hil config-reload previews it), then restart the MCP server";

/// The grant a key needs before a field-wise write may touch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Right {
    /// `permissions.allow_config_description_write`: the bench description.
    Description,
    /// `permissions.allow_config_permissions_write`: narrowing a grant.
    Permissions,
}

impl Right {
    /// The project grant's own name.
    pub fn permission(self) -> &'static str {
        match self {
            Self::Description => "allow_config_description_write",
            Self::Permissions => "allow_config_permissions_write",
        }
    }

    /// The grant's dotted key, as refusals name it.
    pub fn key(self) -> String {
        format!("permissions.{}", self.permission())
    }
}

/// The grants a `power_supplies` entry has.
pub const SUPPLY_FLAGS: &[&str] = &["allow_output", "allow_set"];

/// The entry sections whose names a key may introduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Debuggers,
    ComPorts,
    CanBuses,
}

impl Section {
    pub fn name(self) -> &'static str {
        match self {
            Self::Debuggers => "debuggers",
            Self::ComPorts => "com_ports",
            Self::CanBuses => "can_buses",
        }
    }

    /// The fields of this section's entries that name a program.
    pub fn program_fields(self) -> &'static [&'static str] {
        match self {
            Self::Debuggers => DEBUGGER_PROGRAM_FIELDS,
            Self::ComPorts => &[],
            Self::CanBuses => CAN_PROGRAM_FIELDS,
        }
    }

    fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Debuggers => DEBUGGER_FIELDS,
            Self::ComPorts => COM_FIELDS,
            Self::CanBuses => CAN_FIELDS,
        }
    }

    /// The grants a key of this section may name: a new entry's, and ours alone.
    fn settable_flags(self, version: u8) -> Vec<&'static str> {
        let mut flags = self.flags(version);
        if self == Self::Debuggers {
            flags.extend_from_slice(DEBUGGER_OWN_FLAGS);
        }
        flags
    }

    /// The grants a new entry of this section is written with, every one false.
    pub fn flags(self, version: u8) -> Vec<&'static str> {
        let mut flags: Vec<&'static str> = match self {
            Self::Debuggers => DEBUGGER_FLAGS.to_vec(),
            Self::ComPorts | Self::CanBuses => vec!["allow_write"],
        };
        if version <= 1 {
            flags.push(match self {
                Self::Debuggers => "allow_probe",
                Self::ComPorts | Self::CanBuses => "allow_read",
            });
            flags.sort_unstable();
        }
        flags
    }
}

/// A settable key, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRule {
    pub key: String,
    pub right: Right,
    /// The key names a program, script or library: the operator's alone.
    pub operator_only: bool,
    /// The entry the key lives under, if it is in an entry section.
    pub entry: Option<(Section, String)>,
}

/// Why a key cannot be set field-wise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    pub key: String,
    pub reason: &'static str,
}

impl fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.reason)
    }
}

fn valid_entry_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Classifies a dotted key for a file of `version`.
pub fn classify(key: &str, version: u8) -> Result<KeyRule, UnknownKey> {
    let unknown = |reason| UnknownKey {
        key: key.to_owned(),
        reason,
    };
    let rule = |right, entry: Option<(Section, String)>| KeyRule {
        key: key.to_owned(),
        right,
        operator_only: PROGRAM_KEYS.contains(&key)
            || entry.as_ref().is_some_and(|(section, name)| {
                key.strip_prefix(&format!("{}.{name}.", section.name()))
                    .is_some_and(|field| section.program_fields().contains(&field))
            }),
        entry,
    };
    match key {
        "target.name" | "target.controller" | "debug.gdb_executable" => {
            return Ok(rule(Right::Description, None));
        }
        "debug.allow_all_symbols" | "artifacts.allow_upload" => {
            return Ok(rule(Right::Permissions, None));
        }
        _ => {}
    }
    // A supply's grants only close over MCP, like every other; its description is the operator's.
    if let Some((name, flag)) = key
        .strip_prefix("power_supplies.")
        .and_then(|rest| rest.split_once(".permissions."))
    {
        return if !valid_entry_name(name) || name.contains('.') {
            Err(unknown(
                "the supply name may use only letters, digits, `_` and `-`",
            ))
        } else if SUPPLY_FLAGS.contains(&flag) {
            Ok(rule(Right::Permissions, None))
        } else {
            Err(unknown("no such permission on a power supply"))
        };
    }
    if let Some(flag) = key.strip_prefix("permissions.") {
        return if PROJECT_FLAGS.contains(&flag) {
            Ok(rule(Right::Permissions, None))
        } else {
            Err(unknown("no such project permission"))
        };
    }
    let (section, rest) = [Section::Debuggers, Section::ComPorts, Section::CanBuses]
        .into_iter()
        .find_map(|s| {
            key.strip_prefix(s.name())
                .and_then(|r| r.strip_prefix('.'))
                .map(|r| (s, r))
        })
        .ok_or_else(|| unknown("not a key a field-wise write may change"))?;
    // Entry names may hold dots, so the field is found from the right.
    if let Some((name, flag)) = rest.rsplit_once(".permissions.") {
        if !valid_entry_name(name) {
            return Err(unknown(
                "the entry name may use only letters, digits, `_`, `.` and `-`",
            ));
        }
        return if section.settable_flags(version).contains(&flag) {
            Ok(rule(Right::Permissions, Some((section, name.to_owned()))))
        } else {
            Err(unknown(
                "no such permission on this kind of entry in this configuration version",
            ))
        };
    }
    // A debugger's rtt section: its scalar fields are the bench description, as the entry's are.
    if section == Section::Debuggers
        && let Some((name, field)) = rest.rsplit_once(".rtt.")
    {
        return if !valid_entry_name(name) {
            Err(unknown(
                "the entry name may use only letters, digits, `_`, `.` and `-`",
            ))
        } else if RTT_FIELDS.contains(&field) {
            Ok(rule(Right::Description, Some((section, name.to_owned()))))
        } else {
            Err(unknown(
                "not an rtt field a field-wise write may change (channels are the operator's)",
            ))
        };
    }
    let (name, field) = rest
        .rsplit_once('.')
        .ok_or_else(|| unknown("name an entry and one of its fields"))?;
    if !valid_entry_name(name) {
        return Err(unknown(
            "the entry name may use only letters, digits, `_`, `.` and `-`",
        ));
    }
    if section.fields().contains(&field) {
        Ok(rule(Right::Description, Some((section, name.to_owned()))))
    } else {
        Err(unknown(
            "not a description field a field-wise write may change",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_and_permission_keys_are_told_apart() {
        for (key, right) in [
            ("target.name", Right::Description),
            ("debuggers.dut.probe_id", Right::Description),
            (
                "com_ports.dut.uart.permissions.allow_write",
                Right::Permissions,
            ),
            ("permissions.allow_recover", Right::Permissions),
            ("artifacts.allow_upload", Right::Permissions),
        ] {
            assert_eq!(classify(key, 3).map(|r| r.right), Ok(right), "{key}");
        }
        let flag = classify("com_ports.dut.uart.permissions.allow_write", 3).expect("known");
        assert_eq!(flag.entry, Some((Section::ComPorts, "dut.uart".to_owned())));
    }

    #[test]
    fn keys_outside_the_model_are_refused_with_a_reason() {
        for key in [
            "workspace_root",
            "state_root",
            "permissions.allow_everything",
            "debuggers.dut.timeout_s",
            "debuggers.dut.permissions.allow_probe",
            "debuggers.bad name.probe_id",
            "artifacts.allowed_roots",
            "debuggers.dut",
            // The maximum holds are the operator's: an agent can neither raise nor lower them.
            "holds.max_run_s",
            "holds.max_session_s",
        ] {
            assert!(classify(key, 3).is_err(), "{key}");
        }
        assert!(classify("debuggers.dut.permissions.allow_probe", 1).is_ok());
    }

    #[test]
    fn the_rtt_fields_are_description_and_allow_rtt_write_a_permission_in_every_version() {
        for version in [1, 3] {
            let grant = classify("debuggers.dut.permissions.allow_rtt_write", version);
            assert_eq!(grant.map(|r| r.right), Ok(Right::Permissions), "v{version}");
            for key in [
                "debuggers.dut.rtt.control_block",
                "debuggers.dut.rtt.scan.start",
                "debuggers.a.b.rtt.max_write_bytes",
            ] {
                let rule = classify(key, version).expect("known");
                assert_eq!(rule.right, Right::Description, "{key}");
                assert!(!rule.operator_only, "{key}");
            }
            let rule = classify("debuggers.a.b.rtt.poll_interval_ms", version).expect("known");
            assert_eq!(rule.entry, Some((Section::Debuggers, "a.b".to_owned())));
            for key in [
                "debuggers.dut.rtt.channels",
                "debuggers.dut.rtt.scan",
                "com_ports.u.rtt.from_elf",
            ] {
                assert!(classify(key, version).is_err(), "{key}");
            }
        }
        // A new entry is written with the reference's grants only.
        assert!(!Section::Debuggers.flags(3).contains(&"allow_rtt_write"));
    }

    #[test]
    fn every_key_that_names_a_program_is_the_operators_alone() {
        for key in [
            "debuggers.dut.executable",
            "debuggers.dut.gdb_server_executable",
            "debuggers.dut.interface_cfg",
            "debuggers.a.b.target_cfg",
            "debug.gdb_executable",
            "can_buses.bus.executable",
            "can_buses.bus.pcanbasic_dll",
        ] {
            assert!(classify(key, 3).expect("known").operator_only, "{key}");
        }
        for key in [
            "debuggers.dut.probe_id",
            "debuggers.executable.type",
            "com_ports.uart.device",
            "can_buses.bus.channel",
            "target.name",
        ] {
            assert!(!classify(key, 3).expect("known").operator_only, "{key}");
        }
    }
}
