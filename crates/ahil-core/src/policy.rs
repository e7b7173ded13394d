//! Authorization as a pure function: grants x action x config version -> allowed or refused.
//!
//! Nothing here reads files or the clock, so the whole decision table is testable in one place. The
//! gate passes the loaded configuration's permission blocks ([`ProjectGrants`], [`DebuggerGrants`],
//! [`PortGrants`], [`SupplyGrants`]) and asks before it claims or touches anything.

// Policy reads the configuration's own permission blocks; the short names say what they are here.
pub use ahil_config::{
    DebuggerPermissions as DebuggerGrants, IoPermissions as PortGrants,
    PowerSupplyPermissions as SupplyGrants, ProjectPermissions as ProjectGrants,
};

/// The configured device an action addresses, with its entry name (for the permission key).
#[derive(Debug, Clone, Copy)]
pub enum Device<'a> {
    Debugger {
        name: &'a str,
        grants: DebuggerGrants,
    },
    ComPort {
        name: &'a str,
        grants: PortGrants,
    },
    CanBus {
        name: &'a str,
        grants: PortGrants,
        /// The participant a call on a shared bus acts as: its share narrows the bus's grants.
        share: Option<Share<'a>>,
    },
    PowerSupply {
        name: &'a str,
        grants: SupplyGrants,
    },
}

/// A participant of a shared bus (`can_buses.<bus>.shares.<name>`) and its own grants.
#[derive(Debug, Clone, Copy)]
pub struct Share<'a> {
    pub name: &'a str,
    pub grants: PortGrants,
}

impl Device<'_> {
    /// The entry's dotted name (`com_ports.console`), as a refusal names the device.
    pub fn entry(&self) -> String {
        let (section, name) = match self {
            Self::Debugger { name, .. } => ("debuggers", name),
            Self::ComPort { name, .. } => ("com_ports", name),
            Self::CanBus { name, .. } => ("can_buses", name),
            Self::PowerSupply { name, .. } => ("power_supplies", name),
        };
        format!("{section}.{name}")
    }
}

/// One device a call touches and what the call does there, or (with no device) a grant of the
/// project the call needs. A plan lists one per device it touches, so none goes unauthorized.
#[derive(Debug, Clone, Copy)]
pub struct DeviceUse<'a> {
    pub device: Option<Device<'a>>,
    pub action: Action<'a>,
}

impl<'a> DeviceUse<'a> {
    /// `action` done on `device`.
    pub fn on(device: Device<'a>, action: Action<'a>) -> Self {
        Self {
            device: Some(device),
            action,
        }
    }

    /// A project grant `action` needs, beside the devices.
    pub fn project(action: Action<'a>) -> Self {
        Self {
            device: None,
            action,
        }
    }
}

/// Where a breakpoint goes: by name (held to the symbol allowlist) or by source line (needs every
/// symbol, because a line reaches whatever code sits there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakpointAt<'a> {
    Symbol(&'a str),
    Line,
}

/// The symbol allowlist of the `debug:` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolAllowlist<'a> {
    pub allow_all_symbols: bool,
    pub allowed_symbols: &'a [String],
}

