//! The debug-probe tools: `debugger_probes_list`, `probe_target`, `flash_firmware`, `reset_target`.
//!
//! Each is one driver call through the pipeline (authorized, the debugger's device locks claimed,
//! audited). The `qemu` backend lives here; OpenOCD, pyOCD and STM32CubeProgrammer in
//! [`super::probe_cli`]; other debugger types answer `not_supported`. A flash's plan names its image
//! ([`ArtifactUse`]); the pipeline stages it and the work is built from the staged copy, the only
//! image a driver receives.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ahil_config::{Debugger, DebuggerType, ExecutableState};
use ahil_drivers::probe::{
    Budget, CoreState, DebugProbe, FlashRequest, ImageFormat, ProbeInfo, ResetMode,
};
use ahil_drivers::process::CancelFlag;
use ahil_drivers::qemu::QemuProbe;
use ahil_drivers::{Contact, DriverError};
use serde_json::{Value, json};

use super::debugger_info::{self, bound_debugger};
use super::flash_capture::{self, Capture};
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::artifacts::{ArtifactPolicy, ArtifactUse, Format, Purpose, StagedArtifact};
use crate::envelope::{Outcome, SideEffectStatus};
use crate::ownership::runs::claimed_keys;
use crate::policy::{Action, DeviceUse};
use crate::session_lifecycle::SessionClass;
use crate::snapshot::pinned_debugger_executable;

/// Where a raw BIN goes when the entry names no `flash_address`: the STM32 flash base.
const DEFAULT_FLASH_BASE: u64 = 0x0800_0000;
/// The gate's margin over the driver's own budget, so the driver's timeout answers first.
const MARGIN: Duration = Duration::from_secs(5);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    let tool = probe_tool(ctx.tool)?;
    let entry = bound_debugger(ctx)?;
    let (name, debugger) = entry;
    let executable = pinned_debugger_executable(ctx.loaded, name);
    let mut resources = claimed_keys(&ctx.loaded.config, debugger, executable.as_deref());
    let reset_after = ctx.args.arg_bool("reset_after_flash").unwrap_or(false);
    let action = match tool {
        ToolId::DebuggerProbesList => Action::ProbeList,
        ToolId::ProbeTarget => Action::ProbeTarget,
        ToolId::FlashFirmware => Action::Flash { reset_after },
        ToolId::ResetTarget => Action::Reset,
        other => return Err(super::misrouted(other)),
    };
    let mut also = Vec::new();
    if tool == ToolId::FlashFirmware {
        also.extend(flash_capture::port_use(ctx));
        if ctx.args.get("artifact_id").is_some() {
            also.push(uploaded_artifact(ctx));
        }
    }
    let bound = || Bound {
        ctx,
        tool,
        name,
        debugger,
        executable,
    };
    let work = if opens_the_target(tool) && ctx.debug.is_active() {
        Work::Local(Box::new(move || {
            Acted {
            outcome: Outcome::refused(
                tool,
                ErrorType::ResourceBusy,
                "A debug session holds the probe; probing, flashing and resetting wait until it stops.",
            )
            .with("held_by", SessionClass::Debug.label())
            .with_next_step(
                "Call debug_stop_session first, then call this tool again; debug_get_session_status shows the target meanwhile.",
            )
            .not_contacted(),
            contact: Some(Contact::none(
                "refused while a debug session holds the probe",
            )),
        }
        }))
    } else if tool == ToolId::FlashFirmware
        && rtt_capture(ctx)
        && !super::rtt_session::serves_rtt(debugger.kind)
    {
        let kind = debugger.kind;
        image_first(
            ctx,
            &mut resources,
            super::backend_not_built(
                tool,
                kind,
                format!(
                    "A capture on RTT is served on the emulated board in this build, not on {}; nothing was flashed.",
                    kind.as_str()
                ),
            ),
        )?
    } else if tool == ToolId::DebuggerProbesList && debugger.is_placeholder_starter() {
        Work::Driver(DriverJob {
            deadline: Duration::from_secs(15),
            if_abandoned: Contact::none("listing the USB devices opens no target"),
            run: Box::new(move |_cancel| Acted::local(crate::bootstrap::usb_listing(tool))),
        })
    } else if debugger.kind == DebuggerType::Qemu {
        qemu_work(bound(), &mut resources)?
    } else if super::probe_cli::drives(debugger.kind) {
        super::probe_cli::work(bound(), &mut resources)?
    } else {
        let kind = debugger.kind;
        super::backend_not_built(
            tool,
            kind,
            format!(
                "This build drives no {} probe yet; only the qemu backend can {}.",
                kind.as_str(),
                verb(tool)
            ),
        )
    };
    Ok(debugger_info::addressed(
        entry, action, also, resources, work,
    ))
}

