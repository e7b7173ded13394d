//! Per-configuration leases, incidents and the recovery ledger.
//!
//! Device locks (`device_lock.rs`) say who drives a device right now, machine-wide. This layer says
//! what state the bench was left in. Every hardware call takes a *lease*: the project's lock, a lock
//! and a marker per resource, and a project record that says `active`. A clean end writes
//! `released`. An end without proof of a safe bench writes `quarantined` with the reasons. A process
//! that dies mid-call leaves `active` behind with its lock free, which the next taker recognises as
//! a dead owner: released when the owner's own last report proves it never touched the target,
//! adopted as an incident otherwise.
//!
//! Liveness is always "can I take the lock", never a pid. The ledger line is written before any
//! record moves, so an incident is never lost between the two.

mod files;
mod records;
mod recovery;

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ahil_config::LoadedConfig;
use ahil_config::time::now_millis;
use serde_json::{Map, Value, json};

pub use files::Dirs;
pub use records::strings;
use records::{incident_from_record, lease_status, marker_state};
pub use recovery::{Recovery, RecoveryRefusal};

use super::owner::random_hex;
use super::reasons;

/// An incident: reasons the bench's state is not proven, over some resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    pub quarantine_id: String,
    pub reasons: Vec<String>,
    pub resources: Vec<String>,
}

impl Incident {
    pub fn new(reasons: Vec<String>, resources: Vec<String>) -> Self {
        Self {
            quarantine_id: random_hex(16),
            reasons,
            resources,
        }
    }

    /// Adds the reasons and resources this incident does not list yet, in their order; one
    /// incident stands for everything that went wrong on the bench until it is recovered.
    fn absorb(&mut self, reasons: &[String], resources: &[String]) {
        for (list, new) in [
            (&mut self.reasons, reasons),
            (&mut self.resources, resources),
        ] {
            for item in new {
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
        }
    }

    /// Only a damaged evidence chain keeps an incident standing past the call that met it.
    pub fn stands(&self) -> bool {
        reasons::any_standing(&self.reasons)
    }
}

/// A lease one call (or one session) holds.
#[derive(Debug, Clone)]
pub struct Lease {
    pub id: String,
    pub resources: Vec<String>,
    /// A non-standing incident found when the lease was taken (a dead owner's, adopted now); the
    /// call that met it settles it or stands it down.
    pub met: Option<Incident>,
    /// Set when a dead owner was released on its own proof of no contact.
    pub released_dead_owner: Option<Value>,
    /// The resources whose markers this lease wrote: those no other lease of ours held already.
    marked: Vec<String>,
}

/// Why a lease was not granted.
#[derive(Debug)]
pub enum Refused {
    /// Another process holds this configuration's lock.
    Busy,
    /// An incident stands on this project.
    Standing(Incident),
    /// A resource belongs to another project's unresolved incident.
    Foreign { resource: String },
    /// A record could not be read or written.
    Invalid(io::Error),
}

/// How a lease ended.
#[derive(Debug, Clone, Default)]
pub struct End {
    /// Standing reasons (the audit-broken family) to quarantine the lease under; empty for a clean
    /// end. Other reasons are settled by the caller before release.
    pub standing_reasons: Vec<String>,
}

/// What a settled incident becomes in the ledger.
#[derive(Debug, Clone)]
pub enum Settled {
    /// A verified recovery action proved the safe state.
    Resolved { reason: String },
    /// Nothing proved it, and nothing damaged the evidence: the incident does not outlive the call.
    StoodDown,
}

#[derive(Default)]
struct Inner {
    project_lock: Option<File>,
    resource_locks: HashMap<String, (File, usize)>,
    leases: Vec<(String, Vec<String>)>,
    /// The open incident while this process holds the project lock.
    incident: Option<Incident>,
}

impl Inner {
    fn drop_resources(&mut self, resources: &[String]) {
        for resource in resources {
            let last = match self.resource_locks.get_mut(resource) {
                Some((_, count)) => {
                    *count = count.saturating_sub(1);
                    *count == 0
                }
                None => false,
            };
            if last {
                self.resource_locks.remove(resource);
            }
        }
    }

