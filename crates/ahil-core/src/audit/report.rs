//! One report per audited call. The trusted copy is `report-state.json` under the project's state
//! directory (`{"version":1,"last_report","last_failure"}`), written first and under a lock; the
//! workspace files `last-report.json` and `last-failure.json` are write-only views for people, and
//! are never read back as evidence.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::{Audit, AuditError, Scrubbed, crash_point, json as pyjson, safe};
use crate::envelope::overall_success_value;

/// The trusted report state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportState {
    pub last_report: Option<Value>,
    pub last_failure: Option<Value>,
    /// Keys this program does not write, kept so a rewrite loses nothing.
    pub extra: Map<String, Value>,
}

impl ReportState {
    fn parse(bytes: &[u8]) -> Result<Self, String> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|_| "the file is not JSON".to_owned())?;
        let Value::Object(mut map) = value else {
            return Err("the file is not a JSON object".into());
        };
        if map.remove("version") != Some(Value::from(1)) {
            return Err("the file does not say version 1".into());
        }
        let mut slot = |key: &str| match map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v @ Value::Object(_)) => Ok(Some(v)),
            Some(_) => Err(format!("`{key}` is neither a report nor null")),
        };
        let last_report = slot("last_report")?;
        let last_failure = slot("last_failure")?;
        Ok(Self {
            last_report,
            last_failure,
            extra: map,
        })
    }

    fn to_document(&self) -> String {
        let mut map = Map::new();
        map.insert("version".into(), 1.into());
        map.insert(
            "last_report".into(),
            self.last_report.clone().unwrap_or(Value::Null),
        );
        map.insert(
            "last_failure".into(),
            self.last_failure.clone().unwrap_or(Value::Null),
        );
        map.extend(self.extra.clone());
        pyjson::document(&Value::Object(map))
    }
}

fn state_path(audit: &Audit) -> PathBuf {
    audit.canonical_reports().join("report-state.json")
}

/// Reads the trusted report state; a missing file is an empty state.
pub fn load_state(audit: &Audit) -> Result<ReportState, AuditError> {
    let root = audit.state_root();
    let path = state_path(audit);
    match safe::read(root, &path)? {
        None => Ok(ReportState::default()),
        Some(bytes) => ReportState::parse(&bytes).map_err(|why| AuditError::ReportStateDamaged {
            what: safe::shown(root, &path),
            why,
        }),
    }
}

/// Where a report was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Workspace-relative path of `last-report.json`.
    pub report_path: String,
    /// Whether the report counted as a failure (and so also became `last_failure`).
    pub failure: bool,
}

