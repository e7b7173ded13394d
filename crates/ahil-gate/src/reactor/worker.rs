//! Detached runs: a worker process of this same binary
//! (`agentic-hil test-reactor --test-config P --wait-s W --run-handle H`) in its own process group,
//! its output in `<handle>.log`. The caller answers once the worker holds the devices (its record
//! leaves `starting`), or with the verdict if it already ended.

use crate::ErrorType;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::records::{Handle, RunsDir, TERMINAL};
use super::run;
use crate::Bench;
use crate::envelope::Outcome;

const TOOL: &str = "test_reactor_start";
/// How long a worker may take to hold its devices, on top of its own device wait.
const READY: Duration = Duration::from_secs(30);
/// A worker that exited and left no record this long after is reported failed.
const NO_RECORD_GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(50);

/// Starts a detached run and answers once it holds its devices.
pub async fn start_detached(bench: &Bench, plan_path: Option<String>, wait: Duration) -> Outcome {
    // The plan is loaded here too, so a bad plan is answered at once, not from a worker's log.
    let (view, plan) = match run::prepare(bench, plan_path.as_deref(), TOOL) {
        Ok(ready) => ready,
        Err(refusal) => return *refusal,
    };
    // Preflight here too: a plan that cannot run on this bench is the call's refusal, every time,
    // not a race between the worker's refusal and the wait for it to report `running`.
    if let Err(refused) = run::preflight(&view, &plan) {
        let mut refused = *refused;
        TOOL.clone_into(&mut refused.tool);
        return refused;
    }
    let dir = RunsDir::new(&view.loaded().config.state_root);
    let handle = Handle::mint();
    let log = match open_log(&dir, &handle) {
        Ok(log) => log,
        Err(err) => return runs_unwritable(&err),
    };
    let child = match spawn(
        log,
        &handle,
        view.loaded().workspace.as_path(),
        run::plan_arg(&plan),
        wait,
    ) {
        Ok(child) => child,
        Err(err) => {
            return Outcome::refused(
                TOOL,
                ErrorType::RunWorkerFailed,
                format!("The worker could not be started ({:?}).", err.kind()),
            )
            .not_started(true);
        }
    };
    let deadline = READY + wait.min(Duration::from_mins(15));
    let dir2 = dir.clone();
    let handle2 = handle.clone();
    let seen = tokio::task::spawn_blocking(move || follow(&dir2, &handle2, child, deadline))
        .await
        .unwrap_or(Seen::Failed { exit_code: None });
    match seen {
        Seen::Record(record) => answer(&handle, &record, &plan.name, &plan.display_path),
        Seen::Failed { exit_code } => {
            let log = std::fs::read_to_string(dir.log_path(&handle)).unwrap_or_default();
            let tail: String = log
                .chars()
                .rev()
                .take(4000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Outcome::refused(
                TOOL,
                ErrorType::RunWorkerFailed,
                "The run's worker ended without registering the run.",
            )
            .with("run", handle.as_str())
            .with("exit_code", json!(exit_code))
            .with("worker_output", tail)
        }
        Seen::Unresponsive => {
            let _ = dir.request_stop(&handle);
            Outcome::refused(
                TOOL,
                ErrorType::RunWorkerUnresponsive,
                "The run's worker did not take its devices in time; a stop was requested.",
            )
            .with("run", handle.as_str())
            .with_next_step("Follow it with test_reactor_status; it ends before any step once it reads the stop.")
        }
    }
}

/// The detached worker's log, under the runs directory: the first thing a detached run writes.
fn open_log(dir: &RunsDir, handle: &Handle) -> std::io::Result<std::fs::File> {
    dir.ensure()?;
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.log_path(handle))
}

