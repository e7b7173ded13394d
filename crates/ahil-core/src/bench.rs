//! The gate: every tool call runs the same stages, in this order, as code.
//!
//! 1 validate · 2 snapshot · 3 authorize · 4 claim · 4½ stage the artifact · 5 act · 6 settle · 7 record · 8 answer.
//! A refusal at any stage skips the later ones but still goes through `answer`, so every result
//! carries the same envelope fields.

use crate::ErrorType;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use ahil_config::{ConfigError, Environment, LoadedConfig};
use ahil_job::{CancelFlag, Contact};
use serde_json::Value;

use crate::audit::{self, Audit};
use crate::catalogue::{self, ToolId, ToolSpec};
use crate::claims::Claims;
use crate::envelope::{HardwareState, Outcome, SideEffectStatus, mark_side_effect};
use crate::ownership::Ownership;
use crate::ownership::coordination::Incident;
use crate::ownership::places::Places;
use crate::policy::{self, Refusal};
use crate::snapshot::Snapshot;
use crate::validate;

mod expiry;
mod leases;
mod staging;
mod work;
use ahil_config::time;

pub use work::{Acted, Context, DriverJob, Plan, Tools, Work, unknown_tool};

/// The frontend name of the operator's CLI: its gate may call the operator-only tools.
pub const OPERATOR_CLI: &str = "operator-cli";

/// The gate for one workspace, over the tool implementations `T`.
pub struct Bench<T> {
    state: State<T>,
    claims: Claims,
}

enum State<T> {
    Provisioned(Box<Provisioned<T>>),
    Unprovisioned {
        workspace: PathBuf,
        why: ConfigError,
        /// Known when the frontend may let `project_config_create` write the first configuration.
        env: Option<Environment>,
    },
}

struct Provisioned<T> {
    loaded: LoadedConfig,
    env: Environment,
    /// Fixed when the gate starts: a configuration edited later cannot move the evidence.
    audit: Audit,
    /// Device locks and the open run; dropping the gate releases them.
    ownership: Arc<Ownership>,
    /// labgrid places, when the configuration has a `labgrid` section.
    places: Option<Arc<Places>>,
    /// What the tools hold across calls: sessions, the configuration after a description reload.
    held: T,
    /// This configuration's leases and incidents.
    leases: leases::Leases,
    /// The holds that end by themselves, when `holds:` sets a maximum.
    expiry: Option<expiry::Expiry>,
    /// The operator's CLI: it may call the operator-only tools (`sim_stop`, …) an MCP server
    /// refuses as unknown.
    operator: bool,
}

/// What the test reactor needs beside [`Bench::call`]: the configuration, the environment, the
/// bench ownership its run holds, and the audit trail its report goes to.
pub struct View<'a> {
    pub startup: &'a LoadedConfig,
    /// The description a reload installed: preflight and the run's devices must see the bench the
    /// steps will see, or a moved port would be declared under its old path.
    pub reloaded: Option<Arc<LoadedConfig>>,
    pub env: &'a Environment,
    pub ownership: &'a Arc<Ownership>,
    pub audit: &'a Audit,
}

impl View<'_> {
    /// The configuration in force now: the reloaded description, else the startup one.
    pub fn loaded(&self) -> &LoadedConfig {
        self.reloaded.as_deref().unwrap_or(self.startup)
    }
}

impl<T: Tools> Provisioned<T> {
    /// What an action of `tool` gets to look at: this gate's state under `loaded` (the description
    /// in force) and the call's snapshot.
    fn context<'a>(
        &'a self,
        tool: ToolId,
        args: &'a Value,
        loaded: &'a LoadedConfig,
        snapshot: &'a Snapshot,
    ) -> Context<'a, T> {
        Context {
            tool,
            args,
            loaded,
            env: &self.env,
            snapshot,
            ownership: &self.ownership,
            coordinator: &self.leases.coordinator,
            held: &self.held,
            places: self.places.as_ref(),
        }
    }
}