/// Every action of the tool surface, as policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// `debugger_info`: runs `--version`.
    DebuggerVersion,
    /// `debugger_probes_list`.
    ProbeList,
    /// `probe_target`: connect without reset.
    ProbeTarget,
    /// `flash_firmware`.
    Flash { reset_after: bool },
    /// `reset_target`.
    Reset,
    /// `debug_start_session`.
    DebugSessionStart,
    /// Reading a session: status, breakpoints list, stop reason.
    DebugInspect,
    /// `debug_set_breakpoint`.
    DebugBreakpoint {
        at: BreakpointAt<'a>,
        allowlist: SymbolAllowlist<'a>,
    },
    /// `debug_continue`: resumes a halted core.
    DebugContinue,
    /// Containment (`debug_stop_session`, `debug_clear_breakpoints`, `debug_halt`): never refused, so
    /// a session can always be brought back to a safe state.
    DebugContain,
    /// `debug_symbol_info`, `debug_symbol_value`, `debug_dump_symbol_ihex`.
    SymbolRead {
        symbol: &'a str,
        allowlist: SymbolAllowlist<'a>,
    },
    /// `com_session_start`, `com_read`.
    ComRead,
    /// `com_write`.
    ComWrite,
    /// `com_session_stop`: containment.
    ComStop,
    /// `rtt_session_start`, `rtt_read`: reading the target's RTT buffers while it runs.
    RttRead,
    /// `rtt_write`: a stimulus to the firmware, with its own grant.
    RttWrite,
    /// `rtt_session_stop`: containment.
    RttStop,
    /// `can_session_start`, `can_read`.
    CanRead,
    /// `can_send`.
    CanWrite,
    /// `can_session_stop`: containment.
    CanStop,
    /// `power_supply_status`.
    SupplyRead,
    /// `power_supply_set`.
    SupplySet,
    /// `power_supply_output`, `power_supply_cycle`.
    SupplyOutput,
    /// The same two tools on each board the supply powers: switching a board's power restarts it
    /// as a reset does, so it needs the board's debugger's `allow_reset`.
    PowerBoard,
    /// `artifact_upload`; carries `artifacts.allow_upload`.
    ArtifactUpload { allow_upload: bool },
    /// Flashing or loading an image by `artifact_id` (one `artifact_upload` stored); carries
    /// `artifacts.allow_upload`, which governs the stored images as well as storing them.
    UploadedArtifact { allow_upload: bool },
    /// `project_config_describe`, `project_config_reload_description`, reports, run and lease status.
    ReadState,
    /// `project_config_set` on description keys.
    ConfigSetDescription,
    /// `project_config_set` on permission keys.
    ConfigSetPermission,
    /// `project_config_create` over an existing configuration.
    ConfigCreate,
    /// `project_config_adopt_hardware`; only `apply: true` writes.
    ConfigAdoptHardware { apply: bool },
    /// `hardware_recover` with something standing.
    Recover,
    /// `server_upgrade`.
    Upgrade,
}

/// Why an action was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `permission_denied` or `not_supported`.
    pub error_type: &'static str,
    /// The device whose grant is missing, as its dotted entry name (`com_ports.console`).
    pub device: Option<String>,
    /// For `permission_denied`: the dotted key that is false (or the list that lacks the symbol).
    pub permission: Option<String>,
    /// One sentence.
    pub summary: String,
}

impl Refusal {
    fn denied(key: String, what: &str) -> Self {
        let summary = format!(
            "{what} is not permitted: `{key}` is false in the authoritative configuration."
        );
        Self {
            error_type: "permission_denied",
            device: None,
            permission: Some(key),
            summary,
        }
    }

    fn unsupported(summary: impl Into<String>) -> Self {
        Self {
            error_type: "not_supported",
            device: None,
            permission: None,
            summary: summary.into(),
        }
    }
}

/// A grant as the value of its flag and the flag's name, both from one field path
/// (`grant!(grants.allow_flash)`), so a refusal names exactly the flag that was read.
macro_rules! grant {
    ($grants:ident . $flag:ident) => {
        ($grants.$flag, stringify!($flag))
    };
}

/// Refuses `what` unless the grant is open, naming the flag through `key` (its dotted path).
fn require(
    (open, flag): (bool, &str),
    key: impl Fn(&str) -> String,
    what: &str,
) -> Result<(), Refusal> {
    if open {
        Ok(())
    } else {
        Err(Refusal::denied(key(flag), what))
    }
}

fn device_key(section: &str, name: &str, flag: &str) -> String {
    format!("{section}.{name}.permissions.{flag}")
}

fn project_key(flag: &str) -> String {
    format!("permissions.{flag}")
}

fn artifacts_key(flag: &str) -> String {
    format!("artifacts.{flag}")
}