/// Whether `tool` opens its own connection to the target. A debug session's server holds the probe
/// (the emulated board's stub takes one gdb, an adapter one OpenOCD), so a second connection cannot
/// be served beside it: it would wait out its deadline and leave the state unknown, with a recovery
/// reset of the core the session holds. Only the probe list, which names adapters, goes on.
fn opens_the_target(tool: ToolId) -> bool {
    matches!(
        tool,
        ToolId::ProbeTarget | ToolId::FlashFirmware | ToolId::ResetTarget
    )
}

/// Whether the call's `capture` names an RTT channel.
fn rtt_capture(ctx: &Context<'_>) -> bool {
    ctx.args
        .get("capture")
        .is_some_and(|c| c.get("rtt_channel").is_some())
}

/// An image named by `artifact_id` is one `artifact_upload` stored, governed by the same grant.
pub(super) fn uploaded_artifact<'a>(ctx: &Context<'_>) -> DeviceUse<'a> {
    DeviceUse::project(Action::UploadedArtifact {
        allow_upload: ctx.loaded.config.artifacts.allow_upload,
    })
}

/// The probe tool this call is, or the refusal of a misrouted one: no other tool falls through to
/// a reset.
pub(super) fn probe_tool(tool: ToolId) -> Result<ToolId, Box<Outcome>> {
    match tool {
        ToolId::DebuggerProbesList
        | ToolId::ProbeTarget
        | ToolId::FlashFirmware
        | ToolId::ResetTarget => Ok(tool),
        other => Err(super::misrouted(other)),
    }
}

fn verb(tool: ToolId) -> &'static str {
    match tool {
        ToolId::DebuggerProbesList => "list probes",
        ToolId::ProbeTarget => "probe a target",
        ToolId::FlashFirmware => "flash",
        _ => "reset",
    }
}

/// What a flash asks for beside its image, read from the arguments before anything runs.
pub(super) struct FlashArgs {
    pub(super) reset_after: bool,
    pub(super) capture: Option<Capture>,
}

pub(crate) fn invalid(tool: ToolId, summary: &str) -> Box<Outcome> {
    Box::new(
        Outcome::refused(tool, ErrorType::InvalidArgument, summary)
            .with_remediation(["Correct the arguments as the tool's input schema describes."])
            .not_contacted(),
    )
}

/// The flash's image and arguments; a capture's port joins `resources` (see
/// [`flash_capture::plan`]).
pub(super) fn flash_args(
    ctx: &Context<'_>,
    resources: &mut Vec<String>,
) -> Result<(ArtifactUse, FlashArgs), Box<Outcome>> {
    let tool = ctx.tool;
    let image = ArtifactUse::from_args(
        tool,
        ctx.args,
        Purpose::FlashImage,
        ArtifactPolicy::from_config(&ctx.loaded.config),
    )?;
    let reset_after = ctx.args.arg_bool("reset_after_flash").unwrap_or(false);
    let capture = match ctx.args.get("capture") {
        None | Some(Value::Null) => None,
        Some(spec) => {
            if !reset_after {
                // Named as the reference names it: the argument to drop or complete.
                let mut refused = invalid(
                    tool,
                    "capture needs reset_after_flash: without a reset the new firmware prints nothing to capture.",
                );
                refused.set("field", "capture");
                return Err(refused);
            }
            Some(flash_capture::plan(ctx, spec, resources)?)
        }
    };
    Ok((
        image,
        FlashArgs {
            reset_after,
            capture,
        },
    ))
}