impl<T: Tools> Bench<T> {
    /// A gate over a loaded configuration.
    pub fn provisioned(loaded: LoadedConfig, env: Environment) -> Self {
        Self {
            state: State::Provisioned(Box::new(Provisioned {
                audit: Audit::for_config(&loaded),
                ownership: {
                    let ownership = Arc::new(Ownership::for_process(&env, "mcp"));
                    ownership.start_heartbeat();
                    ownership
                },
                held: T::default(),
                places: Places::for_config(&loaded.config),
                leases: leases::Leases::new(&loaded, "mcp"),
                expiry: expiry::Expiry::for_holds(loaded.config.holds),
                operator: false,
                loaded,
                env,
            })),
            claims: Claims::default(),
        }
    }

    /// A gate over a loaded configuration whose device locks name `frontend` as their holder
    /// (`operator-cli`, `test-reactor`, …) instead of `mcp`.
    pub fn provisioned_as(loaded: LoadedConfig, env: Environment, frontend: &str) -> Self {
        let mut bench = Self::provisioned(loaded, env);
        if let State::Provisioned(parts) = &mut bench.state {
            parts.ownership = Arc::new(Ownership::for_process(&parts.env, frontend));
            parts.ownership.start_heartbeat();
            parts.leases = leases::Leases::new(&parts.loaded, frontend);
            parts.operator = frontend == OPERATOR_CLI;
        }
        bench
    }