    /// The project lock is held only while this process has leases: an idle server leaves the
    /// record readable under the lock by anyone.
    fn let_go_if_idle(&mut self) {
        if self.leases.is_empty() {
            self.project_lock = None;
            self.incident = None;
        }
    }
}

/// One process's view of one configuration's leases.
pub struct Coordinator {
    dirs: Dirs,
    project_resource: String,
    workspace: String,
    config_path: String,
    config_sha256: String,
    report_state: PathBuf,
    owner_marker: String,
    owner_pid: u32,
    owner_started_at: String,
    frontend: String,
    inner: Mutex<Inner>,
}

impl Coordinator {
    /// The coordinator for `loaded`, seen by others as `frontend`.
    pub fn new(loaded: &LoadedConfig, frontend: &str) -> Self {
        let digest = crate::audit::project_digest(&loaded.path, &loaded.workspace);
        let state_root = &loaded.config.state_root;
        Self {
            dirs: Dirs::under(state_root),
            report_state: state_root
                .join("projects")
                .join(&digest[..24])
                .join("reports")
                .join("report-state.json"),
            project_resource: format!("project:{digest}"),
            workspace: loaded.workspace.display().to_string(),
            config_path: loaded.path.display().to_string(),
            config_sha256: loaded.digest.trim_start_matches("sha256:").to_owned(),
            owner_marker: random_hex(32),
            owner_pid: std::process::id(),
            owner_started_at: now_millis(),
            frontend: frontend.to_owned(),
            inner: Mutex::default(),
        }
    }

    /// `project:<digest>`: the name of this configuration's lock and record.
    pub fn project_resource(&self) -> &str {
        &self.project_resource
    }

