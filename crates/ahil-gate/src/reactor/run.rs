//! One run, from registration to its report: load and preflight the plan, register the handle,
//! declare every device the plan names (all or none) and hold them to the end, run the steps until
//! the first failure or a stop, close every session the run opened, release the devices, write the
//! report and the terminal record.

use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ahil_config::plan::{LoadedPlan, Step, load_plan};
use ahil_config::time::now_millis;
use ahil_drivers::process::CancelFlag;
use serde_json::{Map, Value, json};

use super::View;
use super::preflight;
use super::records::{Handle, RecordError, Registration, RunsDir};
use super::report;
use super::steps::{Done, Exec, Position, ProgressSink, record};
use crate::Bench;
use crate::config_edit::layer_refusal;
use crate::envelope::{Outcome, overall_success};
use crate::ownership::runs;

/// The tool name the run's result and report carry.
pub const TOOL: ToolId = ToolId::TestReactorRun;

/// How a run was asked for.
#[derive(Default)]
pub struct Request {
    /// As given (workspace-relative or absolute); `None` for `.agentic-hil/testconfig.yaml`.
    pub plan_path: Option<String>,
    /// How long to wait for busy devices (0 over MCP).
    pub wait: Duration,
    /// A detached worker runs under the handle its parent minted.
    pub handle: Option<Handle>,
    pub detached: bool,
    pub junit: Option<PathBuf>,
    pub progress: Option<ProgressSink>,
}

/// The refusal when the gate's own bench run is open: a plan declares its own devices.
pub fn bench_run_open(view: &View<'_>) -> Option<Outcome> {
    let run = view.ownership.runs.current()?;
    Some(
        Outcome::refused(
            TOOL,
            ErrorType::RunAlreadyActive,
            "A bench run is open on this server; a test plan declares and holds its own devices.",
        )
        .with("declared_devices", json!(run.keys()))
        .with_remediation(["Call bench_run_stop, then run the plan."])
        .not_started(true),
    )
}

/// The view of the bench and the loaded plan a run starts from, or the refusal before any hardware:
/// no configuration (answered as `tool`: a detached start names itself), a bench run already open,
/// or a plan that does not load.
pub fn prepare<'b>(
    bench: &'b Bench,
    plan_path: Option<&str>,
    tool: &str,
) -> Result<(View<'b>, LoadedPlan), Box<Outcome>> {
    let Some(view) = bench.reactor_view() else {
        return Err(Box::new(Outcome::refused(
            tool,
            ErrorType::ConfigFileNotFound,
            "There is no configuration to run a plan under.",
        )));
    };
    if let Some(refusal) = bench_run_open(&view) {
        return Err(Box::new(refusal));
    }
    let plan = load(&view, plan_path)?;
    Ok((view, plan))
}

/// Loads the plan named by `plan_path`, or the refusal (`test_config_*`) before any hardware.
pub fn load(view: &View<'_>, plan_path: Option<&str>) -> Result<LoadedPlan, Box<Outcome>> {
    let workspace = &view.loaded().workspace;
    let path = plan_path.map_or_else(
        || ahil_config::plan::default_plan_path(workspace),
        PathBuf::from,
    );
    load_plan(workspace, &path).map_err(|err| {
        let outcome = layer_refusal(TOOL, err.error_type(), err.summary(), err.details());
        Box::new(
            outcome
                .with_remediation(err.remediation())
                .not_started(false),
        )
    })
}

fn refusal_from(err: &RecordError) -> Outcome {
    match err {
        RecordError::Held(handle) => Outcome::refused(
            TOOL,
            ErrorType::RunAlreadyActive,
            format!("Another process is already running {handle}."),
        )
        .with("run", handle.as_str())
        .not_started(true),
        RecordError::Io(kind) => Outcome::refused(
            TOOL,
            ErrorType::RunStateUnwritable,
            format!("The run could not be registered: the runs directory refused a write ({kind:?}), so no device was taken."),
        )
        .with("runs_directory", RUNS_DIRECTORY)
        .not_started(true),
        other @ RecordError::Invalid(_) => Outcome::refused(
            TOOL,
            ErrorType::AuditUnavailable,
            format!("The run could not be registered: {other}."),
        )
        .not_started(false),
    }
}

