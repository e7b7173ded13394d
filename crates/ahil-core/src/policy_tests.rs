use super::*;

#[derive(Clone, Copy)]
enum Kind {
    Project,
    Debugger,
    Com,
    Can,
    Supply,
}

#[derive(Clone, Copy)]
struct Grants {
    project: ProjectGrants,
    debugger: DebuggerGrants,
    port: PortGrants,
    supply: SupplyGrants,
}

/// Every grant open except the two interlock flags, which are open only when a test says so.
fn open() -> Grants {
    Grants {
        project: ProjectGrants {
            allow_config_write: true,
            allow_config_description_write: true,
            allow_config_permissions_write: true,
            allow_recover: true,
            allow_upgrade: true,
        },
        debugger: DebuggerGrants {
            allow_probe: true,
            allow_flash: true,
            allow_reset: true,
            allow_debug_execution: true,
            allow_raw_debugger_commands: false,
            allow_mass_erase: false,
            allow_rtt_write: true,
        },
        port: PortGrants {
            allow_read: true,
            allow_write: true,
        },
        supply: SupplyGrants {
            allow_set: true,
            allow_output: true,
        },
    }
}

/// Every flag a case can depend on, as the key a refusal must name (device entries are called `dut`).
const FLAGS: &[&str] = &[
    "permissions.allow_config_write",
    "permissions.allow_config_description_write",
    "permissions.allow_config_permissions_write",
    "permissions.allow_recover",
    "permissions.allow_upgrade",
    "debuggers.dut.permissions.allow_probe",
    "debuggers.dut.permissions.allow_flash",
    "debuggers.dut.permissions.allow_reset",
    "debuggers.dut.permissions.allow_debug_execution",
    "debuggers.dut.permissions.allow_rtt_write",
    "ports.dut.permissions.allow_read",
    "ports.dut.permissions.allow_write",
    "power_supplies.dut.permissions.allow_set",
    "power_supplies.dut.permissions.allow_output",
];

fn closed(flag: &str) -> Grants {
    let mut g = open();
    let slot: &mut bool = match flag.rsplit('.').next().unwrap_or_default() {
        "allow_config_write" => &mut g.project.allow_config_write,
        "allow_config_description_write" => &mut g.project.allow_config_description_write,
        "allow_config_permissions_write" => &mut g.project.allow_config_permissions_write,
        "allow_recover" => &mut g.project.allow_recover,
        "allow_upgrade" => &mut g.project.allow_upgrade,
        "allow_probe" => &mut g.debugger.allow_probe,
        "allow_flash" => &mut g.debugger.allow_flash,
        "allow_reset" => &mut g.debugger.allow_reset,
        "allow_debug_execution" => &mut g.debugger.allow_debug_execution,
        "allow_rtt_write" => &mut g.debugger.allow_rtt_write,
        "allow_read" => &mut g.port.allow_read,
        "allow_write" => &mut g.port.allow_write,
        "allow_set" => &mut g.supply.allow_set,
        "allow_output" => &mut g.supply.allow_output,
        other => panic!("unknown flag {other}"),
    };
    *slot = false;
    g
}

fn decide(version: u8, grants: &Grants, kind: Kind, action: &Action<'_>) -> Result<(), Refusal> {
    let device = match kind {
        Kind::Project => None,
        Kind::Debugger => Some(Device::Debugger {
            name: "dut",
            grants: grants.debugger,
        }),
        Kind::Com => Some(Device::ComPort {
            name: "dut",
            grants: grants.port,
        }),
        Kind::Can => Some(Device::CanBus {
            name: "dut",
            grants: grants.port,
            share: None,
        }),
        Kind::Supply => Some(Device::PowerSupply {
            name: "dut",
            grants: grants.supply,
        }),
    };
    authorize(version, &grants.project, device, action)
}

/// The key a refusal names, with the port section normalised so COM and CAN share the table.
fn named(refusal: &Refusal) -> String {
    refusal
        .permission
        .clone()
        .unwrap_or_default()
        .replace("com_ports.", "ports.")
        .replace("can_buses.", "ports.")
}

const ALL_SYMBOLS: SymbolAllowlist<'static> = SymbolAllowlist {
    allow_all_symbols: true,
    allowed_symbols: &[],
};
const V1: &[u8] = &[1];
const ANY: &[u8] = &[1, 2, 3];

/// (action, device kind, [(flag, versions in which closing it refuses the action)]).
/// A grant and the config versions in which closing it refuses the action.
type Need = (&'static str, &'static [u8]);

