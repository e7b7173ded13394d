//! The shapes of lease records, read and written compatibly with the reference 0.25 (version 2;
//! version 1 read as 2).

use std::path::Path;

use serde_json::{Map, Value, json};

use super::Incident;
use super::files::read_json;

pub fn string_list(record: &Value, key: &str) -> Vec<String> {
    strings(record.get(key))
}

/// The strings of a JSON array; anything else, and an item that is no string, counts as none
/// (a record or a result another version wrote).
pub fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A lease as results and project records show it.
pub fn lease_status(
    lease_id: &str,
    resources: &[String],
    reasons: &[String],
    quarantine_id: Option<&str>,
) -> Value {
    let audit_ok = !reasons.iter().any(|r| r.contains("audit_broken"));
    let quarantined = !reasons.is_empty();
    json!({
        "lease_id": lease_id,
        "resources": resources,
        "lease_state": if quarantined { "quarantined" } else { "released" },
        "safe_state_confirmed": !quarantined,
        "processes_reaped": true,
        "audit_ok": audit_ok,
        "cleanup_required": quarantined,
        "quarantined": quarantined,
        "cleanup_reasons": reasons,
        "quarantine_id": quarantine_id,
    })
}

/// A lease still held, as the project record lists it.
pub fn active_lease(lease_id: &str, resources: &[String]) -> Value {
    let mut status = lease_status(lease_id, resources, &[], None);
    status["lease_state"] = "active".into();
    status
}

/// The incident fields of a marker.
pub fn marker_state(marker: &mut Map<String, Value>, incident: Option<&Incident>) {
    let (audit_ok, reasons) = match incident {
        Some(incident) => (!incident.stands(), incident.reasons.clone()),
        None => (true, Vec::new()),
    };
    marker.insert("safe_state_confirmed".into(), incident.is_none().into());
    marker.insert("processes_reaped".into(), true.into());
    marker.insert("audit_ok".into(), audit_ok.into());
    let now = ahil_config::time::now_millis();
    let errors: Vec<Value> = reasons
        .iter()
        .map(|reason| {
            json!({
                "reason": reason,
                "time": now,
                "quarantine_id": incident.map(|i| i.quarantine_id.clone()),
            })
        })
        .collect();
    marker.insert("errors".into(), Value::Array(errors));
    marker.insert("cleanup_events".into(), json!([]));
    marker.insert(
        "quarantine_id".into(),
        json!(incident.map(|i| i.quarantine_id.clone())),
    );
}

/// The incident fields of a project record: the reference reads `audit_ok: false` or a reason
/// naming `audit_broken` as standing, and so do we.
pub fn incident_fields(record: &mut Map<String, Value>, incident: &Incident) {
    record.insert(
        "quarantine_id".into(),
        incident.quarantine_id.clone().into(),
    );
    if let Some(first) = incident.reasons.first() {
        record.insert("reason".into(), first.clone().into());
    }
    record.insert("cleanup_reasons".into(), json!(incident.reasons));
    record.insert("audit_ok".into(), (!incident.stands()).into());
}

/// The incident a record describes, if its state is not `released` or `active`.
pub fn incident_from_record(record: &Value) -> Option<Incident> {
    let state = record.get("state").and_then(Value::as_str).unwrap_or("");
    if !matches!(
        state,
        "cleanup_required" | "quarantined" | "recovery_pending"
    ) {
        return None;
    }
    let mut reasons = string_list(record, "cleanup_reasons");
    if let Some(reason) = record.get("reason").and_then(Value::as_str)
        && !reasons.iter().any(|r| r == reason)
    {
        reasons.push(reason.to_owned());
    }
    let mut quarantine_id = record
        .get("quarantine_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut audit_broken = record.get("audit_ok") == Some(&Value::Bool(false));
    for lease in record
        .get("leases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for reason in string_list(lease, "cleanup_reasons") {
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
        audit_broken |= lease.get("audit_ok") == Some(&Value::Bool(false));
        if quarantine_id.is_none() {
            quarantine_id = lease
                .get("quarantine_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    if audit_broken && !reasons.iter().any(|r| r.contains("audit_broken")) {
        reasons.push("audit_broken".into());
    }
    if reasons.is_empty() {
        reasons.push("safe_state_unconfirmed".into());
    }
    let quarantine_id = quarantine_id.unwrap_or_else(|| legacy_id(record));
    Some(Incident {
        quarantine_id,
        reasons,
        resources: string_list(record, "resources"),
    })
}

/// The id the reference gives a version-1 incident that named none.
fn legacy_id(record: &Value) -> String {
    let field = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("");
    let digest = ahil_config::digest::sha256_hex(
        format!(
            "{}\0{}\0{}",
            field("owner_marker"),
            field("owner_started_at"),
            field("project_resource")
        )
        .as_bytes(),
    );
    format!("legacy-{}", &digest[..32])
}

/// The dead owner's own proof that its last call never touched the target: one clean active
/// lease whose last committed report, for the same configuration and resources, says nothing was
/// started. Returns the evidence, or `None` when any part is missing.
pub fn no_contact_proof(record: &Value, report_state: &Path) -> Option<Value> {
    if record.get("reason").is_some() || record.get("quarantine_id").is_some() {
        return None;
    }
    let leases = record.get("leases")?.as_array()?;
    let [lease] = leases.as_slice() else {
        return None;
    };
    let clean = lease.get("lease_state").and_then(Value::as_str) == Some("active")
        && lease.get("audit_ok") != Some(&Value::Bool(false))
        && string_list(lease, "cleanup_reasons").is_empty();
    let resources = string_list(record, "resources");
    if !clean || string_list(lease, "resources") != resources {
        return None;
    }
    let lease_id = lease.get("lease_id")?.as_str()?;
    let state = read_json(report_state).ok()??;
    let report = state.get("last_report")?;
    let text = |key: &str| report.get(key).and_then(Value::as_str);
    let digest = report
        .get("config_in_force")
        .and_then(|c| c.get("digest"))
        .and_then(Value::as_str)
        .map(|d| d.trim_start_matches("sha256:"));
    let proves = text("lease_id") == Some(lease_id)
        && text("lease_state") == Some("active")
        && text("tool")
            .and_then(crate::catalogue::Gate::of)
            .is_some_and(|g| g.proves_no_contact)
        && report.get("side_effect_committed") == Some(&Value::Bool(false))
        && text("side_effect_status") == Some("not_started")
        && report.get("first_contact_at").is_none()
        && report.get("audit_ok") != Some(&Value::Bool(false))
        && digest == record.get("config_sha256").and_then(Value::as_str);
    proves.then(|| {
        json!({
            "lease_id": lease_id,
            "tool": text("tool"),
            "report_finished_at": text("finished_at"),
            "side_effect_status": "not_started",
        })
    })
}

/// Whether the report state could serve as a proof of no contact for one of the leases `held`
/// (`no_contact_proof` reads no other report): its last report names one of them with
/// `side_effect_status: not_started`, as a session start that found its session already open
/// does. A report state that cannot be read answers yes, so the caller syncs.
pub fn may_prove_no_contact<'a>(
    report_state: &Path,
    mut held: impl Iterator<Item = &'a str>,
) -> bool {
    let report = match read_json(report_state) {
        Ok(Some(mut state)) => state["last_report"].take(),
        Ok(None) => return false,
        Err(_) => return true,
    };
    let names_held = report
        .get("lease_id")
        .and_then(Value::as_str)
        .is_some_and(|id| held.any(|lease| lease == id));
    names_held && report.get("side_effect_status").and_then(Value::as_str) == Some("not_started")
}