/// Where run records and detached workers' logs are kept, as results name it.
pub const RUNS_DIRECTORY: &str = "<state_root>/coordination/runs";

/// Runs a plan attached: answers when it ended.
pub async fn execute(bench: &Bench, request: Request) -> Outcome {
    let (view, plan) = match prepare(bench, request.plan_path.as_deref(), TOOL.name()) {
        Ok(ready) => ready,
        Err(refusal) => return *refusal,
    };
    let handle = request.handle.clone().unwrap_or_else(Handle::mint);
    let mut base = Map::new();
    base.insert("version".into(), json!(1));
    base.insert("run".into(), handle.as_str().into());
    base.insert("name".into(), plan.name.clone().into());
    base.insert("test_config_path".into(), plan.display_path.clone().into());
    // report_path is the workspace mirror the next run overwrites; the run's own copy is canonical.
    base.insert(
        "report_path".into(),
        format!("{}/last-report.json", view.audit.reports_rel()).into(),
    );
    base.insert(
        "canonical_report_path".into(),
        report::canonical_path(&view, handle.as_str()).into(),
    );
    base.insert("detached".into(), request.detached.into());
    base.insert("pid".into(), std::process::id().into());
    base.insert("started_at".into(), now_millis().into());
    let dir = RunsDir::new(&view.loaded().config.state_root);
    let mut reg = match dir.register(&handle, base) {
        Ok(reg) => reg,
        Err(err) => return refusal_from(&err),
    };
    let snapshot = crate::snapshot::Snapshot::take(view.loaded());
    let mut outcome = drive(bench, &view, &plan, &mut reg, &request).await;
    outcome.set("run", handle.as_str());
    outcome.set("test_config_sha256", plan.sha256.as_str());
    outcome.config_in_force = Some(snapshot.in_force.clone());
    // The report is written (fsynced, renamed into place) before the record turns terminal: a
    // client that polls the record and reads the report the moment it sees `finished` must find
    // this run's report whole, never none or the previous run's.
    report::write(&view, &mut outcome, handle.as_str());
    if let Some(target) = &request.junit {
        let planned: Vec<&str> = plan.plan.steps.iter().map(Step::action).collect();
        report::write_junit(&view, &mut outcome, target, &planned);
    }
    let state = if outcome.detail("stopped") == Some(&Value::Bool(true)) {
        "stopped"
    } else {
        "finished"
    };
    reg.finish(state, report::verdict(&outcome));
    outcome
}

/// The plan checked against this bench before anything is locked or touched; the run's refusal
/// when it does not fit (a device it names is missing or of another kind, a grant it needs is
/// closed, a path or symbol it names is refused).
pub fn preflight(view: &View<'_>, plan: &LoadedPlan) -> Result<preflight::Prepared, Box<Outcome>> {
    preflight::check(view.loaded(), &plan.plan).map_err(|invalid| {
        let mut outcome = base(plan);
        outcome.ok = false;
        outcome.error_type = Some(invalid.error_type.clone());
        outcome.summary = format!(
            "The plan was refused before any step ran: {}",
            invalid.summary
        );
        Box::new(no_step(
            outcome
                .with("validation_error", invalid.to_value())
                .with("failed_step", invalid.step),
        ))
    })
}

/// The first part of the result every run has.
fn base(plan: &LoadedPlan) -> Outcome {
    Outcome::ok(TOOL, "")
        .with("name", plan.name.as_str())
        .with("test_config_path", plan.display_path.as_str())
}

