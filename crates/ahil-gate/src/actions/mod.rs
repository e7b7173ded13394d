//! Per-tool actions. Each tool turns its arguments into a [`Plan`]: what policy must allow, which
//! devices it claims, and the work to do. The pipeline in `bench.rs` runs every plan through the same
//! stages, so no tool can skip authorization or claiming.

use crate::ErrorType;

use std::time::Duration;

use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;

use crate::catalogue::ToolId;
use crate::envelope::Outcome;

mod args;
pub(crate) mod artifact_upload;
pub(crate) mod bench_run;
pub(crate) mod can_buses;
pub(crate) mod can_io;
pub(crate) mod can_participant;
pub(crate) mod can_session;
pub(crate) mod com_io;
pub mod com_ports;
pub(crate) mod com_session;
pub(crate) mod config_adopt;
pub(crate) mod config_create;
pub(crate) mod config_reload;
pub(crate) mod config_set;
pub(crate) mod debug;
mod debug_ops;
pub(crate) mod debugger_info;
pub(crate) mod describe;
mod dispatch;
mod flash_capture;
pub(crate) mod lease;
pub(crate) mod operator_bench;
pub(crate) mod power;
pub(crate) mod probe;
mod probe_cli;
pub mod probe_rs;
pub(crate) mod reports;
mod rtt_capture;
mod rtt_io;
mod rtt_reach;
mod rtt_session;
#[cfg(test)]
mod session_lifecycle_tests;
pub(crate) mod sim_board;
pub(crate) mod test_reactor;
pub(crate) mod upgrade;

pub use dispatch::{Dispatch, PlanFn, dispatch};

/// What the tools hold across calls, beside the core's state: the sessions and the reloaded
/// description. A [`Context`] reads these fields as its own (`ctx.serial`).
#[derive(Default)]
pub struct Held {
    /// The COM sessions this server holds.
    pub serial: std::sync::Arc<crate::serial::Sessions>,
    /// The debug session this server holds.
    pub debug: std::sync::Arc<crate::debug::Sessions>,
    /// The CAN sessions this server holds.
    pub can: std::sync::Arc<crate::can::Sessions>,
    /// The RTT sessions this server holds, by debugger.
    pub rtt: std::sync::Arc<crate::rtt::Sessions>,
    /// Where a description reload puts the configuration later calls decide with.
    pub description: crate::config_edit::reload::DescriptionSlot,
}

/// What an action gets to look at.
pub type Context<'a> = ahil_core::bench::Context<'a, Held>;

pub use ahil_core::bench::{Acted, DriverJob, Plan, Work, unknown_tool};

/// Work on `artifact`, built from its staged copy by `then`: the pipeline runs the staging once,
/// after the claim and before the act, for every backend; no backend stages on its own.
pub(crate) fn staged(
    artifact: crate::artifacts::ArtifactUse,
    then: impl FnOnce(crate::artifacts::StagedArtifact) -> Work<'static> + Send + 'static,
) -> Work<'static> {
    Work::Staged(Box::new(move || artifact.stage().map(then)))
}

/// `work` that runs only once `artifact` was staged, without using it: a refusal that needs no
/// image still comes after the image's own, so the agent first hears what it can fix itself.
pub(crate) fn after_artifact(
    artifact: crate::artifacts::ArtifactUse,
    work: Work<'static>,
) -> Work<'static> {
    staged(artifact, move |_checked| work)
}

/// A plan asking policy for `action` that addresses no device and claims nothing: its work is
/// `job`, computed in-process, with no contact to state.
pub(crate) fn local_plan<'a>(
    action: crate::policy::Action<'a>,
    job: impl FnOnce() -> Outcome + Send + 'a,
) -> Plan<'a> {
    Plan {
        action,
        ..Plan::read_state(Work::Local(Box::new(move || Acted {
            outcome: job(),
            contact: None,
        })))
    }
}

/// A driver job on the artifact the pipeline stages first: `run` gets the staged copy (and keeps it
/// as long as it needs the file). Contact is possible if the gate abandons it, as for any job that
/// writes to a board.
pub(crate) fn staged_job(
    artifact: crate::artifacts::ArtifactUse,
    deadline: Duration,
    run: impl FnOnce(crate::artifacts::StagedArtifact, CancelFlag) -> Acted + Send + 'static,
) -> Work<'static> {
    staged(artifact, move |staged| {
        Work::Driver(DriverJob {
            deadline,
            if_abandoned: Contact::Possible,
            run: Box::new(move |cancel| run(staged, cancel)),
        })
    })
}

/// The plan for the call's tool, or a refusal that needs no authorization (wrong probe count, …).
/// Dispatch is bound by the tool's id: no tool name is matched here.
pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    match dispatch(ctx.tool) {
        Dispatch::Plan(plan) => plan(ctx),
        Dispatch::Reactor => Err(misrouted(ctx.tool)),
    }
}

/// A result's `next_steps`: each step whose condition holds, in order.
pub(crate) fn next_steps(steps: &[(bool, &str)]) -> serde_json::Value {
    steps
        .iter()
        .filter(|(when, _)| *when)
        .map(|(_, step)| *step)
        .collect()
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

/// A tool this build implements only on the emulated board, asked of another backend: work that
/// refuses before anything ran.
pub fn backend_not_built(
    tool: ToolId,
    kind: ahil_config::DebuggerType,
    summary: String,
) -> Work<'static> {
    Work::Local(Box::new(move || Acted {
        outcome: Outcome::refused(tool, ErrorType::NotSupported, summary)
            .with("backend", kind.as_str())
            .with_remediation([
                "Use `type: qemu` with `agentic-hil sim start` to work against the emulated board.",
            ])
            .not_contacted(),
        contact: Some(Contact::none("no backend exists to run")),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn next_steps_keep_the_steps_whose_condition_holds_in_their_order() {
        let steps = super::next_steps(&[(true, "first"), (false, "skipped"), (true, "last")]);
        assert_eq!(steps, serde_json::json!(["first", "last"]));
    }
}