/// `work` that refuses without its backend's program, after a flash's image was staged: the agent
/// first hears about what it can fix itself (the image), then about the toolchain.
pub(super) fn image_first(
    ctx: &Context<'_>,
    resources: &mut Vec<String>,
    work: Work<'static>,
) -> Result<Work<'static>, Box<Outcome>> {
    if ctx.tool != ToolId::FlashFirmware {
        return Ok(work);
    }
    let (image, _) = flash_args(ctx, resources)?;
    Ok(super::after_artifact(image, work))
}

/// A probe tool's call on its bound debugger, as each backend's work reads it.
pub(super) struct Bound<'a> {
    pub(super) ctx: &'a Context<'a>,
    /// Checked by [`probe_tool`].
    pub(super) tool: ToolId,
    pub(super) name: &'a str,
    pub(super) debugger: &'a Debugger,
    pub(super) executable: Option<PathBuf>,
}

fn qemu_work<'a>(call: Bound<'a>, resources: &mut Vec<String>) -> Result<Work<'a>, Box<Outcome>> {
    let config = &call.ctx.loaded.config;
    // What a confirmed flash wrote, for the defmt table an RTT session decodes with.
    let record = crate::debug::offline::Record::for_debugger(
        &config.state_root,
        call.debugger,
        call.executable.as_deref(),
    );
    let gdb = match &call.ctx.loaded.executables.gdb {
        Some(ExecutableState::Pinned { path }) => Some(path.clone()),
        _ => None,
    };
    let (Some(_qemu), Some(gdb)) = (call.executable, gdb) else {
        return image_first(
            call.ctx,
            resources,
            Work::Local(Box::new(move || {
                Acted {
            outcome: Outcome::refused(
                call.tool,
                ErrorType::DebuggerNotFound,
                "The emulated board needs qemu-system-arm and gdb-multiarch, and one of them was not found.",
            )
            .with("backend", "qemu")
            .with_remediation([
                "Install them with scripts/setup-debian.sh, or name them in `debuggers.<name>.executable` and `debug.gdb_executable`.",
            ])
            .not_contacted(),
            contact: Some(Contact::none("nothing was started")),
        }
            })),
        );
    };
    let Some(dir) = config.board_dir(call.name) else {
        return Err(invalid(call.tool, "This debugger has no board directory."));
    };
    let probe = QemuProbe::new(dir, gdb, call.debugger.qemu_machine());
    let timeout =
        Duration::try_from_secs_f64(call.debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    let mut deadline = timeout + MARGIN;
    let run: Box<dyn FnOnce(ahil_drivers::process::CancelFlag) -> Acted + Send> = match call.tool {
        ToolId::DebuggerProbesList => Box::new(move |cancel| {
            let budget = Budget::new(timeout).with_cancel(cancel);
            list(&probe, &budget)
        }),
        ToolId::ProbeTarget => Box::new(move |cancel| {
            let budget = Budget::new(timeout).with_cancel(cancel);
            probe_target(&probe, &budget)
        }),
        ToolId::ResetTarget => {
            let mode = call.ctx.args.arg_str("mode").unwrap_or("run");
            let Some(mode) = ResetMode::parse(mode).filter(|m| *m != ResetMode::Init) else {
                return Ok(Work::Local(Box::new(move || {
                    Acted {
                    outcome: Outcome::refused(
                        call.tool,
                        ErrorType::NotSupported,
                        "Reset mode `init` runs OpenOCD's reset-init scripts; the qemu backend has none.",
                    )
                    .with("backend", "qemu")
                    .with("supported_modes", json!(["run", "halt"]))
                    .with_remediation(["Call reset_target with mode `halt` or `run`."])
                    .not_contacted(),
                    contact: Some(Contact::none("refused before the board was reached")),
                }
                })));
            };
            Box::new(move |cancel| {
                let budget = Budget::new(timeout).with_cancel(cancel);
                reset(&probe, mode, &budget)
            })
        }
        ToolId::FlashFirmware => {
            let (image, args) = flash_args(call.ctx, resources)?;
            if let Some(capture) = &args.capture {
                deadline += capture.wait();
            }
            let base = call
                .debugger
                .flash_address
                .as_deref()
                .and_then(parse_address)
                .unwrap_or(DEFAULT_FLASH_BASE);
            return Ok(super::staged_job(image, deadline, move |staged, cancel| {
                let budget = Budget::new(timeout).with_cancel(cancel);
                let acted = flash(&probe, &staged, base, &args, &budget);
                recorded(acted, &record, &staged)
            }));
        }
        other => return Err(super::misrouted(other)),
    };
    Ok(probe_job(
        call.tool,
        deadline,
        "listing only asks QMP for the run state",
        run,
    ))
}