// One action a line, so the table reads as one.
#[rustfmt::skip]
fn table() -> Vec<(Action<'static>, Kind, Vec<Need>)> {
    let probe = ("debuggers.dut.permissions.allow_probe", V1);
    let flash = ("debuggers.dut.permissions.allow_flash", ANY);
    let reset = ("debuggers.dut.permissions.allow_reset", ANY);
    let execution = ("debuggers.dut.permissions.allow_debug_execution", ANY);
    let rtt_write = ("debuggers.dut.permissions.allow_rtt_write", ANY);
    let read = ("ports.dut.permissions.allow_read", V1);
    let write = ("ports.dut.permissions.allow_write", ANY);
    let set = ("power_supplies.dut.permissions.allow_set", ANY);
    let output = ("power_supplies.dut.permissions.allow_output", ANY);
    let description = ("permissions.allow_config_description_write", ANY);
    let permissions = ("permissions.allow_config_permissions_write", ANY);
    let config = ("permissions.allow_config_write", ANY);
    let recover = ("permissions.allow_recover", ANY);
    let upgrade = ("permissions.allow_upgrade", ANY);
    let line = Action::DebugBreakpoint {
        at: BreakpointAt::Line,
        allowlist: ALL_SYMBOLS,
    };
    let symbol = Action::SymbolRead {
        symbol: "counter",
        allowlist: ALL_SYMBOLS,
    };
    let upload = Action::ArtifactUpload { allow_upload: true };
    let uploaded = Action::UploadedArtifact { allow_upload: true };
    vec![
        (Action::DebuggerVersion, Kind::Debugger, vec![probe]),
        (Action::ProbeList, Kind::Debugger, vec![probe]),
        (Action::ProbeTarget, Kind::Debugger, vec![probe]),
        (Action::Flash { reset_after: false }, Kind::Debugger, vec![flash]),
        (Action::Flash { reset_after: true }, Kind::Debugger, vec![flash, reset]),
        (Action::Reset, Kind::Debugger, vec![reset]),
        (Action::DebugSessionStart, Kind::Debugger, vec![probe]),
        (Action::DebugInspect, Kind::Debugger, vec![probe]),
        (line, Kind::Debugger, vec![probe]),
        (Action::DebugContinue, Kind::Debugger, vec![probe, execution]),
        (Action::DebugContain, Kind::Debugger, vec![]),
        (symbol, Kind::Debugger, vec![probe]),
        (Action::ComRead, Kind::Com, vec![read]),
        (Action::ComWrite, Kind::Com, vec![write]),
        (Action::ComStop, Kind::Com, vec![]),
        (Action::RttRead, Kind::Debugger, vec![probe]),
        (Action::RttWrite, Kind::Debugger, vec![probe, rtt_write]),
        (Action::RttStop, Kind::Debugger, vec![]),
        (Action::CanRead, Kind::Can, vec![read]),
        (Action::CanWrite, Kind::Can, vec![write]),
        (Action::CanStop, Kind::Can, vec![]),
        (Action::SupplyRead, Kind::Supply, vec![]),
        (Action::SupplySet, Kind::Supply, vec![set]),
        (Action::SupplyOutput, Kind::Supply, vec![output]),
        (Action::PowerBoard, Kind::Debugger, vec![reset]),
        (upload, Kind::Project, vec![]),
        (uploaded, Kind::Project, vec![]),
        (Action::ReadState, Kind::Project, vec![]),
        (Action::ConfigSetDescription, Kind::Project, vec![description]),
        (Action::ConfigSetPermission, Kind::Project, vec![permissions]),
        (Action::ConfigCreate, Kind::Project, vec![config]),
        (Action::ConfigAdoptHardware { apply: false }, Kind::Project, vec![]),
        (Action::ConfigAdoptHardware { apply: true }, Kind::Project, vec![description]),
        (Action::Recover, Kind::Project, vec![recover]),
        (Action::Upgrade, Kind::Project, vec![upgrade]),
    ]
}

#[test]
fn every_action_in_every_version_needs_exactly_the_grants_the_table_names() {
    for (action, kind, needs) in table() {
        for version in [1_u8, 2, 3] {
            assert_eq!(
                decide(version, &open(), kind, &action),
                Ok(()),
                "{action:?} v{version} with all open"
            );
            for flag in FLAGS {
                let refuses = needs
                    .iter()
                    .any(|(f, versions)| f == flag && versions.contains(&version));
                let result = decide(version, &closed(flag), kind, &action);
                if refuses {
                    let refusal = result.expect_err("closing a needed grant refuses");
                    assert_eq!(
                        refusal.error_type, "permission_denied",
                        "{action:?} v{version} {flag}"
                    );
                    assert_eq!(named(&refusal), *flag, "{action:?} v{version}");
                } else {
                    assert_eq!(
                        result,
                        Ok(()),
                        "{action:?} v{version} must not depend on {flag}"
                    );
                }
            }
        }
    }
}

