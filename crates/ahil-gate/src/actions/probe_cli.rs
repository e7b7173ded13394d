//! The probe tools over the CLI backends (OpenOCD, pyOCD, STM32CubeProgrammer, esptool): which driver
//! an entry builds, and how its answers and classified failures become envelopes.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ahil_config::{ConnectMode, Debugger, DebuggerType, ExecutableState, Interface};
use ahil_drivers::cubeprog::{self, CubeProg};
use ahil_drivers::error::Transcript;
use ahil_drivers::esptool::Esptool;
use ahil_drivers::openocd::OpenOcd;
use ahil_drivers::probe::{Budget, ImageFormat, ResetMode};
use ahil_drivers::probe_cli::{CliProbe, CliSettings, CliSuccess, log_text};
use ahil_drivers::pyocd::{OtherSelector, PyOcd};
use ahil_drivers::{Contact, DriverError};
use serde_json::{Value, json};

use super::probe::{
    self, FlashArgs, flash_args, flash_staged, image_first, invalid, loader_format, millis,
    parse_address,
};
use super::{Acted, Context, DriverJob, Work};
use crate::artifacts::StagedArtifact;
use crate::debug::offline::{ClassifiedRefusal, classified_refusal};
use crate::envelope::{Outcome, SideEffectStatus};
use crate::session_lifecycle::SessionClass;

/// The gate's margin over the driver's budget, so the driver's timeout answers first.
const MARGIN: Duration = Duration::from_secs(5);

/// Whether this build drives `kind` through a CLI backend.
pub fn drives(kind: DebuggerType) -> bool {
    matches!(
        kind,
        DebuggerType::Openocd
            | DebuggerType::Pyocd
            | DebuggerType::Stlink
            | DebuggerType::Esptool
            | DebuggerType::ProbeRs
    )
}

/// The serial device an esptool entry writes through, checked against the identity its COM entry
/// declares, or the refusal that keeps esptool from starting.
fn esptool_port(
    ctx: &Context<'_>,
    tool: ToolId,
    name: &str,
    debugger: &Debugger,
) -> Result<(String, PortCheck), Work<'static>> {
    let config = &ctx.loaded.config;
    let entry = debugger
        .com_port
        .as_deref()
        .and_then(|port_id| Some((port_id, config.com_ports.get(port_id)?)));
    // Every refusal here keeps esptool from starting, and names it.
    let refused = |error_type, summary: String| {
        Outcome::refused(tool, error_type, summary).with("backend", "esptool")
    };
    let Some((port_id, port)) = entry else {
        return Err(local(
            refused(
                ErrorType::ComPortNotConfigured,
                format!("debuggers.{name} names no com_ports entry for esptool to flash through."),
            )
            .with_remediation([
                "The operator sets `debuggers.<name>.com_port` to the board's com_ports entry.",
            ])
            .not_contacted(),
            "refused before esptool ran",
        ));
    };
    // This server's own session holds the port's lock re-entrantly, so the lock alone would let
    // esptool reset the chip under an open session.
    if ctx.serial.is_active(port_id) {
        return Err(local(
            refused(
                ErrorType::DeviceBusy,
                format!(
                    "A COM session holds com_ports.{port_id}, the port esptool flashes through."
                ),
            )
            .with("port_id", port_id)
            .with("held_by", SessionClass::Com.label())
            .with_next_step("Call com_session_stop on that port first, then call this tool again.")
            .not_contacted(),
            "refused while a COM session holds the port",
        ));
    }
    let Some(device) = port.device.clone() else {
        return Err(local(
            super::com_ports::no_device(tool, port_id, "esptool has no port to open")
                .with("backend", "esptool"),
            "refused before esptool ran",
        ));
    };
    let check = PortCheck {
        tool,
        port_id: port_id.to_owned(),
        device: device.clone(),
        expected: crate::serial::identity::expected(config, port_id, port),
    };
    // esptool opens the node this call's claim locked, not whatever the name leads to by then.
    Ok((ctx.snapshot.nodes.of(&device), check))
}