/// Decide whether a call may run: each of its `uses` in turn, so a call is refused unless every
/// device it touches grants what it does there. The first refusal names its device.
pub fn authorize_all(
    config_version: u8,
    project: &ProjectGrants,
    uses: &[DeviceUse<'_>],
) -> Result<(), Refusal> {
    uses.iter()
        .try_for_each(|u| authorize(config_version, project, u.device, &u.action))
}

/// Decide whether `action` may run. Version 1 files make reads depend on `allow_probe` / `allow_read`;
/// from version 2 on, reads are free (exclusivity protects them instead) and only effects need grants.
pub fn authorize(
    config_version: u8,
    project: &ProjectGrants,
    device: Option<Device<'_>>,
    action: &Action<'_>,
) -> Result<(), Refusal> {
    decide(config_version, *project, device, action).map_err(|mut refusal| {
        refusal.device = device.map(|d| d.entry());
        refusal
    })
}

fn decide(
    config_version: u8,
    project: ProjectGrants,
    device: Option<Device<'_>>,
    action: &Action<'_>,
) -> Result<(), Refusal> {
    let reads_need_grants = config_version <= 1;
    let need = |grant, what: &str| require(grant, project_key, what);
    match *action {
        // Only proposing adopted hardware writes nothing.
        Action::ReadState
        | Action::DebugContain
        | Action::ComStop
        | Action::CanStop
        | Action::RttStop
        | Action::ConfigAdoptHardware { apply: false } => Ok(()),
        Action::ConfigSetDescription => need(
            grant!(project.allow_config_description_write),
            "Changing the bench description",
        ),
        Action::ConfigSetPermission => need(
            grant!(project.allow_config_permissions_write),
            "Changing permissions",
        ),
        Action::ConfigCreate => need(
            grant!(project.allow_config_write),
            "Regenerating the configuration",
        ),
        Action::ConfigAdoptHardware { apply: true } => need(
            grant!(project.allow_config_description_write),
            "Writing adopted hardware into the configuration",
        ),
        Action::Recover => need(grant!(project.allow_recover), "Clearing a quarantine"),
        Action::Upgrade => need(grant!(project.allow_upgrade), "Upgrading the installation"),
        Action::ArtifactUpload { allow_upload } => require(
            (allow_upload, "allow_upload"),
            artifacts_key,
            "Uploading a firmware artifact",
        ),
        Action::UploadedArtifact { allow_upload } => require(
            (allow_upload, "allow_upload"),
            artifacts_key,
            "Using an uploaded artifact (artifact_id)",
        ),
        Action::ComRead | Action::ComWrite => {
            authorize_port(device, action, "com_ports", reads_need_grants)
        }
        Action::CanRead | Action::CanWrite => {
            authorize_port(device, action, "can_buses", reads_need_grants)
        }
        Action::SupplyRead | Action::SupplySet | Action::SupplyOutput => {
            authorize_supply(device, action)
        }
        _ => authorize_debugger(device, action, reads_need_grants),
    }
}

fn authorize_debugger(
    device: Option<Device<'_>>,
    action: &Action<'_>,
    reads_need_grants: bool,
) -> Result<(), Refusal> {
    let Some(Device::Debugger { name, grants }) = device else {
        return Err(Refusal::unsupported(
            "This action needs exactly one bound debugger, and none is bound.",
        ));
    };
    let key = |flag: &str| device_key("debuggers", name, flag);
    let need = |grant, what: &str| require(grant, key, what);
    let needs_probe_grant = reads_need_grants
        && matches!(
            action,
            Action::DebuggerVersion
                | Action::ProbeList
                | Action::ProbeTarget
                | Action::DebugSessionStart
                | Action::DebugInspect
                | Action::DebugBreakpoint { .. }
                | Action::DebugContinue
                | Action::SymbolRead { .. }
                | Action::RttRead
                | Action::RttWrite
        );
    if needs_probe_grant {
        need(grant!(grants.allow_probe), "Using this debugger")?;
    }
    match *action {
        Action::Flash { reset_after } => {
            need(grant!(grants.allow_flash), "Flashing")?;
            interlock(grants, &key)?;
            if reset_after {
                need(grant!(grants.allow_reset), "Resetting after the flash")?;
            }
            Ok(())
        }
        Action::DebugSessionStart => interlock(grants, &key),
        Action::Reset => need(grant!(grants.allow_reset), "Resetting the target"),
        Action::PowerBoard => need(
            grant!(grants.allow_reset),
            "Switching the power of a board this supply powers (it restarts the board)",
        ),
        Action::RttWrite => need(
            grant!(grants.allow_rtt_write),
            "Writing to the target's RTT down channel",
        ),
        Action::DebugContinue => need(
            grant!(grants.allow_debug_execution),
            "Resuming a halted target",
        ),
        Action::SymbolRead { symbol, allowlist } => symbol_allowed(symbol, allowlist),
        Action::DebugBreakpoint { at, allowlist } => match at {
            BreakpointAt::Symbol(symbol) => symbol_allowed(symbol, allowlist),
            BreakpointAt::Line => require(
                grant!(allowlist.allow_all_symbols),
                |flag| format!("debug.{flag}"),
                "A breakpoint by source line",
            ),
        },
        _ => Ok(()),
    }
}

/// Validated flashing and unrestricted debugger access are exclusive policies: while either raw
/// commands or mass erase is allowed on a probe, nothing vouches for what the probe will do, so
/// flashing and debug sessions on it are refused.
fn interlock(grants: DebuggerGrants, key: &dyn Fn(&str) -> String) -> Result<(), Refusal> {
    for (open, flag) in [
        (
            grants.allow_raw_debugger_commands,
            "allow_raw_debugger_commands",
        ),
        (grants.allow_mass_erase, "allow_mass_erase"),
    ] {
        if open {
            let permission = key(flag);
            return Err(Refusal {
                error_type: "permission_denied",
                device: None,
                summary: format!(
                    "Flashing and debug sessions are refused on this probe while `{permission}` is true: \
                     validated flashing and unrestricted debugger access exclude each other."
                ),
                permission: Some(permission),
            });
        }
    }
    Ok(())
}

fn symbol_allowed(symbol: &str, allowlist: SymbolAllowlist<'_>) -> Result<(), Refusal> {
    if allowlist.allow_all_symbols || allowlist.allowed_symbols.iter().any(|s| s == symbol) {
        Ok(())
    } else {
        Err(Refusal {
            error_type: "permission_denied",
            device: None,
            permission: Some("debug.allowed_symbols".to_owned()),
            summary: format!(
                "Symbol `{symbol}` is not in debug.allowed_symbols and debug.allow_all_symbols is false."
            ),
        })
    }
}

fn authorize_port(
    device: Option<Device<'_>>,
    action: &Action<'_>,
    section: &str,
    reads_need_grants: bool,
) -> Result<(), Refusal> {
    let ((Some(Device::ComPort { name, grants }), "com_ports", share)
    | (
        Some(Device::CanBus {
            name,
            grants,
            share,
        }),
        "can_buses",
        _,
    )) = (device, section, None::<Share<'_>>)
    else {
        return Err(Refusal::unsupported(format!(
            "This action needs a configured `{section}` entry."
        )));
    };
    let need = |grant, what: &str| require(grant, |flag| device_key(section, name, flag), what);
    // A participant writes only where its share and the bus both grant it; the share first, as it
    // narrows the bus.
    if let (Action::CanWrite, Some(Share { name: who, grants })) = (action, share) {
        let share_key = |flag: &str| device_key(section, &format!("{name}.shares.{who}"), flag);
        require(
            grant!(grants.allow_write),
            share_key,
            "Writing as this participant of the bus",
        )?;
    }
    match action {
        Action::ComWrite | Action::CanWrite => {
            need(grant!(grants.allow_write), "Writing to this device")
        }
        _ if reads_need_grants => need(grant!(grants.allow_read), "Reading this device"),
        _ => Ok(()),
    }
}

fn authorize_supply(device: Option<Device<'_>>, action: &Action<'_>) -> Result<(), Refusal> {
    let Some(Device::PowerSupply { name, grants }) = device else {
        return Err(Refusal::unsupported(
            "This action needs a configured `power_supplies` entry.",
        ));
    };
    let need =
        |grant, what: &str| require(grant, |flag| device_key("power_supplies", name, flag), what);
    match action {
        Action::SupplySet => need(grant!(grants.allow_set), "Changing the supply's setpoints"),
        Action::SupplyOutput => need(grant!(grants.allow_output), "Switching the supply's output"),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
