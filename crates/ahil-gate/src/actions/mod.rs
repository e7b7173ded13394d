//! Per-tool actions. Each tool turns its arguments into a [`Plan`]: what policy must allow, which
//! devices it claims, and the work to do. The pipeline in `bench.rs` runs every plan through the same
//! stages, so no tool can skip authorization or claiming.

use crate::ErrorType;
use std::time::Duration;

use ahil_config::{Environment, LoadedConfig};
use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use serde_json::Value;

use crate::catalogue::{Dispatch, ToolId};
use crate::envelope::Outcome;
use crate::policy::{Action, Device, DeviceUse};
use crate::snapshot::Snapshot;

pub mod artifact_upload;
pub mod bench_run;
pub mod can_buses;
pub mod can_io;
pub mod can_participant;
pub mod can_session;
pub mod com_io;
pub mod com_ports;
pub mod com_session;
pub mod config_adopt;
pub mod config_create;
pub mod config_reload;
pub mod config_set;
pub mod debug;
mod debug_ops;
pub mod debugger_info;
pub mod describe;
mod flash_capture;
pub mod lease;
pub mod power;
pub mod probe;
mod probe_cli;
pub mod probe_rs;
pub mod reports;
pub mod test_reactor;
pub mod upgrade;

/// What an action gets to look at.
pub struct Context<'a> {
    pub tool: ToolId,
    pub args: &'a Value,
    pub loaded: &'a LoadedConfig,
    pub env: &'a Environment,
    pub snapshot: &'a Snapshot,
    /// The devices and run this server holds.
    pub ownership: &'a std::sync::Arc<crate::ownership::Ownership>,
    /// The COM sessions this server holds.
    pub serial: &'a std::sync::Arc<crate::serial::Sessions>,
    /// The debug session this server holds.
    pub debug: &'a std::sync::Arc<crate::debug::Sessions>,
    /// The CAN sessions this server holds.
    pub can: &'a std::sync::Arc<crate::can::Sessions>,
    /// This configuration's leases and incidents.
    pub coordinator: &'a std::sync::Arc<crate::ownership::coordination::Coordinator>,
    /// Where a description reload puts the configuration later calls decide with.
    pub description: &'a crate::config_edit::reload::DescriptionSlot,
}

/// A tool call, ready for the pipeline.
pub struct Plan<'a> {
    /// What policy is asked.
    pub action: Action<'a>,
    /// The device it addresses, with its grants.
    pub device: Option<Device<'a>>,
    /// Every other device the call touches (a capture's port, the boards a supply powers), each
    /// with what the call does there, and any project grant it needs beside `action` (an
    /// uploaded artifact). The pipeline authorizes all of them before it claims anything.
    pub also: Vec<DeviceUse<'a>>,
    /// Resource keys claimed for the duration of the work.
    pub resources: Vec<String>,
    /// The work itself.
    pub work: Work<'a>,
}

impl<'a> Plan<'a> {
    /// What policy is asked, in order: the addressed device first, then every other one.
    pub fn uses(&self) -> Vec<DeviceUse<'a>> {
        let first = DeviceUse {
            device: self.device,
            action: self.action,
        };
        std::iter::once(first)
            .chain(self.also.iter().copied())
            .collect()
    }

    /// The artifact the call names, staged by the pipeline before the act.
    pub fn artifact(&self) -> Option<&crate::artifacts::ArtifactUse> {
        match &self.work {
            Work::Staged(artifact, _) => Some(artifact),
            Work::Local(_) | Work::Driver(_) => None,
        }
    }
}

/// The work of a call.
pub enum Work<'a> {
    /// Computed in-process from the snapshot; touches no device.
    Local(Box<dyn FnOnce() -> Acted + Send + 'a>),
    /// One driver call on a blocking thread with a deadline.
    Driver(DriverJob),
    /// Work on the artifact the call names: the pipeline validates and stages it once, after the
    /// claim, and builds the work from the staged copy. A refused artifact ends the call before any
    /// device is contacted; no backend stages on its own.
    Staged(
        Box<crate::artifacts::ArtifactUse>,
        // 'static like a driver job: a continuation returning `Work<'a>` would make `Work`
        // invariant in `'a`, and a plan's `Work<'static>` refusals would no longer coerce.
        Box<dyn FnOnce(crate::artifacts::StagedArtifact) -> Work<'static> + Send>,
    ),
}