async fn drive(
    bench: &Bench,
    view: &View<'_>,
    plan: &LoadedPlan,
    reg: &mut Registration,
    request: &Request,
) -> Outcome {
    // Preflight: nothing is locked or touched until the whole plan fits this bench.
    let prepared = match preflight(view, plan) {
        Ok(prepared) => prepared,
        Err(refused) => return *refused,
    };
    let devices = match runs::resolve(view.loaded(), TOOL.name(), &prepared.selectors) {
        Ok(devices) => devices,
        Err(refusal) => return no_step(merge(base(plan), *refusal, "No step ran.")),
    };
    let ownership = Arc::clone(view.ownership);
    let label = plan.name.clone();
    let wait = request.wait;
    // Raised when this future is dropped mid-wait (its call cancelled): the wait then takes nothing.
    let cancel = CancelFlag::default();
    let _give_up = cancel.guard();
    let held = tokio::task::spawn_blocking(move || {
        ownership.runs.start(
            &ownership.locks,
            TOOL.name(),
            devices,
            Some(&label),
            wait,
            &cancel,
        )
    })
    .await
    .unwrap_or_else(|err| {
        Outcome::refused(
            TOOL,
            ErrorType::HardwareActionException,
            format!("Declaring the devices failed: {err}."),
        )
    });
    if !held.ok {
        return no_step(merge(base(plan), held, "No step ran."));
    }
    let declared = held
        .detail("declared_devices")
        .cloned()
        .unwrap_or(Value::Null);
    reg.set_state("running");

    let mut exec = Exec::new(bench, reg, request.progress.clone(), plan.plan.steps.len());
    let mut steps: Vec<Value> = Vec::new();
    let mut failed: Option<(usize, Done)> = None;
    let mut stopped_after: Option<usize> = None;
    for (i, step) in plan.plan.steps.iter().enumerate() {
        if exec.stop_requested() {
            stopped_after = Some(i);
            break;
        }
        let clock = Instant::now();
        let done = exec.run(step, Position::top(i + 1)).await;
        steps.push(record(i + 1, step, &done, clock));
        if !done.ok {
            failed = Some((i + 1, done));
            break;
        }
        if exec.stopped {
            stopped_after = Some(i + 1);
            break;
        }
    }
    // The gate's own work: a client's cancel that stopped the plan must not interrupt its closing.
    let (cleanup, cleanup_errors) = crate::cancel::shielded(cleanup(&mut exec)).await;
    let markers = containment(&steps);
    // Recovery runs while the run still holds its devices (and after its sessions closed).
    let recovery = match &failed {
        Some((_, done)) => Some(
            report::recover_after_failed_run(&exec, view, &declared, done.error_type.as_deref())
                .await,
        ),
        None => None,
    };
    // Its sessions are closed by now, so no lease is left to name.
    view.ownership
        .runs
        .stop(&view.ownership.locks, TOOL.name(), |_| Vec::new());

    let mut outcome = base(plan)
        .with("declared_devices", declared)
        .with("steps", Value::Array(steps))
        .with("cleanup", Value::Array(cleanup))
        .with("cleanup_errors", json!(cleanup_errors));
    outcome.cleanup_ok = Some(cleanup_errors.is_empty());
    for (key, value) in markers {
        match key.as_str() {
            "cleanup_required" => outcome.cleanup_required = Some(true),
            "quarantined" => outcome.quarantined = Some(true),
            "hardware_state" => {
                outcome.hardware_state = Some(crate::envelope::HardwareState::Unknown);
            }
            _ => outcome.set(&key, value),
        }
    }
    let total = plan.plan.steps.len();
    if let Some((index, done)) = failed {
        let step_error = done
            .error_type
            .clone()
            .unwrap_or_else(|| "step_failed".into());
        outcome.ok = false;
        outcome.error_type = Some(step_error.clone());
        outcome.summary = format!(
            "Step {index} of {total} ({}) failed with {step_error}; later steps did not run.",
            plan.plan.steps[index - 1].action()
        );
        outcome.set("failed_step", index);
        outcome.set("step_error_type", step_error);
        if let Some(recovery) = recovery {
            outcome.set("recovery", recovery);
        }
    } else if let Some(after) = stopped_after {
        outcome.ok = false;
        outcome.set_error(ErrorType::RunStopped);
        outcome.summary = format!(
            "The run was stopped on request after step {after} of {total}; its devices were closed."
        );
        outcome.set("stopped", true);
        outcome.set("stopped_after_step", after);
    } else {
        outcome.summary = format!("All {total} steps passed.");
    }
    if !cleanup_errors.is_empty() {
        outcome.ok = false;
        outcome.set_error(ErrorType::CleanupFailed);
        outcome
            .summary
            .push_str(" Closing a session at the end failed; see cleanup_errors.");
    }
    outcome
}