/// The identity check of an esptool port, run inside the job just before esptool opens it.
struct PortCheck {
    tool: ToolId,
    port_id: String,
    device: String,
    expected: Option<crate::serial::identity::Expected>,
}

impl PortCheck {
    fn refusal(&self) -> Option<Acted> {
        let verified = crate::serial::identity::verify_on_host(
            self.tool.name(),
            &self.port_id,
            &self.device,
            self.expected.as_ref(),
        );
        verified.err().map(|refusal| {
            Acted::new(
                refusal.with("backend", "esptool"),
                Contact::none("the identity check only reads sysfs"),
            )
        })
    }
}

fn local(outcome: Outcome, proof: &str) -> Work<'static> {
    let proof = proof.to_owned();
    Work::Local(Box::new(move || Acted::new(outcome, Contact::none(proof))))
}

/// An OpenOCD script given by absolute path must not live in the system temp dir, where any local
/// user can plant or swap it (the configuration already keeps it out of the workspace).
fn script_in_temp(raw: &str) -> bool {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return false;
    }
    let temp = std::env::temp_dir();
    let temp_real = temp.canonicalize().unwrap_or(temp.clone());
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    real.starts_with(&temp_real)
        || path.starts_with(&temp)
        || path.starts_with("/tmp")
        || path.starts_with("/var/tmp")
}

pub(super) fn backend_for(
    debugger: &Debugger,
    settings: CliSettings,
    others: Vec<OtherSelector>,
) -> Box<dyn CliProbe> {
    match debugger.kind {
        DebuggerType::Openocd => Box::new(OpenOcd::new(
            settings,
            &debugger.interface_cfg,
            &debugger.target_cfg,
        )),
        DebuggerType::Pyocd => {
            Box::new(PyOcd::new(settings, debugger.target_type.as_deref()).with_others(others))
        }
        DebuggerType::ProbeRs => super::probe_rs::backend(debugger, settings),
        _ => Box::new(CubeProg::new(
            settings,
            match debugger.interface {
                Interface::Swd => "SWD",
                Interface::Jtag => "JTAG",
            },
            match debugger.connect_mode {
                ConnectMode::Hotplug => cubeprog::ConnectMode::Hotplug,
                ConnectMode::UnderReset => cubeprog::ConnectMode::UnderReset,
            },
        )),
    }
}

/// The work when no executable is pinned for the entry: `debugger_not_found`, after a flash's image
/// was checked (the agent first hears about what it can fix itself).
fn without_executable<'a>(
    ctx: &'a Context<'a>,
    tool: ToolId,
    name: &str,
    kind: &'static str,
    resources: &mut Vec<String>,
) -> Result<Work<'a>, Box<Outcome>> {
    let reason = match ctx.loaded.executables.debuggers.get(name) {
        Some(ExecutableState::Disabled { reason } | ExecutableState::Unbound { reason }) => {
            reason.clone()
        }
        _ => "no executable is pinned for this entry".to_owned(),
    };
    let missing = Outcome::refused(
        tool,
        ErrorType::DebuggerNotFound,
        format!("No {kind} executable is available: {reason}."),
    )
    .with("backend", kind)
    .with_remediation([
        "Install the tool, or name it by absolute path in `debuggers.<name>.executable`, then restart the server.",
    ])
    .not_contacted();
    image_first(ctx, resources, local(missing, "nothing was started"))
}