    /// What the test reactor needs beside [`Bench::call`].
    pub fn reactor_view(&self) -> Option<View<'_>> {
        match &self.state {
            State::Provisioned(bench) => Some(View {
                startup: &bench.loaded,
                reloaded: bench.held.reloaded(),
                env: &bench.env,
                ownership: &bench.ownership,
                audit: &bench.audit,
            }),
            State::Unprovisioned { .. } => None,
        }
    }

    /// A gate for a workspace without a configuration: it lists the tools and refuses every call.
    pub fn unprovisioned(workspace: PathBuf, why: ConfigError) -> Self {
        Self {
            state: State::Unprovisioned {
                workspace,
                why,
                env: None,
            },
            claims: Claims::default(),
        }
    }

    /// A gate without a configuration whose `project_config_create` may write the first one in
    /// `env`'s configuration directory.
    pub fn unprovisioned_in(workspace: PathBuf, why: ConfigError, env: Environment) -> Self {
        let mut bench = Self::unprovisioned(workspace, why);
        if let State::Unprovisioned { env: slot, .. } = &mut bench.state {
            *slot = Some(env);
        }
        bench
    }

    /// Whether a configuration is loaded.
    pub fn is_provisioned(&self) -> bool {
        matches!(self.state, State::Provisioned(_))
    }

    /// Why the gate is unprovisioned, if it is.
    pub fn unprovisioned_reason(&self) -> Option<&ConfigError> {
        match &self.state {
            State::Unprovisioned { why, .. } => Some(why),
            State::Provisioned(_) => None,
        }
    }

    /// The loaded configuration, if any.
    pub fn loaded(&self) -> Option<&LoadedConfig> {
        match &self.state {
            State::Provisioned(bench) => Some(&bench.loaded),
            State::Unprovisioned { .. } => None,
        }
    }

    /// The tools this gate lists.
    pub fn tools(&self) -> Vec<ToolSpec> {
        catalogue::tools(self.is_provisioned())
    }

    /// Closes what this server holds, in order, through the gate so each close is reported: the
    /// debug session first (its stop reconfirms the halt before detaching), then COM and CAN sessions,
    /// then the open run; then every lease a session kept. Returns the close results.
    pub async fn shutdown(&self) -> Vec<Outcome> {
        let State::Provisioned(bench) = &self.state else {
            return Vec::new();
        };
        let mut closed = Vec::new();
        for (tool, args) in bench.held.closing_calls() {
            closed.push(self.call(tool.name(), args).await);
        }
        if bench.ownership.runs.current().is_some() {
            closed.push(self.call("bench_run_stop", serde_json::json!({})).await);
        }
        bench.leases.release_kept();
        closed
    }

    /// Run one tool call through every stage.
    pub async fn call(&self, tool: &str, args: Value) -> Outcome {
        let mut outcome = self.run_call(tool, args).await;
        self.tell_expired(&mut outcome);
        // The unit tests hold every in-process result to its tool's outputSchema, as the MCP test
        // clients do, so a result shape no schema allows fails the test that produced it.
        #[cfg(test)]
        if let Err(problem) = crate::catalogue_output::check_result(tool, &outcome.to_value()) {
            panic!("{problem}");
        }
        outcome
    }

    async fn run_call(&self, tool: &str, mut args: Value) -> Outcome {
        let started = SystemTime::now();
        let clock = Instant::now();
        // The one parse of a tool's name: an unknown one reaches no tool's code. Only the operator's
        // CLI reaches the operator-only tools.
        let operator = matches!(&self.state, State::Provisioned(bench) if bench.operator);
        let schema_of = if operator {
            catalogue::operator_input_schema
        } else {
            catalogue::input_schema
        };
        let Some((id, input_schema)) = tool
            .parse::<ToolId>()
            .ok()
            .and_then(|id| Some((id, schema_of(id, self.is_provisioned())?)))
        else {
            return unknown_tool(tool);
        };
        let gate = id.gate();
        let bench = match &self.state {
            State::Provisioned(bench) => bench,
            // Outside a project even the first configuration cannot be created: it would bind HOME.
            State::Unprovisioned { why, .. } if why.error_type() == "workspace_is_home" => {
                return outside_project(tool, why);
            }
            State::Unprovisioned {
                workspace,
                env: Some(env),
                ..
            } if id == ToolId::ProjectConfigCreate => {
                return T::first_creation(workspace, env);
            }
            State::Unprovisioned { workspace, .. } => return unprovisioned(tool, workspace),
        };

        // 1 validate
        if let Err(refusal) = validate::validate_arguments(tool, &input_schema, &mut args) {
            return answer(*refusal, &Snapshot::take(&bench.loaded), started, clock);
        }

        // 2 snapshot, of the reloaded description when there is one
        let reloaded = bench.held.reloaded();
        let loaded = reloaded.as_deref().unwrap_or(&bench.loaded);
        let snapshot = Snapshot::take(loaded);

        // A test plan is a frontend of this gate: every step it runs comes back through `call`.
        if T::is_frontend(id) {
            let outcome = expiry::inner(T::run_frontend(self, &args)).await;
            return answer(outcome, &snapshot, started, clock);
        }

        // 3 authorize
        let ctx = bench.context(id, &args, loaded, &snapshot);
        // A bug in a tool's planning must still be answered: the agent would otherwise wait forever.
        let planned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| T::plan(&ctx)));
        let plan = match planned {
            Ok(Ok(plan)) => plan,
            Ok(Err(refusal)) => return answer(*refusal, &snapshot, started, clock),
            Err(panic) => {
                let refusal = Outcome::refused(
                    tool,
                    ErrorType::InternalError,
                    format!(
                        "The server failed while checking this request ({}); nothing was done.",
                        panic_message(panic.as_ref())
                    ),
                )
                .not_contacted();
                return answer(refusal, &snapshot, started, clock);
            }
        };
        let config = &loaded.config;
        // Every device the call touches, not just the one it addresses: a capture reads a port
        // and a supply's output restarts the boards it powers.
        if let Err(refusal) =
            policy::authorize_all(config.version, &config.permissions, &plan.uses())
        {
            return answer(refused(tool, refusal), &snapshot, started, clock);
        }

        // 4 claim: held through settle and record so the next caller sees a settled device.
        let claim = self.claims.claim(&plan.resources).await;
        // The lab-wide hold first: a place another labgrid user has is refused before any lock.
        let places = match Places::hold_for(bench.places.as_ref(), tool, &plan.uses()) {
            Ok(places) => places,
            Err(refusal) => return answer(*refusal, &snapshot, started, clock),
        };
        // Read from the host now: the node each configured device name leads to at this call.
        let host_keys =
            crate::ownership::device_keys::host_keys(config, &plan.resources, &snapshot.nodes);
        let hold = match bench
            .ownership
            .claim_for_call(tool, &plan.resources, &host_keys)
        {
            Ok(hold) => hold,
            Err(refusal) => {
                drop(claim);
                return answer(*refusal, &snapshot, started, clock);
            }
        };

        // Audit readiness: an audited action whose evidence cannot be written does not start.
        let audited = gate.audited;
        if audited && let Err(err) = bench.audit.readiness() {
            drop(hold);
            drop(claim);
            return answer(audit::unavailable(tool, &err), &snapshot, started, clock);
        }

        // The lease: this configuration's record of the call. It may meet an incident a dead owner
        // left, which is settled before this call acts on the bench.
        let lease = if gate.is_leased() {
            match bench.leases.coordinator.acquire(
                &[plan.resources.as_slice(), host_keys.as_slice()].concat(),
                gate.is_containment(),
            ) {
                Ok(lease) => Some(lease),
                Err(crate::ownership::coordination::Refused::Busy)
                    if gate.runs_without_lease_when_busy() =>
                {
                    None
                }
                Err(refused) => {
                    drop(hold);
                    drop(claim);
                    return answer(leases::refusal(tool, refused), &snapshot, started, clock);
                }
            }
        } else {
            None
        };
        let met = match lease.as_ref().and_then(|l| l.met.clone()) {
            Some(incident) => Some((leases::recover(bench, &incident).await, incident)),
            None => None,
        };

        // 5 act, on the artifact the plan names once it is validated and staged
        let acted = stage_and_act(tool, plan.work).await;

        // 6 settle
        let mut outcome = bench.after_act(id, settle(acted));
        if let Some(run) = hold.implicit_run(tool) {
            outcome.set("run", run);
        }
        if let Some(lease) = &lease {
            outcome.set("lease_id", lease.id.clone());
            outcome.lease_state = Some("active".into());
            if let Some(released) = &lease.released_dead_owner {
                outcome.set("released_dead_owner", released.clone());
            }
            if let Some((block, incident)) = met {
                leases::apply(&mut outcome, block, &incident, false);
            }
            // A failure that left the hardware unknown is an incident: recorded first, then
            // settled by the recovery policy or stood down.
            if outcome.hardware_state == Some(HardwareState::Unknown) {
                let incident =
                    Incident::new(vec![gate.unconfirmed.to_owned()], lease.resources.clone());
                if bench.leases.coordinator.open_incident(&incident).is_ok() {
                    let block = leases::recover(bench, &incident).await;
                    leases::apply(&mut outcome, block, &incident, true);
                }
            }
            leases::merge_status(&mut outcome, lease);
        }

        // 7 record, with the envelope's common fields (8) already stamped so the report carries its
        // timings and config_in_force; the claim is held until the evidence is down.
        let mut outcome = answer(outcome, &snapshot, started, clock);
        // A hold the gate closes by itself is always on record, with why, even through a stop
        // (bench_run_stop) that is not audited when the agent calls it.
        if audited || expiry::closing() {
            audit::record(&bench.audit, &mut outcome, &args);
        }
        if let Some(lease) = lease {
            leases::end(bench, id, lease, &mut outcome);
        }
        drop(hold);
        if let Some(places) = places {
            places.end_call(gate, &plan.resources, &mut outcome);
        }
        drop(claim);
        outcome
    }
}

