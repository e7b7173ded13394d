//! `report-state-repair` and `run-evidence`: the two operator commands over the audit trail.

use ahil_gate::ErrorType;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use ahil_config::{Environment, absolute_lexical};
use ahil_gate::audit::{self, Audit};
use ahil_gate::fsio;
use ahil_gate::fsio::{WriteError, write_beneath};
use serde_json::{Map, Value, json};

fn refusal(tool: &str, error_type: &str, summary: impl Into<String>) -> Value {
    let summary: String = summary.into();
    let mut doc = json!({"ok": false, "tool": tool, "error_type": error_type, "summary": summary});
    if let Some(entry) = audit::errors::lookup(error_type) {
        doc["remediation"] = json!(entry.remediation);
    }
    doc
}

/// `agentic-hil report-state-repair`: moves a damaged report state aside (every byte kept) and starts
/// a fresh one; a healthy state is left alone.
pub fn report_state_repair(workspace: &Path, env: &Environment) -> Value {
    const TOOL: &str = "report_state_repair";
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        Err(err) => return refusal(TOOL, err.error_type(), err.summary()),
    };
    match Audit::for_config(&loaded).repair_report_state() {
        Ok(mut doc) => {
            doc["tool"] = TOOL.into();
            doc
        }
        Err(err) => {
            let error_type = match err.error_type() {
                ErrorType::UnsafeConfiguredPath => "unsafe_configured_path",
                _ => "report_unreadable",
            };
            refusal(
                TOOL,
                error_type,
                format!("The report state could not be repaired: {err}."),
            )
        }
    }
}

/// Keys that identify a machine or a person's bench rather than describe the run.
const IDENTITY_KEYS: &[&str] = &[
    "probe_id",
    "serial_number",
    "serial",
    "device",
    "device_path",
    "executable",
    "resources",
    "resource",
    "lock_key",
    "holder",
    "config_path",
    "workspace_root",
    "state_root",
    "vid_pid",
];

/// Strips identities from a summary: identity keys dropped, absolute paths outside the workspace
/// replaced, lock keys (`probe:…`, `physical:…`) replaced, and the usual redaction applied.
fn strip_identities(value: &Value, workspace: &Path) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !IDENTITY_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), strip_identities(v, workspace)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| strip_identities(v, workspace))
                .collect(),
        ),
        Value::String(s) if s.starts_with('/') => Path::new(s).strip_prefix(workspace).map_or_else(
            |_| Value::String("<outside workspace>".into()),
            |rest| rest.display().to_string().into(),
        ),
        Value::String(s)
            if ["probe:", "probe-exe:", "physical:", "com:", "can:"]
                .iter()
                .any(|p| s.starts_with(p)) =>
        {
            Value::String("<lock key>".into())
        }
        other => other.clone(),
    }
}

/// Every `log_path` the report names, at any depth, in order, once each.
fn log_paths(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match item {
                    Value::String(path) if key == "log_path" && !out.contains(path) => {
                        out.push(path.clone());
                    }
                    _ => log_paths(item, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| log_paths(i, out)),
        _ => {}
    }
}

/// A workspace-relative path without `..`, or `None`.
fn inside(workspace: &Path, rel: &str) -> Option<PathBuf> {
    let path = Path::new(rel);
    let rest = path.strip_prefix(workspace).unwrap_or(path);
    if rest.components().all(|c| matches!(c, Component::Normal(_))) {
        Some(workspace.join(rest))
    } else {
        None
    }
}