#[test]
fn flash_is_refused_while_raw_debugger_commands_or_mass_erase_are_allowed() {
    type Open = fn(&mut DebuggerGrants);
    // One interlock a line, so the table reads as one.
    #[rustfmt::skip]
    let cases: [(&str, Open); 2] = [
        ("debuggers.dut.permissions.allow_raw_debugger_commands", |g| g.allow_raw_debugger_commands = true),
        ("debuggers.dut.permissions.allow_mass_erase", |g| g.allow_mass_erase = true),
    ];
    for (flag, open_interlock) in cases {
        let mut grants = open();
        open_interlock(&mut grants.debugger);
        for version in [1, 2, 3] {
            let flash = Action::Flash { reset_after: false };
            let refusal = decide(version, &grants, Kind::Debugger, &flash).expect_err(flag);
            assert_eq!(refusal.error_type, "permission_denied", "{flag} v{version}");
            assert_eq!(refusal.permission.as_deref(), Some(flag), "v{version}");
        }
    }
}

#[test]
fn debug_sessions_are_refused_under_the_same_interlock() {
    let mut grants = open();
    grants.debugger.allow_mass_erase = true;
    assert!(decide(2, &grants, Kind::Debugger, &Action::DebugSessionStart).is_err());
}

#[test]
fn the_interlock_leaves_reset_and_containment_alone() {
    let mut grants = open();
    grants.debugger.allow_raw_debugger_commands = true;
    grants.debugger.allow_mass_erase = true;
    for action in [
        Action::Reset,
        Action::DebugContain,
        Action::ProbeTarget,
        Action::DebuggerVersion,
    ] {
        assert_eq!(
            decide(3, &grants, Kind::Debugger, &action),
            Ok(()),
            "{action:?}"
        );
    }
}

#[test]
fn containment_is_never_refused_even_with_every_grant_closed() {
    let shut = Grants {
        project: ProjectGrants::default(),
        debugger: DebuggerGrants::default(),
        port: PortGrants::default(),
        supply: SupplyGrants::default(),
    };
    assert_eq!(
        decide(1, &shut, Kind::Debugger, &Action::DebugContain),
        Ok(())
    );
    assert_eq!(decide(1, &shut, Kind::Com, &Action::ComStop), Ok(()));
    assert_eq!(decide(1, &shut, Kind::Can, &Action::CanStop), Ok(()));
    assert_eq!(decide(1, &shut, Kind::Debugger, &Action::RttStop), Ok(()));
}

#[test]
fn an_upload_and_flashing_by_artifact_id_need_artifacts_allow_upload() {
    for action in [
        Action::ArtifactUpload {
            allow_upload: false,
        },
        Action::UploadedArtifact {
            allow_upload: false,
        },
    ] {
        let refusal = decide(3, &open(), Kind::Project, &action).expect_err("uploads closed");
        assert_eq!(
            refusal.permission.as_deref(),
            Some("artifacts.allow_upload"),
            "{action:?}"
        );
        assert_eq!(
            refusal.device, None,
            "{action:?}: the upload store is no device"
        );
    }
}

#[test]
fn a_symbol_outside_the_allowlist_is_refused_naming_the_list() {
    let allowed = vec!["counter".to_owned()];
    let allowlist = SymbolAllowlist {
        allow_all_symbols: false,
        allowed_symbols: &allowed,
    };
    assert_eq!(
        decide(
            3,
            &open(),
            Kind::Debugger,
            &Action::SymbolRead {
                symbol: "counter",
                allowlist
            }
        ),
        Ok(())
    );
    let refusal = decide(
        3,
        &open(),
        Kind::Debugger,
        &Action::SymbolRead {
            symbol: "Counter",
            allowlist,
        },
    )
    .expect_err("case-sensitive");
    assert_eq!(refusal.permission.as_deref(), Some("debug.allowed_symbols"));
}