/// An OpenOCD script in the system temp directory, refused before OpenOCD runs: anyone on the host
/// can replace it.
fn openocd_script_refusal<'a>(tool: ToolId, name: &str, debugger: &Debugger) -> Option<Work<'a>> {
    let kind = debugger.kind.as_str();
    for (field, raw) in [
        ("interface_cfg", &debugger.interface_cfg),
        ("target_cfg", &debugger.target_cfg),
    ] {
        if script_in_temp(raw) {
            return Some(local(
                Outcome::refused(
                    tool,
                    ErrorType::UnsafeConfiguredPath,
                    "An OpenOCD script in the system temp directory is refused: anyone on the host can replace it.",
                )
                .with("field", format!("debuggers.{name}.{field}"))
                .with("backend", kind)
                .with_remediation([
                    "Use a script name OpenOCD ships (`interface/stlink.cfg`), or an absolute path outside the workspace and the temp directory.",
                ])
                .not_contacted(),
                "refused before OpenOCD ran",
            ));
        }
    }
    None
}

/// The probes the other entries select, which pyOCD must not take for this one.
fn other_selectors(ctx: &Context<'_>, name: &str) -> Vec<OtherSelector> {
    ctx.loaded
        .config
        .debuggers
        .iter()
        .filter(|(other, _)| other.as_str() != name)
        .filter_map(|(other, entry)| {
            Some(OtherSelector {
                debugger: other.clone(),
                probe_id: entry.probe_id.clone()?,
                by_substring: entry.kind == DebuggerType::Pyocd,
            })
        })
        .collect()
}

/// The work of one probe tool on a CLI backend.
pub(super) fn work<'a>(
    call: super::probe::Bound<'a>,
    resources: &mut Vec<String>,
) -> Result<Work<'a>, Box<Outcome>> {
    let super::probe::Bound {
        ctx,
        tool,
        name,
        debugger,
        executable,
    } = call;
    let kind = debugger.kind.as_str();
    let Some(executable) = executable else {
        return without_executable(ctx, tool, name, kind, resources);
    };
    if debugger.kind == DebuggerType::Openocd
        && let Some(refused) = openocd_script_refusal(tool, name, debugger)
    {
        return Ok(refused);
    }
    let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    // ST-Link and probe-rs read symbols without a session, from the ELF their last confirmed flash
    // wrote.
    let symbol_record =
        matches!(debugger.kind, DebuggerType::Stlink | DebuggerType::ProbeRs).then(|| {
            crate::debug::offline::Record::for_debugger(
                &ctx.loaded.config.state_root,
                debugger,
                Some(&executable),
            )
        });
    let settings = CliSettings {
        executable,
        probe_id: debugger.probe_id.clone(),
        timeout,
    };
    let others = other_selectors(ctx, name);
    let mut port_check = None;
    let backend: Box<dyn CliProbe> = if debugger.kind == DebuggerType::Esptool {
        let (device, check) = match esptool_port(ctx, tool, name, debugger) {
            Ok(found) => found,
            Err(refused) => return Ok(refused),
        };
        if tool != ToolId::DebuggerProbesList {
            port_check = Some(check);
        }
        Box::new(Esptool::new(
            settings,
            &device,
            debugger.target_type.as_deref(),
        ))
    } else {
        backend_for(debugger, settings, others)
    };
    // pyOCD may run the probe listing, the command, a post-flash reset and (to explain a failure)
    // the target listing, which gets at least 30 s.
    let limit = if debugger.kind == DebuggerType::Pyocd {
        timeout * 3 + timeout.max(Duration::from_secs(30))
    } else {
        timeout
    };
    let mut deadline = limit + MARGIN;
    let run: Box<dyn FnOnce(ahil_drivers::process::CancelFlag) -> Acted + Send> = match tool {
        ToolId::DebuggerProbesList => Box::new(move |cancel| {
            let budget = Budget::new(limit).with_cancel(cancel);
            list(backend.as_ref(), &budget)
        }),
        ToolId::ProbeTarget => Box::new(move |cancel| {
            if let Some(refused) = port_check.as_ref().and_then(PortCheck::refusal) {
                return refused;
            }
            let budget = Budget::new(limit).with_cancel(cancel);
            let clock = Instant::now();
            let result = backend.probe(&budget);
            answer(backend.as_ref(), tool, result, clock, None, |outcome| {
                outcome.with("target_detected", true)
            })
        }),
        ToolId::ResetTarget => {
            let text = ctx.args.arg_str("mode").unwrap_or("run");
            let Some(mode) = ResetMode::parse(text) else {
                return Err(invalid(tool, "mode is one of run, halt, init."));
            };
            if mode == ResetMode::Init && debugger.kind != DebuggerType::Openocd {
                return Ok(local(
                    Outcome::refused(
                        tool,
                        ErrorType::NotSupported,
                        format!("Reset mode 'init' runs OpenOCD's reset-init scripts; the {kind} backend has none."),
                    )
                    .with("backend", kind)
                    .with("mode", "init")
                    .with("supported_modes", json!(["run", "halt"]))
                    .with_remediation(["Call reset_target with mode `halt` or `run`."])
                    .not_contacted(),
                    "refused before the backend ran",
                ));
            }
            Box::new(move |cancel| {
                if let Some(refused) = port_check.as_ref().and_then(PortCheck::refusal) {
                    return refused;
                }
                let budget = Budget::new(limit).with_cancel(cancel);
                let clock = Instant::now();
                let result = backend.reset(mode, &budget);
                answer(backend.as_ref(), tool, result, clock, None, |outcome| {
                    outcome.with("mode", mode.as_str())
                })
            })
        }
        ToolId::FlashFirmware => {
            let (image, args) = flash_args(ctx, resources)?;
            if let Some(capture) = &args.capture {
                deadline += capture.wait();
            }
            let base = debugger.flash_address.as_deref().and_then(parse_address);
            let needs_base = debugger.kind != DebuggerType::Openocd;
            return Ok(super::staged_job(image, deadline, move |staged, cancel| {
                if let Some(refused) = port_check.as_ref().and_then(PortCheck::refusal) {
                    return refused;
                }
                let budget = Budget::new(limit).with_cancel(cancel);
                flash(
                    backend.as_ref(),
                    &staged,
                    base,
                    needs_base,
                    &args,
                    &budget,
                    symbol_record.as_ref(),
                )
            }));
        }
        other => return Err(super::misrouted(other)),
    };
    Ok(super::probe::probe_job(
        tool,
        deadline,
        "listing opens no target",
        run,
    ))
}