/// The refusal of an unprovisioned gate: nothing can run without a configuration.
fn unprovisioned(tool: &str, workspace: &Path) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::ConfigFileNotFound,
        "This workspace has no agentic-hil configuration, so there is no bench and no permission to act under.",
    )
    .with("workspace_root", workspace.display().to_string())
    .with_next_step("Ask the operator to run `agentic-hil init` in the workspace, then call this tool again.")
    .with_remediation([
        "The operator runs `agentic-hil init` in the workspace; it writes the configuration this server needs.",
        "Then run `agentic-hil doctor` to check the bench it describes.",
    ])
    .with_do_not([
        "Do not write the configuration by hand, and do not drive the hardware another way meanwhile: no configuration means no policy, not permission.",
    ])
    .not_started(false)
}

/// The refusal of a gate started outside any project (HOME, `/`): the host session was opened
/// there, so the next step is to open it in the project.
fn outside_project(tool: &str, why: &ConfigError) -> Outcome {
    Outcome::refused(tool, ErrorType::layer(why.error_type()), why.summary())
        .with_next_step(
            "Ask the operator to open the agent session in the project directory (or start the server there), then call this tool again.",
        )
        .with_remediation(why.remediation())
        .not_started(false)
}

/// A policy refusal as an envelope. `permission_denied` is final: the next step says so.
fn refused(tool: &str, refusal: Refusal) -> Outcome {
    let mut outcome = Outcome::refused(tool, ErrorType::layer(refusal.error_type), refusal.summary);
    if let Some(device) = refusal.device {
        outcome = outcome.with("device", device);
    }
    if let Some(key) = refusal.permission {
        outcome = outcome
            .with_next_step(format!(
                "This refusal is the answer: report that `{key}` is false and stop. Only the operator can open it, \
                 at their own shell (`agentic-hil grant {key}`); do not edit the configuration and do not do this another way."
            ))
            .with("permission", key);
    }
    outcome.not_contacted()
}