    /// The digest of the configuration this coordinator was built from (bare hex).
    pub fn config_sha256(&self) -> &str {
        &self.config_sha256
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a lease on `resources`. A containment call (closing a session, halting) is let
    /// through a standing incident, which it leaves standing; everything else is refused by it.
    pub fn acquire(&self, resources: &[String], containment: bool) -> Result<Lease, Refused> {
        let mut inner = self.inner();
        let mut released_dead_owner = None;
        if inner.project_lock.is_none() {
            match self.dirs.try_lock(&self.project_resource) {
                Ok(Some(file)) => inner.project_lock = Some(file),
                Ok(None) => return Err(Refused::Busy),
                Err(err) => return Err(Refused::Invalid(err)),
            }
            match self.heal(&mut inner) {
                Ok(released) => released_dead_owner = released,
                Err(err) => {
                    inner.let_go_if_idle();
                    return Err(Refused::Invalid(err));
                }
            }
        }
        let mut met = None;
        if let Some(incident) = inner.incident.clone() {
            if incident.stands() {
                if !containment {
                    inner.let_go_if_idle();
                    return Err(Refused::Standing(incident));
                }
            } else {
                met = Some(incident);
            }
        }
        let mut resources = resources.to_vec();
        resources.sort();
        resources.dedup();
        if let Err(refused) = self.take_resources(&mut inner, &resources) {
            inner.let_go_if_idle();
            return Err(refused);
        }
        let id = random_hex(16);
        // A device another lease of ours holds (a call in a session) already has its `active`
        // marker; rewriting it changes nothing a crash or another project reads (ADR 0014).
        let marked: Vec<String> = resources
            .iter()
            .filter(|r| !inner.leases.iter().any(|(_, held)| held.contains(r)))
            .cloned()
            .collect();
        // A lease inside ours (a call in a session) takes no device the synced record lacks.
        let nested =
            marked.is_empty() && !inner.leases.is_empty() && self.nested_record_may_wait(&inner);
        inner.leases.push((id.clone(), resources.clone()));
        // New markers and the project record, then one directory sync: durable before the act.
        let mut batch: Vec<(String, Value)> = marked
            .iter()
            .map(|r| self.marker(&inner, r, "active", Some(&id), None))
            .collect();
        batch.push(self.project_record(&inner, None));
        let written = self.write_batch(&batch, nested);
        if let Err(err) = written {
            inner.leases.retain(|(lease, _)| lease != &id);
            inner.drop_resources(&resources);
            inner.let_go_if_idle();
            return Err(Refused::Invalid(err));
        }
        Ok(Lease {
            id,
            resources,
            met,
            released_dead_owner,
            marked,
        })
    }

    /// Whether the record of a lease inside ours (every resource already held) may skip its
    /// fsync (ADR 0030): a power loss can leave a record synced since the outer leases were
    /// taken, listing every resource of this one, which the next start adopts as an incident,
    /// unless the last report could release it as untouched (`records::may_prove_no_contact`).
    fn nested_record_may_wait(&self, inner: &Inner) -> bool {
        let held = inner.leases.iter().map(|(id, _)| id.as_str());
        !records::may_prove_no_contact(&self.report_state, held)
    }

    /// Ends `lease`. Standing reasons quarantine its resources under the project's incident;
    /// otherwise they are released. Returns the lease's status as results show it.
    pub fn release(&self, lease: &Lease, end: &End) -> Value {
        let mut inner = self.inner();
        inner.leases.retain(|(id, _)| id != &lease.id);
        let mut batch = Vec::new();
        if end.standing_reasons.is_empty() {
            let kept: Vec<String> = inner
                .incident
                .as_ref()
                .map(|i| i.resources.clone())
                .unwrap_or_default();
            // A resource another lease of ours still holds (a session's) stays active under it.
            let still: Vec<String> = inner
                .leases
                .iter()
                .flat_map(|(_, r)| r.iter().cloned())
                .collect();
            for resource in lease.resources.iter().filter(|r| !kept.contains(r)) {
                let state = if !still.contains(resource) {
                    "released"
                } else if lease.marked.contains(resource) {
                    // The marker names this lease: it now names the one that remains.
                    "active"
                } else {
                    continue;
                };
                batch.push(self.marker(&inner, resource, state, None, None));
            }
        } else {
            let incident = inner
                .incident
                .get_or_insert_with(|| Incident::new(Vec::new(), Vec::new()));
            incident.absorb(&end.standing_reasons, &lease.resources);
            let incident = incident.clone();
            for resource in &incident.resources {
                batch.push(self.marker(&inner, resource, "quarantined", None, Some(&incident)));
            }
        }
        batch.push(self.project_record(&inner, None));
        let persisted = self.write_batch(&batch, true).is_ok();
        let quarantine_id = (!end.standing_reasons.is_empty())
            .then(|| inner.incident.as_ref().map(|i| i.quarantine_id.clone()))
            .flatten();
        inner.drop_resources(&lease.resources);
        inner.let_go_if_idle();
        let mut reasons = end.standing_reasons.clone();
        if !persisted {
            reasons.push("lease_release_unconfirmed".into());
        }
        lease_status(
            &lease.id,
            &lease.resources,
            &reasons,
            quarantine_id.as_deref(),
        )
    }

    /// Records an incident the current call raised, before anything tries to settle it, so a
    /// crash in recovery leaves it on disk.
    pub fn open_incident(&self, incident: &Incident) -> io::Result<()> {
        let mut inner = self.inner();
        let merged = match inner.incident.take() {
            Some(mut open) => {
                open.absorb(&incident.reasons, &incident.resources);
                open
            }
            None => incident.clone(),
        };
        inner.incident = Some(merged.clone());
        for resource in &merged.resources {
            self.write_one(self.marker(&inner, resource, "quarantined", None, Some(&merged)))?;
        }
        self.write_project(&inner, None)
    }

    /// Settles a non-standing incident: the ledger line first, then the records.
    pub fn settle(&self, incident: &Incident, how: &Settled) -> io::Result<()> {
        let mut inner = self.inner();
        let mut event = self.ledger_base(incident);
        let released_reason = match how {
            Settled::Resolved { reason } => {
                event.insert("recovery".into(), "incident_resolved".into());
                event.insert("reason".into(), reason.clone().into());
                event.insert("actor".into(), "server".into());
                event.insert("via".into(), "recovery_action".into());
                event.insert("attestation".into(), "recovery_action_verified".into());
                None
            }
            Settled::StoodDown => {
                event.insert("recovery".into(), "incident_stood_down".into());
                event.insert("reasons".into(), json!(incident.reasons));
                event.insert("actor".into(), "server".into());
                event.insert(
                    "via".into(),
                    format!("coordination:{}", self.frontend).into(),
                );
                event.insert("attestation".into(), "no_standing_state".into());
                Some("incident_stood_down")
            }
        };
        self.dirs.append_ledger(&Value::Object(event))?;
        if inner
            .incident
            .as_ref()
            .is_some_and(|open| open.quarantine_id == incident.quarantine_id)
        {
            inner.incident = None;
        }
        let active: Vec<String> = inner
            .leases
            .iter()
            .flat_map(|(_, r)| r.iter().cloned())
            .collect();
        for resource in &incident.resources {
            let state = if active.contains(resource) {
                "active"
            } else {
                "released"
            };
            self.write_one(self.marker(&inner, resource, state, None, None))?;
        }
        let extra = match released_reason {
            Some(reason) => json!({
                "released_reason": reason,
                "stood_down_reasons": incident.reasons,
                "safe_state_confirmed": false,
            }),
            None => json!({
                "recovered_quarantine_id": incident.quarantine_id,
                "recovered_at": now_millis(),
                "safe_state_confirmed": true,
            }),
        };
        self.write_project(&inner, Some(&extra))
    }

    /// The incident open on this project, as seen now (healing a dead owner's record on the way,
    /// when its lock is free). `owner_active` is false when no live process holds the project.
    pub fn observe(&self) -> io::Result<Observed> {
        let mut inner = self.inner();
        if inner.project_lock.is_some() {
            let record = self.dirs.read_record(&self.project_resource)?;
            return Ok(Observed {
                owner_active: true,
                held_by_us: true,
                snapshot_atomic: true,
                incident: inner.incident.clone(),
                record,
                released_dead_owner: None,
            });
        }
        match self.dirs.try_lock(&self.project_resource)? {
            None => {
                let record = self.dirs.read_record(&self.project_resource)?;
                let incident = record.as_ref().and_then(incident_from_record);
                Ok(Observed {
                    owner_active: true,
                    held_by_us: false,
                    snapshot_atomic: false,
                    incident,
                    record,
                    released_dead_owner: None,
                })
            }
            Some(file) => {
                inner.project_lock = Some(file);
                let healed = self.heal(&mut inner);
                let record = self.dirs.read_record(&self.project_resource);
                let incident = inner.incident.clone();
                inner.let_go_if_idle();
                let released_dead_owner = healed?;
                Ok(Observed {
                    owner_active: false,
                    held_by_us: false,
                    snapshot_atomic: true,
                    incident,
                    record: record?,
                    released_dead_owner,
                })
            }
        }
    }

    /// The incidents of other projects that hold any of `resources` (markers in the shared
    /// coordination directory): what the lease status calls `standing_incidents`, not this
    /// project's to clear. A marker that cannot be read is left out here; a call that needs the
    /// resource refuses it as `coordination_state_invalid`.
    pub fn foreign_incidents(&self, resources: &[String]) -> Vec<Value> {
        let mut found: Vec<Value> = Vec::new();
        for resource in resources {
            let Ok(Some(marker)) = self.dirs.read_marker(resource) else {
                continue;
            };
            if !self.foreign_incident(Some(&marker)) {
                continue;
            }
            let errors = marker.get("errors").and_then(Value::as_array);
            let reasons: Vec<Value> = errors
                .map(|e| e.iter().filter_map(|x| x.get("reason").cloned()).collect())
                .unwrap_or_default();
            let quarantine_id = errors
                .and_then(|e| e.iter().find_map(|x| x.get("quarantine_id").cloned()))
                .unwrap_or(Value::Null);
            let field = |key: &str| marker.get(key).cloned().unwrap_or(Value::Null);
            let project = field("project_resource");
            // One entry per incident: a device held under several keys is listed once per key.
            if let Some(entry) = found
                .iter_mut()
                .find(|e| e["project_resource"] == project && e["quarantine_id"] == quarantine_id)
            {
                if let Some(listed) = entry["resources"].as_array_mut() {
                    listed.push(json!(resource));
                }
                continue;
            }
            // `resource`: the first key it holds, as the reference names one; `resources`: every key.
            found.push(json!({
                "resource": resource,
                "project_resource": project,
                "quarantine_id": quarantine_id,
                "state": field("state"),
                "cleanup_reasons": reasons,
                "resources": [resource],
                "updated_at": field("updated_at"),
            }));
        }
        found
    }

    /// The ids of this process's leases on any of `resources`.
    pub fn leases_holding(&self, resources: &[String]) -> Vec<String> {
        self.inner()
            .leases
            .iter()
            .filter(|(_, held)| held.iter().any(|r| resources.contains(r)))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Whether this process holds any lease.
    pub fn holds_leases(&self) -> bool {
        !self.inner().leases.is_empty()
    }

    /// With the project lock just taken: load the record's incident, and settle a dead owner's
    /// `active` record (released on its own proof of no contact, adopted otherwise).
    fn heal(&self, inner: &mut Inner) -> io::Result<Option<Value>> {
        let Some(record) = self.dirs.read_record(&self.project_resource)? else {
            inner.incident = None;
            return Ok(None);
        };
        let state = record.get("state").and_then(Value::as_str).unwrap_or("");
        match state {
            "released" => {
                inner.incident = None;
                Ok(None)
            }
            "active" => {
                if let Some(evidence) = records::no_contact_proof(&record, &self.report_state) {
                    let resources = records::string_list(&record, "resources");
                    let mut event = Map::new();
                    event.insert("event".into(), "recovery".into());
                    event.insert("recovery".into(), "dead_owner_no_contact".into());
                    event.insert("reason".into(), "released_dead_owner_no_contact".into());
                    event.insert("actor".into(), "server".into());
                    event.insert(
                        "via".into(),
                        format!("coordination:{}", self.frontend).into(),
                    );
                    event.insert("attestation".into(), "no_contact_reason_class".into());
                    event.insert("resources".into(), json!(resources));
                    event.insert("evidence".into(), evidence.clone());
                    event.insert("time".into(), now_millis().into());
                    self.dirs.append_ledger(&Value::Object(event))?;
                    for resource in &resources {
                        self.write_one(self.marker(inner, resource, "released", None, None))?;
                    }
                    inner.incident = None;
                    self.write_project(
                        inner,
                        Some(&json!({"released_reason": "released_dead_owner_no_contact"})),
                    )?;
                    return Ok(Some(json!({
                        "reason": "released_dead_owner_no_contact",
                        "resources": resources,
                        "summary": "The previous owner exited mid-call, but its own last report proves it never touched the target; its lease was released.",
                        "evidence": evidence,
                    })));
                }
                let incident = Incident {
                    quarantine_id: record
                        .get("quarantine_id")
                        .and_then(Value::as_str)
                        .map_or_else(|| random_hex(16), str::to_owned),
                    reasons: vec!["owner_process_exited_without_release".into()],
                    resources: records::string_list(&record, "resources"),
                };
                inner.incident = Some(incident.clone());
                for resource in &incident.resources {
                    self.write_one(self.marker(
                        inner,
                        resource,
                        "quarantined",
                        None,
                        Some(&incident),
                    ))?;
                }
                self.write_project(
                    inner,
                    Some(&json!({
                        "quarantined_at": now_millis(),
                        "reason": "owner_process_exited_without_release",
                    })),
                )?;
                Ok(None)
            }
            _ => {
                inner.incident = incident_from_record(&record);
                Ok(None)
            }
        }
    }

    fn take_resources(&self, inner: &mut Inner, resources: &[String]) -> Result<(), Refused> {
        let mut taken: Vec<String> = Vec::new();
        for resource in resources {
            if let Some((_, count)) = inner.resource_locks.get_mut(resource) {
                *count += 1;
                taken.push(resource.clone());
                continue;
            }
            let refused = match self.dirs.try_lock(resource) {
                Ok(Some(file)) => match self.dirs.read_marker(resource) {
                    Ok(marker) if self.foreign_incident(marker.as_ref()) => {
                        Some(Refused::Foreign {
                            resource: resource.clone(),
                        })
                    }
                    Ok(_) => {
                        inner.resource_locks.insert(resource.clone(), (file, 1));
                        taken.push(resource.clone());
                        None
                    }
                    Err(err) => Some(Refused::Invalid(err)),
                },
                Ok(None) => Some(Refused::Busy),
                Err(err) => Some(Refused::Invalid(err)),
            };
            if let Some(refused) = refused {
                inner.drop_resources(&taken);
                return Err(refused);
            }
        }
        Ok(())
    }

    fn foreign_incident(&self, marker: Option<&Value>) -> bool {
        marker.is_some_and(|m| {
            let state = m.get("state").and_then(Value::as_str).unwrap_or("");
            let project = m
                .get("project_resource")
                .and_then(Value::as_str)
                .unwrap_or("");
            !matches!(state, "released" | "active" | "") && project != self.project_resource
        })
    }

    fn base(&self, state: &str, resources: &[String]) -> Map<String, Value> {
        let mut base = Map::new();
        base.insert("version".into(), 2.into());
        base.insert("state".into(), state.into());
        base.insert("owner_marker".into(), self.owner_marker.clone().into());
        base.insert("owner_pid".into(), self.owner_pid.into());
        base.insert(
            "owner_started_at".into(),
            self.owner_started_at.clone().into(),
        );
        base.insert("frontend".into(), self.frontend.clone().into());
        base.insert("workspace".into(), self.workspace.clone().into());
        base.insert("config_path".into(), self.config_path.clone().into());
        base.insert("config_sha256".into(), self.config_sha256.clone().into());
        base.insert(
            "project_resource".into(),
            self.project_resource.clone().into(),
        );
        base.insert("resources".into(), json!(resources));
        base.insert("updated_at".into(), now_millis().into());
        base
    }

    /// The record of one resource; written alone (`write_one`) or in a batch.
    fn marker(
        &self,
        inner: &Inner,
        resource: &str,
        state: &str,
        lease_id: Option<&str>,
        incident: Option<&Incident>,
    ) -> (String, Value) {
        let lease_id = lease_id.map(str::to_owned).or_else(|| {
            inner
                .leases
                .iter()
                .find(|(_, r)| r.iter().any(|x| x == resource))
                .map(|(id, _)| id.clone())
        });
        let resources = incident.map_or_else(|| vec![resource.to_owned()], |i| i.resources.clone());
        let mut marker = self.base(state, &resources);
        marker.insert("lease_id".into(), json!(lease_id));
        marker_state(&mut marker, incident);
        (resource.to_owned(), Value::Object(marker))
    }

    fn write_project(&self, inner: &Inner, extra: Option<&Value>) -> io::Result<()> {
        self.write_one(self.project_record(inner, extra))
    }

    fn write_one(&self, record: (String, Value)) -> io::Result<()> {
        self.write_batch(&[record], false)
    }

    /// Writes records, syncing those a crash or power loss must find as written (ADR 0014): the
    /// project record (an `active` one is what quarantines after a crash mid-call) and any marker
    /// that is not merely `active` or `released` (a quarantine, which other projects must see).
    /// An `active` or `released` marker decides nothing after a crash, so it is not synced.
    ///
    /// At a lease's clean end, and at the start of a lease inside another (`unsynced`), even the
    /// project record is not synced when it says `active` or `released` (ADRs 0018 and 0030):
    /// what a power loss can keep instead is a record synced while the outer leases were held,
    /// `active` with them listed, which quarantines the same resources or more at the next start;
    /// an empty one is refused `coordination_state_invalid`. Neither lets a device go unproven. A
    /// quarantine is synced.
    fn write_batch(&self, records: &[(String, Value)], unsynced: bool) -> io::Result<()> {
        self.dirs.write_records(records, |resource, record| {
            let state = record.get("state").and_then(Value::as_str);
            (resource == self.project_resource && !unsynced)
                || !matches!(state, Some("active" | "released"))
        })
    }

    /// The project's record, for [`write_project`](Self::write_project) or a batch.
    fn project_record(&self, inner: &Inner, extra: Option<&Value>) -> (String, Value) {
        let mut resources: Vec<String> = inner
            .leases
            .iter()
            .flat_map(|(_, r)| r.iter().cloned())
            .collect();
        if let Some(incident) = &inner.incident {
            resources.extend(incident.resources.iter().cloned());
        }
        resources.sort();
        resources.dedup();
        let state = if inner.incident.is_some() {
            "quarantined"
        } else if inner.leases.is_empty() {
            "released"
        } else {
            "active"
        };
        let mut record = self.base(state, &resources);
        let leases: Vec<Value> = inner
            .leases
            .iter()
            .map(|(id, r)| records::active_lease(id, r))
            .collect();
        record.insert("leases".into(), Value::Array(leases));
        if let Some(incident) = &inner.incident {
            records::incident_fields(&mut record, incident);
        }
        if let Some(Value::Object(extra)) = extra {
            for (key, value) in extra {
                record.insert(key.clone(), value.clone());
            }
        }
        (self.project_resource.clone(), Value::Object(record))
    }

    fn ledger_base(&self, incident: &Incident) -> Map<String, Value> {
        let mut event = Map::new();
        event.insert("event".into(), "recovery".into());
        event.insert(
            "quarantine_id".into(),
            incident.quarantine_id.clone().into(),
        );
        event.insert("resources".into(), json!(incident.resources));
        event.insert("workspace".into(), self.workspace.clone().into());
        event.insert("config_path".into(), self.config_path.clone().into());
        event.insert(
            "current_config_sha256".into(),
            self.config_sha256.clone().into(),
        );
        event.insert("resumed".into(), false.into());
        event.insert("time".into(), now_millis().into());
        event
    }
}

/// What [`Coordinator::observe`] saw.
#[derive(Debug, Clone)]
pub struct Observed {
    /// A live process (possibly this one) holds the project lock.
    pub owner_active: bool,
    /// That process is this one.
    pub held_by_us: bool,
    /// The record was read under the lock.
    pub snapshot_atomic: bool,
    pub incident: Option<Incident>,
    pub record: Option<Value>,
    pub released_dead_owner: Option<Value>,
}

#[cfg(test)]
mod tests;
