//! `agentic-hil debugger-probes` before the workspace has a configuration: which probes this host
//! shows, so the operator can name one in the configuration they are about to write. Only read-only
//! listings run: STM32CubeProgrammer's own ST-LINK list when it is installed (it counts every
//! ST-LINK), else the host's USB inventory of known probe vendors (not a complete count).

use crate::catalogue::ToolId;
use std::path::Path;
use std::time::Duration;

use ahil_config::{DebuggerType, Environment, autodetect_tool};
use ahil_drivers::cubeprog::{ConnectMode, CubeProg};
use ahil_drivers::probe::{Budget, DebugProbe as _, ProbeInfo};
use ahil_drivers::probe_cli::CliSettings;
use serde_json::{Value, json};

use crate::envelope::Outcome;

const TOOL: ToolId = ToolId::DebuggerProbesBootstrap;
/// STM32CubeProgrammer's listing takes a few seconds; one that hangs is not waited for.
const LIST_LIMIT: Duration = Duration::from_secs(30);
const USB_DEVICES: &str = "/sys/bus/usb/devices";

/// The device lock the listing holds: STM32CubeProgrammer's, keyed as a configured ST-LINK entry
/// without a probe id keys it, so an agent's session through the same program refuses the listing.
/// The USB inventory reads sysfs only and takes none.
pub(crate) fn lister_key(workspace: &Path, env: &Environment) -> Option<String> {
    let cli = autodetect_tool(DebuggerType::Stlink, workspace, env)?;
    let entry = ahil_config::Debugger {
        kind: DebuggerType::Stlink,
        ..ahil_config::Debugger::default()
    };
    Some(entry.lock_key(cli.to_str()))
}

/// A bench for a workspace before `init`: the configuration `init` would write (its default state
/// root, no device bound), never written. The operator's listing before a configuration runs
/// through it, so its report lands where the project's own reports will.
pub fn bench_before_init(
    workspace: &Path,
    env: &Environment,
) -> Result<ahil_config::LoadedConfig, ahil_config::ConfigError> {
    ahil_config::check_workspace_not_home(workspace, env)?;
    let location = ahil_config::ConfigLocation::select(workspace, env)?;
    let text = ahil_config::render_init_config(workspace, &ahil_config::default_state_root(env));
    ahil_config::admit(text.as_bytes(), workspace, &location.path, env)
}

/// The probes this host shows, with no configuration to ask.
pub(crate) fn probes_without_config(workspace: &Path, env: &Environment) -> Outcome {
    let searched = [
        (
            DebuggerType::Stlink,
            "STM32_Programmer_CLI",
            "STM32CubeProgrammer",
        ),
        (DebuggerType::Openocd, "openocd", "OpenOCD"),
    ]
    .map(|(kind, name, product)| (kind, name, product, autodetect_tool(kind, workspace, env)));
    let tools_searched: Vec<Value> = searched
        .iter()
        .map(|(_, name, product, path)| {
            json!({
                "name": name,
                "provided_by": product,
                "path": path.as_ref().map(|p| p.display().to_string()),
                "found": path.is_some(),
            })
        })
        .collect();
    let programmer = searched[0].3.clone();
    let openocd = searched[1].3.clone();
    let mut notes = Vec::new();
    if let Some(cli) = &programmer {
        let lister = CubeProg::new(
            CliSettings {
                executable: cli.clone(),
                probe_id: None,
                timeout: LIST_LIMIT,
            },
            "SWD",
            ConnectMode::Hotplug,
        );
        match lister.list_probes(&Budget::new(LIST_LIMIT)) {
            Ok(listing) => {
                return answer(
                    TOOL,
                    &listing.probes,
                    ("stlink", "stlink_programmer", Some(cli)),
                    listing.complete,
                    tools_searched,
                    "STM32CubeProgrammer listed the ST-LINK probes itself; other vendors' probes are not in this list.",
                );
            }
            Err(error) => notes.push(format!(
                "STM32CubeProgrammer's listing failed ({error}), so the USB inventory answered instead."
            )),
        }
    }
    let probes = ahil_drivers::openocd::usb_probe_inventory(Path::new(USB_DEVICES));
    let backend = if openocd.is_some() { "openocd" } else { "usb" };
    let mut outcome = answer(
        TOOL,
        &probes,
        (backend, "usb_inventory", openocd.as_ref()),
        false,
        tools_searched,
        "Read from this host's USB devices of known probe vendors, which is not an authoritative count: a probe behind another vendor's id does not appear.",
    );
    if !notes.is_empty() {
        outcome = outcome.with("notes", json!(notes));
    }
    outcome
}

/// The host's USB devices of known probe vendors, read from sysfs: no program runs.
pub(crate) fn usb_probes() -> Vec<ProbeInfo> {
    ahil_drivers::openocd::usb_probe_inventory(Path::new(USB_DEVICES))
}

/// `debugger_probes_list` while the bound debugger is still the starter entry `init` wrote: the
/// host's USB devices of known probe vendors, read from sysfs. No program runs: the server's
/// `PATH` is the agent's to set, so nothing is searched for there.
pub(crate) fn usb_listing(tool: ToolId) -> Outcome {
    let probes = usb_probes();
    answer(
        tool,
        &probes,
        ("openocd", "usb_inventory", None),
        false,
        Vec::new(),
        "The bound debugger is still the starter entry (no executable, probe or target), so no toolchain was asked; this is the host's USB devices of known probe vendors, not an authoritative count.",
    )
}

/// The listing as `debugger_probes_list` gives it; `source` is (backend, how, executable).
fn answer(
    tool: ToolId,
    probes: &[ProbeInfo],
    (backend, discovered_by, executable): (&str, &str, Option<&std::path::PathBuf>),
    complete: bool,
    tools_searched: Vec<Value>,
    how: &str,
) -> Outcome {
    let listed: Vec<Value> = probes
        .iter()
        .map(|p| json!({"probe_id": p.id, "description": p.description}))
        .collect();
    Outcome::ok(
        tool,
        format!(
            "{} debugger probe(s) seen by bootstrap discovery (no configured debugger names its toolchain yet). {how}",
            listed.len()
        ),
    )
    .with("source", "bootstrap")
    .with("backend", backend)
    .with("discovered_by", discovered_by)
    .with(
        "executable",
        json!(executable.map(|p| p.display().to_string())),
    )
    .with("tools_searched", Value::Array(tools_searched))
    .with("probes", Value::Array(listed))
    .with("complete", complete)
    .with_next_step(
        "Name the probe in probe_id: `agentic-hil adopt-hardware --probe-id <id>` where this workspace has a configuration, else `agentic-hil setup` (or `init`); this command then asks the configured backend.",
    )
    .not_contacted()
}