/// Stages 4½ and 5: the artifact the plan names is staged (its refusal is the act's result), then
/// the work runs.
async fn stage_and_act(tool: &str, work: Work<'_>) -> Acted {
    match staging::ready(tool, work).await {
        Ok(work) => act(tool, work).await,
        Err(refused) => refused,
    }
}

/// Stage 5: run the work. Driver calls run on a blocking thread under the gate's deadline; if the
/// call is abandoned (deadline, or this future dropped), the cancel flag kills the child's group.
async fn act(tool: &str, work: Work<'_>) -> Acted {
    match work {
        // Built from its staged artifact by `staging::ready`, which every act goes through first.
        Work::Staged(..) => Acted {
            outcome: Outcome::refused(
                tool,
                ErrorType::InternalError,
                "The server reached a call's work before staging its artifact; nothing was done.",
            )
            .not_contacted(),
            contact: Some(Contact::none("the work never ran")),
        },
        // The same for local work; what it did to a session's device is not known.
        Work::Local(job) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
            .unwrap_or_else(|panic| Acted {
                outcome: Outcome::refused(
                    tool,
                    ErrorType::HardwareActionException,
                    format!(
                        "The action failed unexpectedly inside the server ({}).",
                        panic_message(panic.as_ref())
                    ),
                ),
                contact: Some(Contact::Possible),
            }),
        Work::Driver(DriverJob {
            deadline,
            if_abandoned,
            run,
        }) => {
            let cancel = CancelFlag::default();
            let _kill_on_drop = cancel.guard();
            // A caller that asked for progress hears the stages the driver reaches.
            let stages = crate::progress::driver_stages(tool);
            let task = tokio::task::spawn_blocking({
                let cancel = cancel.clone();
                move || match stages {
                    Some(stages) => ahil_job::with_stage_sink(stages, || run(cancel)),
                    None => run(cancel),
                }
            });
            let mut task = task;
            let finished = tokio::select! {
                finished = tokio::time::timeout(deadline, &mut task) => finished,
                () = crate::cancel::cancelled() => {
                    return cancelled(tool, &cancel, task, if_abandoned).await;
                }
            };
            match finished {
                Ok(Ok(acted)) => acted,
                Ok(Err(join_error)) => Acted {
                    outcome: Outcome::refused(
                        tool,
                        ErrorType::HardwareActionException,
                        format!("The driver call failed unexpectedly: {join_error}."),
                    ),
                    contact: Some(if_abandoned),
                },
                Err(_) => Acted {
                    outcome: Outcome::refused(
                        tool,
                        ErrorType::Timeout,
                        format!(
                            "The call did not finish within the gate's {} s deadline.",
                            secs(deadline)
                        ),
                    ),
                    contact: Some(if_abandoned),
                },
            }
        }
    }
}

/// How long a cancelled driver job gets to notice its killed process group and say what it did.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The client cancelled the call: the job's process group is killed, as at its deadline, and the
/// driver's own account of contact settles the state. Work that finished first stands as done.
async fn cancelled(
    tool: &str,
    cancel: &CancelFlag,
    task: tokio::task::JoinHandle<Acted>,
    if_abandoned: Contact,
) -> Acted {
    cancel.cancel();
    let contact = match tokio::time::timeout(CANCEL_GRACE, task).await {
        // Work that finished first stands as done; a job that saw the cancel and settled the
        // target itself (a debug wait that halted the core, a read whose wait the cancel ended,
        // a flash whose capture it cut) answers with its own account.
        Ok(Ok(acted))
            if acted.outcome.ok
                || acted.outcome.error_type.as_deref() == Some(ErrorType::Interrupted.as_str()) =>
        {
            return acted;
        }
        Ok(Ok(acted)) => acted.contact.unwrap_or(if_abandoned),
        _ => if_abandoned,
    };
    Acted {
        outcome: Outcome::refused(
            tool,
            ErrorType::Interrupted,
            "The client cancelled the call; its backend was stopped and its process group killed.",
        )
        .with("cancelled", true),
        contact: Some(contact),
    }
}