/// A probe tool's driver job: if the gate abandons it, contact is possible, except for a listing,
/// which `listing_proof` says reaches no target.
pub(super) fn probe_job(
    tool: ToolId,
    deadline: Duration,
    listing_proof: &str,
    run: Box<dyn FnOnce(ahil_drivers::process::CancelFlag) -> Acted + Send>,
) -> Work<'static> {
    Work::Driver(DriverJob {
        deadline,
        if_abandoned: if tool == ToolId::DebuggerProbesList {
            Contact::none(listing_proof)
        } else {
            Contact::Possible
        },
        run,
    })
}

pub(super) fn parse_address(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A probe listing's result: the probes a backend sees, and whether that is all of them.
pub(super) fn listing(backend: &str, probes: &[ProbeInfo], complete: bool) -> Outcome {
    let listed: Vec<Value> = probes
        .iter()
        .map(|p| json!({"probe_id": p.id, "description": p.description}))
        .collect();
    Outcome::ok(
        ToolId::DebuggerProbesList,
        format!("{} connected debugger probe(s) detected.", listed.len()),
    )
    .with("backend", backend)
    .with("probes", Value::Array(listed))
    .with("complete", complete)
}

/// A listing opens no target, so nothing was started and it is safe to repeat.
pub(super) fn listed(mut outcome: Outcome, proof: &str) -> Acted {
    outcome.side_effect_committed = Some(false);
    outcome.side_effect_status = Some(SideEffectStatus::NotStarted);
    outcome.retry_safe = Some(true);
    Acted::new(outcome, Contact::none(proof))
}

fn list(probe: &QemuProbe, budget: &Budget) -> Acted {
    match probe.list_probes(budget) {
        Ok(probes) => {
            let mut outcome = listing("qemu", &probes, true);
            if probes.is_empty() {
                outcome = outcome.with_next_step(
                    "No emulated board runs: the operator starts it with `agentic-hil sim start`.",
                );
            }
            listed(outcome, "listing only asks QMP for the run state")
        }
        Err(error) => failure(
            ToolId::DebuggerProbesList,
            ErrorType::ProbeDiscoveryFailed,
            &error,
        ),
    }
}

fn probe_target(probe: &QemuProbe, budget: &Budget) -> Acted {
    let clock = Instant::now();
    match probe.probe(budget) {
        Ok(report) => confirmed(
            Outcome::ok(
                "probe_target",
                "Target detected; it was neither reset nor flashed.",
            )
            .with("backend", "qemu")
            .with("probe_id", report.probe.id)
            .with("target_detected", true)
            .with("target", report.target),
            report.state,
            report.log,
            clock,
        ),
        Err(error) => failure(ToolId::ProbeTarget, ErrorType::TargetNotDetected, &error),
    }
}

fn reset(probe: &QemuProbe, mode: ResetMode, budget: &Budget) -> Acted {
    let clock = Instant::now();
    match probe.reset(mode, budget) {
        Ok(report) => confirmed(
            Outcome::ok("reset_target", format!("Target reset with mode '{mode}'."))
                .with("backend", "qemu")
                .with("mode", mode.as_str()),
            report.state,
            report.log,
            clock,
        ),
        Err(error) => failure(ToolId::ResetTarget, ErrorType::ResetFailed, &error),
    }
}

/// The emulated board's answer, confirmed by the core state it reported since `clock` started.
fn confirmed(outcome: Outcome, state: CoreState, log: String, clock: Instant) -> Acted {
    Acted {
        outcome: outcome
            .with("core_state", state.as_str())
            .with("success_confirmed", true)
            .with("driver_elapsed_ms", millis(clock.elapsed()))
            .with("driver_log", log),
        contact: Some(Contact::Made),
    }
}

/// How the loader takes the staged image. The stage refused every other format for a flash image
/// ([`Purpose::FlashImage`]), so an unnamed one cannot reach here.
pub(super) fn loader_format(staged: &StagedArtifact, base: u64) -> ImageFormat {
    match staged.format() {
        Some(Format::IntelHex) => ImageFormat::Hex,
        Some(Format::Bin) => ImageFormat::Bin { base },
        Some(Format::Elf) | None => ImageFormat::Elf,
    }
}

/// The one flash path of every backend: the staged image becomes the request, a capture's port is
/// opened before the write (so the first bytes after the reset land in its ring; QEMU even drops
/// UART output while nobody holds the pty), a capture's RTT after it (the reset rebuilds the
/// block), and every answer carries the artifact and the capture.
/// `write` is the backend's own driver call and the result fields it reports.
pub(super) fn flash_staged(
    backend: &'static str,
    staged: &StagedArtifact,
    format: ImageFormat,
    args: &FlashArgs,
    cancel: &CancelFlag,
    write: impl FnOnce(&FlashRequest, Option<&flash_capture::Open<'_>>) -> Acted,
) -> Acted {
    let request = FlashRequest {
        image: staged.path().to_path_buf(),
        format,
        verify: true,
        reset: args.reset_after.then_some(ResetMode::Run),
    };
    let capture = match args
        .capture
        .as_ref()
        .and_then(Capture::com)
        .map(flash_capture::open)
    {
        Some(Ok(open)) => Some(open),
        Some(Err(refusal)) => {
            return Acted {
                outcome: refusal
                    .with("backend", backend)
                    .with("artifact", staged.report().clone()),
                contact: Some(Contact::none(
                    "the capture port was refused before anything connected to the board",
                )),
            };
        }
        None => None,
    };
    let mut acted = write(&request, capture.as_ref());
    acted.outcome.set("artifact", staged.report().clone());
    // A caller that asked for progress hears that the flash is over and its capture waits: the
    // point after which a cancel cuts the capture, not the flash.
    if acted.outcome.ok
        && args.capture.is_some()
        && let Some(progress) = ahil_drivers::probe::stage_sink()
    {
        progress("capture");
    }
    if let Some(open) = capture {
        open.finish(&mut acted.outcome, cancel);
    }
    if let Some(Capture::Rtt(rtt)) = &args.capture {
        rtt.finish(&mut acted.outcome, staged, cancel);
    }
    acted
}

/// The emulated board's write: the stub halts the board, loads and verifies; the reset is a step of
/// its own so the old firmware's output can be dropped before the new one runs.
fn flash(
    probe: &QemuProbe,
    staged: &StagedArtifact,
    base: u64,
    args: &FlashArgs,
    budget: &Budget,
) -> Acted {
    const TOOL: ToolId = ToolId::FlashFirmware;
    let format = loader_format(staged, base);
    flash_staged(
        "qemu",
        staged,
        format,
        args,
        budget.cancel_flag(),
        |request, capture| {
            let request = FlashRequest {
                reset: None,
                ..request.clone()
            };
            let clock = Instant::now();
            let report = match probe.flash(&request, budget) {
                Ok(report) => report,
                Err(error) => return failure(TOOL, ErrorType::FlashFailed, &error),
            };
            // Whatever the old firmware printed before gdb halted it is not the new firmware's output.
            if let Some(open) = capture {
                open.discard_pending();
            }
            if args.reset_after
                && let Err(error) = probe.reset(ResetMode::Run, budget)
            {
                let mut acted = failure(TOOL, ErrorType::ResetFailed, &error);
                acted.outcome.set("image_written", true);
                // The image is on the board whatever the reset did.
                acted.contact = Some(Contact::Made);
                return acted;
            }
            let summary = if args.reset_after {
                "Firmware flashed, verified, and target reset."
            } else {
                "Firmware flashed and verified. Target was not reset."
            };
            Acted {
                outcome: Outcome::ok(TOOL, summary)
                    .with("backend", "qemu")
                    .with("bytes_written", report.bytes)
                    .with("verify", report.verified)
                    .with("reset_after_flash", args.reset_after)
                    .with("success_confirmed", report.verified)
                    .with("driver_elapsed_ms", millis(clock.elapsed()))
                    .with("driver_log", report.log),
                contact: Some(Contact::Made),
            }
        },
    )
}

/// Records the image a flash wrote (an ELF's copy, or that none describes the board now); a record
/// that could not be written is said in the answer, never a failed flash.
pub(super) fn recorded(
    mut acted: Acted,
    record: &crate::debug::offline::Record,
    staged: &StagedArtifact,
) -> Acted {
    if acted.outcome.ok
        && let Err(error) = record.flashed(staged)
    {
        acted.outcome.set("symbol_source_recorded", false);
        acted
            .outcome
            .set("symbol_source_error", error.kind().to_string());
    }
    acted
}

/// A driver failure as an envelope: the driver's own error type where it has one, else `fallback`.
fn failure(tool: ToolId, fallback: ErrorType, error: &DriverError) -> Acted {
    let contact = error.contact();
    let unreachable = matches!(contact, Contact::None { .. });
    let error_type = match error {
        DriverError::Timeout { .. } => ErrorType::Timeout,
        DriverError::DebuggerNotFound { .. } => ErrorType::DebuggerNotFound,
        _ if unreachable && tool != ToolId::DebuggerProbesList => ErrorType::TargetNotDetected,
        _ => fallback,
    };
    let mut outcome = Outcome::refused(
        tool,
        error_type,
        format!(
            "The emulated board did not complete the call: {}.",
            detail(error)
        ),
    )
    .with("backend", "qemu");
    if let DriverError::Backend { output, .. } | DriverError::Timeout { output, .. } = error
        && !output.is_empty()
    {
        outcome.set("driver_log", output.clone());
    }
    if unreachable {
        outcome = outcome.with_remediation([
            "No board answers: the operator starts it with `agentic-hil sim start`, then call this tool again.",
        ]);
    } else {
        outcome = outcome.with_remediation([
            "The board's state is unknown: probe_target to see whether it answers, then flash or reset it again.",
        ]);
    }
    Acted::new(outcome, contact)
}

fn detail(error: &DriverError) -> String {
    match error {
        DriverError::Backend { detail, .. } | DriverError::DebuggerNotFound { detail, .. } => {
            // The driver names sockets by absolute path; results never carry the state root.
            detail.split(" (").next().unwrap_or(detail).to_owned()
        }
        DriverError::Timeout { limit, .. } => {
            format!("a step did not finish within {} s", limit.as_secs())
        }
        DriverError::Io(error) => error.kind().to_string(),
        DriverError::Classified(classified) => classified.summary.clone(),
    }
}