/// `debugger_info` on an esptool entry: `esptool version` only, which opens no port.
pub fn esptool_info(executable: PathBuf, shown: String, timeout: Duration) -> Work<'static> {
    const TOOL: ToolId = ToolId::DebuggerInfo;
    Work::Driver(DriverJob {
        deadline: timeout + MARGIN,
        if_abandoned: Contact::none("only `esptool version` was started"),
        run: Box::new(move |cancel| {
            let budget = Budget::new(timeout).with_cancel(cancel);
            let settings = CliSettings {
                executable,
                probe_id: None,
                timeout,
            };
            let probe = Esptool::new(settings, "", None);
            match probe.installed_version(&budget) {
                Ok(version) => Acted {
                    outcome: Outcome::ok(TOOL, "esptool is available.")
                        .with("backend", "esptool")
                        .with("executable", shown)
                        .with("version", version),
                    contact: Some(Contact::none("only `esptool version` ran")),
                },
                Err(error) => {
                    let mut acted = failed(&probe, TOOL, error, None);
                    acted.outcome.set("executable", shown);
                    acted
                }
            }
        }),
    })
}

fn flash(
    backend: &dyn CliProbe,
    staged: &StagedArtifact,
    base: Option<u64>,
    needs_base: bool,
    args: &FlashArgs,
    budget: &Budget,
    symbol_record: Option<&crate::debug::offline::Record>,
) -> Acted {
    const TOOL: ToolId = ToolId::FlashFirmware;
    let is_bin = staged.format() == Some(crate::artifacts::Format::Bin);
    if is_bin && needs_base && base.is_none() {
        return Acted {
            outcome: Outcome::refused(
                TOOL,
                ErrorType::InvalidArgument,
                format!(
                    "Flashing .bin artifacts with {} requires debuggers.<name>.flash_address.",
                    backend.product()
                ),
            )
            .with("backend", backend.backend())
            .with("artifact", staged.report().clone()),
            contact: Some(Contact::none(
                "the image was refused before the backend ran",
            )),
        };
    }
    let format = loader_format(staged, base.unwrap_or(0));
    // OpenOCD's `program` takes a raw image's address only when one is configured.
    let format = match format {
        ImageFormat::Bin { .. } if base.is_none() => ImageFormat::Elf,
        other => other,
    };
    flash_staged(
        backend.backend(),
        staged,
        format,
        args,
        budget.cancel_flag(),
        |request, _capture| {
            let clock = Instant::now();
            let result = backend.flash(request, budget);
            let hide = staged.path().parent().map(Path::to_path_buf);
            let mut acted = answer(backend, TOOL, result, clock, hide.as_deref(), |outcome| {
                outcome
                    .with("verify", true)
                    .with("reset_after_flash", args.reset_after)
            });
            if let Some(record) = symbol_record {
                acted = super::probe::recorded(acted, record, staged);
            }
            if acted.outcome.ok {
                acted.outcome.summary = if args.reset_after {
                    format!(
                        "Firmware flashed and verified through {}, and target reset.",
                        backend.product()
                    )
                } else {
                    format!(
                        "Firmware flashed and verified through {}. Target was not reset.",
                        backend.product()
                    )
                };
            }
            acted
        },
    )
}