impl Audit {
    fn workspace_report(&self, name: &str) -> String {
        if self.reports_rel().is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.reports_rel())
        }
    }

    /// Writes one report: `audit_ok` and `config_in_force` defaulted, `report_path` added, the
    /// canonical state committed, then the workspace views. If a view cannot be written the report
    /// says so (`audit_ok: false`, `audit_error`) and the canonical copy is rewritten to match.
    pub fn write_report(
        &self,
        report: &mut Map<String, Value>,
        config_in_force: &Value,
    ) -> Result<Written, AuditError> {
        report.entry("audit_ok").or_insert(Value::Bool(true));
        report
            .entry("config_in_force")
            .or_insert_with(|| config_in_force.clone());
        // Scrubbed before any copy exists, so neither the canonical state nor a view holds a secret
        // or a private directory, and a view can be checked against the canonical copy.
        if let Value::Object(clean) = self
            .sink()
            .scrub(&Value::Object(std::mem::take(report)))
            .into_value()
        {
            *report = clean;
        }
        let report_path = self.workspace_report("last-report.json");
        report.insert("report_path".into(), report_path.clone().into());
        let root = self.state_root();
        safe::ensure_dir(root, &self.canonical_reports())?;
        let _lock = safe::lock(root, &self.canonical_reports().join(".report-state.lock"))?;
        let mut state = load_state(self)?;
        let run_copy = self.stage_run_copy(report)?;
        let failure = !overall_success_value(&Value::Object(report.clone()));
        self.commit(&mut state, report, failure)?;
        crash_point("after_canonical_report");
        if let Err(err) = self.write_views(report, failure) {
            report.insert("audit_ok".into(), false.into());
            report.insert("audit_error".into(), err.to_value());
            report.remove("report_path");
            self.commit(&mut state, report, true)?;
            return Err(err);
        }
        if let Some(path) = run_copy {
            safe::write_atomic(
                self.state_root(),
                &path,
                pyjson::document(&Value::Object(report.clone())).as_bytes(),
            )?;
        }
        Ok(Written {
            report_path,
            failure,
        })
    }

    /// A report that belongs to a run gets its own canonical copy, `reports/runs/<handle>.json`, which
    /// later runs never overwrite. It is staged as a non-green document (`canonical_write_pending`)
    /// and promoted only after everything else is written, so a crash leaves no false pass behind.
    fn stage_run_copy(
        &self,
        report: &mut Map<String, Value>,
    ) -> Result<Option<PathBuf>, AuditError> {
        let handle = report
            .get("run")
            .and_then(|run| run.get("handle"))
            .or_else(|| report.get("run_handle"))
            .and_then(Value::as_str)
            .map(super::safe_filename);
        let Some(handle) = handle.filter(|h| !h.is_empty() && h != "." && h != "..") else {
            return Ok(None);
        };
        let name = format!("{handle}.json");
        let path = self.canonical_reports().join("runs").join(&name);
        let shown = format!("<state_root>/{}", safe::shown(self.state_root(), &path));
        report.insert("canonical_report_path".into(), shown.into());
        safe::check(self.state_root(), &path)?;
        if std::fs::symlink_metadata(&path).is_ok() {
            return Ok(None);
        }
        let mut staged = report.clone();
        staged.insert("audit_ok".into(), false.into());
        staged.insert("canonical_write_pending".into(), true.into());
        staged.insert(
            "audit_error".into(),
            json!({"error_type": "canonical_write_pending",
                   "summary": "This run report was staged and not yet promoted."}),
        );
        safe::write_atomic(
            self.state_root(),
            &path,
            pyjson::document(&Value::Object(staged)).as_bytes(),
        )?;
        Ok(Some(path))
    }

    fn commit(
        &self,
        state: &mut ReportState,
        report: &Map<String, Value>,
        failure: bool,
    ) -> Result<(), AuditError> {
        let value = Value::Object(report.clone());
        if failure {
            state.last_failure = Some(value.clone());
        }
        state.last_report = Some(value);
        safe::write_atomic(
            self.state_root(),
            &state_path(self),
            state.to_document().as_bytes(),
        )
    }

    fn write_views(&self, report: &Map<String, Value>, failure: bool) -> Result<(), AuditError> {
        self.write_view_documents(&self.sink().scrub(&Value::Object(report.clone())), failure)
    }

    /// The workspace views' only writer: it takes nothing but a scrubbed document. The views are
    /// replaced without fsync: the canonical state is durable already, and a view a power loss
    /// kept old (or left empty) reads `behind`, as after a crash before this write (ADR 0011).
    fn write_view_documents(&self, report: &Scrubbed, failure: bool) -> Result<(), AuditError> {
        let document = pyjson::document(report.as_value());
        let ws = self.workspace();
        if failure {
            let path = ws.join(self.workspace_report("last-failure.json"));
            safe::write_view(ws, &path, document.as_bytes())?;
        }
        let path = ws.join(self.workspace_report("last-report.json"));
        safe::write_view(ws, &path, document.as_bytes())
    }

    /// How the workspace `last-report.json` compares with the trusted last report: `verified`,
    /// `behind` (missing or older), `altered`, or `unsafe` (a link or multi-link file).
    pub fn report_mirror_state(&self, trusted: &Value) -> &'static str {
        let ws = self.workspace();
        let path = ws.join(self.workspace_report("last-report.json"));
        let bytes = match safe::read(ws, &path) {
            // An empty view is what a power loss can leave of an unsynced replace: it claims nothing.
            Ok(Some(bytes)) if bytes.is_empty() => return "behind",
            Ok(Some(bytes)) => bytes,
            Ok(None) => return "behind",
            Err(_) => return "unsafe",
        };
        let Ok(mirror) = serde_json::from_slice::<Value>(&bytes) else {
            return "altered";
        };
        if mirror == self.sink().scrub(trusted).into_value() {
            return "verified";
        }
        let finished = |v: &Value| {
            v.get("finished_at")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match (finished(&mirror), finished(trusted)) {
            (Some(theirs), Some(ours)) if theirs < ours => "behind",
            _ => "altered",
        }
    }

    /// `report-state-repair`: a damaged state file is renamed aside (every byte kept) to
    /// `report-state.damaged-<stamp>[-n].json` and a fresh state written; a healthy one is left alone.
    pub fn repair_report_state(&self) -> Result<Value, AuditError> {
        let root = self.state_root();
        let dir = self.canonical_reports();
        safe::ensure_dir(root, &dir)?;
        let _lock = safe::lock(root, &dir.join(".report-state.lock"))?;
        let path = state_path(self);
        let damage = match safe::read(root, &path) {
            Ok(None) => {
                return Ok(json!({"ok": true, "repaired": false,
                "summary": "There is no report state yet; nothing to repair."}));
            }
            Ok(Some(bytes)) => match ReportState::parse(&bytes) {
                Ok(_) => {
                    return Ok(json!({"ok": true, "repaired": false,
                    "summary": "The report state is healthy; nothing was changed."}));
                }
                Err(why) => why,
            },
            Err(err @ AuditError::UnsafePath { .. }) => err.to_string(),
            Err(err) => return Err(err),
        };
        let stamp = ahil_config::time::utc_now().replace(['-', ':'], "");
        let mut aside = dir.join(format!("report-state.damaged-{stamp}.json"));
        let mut n = 1;
        while std::fs::symlink_metadata(&aside).is_ok() {
            aside = dir.join(format!("report-state.damaged-{stamp}-{n}.json"));
            n += 1;
        }
        std::fs::rename(&path, &aside).map_err(|err| AuditError::io(root, &path, &err))?;
        safe::write_atomic(root, &path, ReportState::default().to_document().as_bytes())?;
        let name = aside
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(json!({
            "ok": true,
            "repaired": true,
            "summary": format!("The damaged report state was moved aside as {name} and a fresh one started."),
            "damage": damage,
            "moved_to": name,
        }))
    }
}
