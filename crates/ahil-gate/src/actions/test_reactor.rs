//! `test_reactor_status` and `test_reactor_stop`: follow and end runs by handle, from any process,
//! through the run files under the state root. Neither touches a device; a stop is a request the run
//! reads between steps and inside waits.

use crate::ErrorType;
use crate::catalogue::ToolId;
use serde_json::{Map, Value, json};

use super::{Acted, Context, Plan, Work};
use crate::envelope::Outcome;
use crate::reactor::records::{Handle, RecordError, RunsDir, TERMINAL};

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[ToolId::TestReactorStatus, ToolId::TestReactorStop],
    )?;
    let tool = ctx.tool;
    let dir = RunsDir::new(&ctx.loaded.config.state_root);
    let handle = match ctx.args.get("run").and_then(Value::as_str) {
        None => None,
        Some(text) => Some(Handle::parse(text).ok_or_else(|| {
            Box::new(
                Outcome::refused(
                    tool,
                    ErrorType::InvalidArgument,
                    "run must be `run-` and 16 lowercase hex digits.",
                )
                .with("field", "run")
                .not_contacted(),
            )
        })?),
    };
    let work = Work::Local(Box::new(move || Acted {
        outcome: match (tool, handle) {
            (ToolId::TestReactorStop, Some(handle)) => stop(tool.name(), &dir, &handle),
            (_, Some(handle)) => status(tool.name(), &dir, &handle),
            (_, None) => list(tool.name(), &dir),
        },
        contact: None,
    }));
    // A stop is a request to a run the operator's plan started; it needs no device grant.
    Ok(Plan::read_state(work))
}

/// The record with its derived state: a non-terminal record whose lock nobody holds (read twice,
/// so a run that just ended is not mistaken) is `worker_gone`.
fn observe(dir: &RunsDir, handle: &Handle) -> Result<Option<Map<String, Value>>, RecordError> {
    let Some(record) = dir.read(handle)? else {
        return Ok(None);
    };
    let terminal = |r: &Map<String, Value>| {
        r.get("state")
            .and_then(Value::as_str)
            .is_some_and(|s| TERMINAL.contains(&s))
    };
    if terminal(&record) || !dir.lock_free(handle) {
        return Ok(Some(record));
    }
    let Some(mut again) = dir.read(handle)? else {
        return Ok(None);
    };
    if !terminal(&again) {
        again.insert("state".into(), "worker_gone".into());
    }
    Ok(Some(again))
}

fn not_found(tool: &str, handle: &Handle) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::RunNotFound,
        format!("This bench has no run {}.", handle.as_str()),
    )
    .with("run", handle.as_str())
    .with_remediation(["Call test_reactor_status without run to list this bench's runs."])
    .not_started(false)
}

fn unreadable(tool: &str, err: &RecordError) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::RunStateInvalid,
        format!("The run record cannot be read: {err}."),
    )
    .not_started(false)
}

/// The run's record and its derived state, or the refusal for a run that is missing or unreadable.
fn observed(
    tool: &str,
    dir: &RunsDir,
    handle: &Handle,
) -> Result<(Map<String, Value>, String), Box<Outcome>> {
    let record = match observe(dir, handle) {
        Ok(Some(record)) => record,
        Ok(None) => return Err(Box::new(not_found(tool, handle))),
        Err(err) => return Err(Box::new(unreadable(tool, &err))),
    };
    let state = record
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    Ok((record, state))
}

const DEAD_OWNER: &str = "The process running this plan is gone: its devices are already free. Read its last step in `progress`, check the board, then run the plan again.";

fn status(tool: &str, dir: &RunsDir, handle: &Handle) -> Outcome {
    let (record, state) = match observed(tool, dir, handle) {
        Ok(observed) => observed,
        Err(refusal) => return *refusal,
    };
    let stop_at = dir.stop_requested_at(handle);
    let summary = summary(&record, &state, stop_at.is_some());
    let mut outcome = with_record(Outcome::ok(tool, summary), &record);
    outcome.set("state", state.as_str());
    outcome.set("stop_requested_at", json!(stop_at));
    if state == "worker_gone" {
        outcome = outcome.with_next_step(DEAD_OWNER);
    }
    outcome
}