fn list(backend: &dyn CliProbe, budget: &Budget) -> Acted {
    const TOOL: ToolId = ToolId::DebuggerProbesList;
    match backend.list_probes(budget) {
        Ok(listing) => {
            let mut outcome = probe::listing(backend.backend(), &listing.probes, listing.complete);
            if let Some(note) = listing.note {
                outcome = outcome.with("note", note);
            }
            if !listing.transcripts.is_empty() {
                outcome = outcome.with("driver_log", log_text(&listing.transcripts));
            }
            probe::listed(outcome, "listing opens no target")
        }
        Err(error) => failed(backend, TOOL, error, None),
    }
}

/// A success with its evidence, or the classified failure.
fn answer(
    backend: &dyn CliProbe,
    tool: ToolId,
    result: Result<CliSuccess, DriverError>,
    clock: Instant,
    hide: Option<&Path>,
    extra: impl FnOnce(Outcome) -> Outcome,
) -> Acted {
    let done = match result {
        Ok(done) => done,
        Err(error) => return failed(backend, tool, error, hide),
    };
    let summary = match tool {
        ToolId::ProbeTarget => format!("Target detected through {}.", backend.product()),
        ToolId::ResetTarget => format!("Target reset through {}.", backend.product()),
        _ => format!("{} command completed successfully.", backend.product()),
    };
    let mut outcome = extra(
        Outcome::ok(tool, summary)
            .with("backend", backend.backend())
            .with("success_confirmed", true)
            .with("driver_elapsed_ms", millis(clock.elapsed()))
            .with("driver_log", shown_log(&done.transcripts, hide)),
    );
    if !done.matched_success_text.is_empty() {
        outcome.set(
            "operation_result",
            json!({"confirmed": true, "matched_success_text": done.matched_success_text}),
        );
    }
    if !done.warnings.is_empty() {
        outcome.set("backend_warnings", json!(done.warnings));
    }
    Acted::new(outcome, Contact::Made)
}

/// The transcripts for a result: the private staging directory never appears in it.
fn shown_log(transcripts: &[Transcript], hide: Option<&Path>) -> String {
    let text = log_text(transcripts);
    match hide {
        Some(dir) => text.replace(&dir.display().to_string(), "<staged>"),
        None => text,
    }
}