fn secs(duration: Duration) -> u64 {
    duration.as_secs()
}

/// Stage 6: turn what the driver knows about contact into the effect fields. Only a driver's own
/// proof makes a failure retry-safe; a possible contact leaves the state unknown for the incident
/// path.
pub fn settle(acted: Acted) -> Outcome {
    let Acted {
        mut outcome,
        contact,
    } = acted;
    match contact {
        Some(Contact::None { .. }) if !outcome.ok => outcome = outcome.not_contacted(),
        Some(Contact::None { .. }) => outcome.target_contacted = Some(false),
        Some(Contact::Made) if outcome.ok || outcome.side_effect_status.is_some() => {
            outcome.target_contacted = Some(true);
        }
        // A failure after the target answered: what it did to the board is not known.
        Some(Contact::Made) => {
            outcome.target_contacted = Some(true);
            outcome.side_effect_status = Some(SideEffectStatus::Unknown);
            outcome.hardware_state = Some(HardwareState::Unknown);
            outcome.retry_safe = Some(false);
            incident_hook(&outcome);
        }
        Some(Contact::Possible) if !outcome.ok => {
            if outcome.side_effect_status.is_none() {
                outcome.side_effect_status = Some(SideEffectStatus::Unknown);
            }
            outcome.hardware_state = Some(HardwareState::Unknown);
            outcome.retry_safe = Some(false);
            incident_hook(&outcome);
        }
        Some(Contact::Possible) | None => {}
    }
    mark_side_effect(&mut outcome);
    outcome
}

/// Seam for the incident and recovery policy of a later issue: an unknown hardware state will open an
/// incident here, which the recovery policy settles or leaves standing.
fn incident_hook(_outcome: &Outcome) {}

/// A panic's own words, when it gave a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// Stage 8: the envelope's common fields.
fn answer(
    mut outcome: Outcome,
    snapshot: &Snapshot,
    started: SystemTime,
    clock: Instant,
) -> Outcome {
    // A call that changed the configuration in force (a description reload) brings the status
    // after it; every other call gets the status taken before it ran.
    if outcome.config_status.is_none()
        && (snapshot.stale
            || outcome
                .tool
                .parse::<ToolId>()
                .is_ok_and(|id| id.gate().always_status))
    {
        outcome.config_status = Some(snapshot.status.clone());
    }
    let stale = outcome
        .config_status
        .as_ref()
        .map_or(snapshot.stale, |status| {
            matches!(
                status.get("state").and_then(Value::as_str),
                Some("changed" | "missing" | "unreadable")
            )
        });
    if stale {
        outcome.config_stale = Some(true);
    }
    outcome.config_in_force = Some(snapshot.in_force.clone());
    outcome.started_at = Some(time::iso_millis(started));
    outcome.finished_at = Some(time::now_millis());
    outcome.elapsed_ms = Some(u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX));
    if !outcome.ok {
        audit::errors::merge_advice(&mut outcome);
    }
    outcome
}

/// The tools' view of a provisioned gate, for their tests of the pipeline: `f` gets the context a
/// call of `tool` with `args` would plan under.
#[doc(hidden)]
pub fn with_context<T: Tools, R>(
    bench: &Bench<T>,
    tool: ToolId,
    args: &Value,
    f: impl FnOnce(&Context<'_, T>) -> R,
) -> Option<R> {
    let State::Provisioned(parts) = &bench.state else {
        return None;
    };
    let snapshot = Snapshot::take(&parts.loaded);
    Some(f(&parts.context(tool, args, &parts.loaded, &snapshot)))
}