#[test]
fn breakpoints_by_symbol_follow_the_allowlist_and_by_line_need_every_symbol() {
    let allowed = vec!["main".to_owned()];
    let allowlist = SymbolAllowlist {
        allow_all_symbols: false,
        allowed_symbols: &allowed,
    };
    let by_name = Action::DebugBreakpoint {
        at: BreakpointAt::Symbol("main"),
        allowlist,
    };
    assert_eq!(decide(3, &open(), Kind::Debugger, &by_name), Ok(()));
    let by_line = Action::DebugBreakpoint {
        at: BreakpointAt::Line,
        allowlist,
    };
    let refusal = decide(3, &open(), Kind::Debugger, &by_line).expect_err("line needs all symbols");
    assert_eq!(
        refusal.permission.as_deref(),
        Some("debug.allow_all_symbols")
    );
}

#[test]
fn a_debugger_action_without_a_bound_debugger_is_not_supported() {
    for action in [
        Action::DebuggerVersion,
        Action::Flash { reset_after: false },
        Action::Reset,
    ] {
        let refusal = decide(3, &open(), Kind::Project, &action).expect_err("no debugger");
        assert_eq!(refusal.error_type, "not_supported");
        assert_eq!(refusal.permission, None);
    }
}

#[test]
fn a_port_action_on_the_wrong_kind_of_device_is_not_supported() {
    assert_eq!(
        decide(3, &open(), Kind::Can, &Action::ComWrite).map_err(|r| r.error_type),
        Err("not_supported")
    );
    assert_eq!(
        decide(3, &open(), Kind::Com, &Action::CanRead).map_err(|r| r.error_type),
        Err("not_supported")
    );
    assert_eq!(
        decide(3, &open(), Kind::Debugger, &Action::SupplySet).map_err(|r| r.error_type),
        Err("not_supported")
    );
}

#[test]
fn a_refusal_names_the_full_key_of_the_entry() {
    let refusal = decide(
        1,
        &closed("debuggers.dut.permissions.allow_probe"),
        Kind::Debugger,
        &Action::DebuggerVersion,
    )
    .expect_err("v1 needs allow_probe");
    assert_eq!(
        refusal.permission.as_deref(),
        Some("debuggers.dut.permissions.allow_probe")
    );
    assert!(
        refusal
            .summary
            .contains("debuggers.dut.permissions.allow_probe")
    );
}

#[test]
fn a_call_is_refused_by_the_first_device_it_touches_that_lacks_a_grant_and_names_it() {
    let debugger = Device::Debugger {
        name: "dut",
        grants: open().debugger,
    };
    let port = Device::ComPort {
        name: "console",
        grants: closed("allow_read").port,
    };
    let uses = [
        DeviceUse::on(debugger, Action::Flash { reset_after: true }),
        DeviceUse::on(port, Action::ComRead),
    ];
    let refusal = authorize_all(1, &open().project, &uses).expect_err("the port is closed");
    assert_eq!(refusal.error_type, "permission_denied");
    assert_eq!(refusal.device.as_deref(), Some("com_ports.console"));
    assert_eq!(
        refusal.permission.as_deref(),
        Some("com_ports.console.permissions.allow_read")
    );
    // From version 2 on a read needs no grant, so the same call passes.
    assert_eq!(authorize_all(3, &open().project, &uses), Ok(()));
}

#[test]
fn a_participant_writes_only_where_its_share_and_the_bus_both_grant_it_and_its_share_is_named_first()
 {
    let bus = |bus: PortGrants, share: PortGrants| Device::CanBus {
        name: "shared",
        grants: bus,
        share: Some(Share {
            name: "monitor",
            grants: share,
        }),
    };
    let project = open().project;
    let (open, shut) = (open().port, closed("allow_write").port);
    for version in [1, 3] {
        let denied = |device| {
            authorize(version, &project, Some(device), &Action::CanWrite)
                .expect_err("a closed grant refuses")
                .permission
        };
        let share_key = "can_buses.shared.shares.monitor.permissions.allow_write";
        assert_eq!(denied(bus(open, shut)).as_deref(), Some(share_key));
        assert_eq!(denied(bus(shut, shut)).as_deref(), Some(share_key));
        assert_eq!(
            denied(bus(shut, open)).as_deref(),
            Some("can_buses.shared.permissions.allow_write")
        );
        let both = Some(bus(open, open));
        assert_eq!(
            authorize(version, &project, both, &Action::CanWrite),
            Ok(())
        );
        // Reading is the bus's to grant: the share narrows writes.
        let reading = Some(bus(open, shut));
        assert_eq!(
            authorize(version, &project, reading, &Action::CanRead),
            Ok(())
        );
    }
}
