//! Recovery of a standing incident, and retiring records this program cannot read: both take the
//! project lock, write the ledger line first, then move the records.

use std::io;

use ahil_config::time::now_millis;
use serde_json::{Map, Value, json};

use super::{Coordinator, Inner, files};

/// An operator's (or agent's) recovery request.
#[derive(Debug, Clone)]
pub struct Recovery {
    pub quarantine_id: Option<String>,
    pub accept_config_change: bool,
    pub actor: &'static str,
    pub via: &'static str,
    pub attestation: &'static str,
    pub operator_statement: Option<String>,
}

/// A refused recovery: `error_type`, summary, and fields for the result.
#[derive(Debug, Clone)]
pub struct RecoveryRefusal {
    pub error_type: &'static str,
    pub summary: String,
    pub details: Map<String, Value>,
}

impl RecoveryRefusal {
    fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }
}

impl Coordinator {
    /// Operator (or agent) recovery of the standing or open incident.
    pub fn recover(&self, request: &Recovery) -> Result<Value, RecoveryRefusal> {
        let mut inner = self.inner();
        if !inner.leases.is_empty() {
            return Err(refusal(
                "resource_busy",
                "This process holds leases on the bench; recover after its calls and sessions end.",
            ));
        }
        if inner.project_lock.is_none() {
            match self.dirs.try_lock(&self.project_resource) {
                Ok(Some(file)) => inner.project_lock = Some(file),
                Ok(None) => {
                    return Err(refusal(
                        "resource_busy",
                        "Another agentic-hil process holds this configuration's bench; recover after it ends.",
                    ));
                }
                Err(err) => return Err(invalid(&err)),
            }
        }
        let result = self.recover_locked(&mut inner, request);
        inner.let_go_if_idle();
        result
    }

    fn recover_locked(
        &self,
        inner: &mut Inner,
        request: &Recovery,
    ) -> Result<Value, RecoveryRefusal> {
        self.heal(inner).map_err(|e| invalid(&e))?;
        let record = self
            .dirs
            .read_record(&self.project_resource)
            .map_err(|e| invalid(&e))?;
        let Some(incident) = inner.incident.clone() else {
            return Err(refusal(
                "resource_not_quarantined",
                "No incident is open on this configuration's bench.",
            ));
        };
        let Some(asked) = request.quarantine_id.as_deref() else {
            return Err(refusal(
                "quarantine_id_required",
                "Name the incident to recover with --quarantine-id; lease-status shows it.",
            )
            .with("quarantine_id", incident.quarantine_id.clone()));
        };
        if asked != incident.quarantine_id {
            return Err(refusal(
                "quarantine_changed",
                "The open incident is not the one named; read lease-status again.",
            )
            .with("quarantine_id", incident.quarantine_id.clone()));
        }
        let recorded = record
            .as_ref()
            .and_then(|r| r.get("config_sha256"))
            .and_then(Value::as_str)
            .unwrap_or(&self.config_sha256)
            .to_owned();
        if recorded != self.config_sha256 && !request.accept_config_change {
            return Err(refusal(
                "config_changed",
                "The configuration changed since the incident was recorded; confirm with --accept-config-change.",
            )
            .with("recorded_config_sha256", recorded)
            .with("current_config_sha256", self.config_sha256.clone())
            .with("override", false));
        }
        let mut event = self.ledger_base(&incident);
        event.insert("actor".into(), request.actor.into());
        event.insert("via".into(), request.via.into());
        event.insert("attestation".into(), request.attestation.into());
        event.insert("reasons".into(), json!(incident.reasons));
        event.insert("recorded_config_sha256".into(), recorded.clone().into());
        event.insert(
            "config_change_accepted".into(),
            (recorded != self.config_sha256).into(),
        );
        if let Some(statement) = &request.operator_statement {
            event.insert("operator_statement".into(), statement.clone().into());
        }
        if let Err(err) = self.dirs.append_ledger(&Value::Object(event)) {
            return Err(refusal(
                "recovery_audit_failed",
                "The recovery ledger could not be written, so the incident stays open.",
            )
            .with("detail", err.to_string()));
        }
        inner.incident = None;
        let recovered_at = now_millis();
        let persisted = incident
            .resources
            .iter()
            .try_for_each(|r| self.write_one(self.marker(inner, r, "released", None, None)))
            .and_then(|()| {
                self.write_project(
                    inner,
                    Some(&json!({
                        "recovered_at": recovered_at,
                        "safe_state_confirmed": true,
                        "recovered_quarantine_id": incident.quarantine_id,
                    })),
                )
            });
        if let Err(err) = persisted {
            inner.incident = Some(incident);
            return Err(refusal(
                "recovery_persist_failed",
                "The recovery was recorded but the lease records could not be rewritten; run the same recovery again.",
            )
            .with("detail", err.to_string())
            .with("retry_safe", true));
        }
        let mut done = json!({
            "ok": true,
            "tool": "hardware_recover",
            "resources": incident.resources,
            "safe_state_confirmed": true,
            "recovered_quarantine_id": incident.quarantine_id,
            "cleared_reasons": incident.reasons,
            "resumed": false,
            "config_change_accepted": recorded != self.config_sha256,
            "actor": request.actor,
            "attestation": request.attestation,
            "was_quarantined": true,
            "summary": "The incident is recovered: its devices are released and the ledger records who confirmed the bench.",
        });
        if let Some(statement) = &request.operator_statement {
            done["operator_statement"] = statement.clone().into();
        }
        Ok(done)
    }