/// A detail with the private staging directory replaced, as in the log.
fn hidden(value: Value, dir: &Path) -> Value {
    let text = value.to_string();
    let shown = dir.display().to_string();
    if !text.contains(&shown) {
        return value;
    }
    // The directory is a plain path, so replacing it inside JSON text keeps the text valid.
    serde_json::from_str(&text.replace(&shown, "<staged>")).unwrap_or(value)
}

pub(super) fn failed(
    backend: &dyn CliProbe,
    tool: ToolId,
    error: DriverError,
    hide: Option<&Path>,
) -> Acted {
    let ClassifiedRefusal {
        mut outcome,
        contact,
        transcripts,
        mut details,
    } = match classified_refusal(tool, backend.backend(), error) {
        Ok(refusal) => refusal,
        Err(acted) => return *acted,
    };
    let keep_not_safe = details.remove("retry_safe").is_some_and(|v| v == false);
    let image_written = details.remove("image_written").is_some_and(|v| v == true);
    for (key, mut value) in details {
        if let Some(dir) = hide {
            value = hidden(value, dir);
        }
        outcome.set(&key, value);
    }
    if let Some(last) = transcripts.last() {
        outcome.set("returncode", json!(last.returncode));
        outcome.set("timed_out", last.timed_out);
    }
    if !transcripts.is_empty() {
        outcome.set("driver_log", shown_log(&transcripts, hide));
    }
    if image_written {
        outcome.side_effect_committed = Some(true);
        outcome.side_effect_status = Some(SideEffectStatus::Partial);
        outcome.retry_safe = Some(false);
        outcome.set("reset_after_flash", false);
        outcome = outcome.with_next_step(
            "The image is on the target; call reset_target rather than flashing again.",
        );
    }
    if keep_not_safe {
        // Nothing was opened, but the same call will refuse again until the probe selection changes.
        outcome.target_contacted = Some(false);
        outcome = outcome.not_started(false).with_next_step(
            "Ask the operator to set a probe_id that names exactly one connected probe.",
        );
        return Acted::local(outcome);
    }
    Acted::new(outcome, contact)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CLI driver, how it words a class for the public, and the classes it can report.
    type Classes = (
        &'static str,
        fn(&'static str) -> ahil_drivers::probe_cli::Wording,
        &'static [&'static str],
    );

    const CLASSES: [Classes; 2] = [
        (
            "a CLI backend",
            ahil_drivers::probe_cli::public,
            &[
                "openocd_not_found",
                "probe_not_found",
                "adapter_not_found",
                "target_not_detected",
                "interface_config_not_found",
                "command_rejected_before_init",
                "probe_unconfirmed",
                "flash_unconfirmed",
                "flash_erase_failed",
                "verify_failed",
                "reset_unconfirmed",
                "memory_read_unconfirmed",
                "target_type_invalid",
                "probe_discovery_failed",
                "timeout",
                "unknown_debugger_error",
            ],
        ),
        (
            "esptool",
            ahil_drivers::esptool::public,
            &ahil_drivers::esptool::CLASSES,
        ),
    ];

    #[test]
    fn every_class_a_cli_backend_or_esptool_can_report_is_in_the_error_catalogue() {
        for (driver, public, classes) in CLASSES {
            for &class in classes {
                let public = public(class).0;
                assert!(
                    crate::audit::errors::lookup(public).is_some(),
                    "{driver}: {class} -> {public} has no catalogue entry"
                );
            }
        }
    }

    #[test]
    fn scripts_in_the_temp_dir_are_told_apart_from_search_names() {
        assert!(script_in_temp("/tmp/x.cfg"));
        assert!(script_in_temp(
            &std::env::temp_dir().join("y.cfg").display().to_string()
        ));
        assert!(!script_in_temp("interface/stlink.cfg"));
        assert!(!script_in_temp(
            "/usr/share/openocd/scripts/interface/stlink.cfg"
        ));
    }
}