/// `work` that runs only once `artifact` was staged, without using it: a refusal that needs no
/// image still comes after the image's own, so the agent first hears what it can fix itself.
pub(crate) fn after_artifact(
    artifact: crate::artifacts::ArtifactUse,
    work: Work<'static>,
) -> Work<'static> {
    Work::Staged(Box::new(artifact), Box::new(move |_checked| work))
}

/// A driver job on the artifact the pipeline stages first: `run` gets the staged copy (and keeps it
/// as long as it needs the file). Contact is possible if the gate abandons it, as for any job that
/// writes to a board.
pub(crate) fn staged_job(
    artifact: crate::artifacts::ArtifactUse,
    deadline: Duration,
    run: impl FnOnce(crate::artifacts::StagedArtifact, CancelFlag) -> Acted + Send + 'static,
) -> Work<'static> {
    Work::Staged(
        Box::new(artifact),
        Box::new(move |staged| {
            Work::Driver(DriverJob {
                deadline,
                if_abandoned: Contact::Possible,
                run: Box::new(move |cancel| run(staged, cancel)),
            })
        }),
    )
}

/// A driver call.
pub struct DriverJob {
    /// The gate's own deadline (the driver has its own, shorter one).
    pub deadline: Duration,
    /// What is known about contact if the gate has to abandon the call at its deadline.
    pub if_abandoned: Contact,
    /// The call; it must honour the cancel flag.
    pub run: Box<dyn FnOnce(CancelFlag) -> Acted + Send + 'static>,
}

/// What the work produced, and what the driver knows about contact.
pub struct Acted {
    pub outcome: Outcome,
    /// `None` when the work touched no device at all (local work).
    pub contact: Option<Contact>,
}

/// Takes a session's own device locks, held from its start to its stop (past this call's claim) by
/// the guard it returns, or answers `tool`'s `device_busy` refusal as work that touched nothing:
/// `before` says what had not been opened yet.
pub(crate) fn take_session_locks(
    ownership: &std::sync::Arc<crate::ownership::Ownership>,
    keys: &[String],
    label: &str,
    tool: &str,
    before: &'static str,
) -> Result<crate::ownership::SessionLocks, Box<Acted>> {
    crate::ownership::SessionLocks::take(ownership, keys.to_vec(), label).map_err(|busy| {
        Box::new(Acted {
            outcome: busy.into_outcome(tool),
            contact: Some(Contact::none(before)),
        })
    })
}

/// The plan for the call's tool, or a refusal that needs no authorization (wrong probe count, …).
/// Dispatch is the tool's declaration: no tool name is matched here.
pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    match ctx.tool.declaration().dispatch {
        Dispatch::Plan(plan) => plan(ctx),
        Dispatch::Reactor => Err(misrouted(ctx.tool)),
    }
}

/// Each plan's first check: it runs only for the tools whose declarations name it, so a
/// declaration pointing at the wrong plan is refused instead of running another tool's code.
pub(crate) fn serves(tool: ToolId, served: &[ToolId]) -> Result<(), Box<Outcome>> {
    if served.contains(&tool) {
        Ok(())
    } else {
        Err(misrouted(tool))
    }
}

/// The refusal of a plan asked for a tool it does not serve: a declaration names the wrong plan.
/// Never a fallback to another tool's behaviour.
pub(crate) fn misrouted(tool: ToolId) -> Box<Outcome> {
    Box::new(
        Outcome::refused(
            tool.name(),
            ErrorType::InternalError,
            "This tool's declaration names a plan that does not serve it; nothing was done.",
        )
        .with("misrouted", true)
        .not_contacted(),
    )
}

/// The answer to a name that is not a listed tool.
pub fn unknown_tool(tool: &str) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::UnknownTool,
        "No tool of that name is listed by this server.",
    )
    .with_remediation(["Call tools/list and use one of the names it returns."])
    .with_do_not(["Do not reach the hardware another way because a tool name was not found."])
}

/// A tool this build implements only on the emulated board, asked of another backend: refused
/// before anything ran.
pub fn backend_not_built(tool: &str, kind: ahil_config::DebuggerType, summary: String) -> Acted {
    Acted {
        outcome: Outcome::refused(tool, ErrorType::NotSupported, summary)
            .with("backend", kind.as_str())
            .with_remediation([
                "Use `type: qemu` with `agentic-hil sim start` to work against the emulated board.",
            ])
            .not_contacted(),
        contact: Some(Contact::none("no backend exists to run")),
    }
}