/// The record's public fields on an answer (`version` and `pid` stay private). The run's own times
/// are `run_started_at`/`run_finished_at`: `started_at`/`finished_at` time this call.
fn with_record(mut outcome: Outcome, record: &Map<String, Value>) -> Outcome {
    for (key, value) in record {
        match key.as_str() {
            "version" | "pid" | "state" => {}
            "report_path" => outcome.report_path = value.as_str().map(str::to_owned),
            "started_at" => outcome.set("run_started_at", value.clone()),
            "finished_at" => outcome.set("run_finished_at", value.clone()),
            // The run's verdict, not this call's, on an answer that itself succeeded.
            "error_type" if outcome.ok => outcome.error_type = value.as_str().map(str::to_owned),
            "error_type" => outcome.set("run_error_type", value.clone()),
            _ => outcome.set(key, value.clone()),
        }
    }
    outcome
}

fn summary(record: &Map<String, Value>, state: &str, stop_requested: bool) -> String {
    let progress = record.get("progress");
    match state {
        "finished" | "stopped" => {
            let how = if state == "stopped" {
                "was stopped on request"
            } else {
                "ended"
            };
            let verdict = if record.get("run_ok") == Some(&Value::Bool(true)) {
                "passed".to_owned()
            } else {
                let e = record
                    .get("error_type")
                    .and_then(Value::as_str)
                    .unwrap_or("failed");
                format!("did not pass ({e})")
            };
            format!("This run {how} and {verdict}; its own report is at canonical_report_path.")
        }
        "worker_gone" => {
            "This run's process is gone before it ended; it will not finish.".to_owned()
        }
        _ => {
            let mut text = match progress {
                Some(p) => {
                    let mut t = format!(
                        "This run is on step {} ({})",
                        p["step"],
                        p["action"].as_str().unwrap_or("?")
                    );
                    if let Some(i) = p.get("iteration") {
                        t = format!("{t}, iteration {i}");
                    }
                    t.push('.');
                    t
                }
                None => format!("This run is {state}."),
            };
            if stop_requested {
                text.push_str(" A stop has been requested; it ends after the current step.");
            }
            text
        }
    }
}

fn stop(tool: &str, dir: &RunsDir, handle: &Handle) -> Outcome {
    let (record, state) = match observed(tool, dir, handle) {
        Ok(observed) => observed,
        Err(refusal) => return *refusal,
    };
    if TERMINAL.contains(&state.as_str()) {
        return with_record(
            Outcome::ok(tool, "This run had already ended; nothing to stop."),
            &record,
        )
        .with("stop_requested", false)
        .with("state", state);
    }
    if state == "worker_gone" {
        return with_record(
            Outcome::refused(
                tool,
                ErrorType::RunWorkerGone,
                "This run's process is gone; there is nothing left to stop.",
            ),
            &record,
        )
        .with("state", state)
        .with_next_step(DEAD_OWNER)
        .not_started(false);
    }
    match dir.request_stop(handle) {
        Ok(at) => with_record(
            Outcome::ok(
                tool,
                "The run was asked to stop; it finishes its current step, closes its devices and writes its report.",
            ),
            &record,
        )
        .with("stop_requested", true)
            .with("stop_requested_at", at)
            .with("state", state),
        Err(err) => unreadable(tool, &err),
    }
}

fn list(tool: &str, dir: &RunsDir) -> Outcome {
    let mut runs = Vec::new();
    let mut active = Vec::new();
    for (handle, _) in dir.handles() {
        let Ok(Some(record)) = observe(dir, &handle) else {
            continue;
        };
        let state = record.get("state").cloned().unwrap_or(Value::Null);
        if matches!(state.as_str(), Some("starting" | "running")) {
            active.push(json!(handle.as_str()));
        }
        runs.push(json!({
            "run": handle.as_str(),
            "state": state,
            "name": record.get("name"),
            "started_at": record.get("started_at"),
            "updated_at": record.get("updated_at"),
        }));
    }
    // Newest first by start: a record's file time moves with every progress write.
    runs.sort_by(|a, b| b["started_at"].as_str().cmp(&a["started_at"].as_str()));
    Outcome::ok(
        tool,
        format!(
            "{} run(s) on this bench, {} active.",
            runs.len(),
            active.len()
        ),
    )
    .with("runs", Value::Array(runs))
    .with("active_runs", Value::Array(active))
}
