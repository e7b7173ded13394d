//! What the pipeline and the tools exchange: the [`Context`] a plan reads, the [`Plan`] it returns,
//! the [`Work`] the pipeline runs, and the [`Tools`] the tools crate provides. The core reaches the
//! tool implementations only through [`Tools`] (decision 0010).

use std::future::Future;
use std::ops::Deref;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ahil_config::{Environment, LoadedConfig};
use ahil_job::{CancelFlag, Contact};
use serde_json::Value;

use super::Bench;
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;
use crate::ownership::Ownership;
use crate::ownership::coordination::Coordinator;
use crate::policy::{Action, Device, DeviceUse};
use crate::snapshot::Snapshot;

/// The tool implementations, as the pipeline sees them. `Self` is what they hold across calls
/// (sessions, a reloaded description); the gate keeps one and lends it to every [`Context`].
pub trait Tools: Default + Send + Sync + Sized + 'static {
    /// The plan for the call's tool, or a refusal that needs no authorization.
    fn plan<'a>(ctx: &'a Context<'a, Self>) -> Result<Plan<'a>, Box<Outcome>>;

    /// Whether `tool` is a frontend of the gate (a test plan) instead of a plan: its steps come back
    /// through [`Bench::call`].
    fn is_frontend(tool: ToolId) -> bool;

    /// Runs a frontend tool's call.
    fn run_frontend<'a>(
        bench: &'a Bench<Self>,
        args: &Value,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

    /// `project_config_create` in a workspace without a configuration.
    fn first_creation(workspace: &Path, env: &Environment) -> Outcome;

    /// The configuration a description reload installed, if one did.
    fn reloaded(&self) -> Option<Arc<LoadedConfig>>;

    /// The calls that close what the tools hold, in the order they must run at shutdown.
    fn closing_calls(&self) -> Vec<(ToolId, Value)>;
}

/// What an action gets to look at.
pub struct Context<'a, T> {
    pub tool: ToolId,
    pub args: &'a Value,
    pub loaded: &'a LoadedConfig,
    pub env: &'a Environment,
    pub snapshot: &'a Snapshot,
    /// The devices and run this server holds.
    pub ownership: &'a Arc<Ownership>,
    /// This configuration's leases and incidents.
    pub coordinator: &'a Arc<Coordinator>,
    /// What the tools hold across calls.
    pub held: &'a T,
    /// labgrid places, when the configuration has a `labgrid` section.
    pub places: Option<&'a Arc<crate::ownership::places::Places>>,
}

/// A plan reads the tools' held state as the context's own fields (`ctx.serial`), as it did when
/// the context was the tools' type.
impl<T> Deref for Context<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.held
    }
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
    /// A call that reads state and addresses no device: policy is asked only `ReadState`, and
    /// nothing is claimed.
    pub fn read_state(work: Work<'a>) -> Self {
        Self {
            action: Action::ReadState,
            device: None,
            also: Vec::new(),
            resources: Vec::new(),
            work,
        }
    }

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
}

/// The work of a call.
pub enum Work<'a> {
    /// Computed in-process from the snapshot; touches no device.
    Local(Box<dyn FnOnce() -> Acted + Send + 'a>),
    /// One driver call on a blocking thread with a deadline.
    Driver(DriverJob),
    /// Work on the artifact the call names. The pipeline prepares it once (the tools validate and
    /// stage the artifact, off the async threads) after the claim and before the act, and acts on
    /// the work built from the staged copy; a refused artifact ends the call before any device is
    /// contacted. `'static` like a driver job: a continuation returning `Work<'a>` would make
    /// `Work` invariant in `'a`, and a plan's `Work<'static>` refusals would no longer coerce.
    Staged(Box<dyn FnOnce() -> Result<Work<'static>, Box<Acted>> + Send>),
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

impl Acted {
    /// Work that reached for a device, with what is known of the contact.
    pub fn new(outcome: Outcome, contact: Contact) -> Self {
        Self {
            outcome,
            contact: Some(contact),
        }
    }

    /// Work that touched no device.
    pub fn local(outcome: Outcome) -> Self {
        Self {
            outcome,
            contact: None,
        }
    }
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
