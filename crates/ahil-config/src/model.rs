//! The typed configuration, filled from a document that has already passed validation.
//!
//! Defaults are the values the reference uses when a key is absent (a test compares them
//! with its schema). Maps keep file order.

use std::path::PathBuf;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub use crate::model_io::*;

/// Controller name `init` writes when it has not seen a board.
pub const PLACEHOLDER_CONTROLLER: &str = "unknown-controller";
/// The machine a `qemu` debugger emulates when it names none: STM32F405, our test firmware's board.
pub const DEFAULT_QEMU_MACHINE: &str = "netduinoplus2";
/// Default OpenOCD interface script (a search name, not a file).
pub const DEFAULT_INTERFACE_CFG: &str = "interface/stlink.cfg";
/// Default OpenOCD target script (a search name, not a file).
pub const DEFAULT_TARGET_CFG: &str = "target/stm32f4x.cfg";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub version: u8,
    pub workspace_root: PathBuf,
    pub state_root: PathBuf,
    pub permissions: ProjectPermissions,
    pub provenance: Option<Provenance>,
    pub target: Target,
    pub debuggers: IndexMap<String, Debugger>,
    pub debug: Debug,
    pub artifacts: Artifacts,
    pub com_ports: IndexMap<String, ComPort>,
    pub can_buses: IndexMap<String, CanBus>,
    pub power_supplies: IndexMap<String, PowerSupply>,
    pub validation: Validation,
    pub reports: Reports,
    pub logs: Logs,
    pub recovery: Recovery,
    /// Ours alone: labgrid places held through the coordinator (`labgrid.rs`).
    pub labgrid: Option<crate::labgrid::Labgrid>,
    /// Ours alone: the longest a run or a session may hold the bench (`holds.rs`).
    pub holds: crate::holds::Holds,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            version: 1,
            workspace_root: PathBuf::new(),
            state_root: PathBuf::new(),
            permissions: ProjectPermissions::default(),
            provenance: None,
            target: Target::default(),
            debuggers: IndexMap::new(),
            debug: Debug::default(),
            artifacts: Artifacts::default(),
            com_ports: IndexMap::new(),
            can_buses: IndexMap::new(),
            power_supplies: IndexMap::new(),
            validation: Validation::default(),
            reports: Reports::default(),
            logs: Logs::default(),
            recovery: Recovery::default(),
            labgrid: None,
            holds: crate::holds::Holds::default(),
        }
    }
}

impl Config {
    /// True while `target.controller` still says what `init` writes without a board.
    pub fn is_placeholder_controller(&self) -> bool {
        self.target.controller == PLACEHOLDER_CONTROLLER
    }

    /// The debugger MCP tools drive without being told: the only one, if there is exactly one.
    pub fn auto_bound_debugger(&self) -> Option<(&str, &Debugger)> {
        match self.debuggers.len() {
            1 => self.debuggers.first().map(|(k, v)| (k.as_str(), v)),
            _ => None,
        }
    }

    /// The project target with a debugger's per-probe override applied.
    pub fn effective_target(&self, debugger: &str) -> Target {
        let mut t = self.target.clone();
        if let Some(o) = self.debuggers.get(debugger).and_then(|d| d.target.as_ref()) {
            if let Some(n) = &o.name {
                t.name.clone_from(n);
            }
            if let Some(c) = &o.controller {
                t.controller.clone_from(c);
            }
        }
        t
    }

    /// The state directory of a `qemu` debugger's board: `board_dir` when set (validated absolute and
    /// outside the workspace), else `<state_root>/sim/<name>`. `None` for any other entry.
    pub fn board_dir(&self, debugger: &str) -> Option<PathBuf> {
        let entry = self.debuggers.get(debugger)?;
        if entry.kind != DebuggerType::Qemu {
            return None;
        }
        Some(match &entry.board_dir {
            Some(dir) => crate::paths::normalize(std::path::Path::new(dir)),
            None => self.state_root.join("sim").join(debugger),
        })
    }