fn steps(report: &Value) -> Vec<Value> {
    report
        .get("steps")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .enumerate()
                .map(|(i, step)| {
                    // A run report's step keeps its verdict under `result`, beside the `action`;
                    // a flat step (an older or hand-written report) keeps it on the step itself.
                    let result = step.get("result").filter(|r| r.is_object()).unwrap_or(step);
                    let pick = |key: &str| {
                        step.get(key)
                            .or_else(|| result.get(key))
                            .cloned()
                            .unwrap_or(Value::Null)
                    };
                    let name = ["name", "action", "tool"]
                        .into_iter()
                        .map(pick)
                        .find(|v| !v.is_null())
                        .unwrap_or(Value::Null);
                    json!({
                        "index": i,
                        "name": name,
                        "ok": pick("ok"),
                        "error_type": pick("error_type"),
                        "summary": pick("summary"),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The run's verdict as the reference names it: `success`, `refused` (no step ran) or `failure`.
fn outcome(report: &Value, summary: &Value) -> &'static str {
    if summary["overall_success"] == true {
        "success"
    } else if report["steps"].as_array().is_none_or(Vec::is_empty) {
        "refused"
    } else {
        "failure"
    }
}

fn markdown(summary: &Value) -> String {
    let verdict = if summary["overall_success"] == true {
        "PASS"
    } else {
        "FAIL"
    };
    let text = |key: &str| {
        summary
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('|', "\\|")
    };
    let mut md = format!("## agentic-hil run: {verdict}\n\n{}\n\n", text("summary"));
    if let Some(error) = summary.get("error_type").and_then(Value::as_str) {
        let _ = writeln!(md, "Error type: `{error}`\n");
    }
    let steps = summary["steps"].as_array().cloned().unwrap_or_default();
    if !steps.is_empty() {
        md.push_str("| # | step | result | error |\n|---|---|---|---|\n");
        for step in steps {
            let cell = |k: &str| {
                step.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .replace('|', "\\|")
            };
            let result = if step["ok"] == true { "ok" } else { "failed" };
            let _ = writeln!(
                md,
                "| {} | {} | {result} | {} |",
                step["index"],
                cell("name"),
                cell("error_type")
            );
        }
        md.push('\n');
    }
    if let Some(logs) = summary["logs"].as_array().filter(|l| !l.is_empty()) {
        md.push_str("Logs: ");
        let names: Vec<_> = logs
            .iter()
            .filter_map(Value::as_str)
            .map(|l| format!("`logs/{l}`"))
            .collect();
        md.push_str(&names.join(", "));
        md.push('\n');
    }
    md
}

/// Where run-evidence writes. A directory inside the workspace is the agent's to shape (a folder on
/// the way may be a link it planted), so files there are written beneath the workspace without
/// following a link; a directory the operator named elsewhere is written by its path.
struct Out<'a> {
    workspace: &'a Path,
    dir: PathBuf,
}

impl<'a> Out<'a> {
    fn new(workspace: &'a Path, out_dir: &Path) -> Self {
        Self {
            workspace,
            dir: absolute_lexical(out_dir, workspace),
        }
    }

    /// Replaces `rel` (below the output directory) with `bytes`, creating folders on the way.
    fn write(&self, rel: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        let path = self.dir.join(rel);
        match path.strip_prefix(self.workspace) {
            Ok(inside) => write_beneath(self.workspace, inside, bytes, || {}),
            Err(_) => path
                .parent()
                .map_or(Ok(()), |dir| fsio::create_dir_all_private(dir, 0o755))
                .and_then(|()| fsio::write_atomic(&path, bytes, 0o644))
                .map_err(WriteError::Io),
        }
    }
}

/// The report's bytes. One inside the workspace is the agent's file: read without following a
/// link and only as a single-link regular file, so a link to a file outside or a FIFO (which would
/// hold the CI job forever) is refused; one the operator named elsewhere is read by its path.
fn read_report(workspace: &Path, report_path: &Path) -> std::io::Result<Vec<u8>> {
    let path = absolute_lexical(report_path, workspace);
    if !path.starts_with(workspace) {
        return std::fs::read(path);
    }
    match audit::safe::read(workspace, &path) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(std::io::ErrorKind::NotFound.into()),
        Err(err) => Err(std::io::Error::other(err.to_string())),
    }
}

/// The refusal of a write to the output directory: a link in the workspace, or what the kernel said.
fn out_refusal(err: &WriteError, what: &str) -> Value {
    const TOOL: &str = "run_evidence";
    match err {
        WriteError::Link(at) => refusal(
            TOOL,
            "unsafe_configured_path",
            format!("{what}: `{at}` in the workspace is a symbolic link."),
        ),
        WriteError::Io(err) => refusal(
            TOOL,
            "output_write_failed",
            format!("{what} ({:?}).", err.kind()),
        ),
    }
}

/// `agentic-hil run-evidence --report PATH --out DIR`: `run-summary.json`, `job-summary.md` and
/// byte-for-byte copies of the logs the report names, for a CI job. Needs no configuration.
pub fn run_evidence(workspace: &Path, report_path: &Path, out_dir: &Path) -> Value {
    const TOOL: &str = "run_evidence";
    let shown = report_path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let bytes = match read_report(workspace, report_path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return refusal(
                TOOL,
                "run_report_not_found",
                format!("There is no run report `{shown}`."),
            );
        }
        Err(err) => {
            return refusal(
                TOOL,
                "run_report_unreadable",
                format!(
                    "The run report `{shown}` could not be read ({:?}).",
                    err.kind()
                ),
            );
        }
    };
    let Ok(report) = serde_json::from_slice::<Value>(&bytes) else {
        // A file that reads but does not parse is an invalid report, as the reference names it;
        // `unreadable` is for a file that could not be read at all.
        return refusal(
            TOOL,
            "run_report_invalid",
            format!("The run report `{shown}` is not JSON."),
        );
    };
    if !(report.get("tool").is_some_and(Value::is_string)
        && report.get("ok").is_some_and(Value::is_boolean))
    {
        return refusal(
            TOOL,
            "run_report_invalid",
            format!("`{shown}` is not a report this program wrote (no `tool` and `ok`)."),
        );
    }
    let out = Out::new(workspace, out_dir);
    let mut named = Vec::new();
    log_paths(&report, &mut named);
    let mut copied = Vec::new();
    let mut missing = Vec::new();
    for rel in named {
        let Some(source) = inside(workspace, &rel) else {
            missing.push(Value::String("<outside workspace>".into()));
            continue;
        };
        let name = audit::safe_filename(
            &source
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        );
        match audit::safe::read(workspace, &source) {
            Ok(Some(log)) if out.write(&Path::new("logs").join(&name), &log).is_ok() => {
                copied.push(Value::String(name));
            }
            _ => missing.push(Value::String(rel)),
        }
    }
    let mut summary = Map::new();
    summary.insert("ok".into(), true.into());
    summary.insert("tool".into(), TOOL.into());
    summary.insert("report_tool".into(), report["tool"].clone());
    summary.insert(
        "overall_success".into(),
        ahil_gate::overall_success_value(&report).into(),
    );
    for key in [
        "error_type",
        "summary",
        "run_handle",
        "started_at",
        "finished_at",
        "elapsed_ms",
        "test_config_sha256",
    ] {
        if let Some(value) = report.get(key) {
            summary.insert(key.into(), value.clone());
        }
    }
    summary.insert("steps".into(), Value::Array(steps(&report)));
    summary.insert("logs".into(), Value::Array(copied));
    summary.insert("logs_not_copied".into(), Value::Array(missing));
    // CI publishes these files: they pass the same output step as the terminal.
    let summary = audit::Sink::for_process()
        .scrub(&strip_identities(&Value::Object(summary), workspace))
        .into_value();
    let md = markdown(&summary);
    let written = out
        .write(
            Path::new("run-summary.json"),
            audit::json::document(&summary).as_bytes(),
        )
        .and_then(|()| out.write(Path::new("job-summary.md"), md.as_bytes()));
    if let Err(err) = written {
        return out_refusal(&err, "The summaries could not be written");
    }
    if let Some(step_summary) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        use std::io::Write;
        let _ = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(step_summary)
            .and_then(|mut f| f.write_all(md.as_bytes()));
    }
    let mut doc = summary;
    // Where the evidence went and the run's verdict, under the reference's keys, as the operator
    // named the paths (never resolved to absolute ones).
    let out_shown = out_dir.display().to_string();
    let under = |name: &str| out_dir.join(name).display().to_string();
    doc["outcome"] = outcome(&report, &doc).into();
    doc["report"] = report_path.display().to_string().into();
    doc["out"] = out_shown.into();
    doc["run_summary_path"] = under("run-summary.json").into();
    doc["job_summary_path"] = under("job-summary.md").into();
    doc["logs_path"] = under("logs").into();
    doc["logs_copied"] = doc["logs"].clone();
    doc["summary"] = format!(
        "Wrote run-summary.json, job-summary.md and {} log(s) for {shown}.",
        doc["logs"].as_array().map_or(0, Vec::len)
    )
    .into();
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_evidence_summarises_a_run_and_copies_its_logs_byte_for_byte() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".agentic-hil/logs")).expect("logs");
        let log = b"{\"event\": \"start\"}\n";
        std::fs::write(ws.join(".agentic-hil/logs/com-1.jsonl"), log).expect("log");
        let report = json!({"ok": false, "tool": "test_reactor", "error_type": "step_failed",
            "summary": "step 2 failed", "probe_id": "0668FF123", "executable": "/usr/bin/openocd",
            "steps": [{"name": "flash", "ok": true}, {"name": "uart", "ok": false, "error_type": "uart_expect_timeout",
                "log_path": ".agentic-hil/logs/com-1.jsonl", "stdout": "token=abc"}]});
        std::fs::write(ws.join("run.json"), report.to_string()).expect("report");
        let doc = run_evidence(ws, Path::new("run.json"), Path::new("evidence"));
        assert_eq!(doc["ok"], true, "{doc}");
        assert_eq!(
            std::fs::read(ws.join("evidence/logs/com-1.jsonl")).expect("copy"),
            log
        );
        let summary =
            std::fs::read_to_string(ws.join("evidence/run-summary.json")).expect("summary");
        assert!(
            !summary.contains("0668FF123") && !summary.contains("/usr/bin/openocd"),
            "{summary}"
        );
        let md = std::fs::read_to_string(ws.join("evidence/job-summary.md")).expect("md");
        assert!(
            md.contains("FAIL") && md.contains("uart_expect_timeout"),
            "{md}"
        );
        assert_eq!(doc["outcome"], "failure", "{doc}");
        assert_eq!(doc["logs_copied"], json!(["com-1.jsonl"]), "{doc}");
    }

    #[test]
    fn run_evidence_reads_each_step_of_a_run_report_from_its_result() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = dir.path();
        let report = json!({"ok": true, "tool": "test_reactor_run", "steps": [
            {"index": 1, "route": "uart0", "action": "uart_open",
             "result": {"ok": true, "tool": "com_session_start", "summary": "opened"}}]});
        std::fs::write(ws.join("run.json"), report.to_string()).expect("report");
        let doc = run_evidence(ws, Path::new("run.json"), Path::new("evidence"));
        assert_eq!(doc["steps"][0]["name"], "uart_open", "{doc}");
        assert_eq!(doc["steps"][0]["ok"], true, "{doc}");
        assert_eq!(doc["steps"][0]["summary"], "opened", "{doc}");
        assert_eq!(doc["outcome"], "success", "{doc}");
        assert_eq!(
            doc["run_summary_path"], "evidence/run-summary.json",
            "{doc}"
        );
    }

    #[test]
    fn run_evidence_writes_nothing_through_a_link_planted_in_the_workspace() {
        let dir = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("outside");
        let ws = dir.path();
        std::fs::write(
            ws.join("run.json"),
            r#"{"ok": true, "tool": "test_reactor"}"#,
        )
        .expect("report");
        std::os::unix::fs::symlink(outside.path(), ws.join("evidence")).expect("link");
        let doc = run_evidence(ws, Path::new("run.json"), Path::new("evidence"));
        let there: Vec<_> = std::fs::read_dir(outside.path()).expect("list").collect();
        assert!(there.is_empty(), "written outside the workspace: {there:?}");
        assert_eq!(doc["error_type"], "unsafe_configured_path", "{doc}");
    }

    #[test]
    fn a_report_that_is_a_fifo_or_a_link_out_of_the_workspace_is_refused_at_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("outside");
        let ws = dir.path().to_path_buf();
        let secret = outside.path().join("secret.json");
        std::fs::write(
            &secret,
            r#"{"ok": true, "tool": "secret", "summary": "s3cr3t"}"#,
        )
        .expect("outside report");
        std::os::unix::fs::symlink(&secret, ws.join("linked.json")).expect("link");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.join("fifo.json"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .expect("fifo");
        for name in ["linked.json", "fifo.json"] {
            let (tx, rx) = std::sync::mpsc::channel();
            let at = ws.clone();
            std::thread::spawn(move || {
                let _ = tx.send(run_evidence(&at, Path::new(name), Path::new("evidence")));
            });
            let Ok(doc) = rx.recv_timeout(std::time::Duration::from_secs(5)) else {
                let _ = std::fs::OpenOptions::new().write(true).open(ws.join(name));
                panic!("{name}: run-evidence hung on the report");
            };
            assert_eq!(doc["error_type"], "run_report_unreadable", "{name}: {doc}");
            assert!(!ws.join("evidence").exists(), "{name}: {doc}");
        }
    }

    #[test]
    fn run_evidence_refuses_a_missing_or_foreign_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        let doc = run_evidence(dir.path(), Path::new("none.json"), Path::new("out"));
        assert_eq!(doc["error_type"], "run_report_not_found");
        std::fs::write(dir.path().join("x.json"), "[1]").expect("write");
        let doc = run_evidence(dir.path(), Path::new("x.json"), Path::new("out"));
        assert_eq!(doc["error_type"], "run_report_invalid");
        std::fs::write(dir.path().join("y.json"), "{").expect("write");
        let doc = run_evidence(dir.path(), Path::new("y.json"), Path::new("out"));
        assert_eq!(doc["error_type"], "run_report_invalid");
    }
}