    /// Sets aside this project's records that cannot be read (or are of a version this program
    /// does not know) into `records/retired/`, with a ledger line; returns the retired file names.
    /// Nothing is deleted: the operator can still read what was there.
    pub fn retire_records(&self, resources: &[String]) -> io::Result<Vec<String>> {
        let mut inner = self.inner();
        if !inner.leases.is_empty() {
            return Err(io::Error::other("this process holds leases"));
        }
        let Some(lock) = self.dirs.try_lock(&self.project_resource)? else {
            return Err(io::Error::other("another process holds this project"));
        };
        inner.project_lock = Some(lock);
        let mut names = vec![self.project_resource.clone()];
        names.extend(resources.iter().cloned());
        let stamp = now_millis().replace([':', '-', '.'], "");
        let mut retired = Vec::new();
        let result = (|| {
            for name in &names {
                let readable = match self.dirs.read_record(name) {
                    Ok(None) => continue,
                    Ok(Some(record)) => {
                        let version = record.get("version").and_then(Value::as_u64);
                        matches!(version, Some(1 | 2))
                    }
                    Err(_) => false,
                };
                if readable {
                    continue;
                }
                let dir = self.dirs.retired_dir();
                crate::fsio::create_dir_all_private(&dir, 0o700)?;
                let file = format!("{}.{stamp}.json", files::stem(name));
                std::fs::rename(self.dirs.record_path(name), dir.join(&file))?;
                retired.push(file);
            }
            if !retired.is_empty() {
                self.dirs.append_ledger(&json!({
                    "event": "recovery",
                    "recovery": "records_retired",
                    "actor": "human",
                    "via": "cli:recover",
                    "attestation": "operator_confirmation",
                    "retired": retired,
                    "workspace": self.workspace,
                    "config_path": self.config_path,
                    "time": now_millis(),
                }))?;
            }
            Ok(retired.clone())
        })();
        inner.let_go_if_idle();
        result
    }
}

fn refusal(error_type: &'static str, summary: &str) -> RecoveryRefusal {
    RecoveryRefusal {
        error_type,
        summary: summary.to_owned(),
        details: Map::new(),
    }
}

fn invalid(err: &io::Error) -> RecoveryRefusal {
    refusal(
        "coordination_state_invalid",
        "A coordination record under the state root cannot be read; it is never ignored.",
    )
    .with("detail", err.to_string())
}
