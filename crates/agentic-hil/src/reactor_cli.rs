//! `test-reactor`, `test-reactor-status`, `test-reactor-stop`: the operator's and CI's way to run a
//! plan through the gate. `--run-handle` is the hidden form a detached run's worker is started with.

use ahil_gate::catalogue::ToolId;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ahil_config::Environment;
use ahil_gate::reactor::{self, Handle, Request};
use ahil_gate::{Bench, Outcome};
use serde_json::{Value, json};

/// `test-reactor`'s options.
pub struct RunOptions<'a> {
    pub test_config: Option<&'a Path>,
    pub wait_s: f64,
    pub detach: bool,
    pub junit_xml: Option<&'a Path>,
    pub run_handle: Option<&'a str>,
}

fn refusal(tool: &str, error_type: &str, summary: &str, field: Option<&str>) -> Value {
    let mut doc = json!({"ok": false, "tool": tool, "error_type": error_type, "summary": summary});
    if let Some(field) = field {
        doc["field"] = json!(field);
    }
    if let Some(entry) = ahil_gate::audit::errors::lookup(error_type) {
        doc["remediation"] = json!(entry.remediation);
    }
    doc
}

fn bench(workspace: &Path, env: &Environment, tool: &str, frontend: &str) -> Result<Bench, Value> {
    match crate::logs::load_config(workspace, env) {
        Ok(loaded) => Ok(Bench::provisioned_as(loaded, env.clone(), frontend)),
        Err(err) => {
            let mut doc = refusal(tool, err.error_type(), &err.summary(), None);
            doc["remediation"] = json!(err.remediation());
            Err(doc)
        }
    }
}

/// The outcome as a document; the terminal's output step (`main::emit`) scrubs it.
fn shown(outcome: &Outcome) -> Value {
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// `agentic-hil test-reactor`.
pub fn run(workspace: &Path, env: &Environment, options: &RunOptions<'_>) -> anyhow::Result<Value> {
    const TOOL: ToolId = ToolId::TestReactorRun;
    if options.detach && options.junit_xml.is_some() {
        return Ok(refusal(
            TOOL.name(),
            "junit_xml_requires_synchronous_run",
            "--junit-xml needs the run's end, so it cannot be combined with --detach.",
            Some("junit_xml"),
        ));
    }
    if !(0.0..=900.0).contains(&options.wait_s) || options.wait_s.is_nan() {
        return Ok(refusal(
            TOOL.name(),
            "invalid_argument",
            "--wait-s must be between 0 and 900 seconds.",
            Some("wait_s"),
        ));
    }
    let handle = match options.run_handle {
        None => None,
        Some(text) => match Handle::parse(text) {
            Some(handle) => Some(handle),
            None => {
                return Ok(refusal(
                    TOOL.name(),
                    "invalid_argument",
                    "--run-handle must be `run-` and 16 lowercase hex digits.",
                    Some("run"),
                ));
            }
        },
    };
    let frontend = if handle.is_some() {
        "test-reactor"
    } else {
        "operator-cli"
    };
    let bench = match bench(workspace, env, TOOL.name(), frontend) {
        Ok(bench) => bench,
        Err(doc) => return Ok(doc),
    };
    let plan_path = options.test_config.map(|p| p.display().to_string());
    let wait = Duration::from_secs_f64(options.wait_s);
    let outcome = runtime()?.block_on(async {
        if options.detach {
            reactor::start_detached(&bench, plan_path, wait).await
        } else {
            reactor::execute(
                &bench,
                Request {
                    plan_path,
                    wait,
                    detached: handle.is_some(),
                    handle,
                    junit: options.junit_xml.map(PathBuf::from),
                    progress: None,
                },
            )
            .await
        }
    });
    Ok(shown(&outcome))
}

/// `agentic-hil test-reactor-status` and `test-reactor-stop`: the gate's own tools.
pub fn lifecycle(
    workspace: &Path,
    env: &Environment,
    tool: &str,
    run: Option<&str>,
) -> anyhow::Result<Value> {
    let bench = match bench(workspace, env, tool, "operator-cli") {
        Ok(bench) => bench,
        Err(doc) => return Ok(doc),
    };
    let args = run.map_or_else(|| json!({}), |run| json!({"run": run}));
    let outcome = runtime()?.block_on(bench.call(tool, args));
    Ok(shown(&outcome))
}