/// A run that ended before step 1.
fn no_step(mut outcome: Outcome) -> Outcome {
    outcome.set("steps", json!([]));
    outcome.set("cleanup", json!([]));
    outcome.set("cleanup_errors", json!([]));
    outcome.cleanup_ok = Some(true);
    outcome.ok = false;
    let retry_safe = outcome.error_type.as_deref() == Some("device_busy");
    outcome.not_started(retry_safe)
}

/// The reactor's result carrying a refusal's fields (device_busy's holder, unknown_device's list).
fn merge(mut into: Outcome, refusal: Outcome, suffix: &str) -> Outcome {
    into.ok = false;
    into.error_type.clone_from(&refusal.error_type);
    into.summary = format!("{} {suffix}", refusal.summary);
    into.remediation.clone_from(&refusal.remediation);
    for (key, value) in refusal.details {
        into.set(&key, value);
    }
    into
}

/// Closes what the run opened: the debug session first, then the RTT session, serial lines, CAN
/// buses, last opened first within a kind.
async fn cleanup(exec: &mut Exec<'_>) -> (Vec<Value>, Vec<Value>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    let mut close = |key: &str, name: &str, action: &str, outcome: Outcome| {
        let ok = overall_success(&outcome);
        let result = outcome.to_value();
        if !ok {
            errors.push(json!({key: name, "action": action, "error_type": outcome.error_type, "summary": outcome.summary}));
        }
        entries.push(json!({key: name, "action": action, "result": result}));
    };
    if let Some(debugger) = exec.opened.debug.take() {
        let outcome = exec.call("debug_stop_session", json!({})).await;
        close("debugger", &debugger, "debug_stop", outcome);
    }
    if let Some(debugger) = exec.opened.rtt.take() {
        let outcome = exec.call("rtt_session_stop", json!({})).await;
        close("debugger", &debugger, "rtt_stop", outcome);
    }
    for port in std::mem::take(&mut exec.opened.uarts).iter().rev() {
        let outcome = exec
            .call("com_session_stop", json!({"port_id": port}))
            .await;
        close("port_id", port, "uart_close", outcome);
    }
    for (bus, participant) in std::mem::take(&mut exec.opened.cans).iter().rev() {
        let args = super::steps::bus_args(bus, participant.as_ref(), json!({}));
        let outcome = exec.call("can_session_stop", args).await;
        close("bus_id", bus, "can_close", outcome);
    }
    (entries, errors)
}

/// Containment markers any step result carried, raised to the run's result.
fn containment(steps: &[Value]) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut visit = |result: &Value| {
        for key in ["cleanup_required", "quarantined"] {
            if result[key] == Value::Bool(true) {
                found.push((key.to_owned(), Value::Bool(true)));
            }
        }
        if result["hardware_state"] == "unknown" {
            found.push(("hardware_state".to_owned(), "unknown".into()));
        }
    };
    for step in steps {
        visit(&step["result"]);
        for iteration in step["iterations"].as_array().into_iter().flatten() {
            for nested in iteration["steps"].as_array().into_iter().flatten() {
                visit(&nested["result"]);
            }
        }
    }
    found.dedup();
    found
}

/// The plan's path as the worker command line takes it.
pub fn plan_arg(plan: &LoadedPlan) -> &Path {
    &plan.path
}