/// The runs directory refused the log: no worker was started and nothing was taken. Without a
/// record nobody could watch or stop the run by its handle.
fn runs_unwritable(err: &std::io::Error) -> Outcome {
    let mut outcome = Outcome::refused(
        TOOL,
        ErrorType::RunStateUnwritable,
        format!(
            "The detached run's log could not be written under the runs directory ({:?}), so no worker was started and nothing was touched.",
            err.kind()
        ),
    )
    .with("runs_directory", run::RUNS_DIRECTORY);
    if let Some(errno) = err.raw_os_error() {
        outcome.set("errno", errno);
    }
    outcome.not_started(true)
}

fn spawn(
    log: std::fs::File,
    handle: &Handle,
    workspace: &std::path::Path,
    plan: &std::path::Path,
    wait: Duration,
) -> std::io::Result<Child> {
    ahil_drivers::process::isolate_own_binary(&mut Command::new(std::env::current_exe()?))
        .arg("test-reactor")
        .arg("--test-config")
        .arg(plan)
        .arg("--wait-s")
        .arg(wait.as_secs_f64().to_string())
        .arg("--run-handle")
        .arg(handle.as_str())
        .arg("--json")
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own group: a signal to the server's group (a terminal's Ctrl-C) does not end the run.
        .process_group(0)
        .spawn()
}

enum Seen {
    Record(Map<String, Value>),
    Failed { exit_code: Option<i32> },
    Unresponsive,
}

/// Polls the record until it leaves `starting`; the child is reaped on a thread of its own after.
fn follow(dir: &RunsDir, handle: &Handle, mut child: Child, deadline: Duration) -> Seen {
    let started = Instant::now();
    let mut exited: Option<(Instant, Option<i32>)> = None;
    let seen = loop {
        if let Ok(Some(record)) = dir.read(handle)
            && record.get("state").and_then(Value::as_str) != Some("starting")
        {
            break Seen::Record(record);
        }
        if exited.is_none()
            && let Ok(Some(status)) = child.try_wait()
        {
            exited = Some((Instant::now(), status.code()));
        }
        if let Some((at, code)) = exited
            && at.elapsed() > NO_RECORD_GRACE
        {
            break match dir.read(handle) {
                Ok(Some(record)) => Seen::Record(record),
                _ => Seen::Failed { exit_code: code },
            };
        }
        if started.elapsed() > deadline {
            break Seen::Unresponsive;
        }
        std::thread::sleep(POLL);
    };
    if exited.is_none() {
        std::thread::spawn(move || child.wait());
    }
    seen
}

fn answer(handle: &Handle, record: &Map<String, Value>, name: &str, plan: &str) -> Outcome {
    let state = record
        .get("state")
        .and_then(Value::as_str)
        .unwrap_or("running");
    let field = |k: &str| record.get(k).cloned().unwrap_or(Value::Null);
    if TERMINAL.contains(&state) {
        let run_ok = record
            .get("run_ok")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut outcome = if run_ok {
            Outcome::ok(TOOL, "The detached run already ended and passed.")
        } else {
            let error_type = record
                .get("error_type")
                .and_then(Value::as_str)
                .unwrap_or("run_failed");
            Outcome::refused(
                TOOL,
                ErrorType::layer(error_type),
                "The detached run already ended and did not pass.",
            )
        };
        for key in [
            "run",
            "state",
            "run_ok",
            "failed_step",
            "stopped_after_step",
            "name",
            "test_config_path",
        ] {
            if let Some(v) = record.get(key) {
                outcome.set(key, v.clone());
            }
        }
        outcome.set("run_finished_at", field("finished_at"));
        outcome.report_path = record
            .get("report_path")
            .and_then(Value::as_str)
            .map(str::to_owned);
        outcome.set("detached", true);
        return outcome;
    }
    let mut outcome = Outcome::ok(
        TOOL,
        format!("The plan runs detached as {}; follow it with test_reactor_status and end it with test_reactor_stop.", handle.as_str()),
    )
    .with("run", handle.as_str())
    .with("state", state)
    .with("detached", true)
    .with("name", name)
    .with("test_config_path", plan)
    .with("run_started_at", field("started_at"));
    outcome.report_path = record
        .get("report_path")
        .and_then(Value::as_str)
        .map(str::to_owned);
    outcome
}