    /// Version 1 gates reads behind `allow_probe` / `allow_read`; later versions do not.
    pub fn reads_need_permission(&self) -> bool {
        self.version < 2
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectPermissions {
    pub allow_config_write: bool,
    pub allow_config_description_write: bool,
    pub allow_config_permissions_write: bool,
    pub allow_recover: bool,
    pub allow_upgrade: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    Agent,
    Human,
    Cli,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Provenance {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_via: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agentic_hil_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified_by: Option<Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified_via: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified_keys: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modification_count: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Target {
    pub name: String,
    pub controller: String,
}

impl Default for Target {
    fn default() -> Self {
        Self {
            name: "unknown-target".into(),
            controller: PLACEHOLDER_CONTROLLER.into(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetOverride {
    pub name: Option<String>,
    pub controller: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DebuggerType {
    #[default]
    Openocd,
    Stlink,
    Pyocd,
    Esptool,
    /// An emulated board under `agentic-hil sim` (our extension; the reference does not know it).
    Qemu,
    /// The native probe-rs backend in a worker child of this binary (our extension; the reference
    /// does not know it). `target_type` is probe-rs's chip name.
    #[serde(rename = "probe-rs")]
    ProbeRs,
}

impl DebuggerType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openocd => "openocd",
            Self::Stlink => "stlink",
            Self::Pyocd => "pyocd",
            Self::Esptool => "esptool",
            Self::Qemu => "qemu",
            Self::ProbeRs => "probe-rs",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Interface {
    #[default]
    #[serde(rename = "SWD")]
    Swd,
    #[serde(rename = "JTAG")]
    Jtag,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectMode {
    #[default]
    Hotplug,
    UnderReset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscoveredBy {
    Stm32cubeprogrammerCli,
    UsbSerialInventory,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeInventory {
    Complete,
    Incomplete,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DebuggerPermissions {
    /// Version 1 only; refused by name in later versions.
    pub allow_probe: bool,
    pub allow_flash: bool,
    pub allow_reset: bool,
    pub allow_debug_execution: bool,
    pub allow_raw_debugger_commands: bool,
    pub allow_mass_erase: bool,
    /// Writing to the target's RTT down channels (a stimulus, like `com_write`); ours alone.
    pub allow_rtt_write: bool,
}

impl DebuggerPermissions {
    /// Either unrestricted-access flag refuses validated flashing and debug sessions.
    pub fn blocks_validated_flashing(&self) -> bool {
        self.allow_raw_debugger_commands || self.allow_mass_erase
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Debugger {
    #[serde(rename = "type")]
    pub kind: DebuggerType,
    pub executable: Option<String>,
    pub probe_id: Option<String>,
    pub target_type: Option<String>,
    pub interface: Interface,
    pub connect_mode: ConnectMode,
    pub interface_cfg: String,
    pub target_cfg: String,
    pub flash_address: Option<String>,
    pub resource_id: Option<String>,
    pub timeout_s: f64,
    pub permissions: DebuggerPermissions,
    pub target: Option<TargetOverride>,
    pub com_port: Option<String>,
    pub gdb_server_executable: Option<String>,
    pub discovered_by: Option<DiscoveredBy>,
    pub probe_inventory: Option<ProbeInventory>,
    pub probe_inventory_note: Option<String>,
    /// `type: qemu` only: the emulated machine (`netduinoplus2` when absent).
    pub machine: Option<String>,
    /// `type: qemu` only: the board's state directory, outside the workspace
    /// (`<state_root>/sim/<entry name>` when absent).
    pub board_dir: Option<String>,
    /// SEGGER RTT on this target (ours alone: the reference loads no file that has it).
    pub rtt: Option<Rtt>,
}

impl Default for Debugger {
    fn default() -> Self {
        Self {
            kind: DebuggerType::Openocd,
            executable: None,
            probe_id: None,
            target_type: None,
            interface: Interface::Swd,
            connect_mode: ConnectMode::Hotplug,
            interface_cfg: DEFAULT_INTERFACE_CFG.into(),
            target_cfg: DEFAULT_TARGET_CFG.into(),
            flash_address: None,
            resource_id: None,
            timeout_s: 60.0,
            permissions: DebuggerPermissions::default(),
            target: None,
            com_port: None,
            gdb_server_executable: None,
            discovered_by: None,
            probe_inventory: None,
            probe_inventory_note: None,
            machine: None,
            board_dir: None,
            rtt: None,
        }
    }
}

impl Debugger {
    /// The entry `init` writes without a board: nothing names hardware or a toolchain.
    ///
    /// Such an entry is left unbound rather than autodetected, so a fresh file never
    /// drives whatever OpenOCD happens to be on PATH against an unknown board. Name,
    /// permissions, interface, timeout and connect mode do not matter; any identifying
    /// key does (checked against the reference's doctor).
    pub fn is_placeholder_starter(&self) -> bool {
        self.kind == DebuggerType::Openocd
            && self.executable.is_none()
            && self.probe_id.is_none()
            && self.resource_id.is_none()
            && self.target_type.is_none()
            && self.flash_address.is_none()
            && self.gdb_server_executable.is_none()
            && self.com_port.is_none()
            && self.machine.is_none()
            && self.board_dir.is_none()
            && self.interface_cfg == DEFAULT_INTERFACE_CFG
            && self.target_cfg == DEFAULT_TARGET_CFG
    }

    /// The probe selector as the backend matches it: case folded, and for pyOCD without a
    /// leading `<type>:` qualifier.
    pub fn probe_selector(&self) -> Option<String> {
        let id = self.probe_id.as_deref()?.to_lowercase();
        if self.kind == DebuggerType::Pyocd
            && let Some((_, rest)) = id.split_once(':')
        {
            return Some(rest.to_owned());
        }
        Some(id)
    }

    /// The emulated machine of a `qemu` entry.
    pub fn qemu_machine(&self) -> &str {
        self.machine.as_deref().unwrap_or(DEFAULT_QEMU_MACHINE)
    }

    /// Primary machine-wide lock key; `executable` is the pinned path when known.
    pub fn lock_key(&self, executable: Option<&str>) -> String {
        if let Some(r) = &self.resource_id {
            return format!("physical:{}", r.to_lowercase());
        }
        if let Some(p) = &self.probe_id {
            return format!("probe:{}", p.to_lowercase());
        }
        if let Some(e) = executable.or(self.executable.as_deref()) {
            return format!("probe-exe:{e}");
        }
        format!("probe:{}", self.kind.as_str())
    }
}

/// Where the gate finds a target's RTT control block and which of its channels an agent may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rtt {
    /// The control block's address (hex with `0x`, or decimal).
    pub control_block: Option<String>,
    /// A RAM range searched for the block's id.
    pub scan: Option<RttScan>,
    /// The address of `_SEGGER_RTT` in the ELF last flashed.
    pub from_elf: bool,
    pub channels: Vec<RttChannel>,
    /// Received bytes kept for `rtt_read`, per channel.
    pub max_buffer_bytes: u64,
    /// The most one `rtt_write` sends.
    pub max_write_bytes: u64,
    /// How often the session polls the target's up buffers.
    pub poll_interval_ms: u64,
}

impl Default for Rtt {
    fn default() -> Self {
        Self {
            control_block: None,
            scan: None,
            from_elf: false,
            channels: Vec::new(),
            max_buffer_bytes: 65_536,
            max_write_bytes: 256,
            poll_interval_ms: 10,
        }
    }
}

impl Rtt {
    /// The channel an agent names.
    pub fn channel(&self, name: &str) -> Option<&RttChannel> {
        self.channels.iter().find(|c| c.name == name)
    }
}

/// A RAM range to search for the control block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttScan {
    pub start: String,
    pub size: u64,
}

/// One RTT channel an agent may name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttChannel {
    /// What the tools call it (`channel`).
    pub name: String,
    pub direction: RttDirection,
    /// Its index among the target's up or down buffers.
    #[serde(default)]
    pub index: u32,
    /// What an up channel carries: text (the bytes as they are), or defmt frames, decoded with the
    /// table of the ELF the target runs.
    #[serde(default)]
    pub format: RttFormat,
}

/// How `rtt_read` returns an up channel's bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RttFormat {
    #[default]
    Text,
    Defmt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RttDirection {
    Up,
    Down,
}

/// A configured address (`0x…` hex or decimal), as the `FlashAddress` pattern admits it.
pub fn parse_address(text: &str) -> Option<u64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Debug {
    pub gdb_executable: Option<String>,
    pub allowed_symbols: Vec<String>,
    pub allow_all_symbols: bool,
    pub max_dump_size_bytes: u64,
}

impl Default for Debug {
    fn default() -> Self {
        Self {
            gdb_executable: None,
            allowed_symbols: Vec::new(),
            allow_all_symbols: false,
            max_dump_size_bytes: 1_048_576,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Artifacts {
    pub allowed_roots: Vec<String>,
    pub upload_directory: String,
    /// Lower-cased at load.
    pub allowed_extensions: Vec<String>,
    pub max_upload_size_mb: u64,
    pub allow_upload: bool,
}

impl Default for Artifacts {
    fn default() -> Self {
        Self {
            allowed_roots: vec!["build".into()],
            upload_directory: ".agentic-hil/artifacts".into(),
            allowed_extensions: vec![".elf".into(), ".hex".into(), ".bin".into()],
            max_upload_size_mb: 64,
            allow_upload: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Validation {
    pub require_existing_file: bool,
    pub require_allowed_root: bool,
    pub require_allowed_extension: bool,
    pub compute_sha256: bool,
    pub inspect_known_formats: bool,
}

impl Default for Validation {
    fn default() -> Self {
        Self {
            require_existing_file: true,
            require_allowed_root: true,
            require_allowed_extension: true,
            compute_sha256: true,
            inspect_known_formats: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reports {
    pub directory: String,
}

impl Default for Reports {
    fn default() -> Self {
        Self {
            directory: ".agentic-hil/reports".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Logs {
    pub directory: String,
}

impl Default for Logs {
    fn default() -> Self {
        Self {
            directory: ".agentic-hil/logs".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoRecover {
    Off,
    Readonly,
    #[default]
    ResetHalt,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Recovery {
    pub auto_recover: AutoRecover,
    pub max_attempts: u8,
}

impl Default for Recovery {
    fn default() -> Self {
        Self {
            auto_recover: AutoRecover::ResetHalt,
            max_attempts: 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_debugger_is_the_placeholder_starter() {
        assert!(Debugger::default().is_placeholder_starter());
        let named = Debugger {
            probe_id: Some("X".into()),
            ..Debugger::default()
        };
        assert!(!named.is_placeholder_starter());
        let jtag = Debugger {
            interface: Interface::Jtag,
            ..Debugger::default()
        };
        assert!(jtag.is_placeholder_starter());
    }

    #[test]
    fn pyocd_selectors_drop_their_type_qualifier() {
        let d = Debugger {
            kind: DebuggerType::Pyocd,
            probe_id: Some("stlink:ABC".into()),
            ..Debugger::default()
        };
        assert_eq!(d.probe_selector().as_deref(), Some("abc"));
    }

    #[test]
    fn lock_keys_follow_resource_id_then_probe_then_backend() {
        let mut d = Debugger::default();
        assert_eq!(d.lock_key(None), "probe:openocd");
        assert_eq!(
            d.lock_key(Some("/usr/bin/openocd")),
            "probe-exe:/usr/bin/openocd"
        );
        d.probe_id = Some("AB".into());
        assert_eq!(d.lock_key(None), "probe:ab");
        d.resource_id = Some("Board".into());
        assert_eq!(d.lock_key(None), "physical:board");
    }
}
