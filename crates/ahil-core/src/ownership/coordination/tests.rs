use super::*;

use crate::testkit::{self, syncs_during};

fn keys(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn project_record(coordinator: &Coordinator) -> Value {
    coordinator
        .dirs
        .read_record(coordinator.project_resource())
        .expect("readable")
        .expect("written")
}

/// A workspace with the starter configuration, and an MCP server's coordinator over it.
fn started() -> (testkit::Fixture, Coordinator) {
    let world = testkit::Fixture::new();
    world.write_config(&world.starter());
    let ours = Coordinator::new(&world.load(), "mcp");
    (world, ours)
}

/// The report state a server leaves once `tool` answered on `lease`, its side effect `status`
/// (committed unless `not_started`) under the configuration of `digest`.
fn report_state(tool: &str, lease: &Lease, status: &str, digest: &str) -> Value {
    json!({
        "version": 1,
        "last_report": {
            "tool": tool, "lease_id": lease.id, "lease_state": "active",
            "side_effect_committed": status != "not_started", "side_effect_status": status,
            "config_in_force": {"digest": digest},
        },
        "last_failure": null,
    })
}

fn write_report_state(coordinator: &Coordinator, report: &Value) {
    let state = &coordinator.report_state;
    std::fs::create_dir_all(state.parent().expect("dir")).expect("dir");
    std::fs::write(state, report.to_string()).expect("report state");
}

/// The lease `ours` is granted of `resources` outside containment, `why` it must be.
fn granted(ours: &Coordinator, resources: &[&str], why: &str) -> Lease {
    ours.acquire(&keys(resources), false).expect(why)
}

/// The lease `ours` takes of `resources`, and the fsyncs that took.
fn acquire_counting_syncs(ours: &Coordinator, resources: &[&str]) -> (Lease, u64) {
    syncs_during(|| granted(ours, resources, "ours"))
}

/// The project record as the disk is sure to hold it after a power loss: its bytes now, synced.
fn synced_record(ours: &Coordinator) -> (PathBuf, Vec<u8>) {
    let path = ours.dirs.record_path(ours.project_resource());
    let bytes = std::fs::read(&path).expect("a synced record");
    (path, bytes)
}

/// `ours` killed and the power lost, taking the project record back to `synced`: the next
/// process meets `resource` as an incident, never as released.
fn assert_power_loss_adopts(
    world: &testkit::Fixture,
    ours: Coordinator,
    synced: &(PathBuf, Vec<u8>),
    resource: &str,
) {
    drop(ours);
    std::fs::write(&synced.0, &synced.1).expect("the unsynced writes lost");
    let next = Coordinator::new(&world.load(), "mcp");
    let (met, _) = adopted(&next, resource);
    next.release(&met, &End::default());
}

/// The lease `next` takes of `resource` whose owner vanished, and the incident it met there: the
/// lost lease's device adopted, never released as untouched.
fn adopted(next: &Coordinator, resource: &str) -> (Lease, Incident) {
    let met = granted(next, &[resource], "not standing");
    assert!(
        met.released_dead_owner.is_none(),
        "not released as untouched"
    );
    let incident = met.met.clone().expect("the device is not taken as proven");
    assert_eq!(incident.reasons, ["owner_process_exited_without_release"]);
    assert_eq!(incident.resources, [resource]);
    (met, incident)
}

#[test]
fn an_incident_adds_only_the_reasons_and_resources_it_does_not_list_yet() {
    let mut incident = Incident::new(keys(&["a", "b"]), keys(&["probe:x"]));
    incident.absorb(&keys(&["b", "c"]), &keys(&["probe:x", "serial:y"]));
    assert_eq!(incident.reasons, keys(&["a", "b", "c"]));
    assert_eq!(incident.resources, keys(&["probe:x", "serial:y"]));
}

#[test]
fn a_clean_lease_leaves_the_project_released_and_the_lock_free() {
    let (world, ours) = started();
    let lease = granted(&ours, &["probe:a"], "free");
    assert_eq!(project_record(&ours)["state"], "active");
    assert_eq!(project_record(&ours)["leases"][0]["lease_id"], lease.id);
    let status = ours.release(&lease, &End::default());
    assert_eq!(status["lease_state"], "released");
    assert_eq!(project_record(&ours)["state"], "released");
    let theirs = Coordinator::new(&world.load(), "mcp");
    assert!(
        theirs.acquire(&keys(&["probe:a"]), false).is_ok(),
        "nothing left held"
    );
}

#[test]
fn a_second_process_is_refused_while_a_lease_is_held() {
    let (world, ours) = started();
    let theirs = Coordinator::new(&world.load(), "mcp");
    let lease = granted(&ours, &["probe:a"], "free");
    assert!(matches!(
        theirs.acquire(&keys(&["probe:b"]), false),
        Err(Refused::Busy)
    ));
    ours.release(&lease, &End::default());
}

#[test]
fn an_owner_that_vanished_mid_call_is_adopted_as_an_incident() {
    let (world, dead) = started();
    let lease = granted(&dead, &["probe:a"], "free");
    // Dropping without release is what the kernel does for a killed process: the lock goes, the
    // record stays `active`.
    drop(dead);
    let next = Coordinator::new(&world.load(), "mcp");
    let (met, incident) = adopted(&next, "probe:a");
    assert_ne!(met.id, lease.id);
    next.settle(&incident, &Settled::StoodDown).expect("ledger");
    next.release(&met, &End::default());
    assert_eq!(project_record(&next)["state"], "released");
    let ledger = std::fs::read_to_string(next.dirs.ledger()).expect("ledger");
    let line: Value = serde_json::from_str(ledger.lines().last().expect("line")).expect("json");
    assert_eq!(line["recovery"], "incident_stood_down");
    assert_eq!(line["attestation"], "no_standing_state");
    assert_eq!(line["quarantine_id"], incident.quarantine_id.as_str());
}

#[test]
fn an_audit_broken_lease_stands_until_the_operator_recovers_it() {
    let (world, ours) = started();
    let lease = granted(&ours, &["com:/dev/ttyx"], "free");
    let status = ours.release(
        &lease,
        &End {
            standing_reasons: vec!["com_write_audit_broken".into()],
        },
    );
    assert_eq!(status["lease_state"], "quarantined");
    assert_eq!(status["audit_ok"], false);
    let id = status["quarantine_id"].as_str().expect("id").to_owned();

    for process in [&ours, &Coordinator::new(&world.load(), "mcp")] {
        match process.acquire(&keys(&["com:/dev/ttyx"]), false) {
            Err(Refused::Standing(incident)) => assert_eq!(incident.quarantine_id, id),
            other => panic!("expected a standing refusal, got {other:?}"),
        }
    }
    let closing = ours
        .acquire(&keys(&["com:/dev/ttyx"]), true)
        .expect("containment passes");
    ours.release(&closing, &End::default());
    assert_eq!(
        project_record(&ours)["state"],
        "quarantined",
        "containment does not clear it"
    );

    let operator = Coordinator::new(&world.load(), "operator-cli");
    let request = |quarantine_id: Option<&str>| Recovery {
        quarantine_id: quarantine_id.map(str::to_owned),
        accept_config_change: false,
        actor: "human",
        via: "cli:recover",
        attestation: "operator_confirmation",
        operator_statement: None,
    };
    let changed = operator.recover(&request(Some("0000"))).unwrap_err();
    assert_eq!(changed.error_type, "quarantine_changed");
    assert_eq!(
        changed.details["quarantine_id"],
        id.as_str(),
        "the refusal names the open incident"
    );
    let done = operator.recover(&request(Some(&id))).expect("recovered");
    assert_eq!(done["recovered_quarantine_id"], id.as_str());
    assert!(ours.acquire(&keys(&["com:/dev/ttyx"]), false).is_ok());
}

#[test]
fn a_dead_owner_whose_last_report_proves_no_contact_is_released_without_an_incident() {
    let met = dead_owner_met(|_, _| {});
    assert!(met.met.is_none(), "no incident");
    assert_eq!(
        met.released_dead_owner.as_ref().expect("released")["reason"],
        "released_dead_owner_no_contact"
    );
}

#[test]
fn a_device_in_another_projects_incident_is_refused() {
    let (world, ours) = started();
    // The same configuration used from a second workspace is a second project on one state root.
    let mut other = world.load();
    other.workspace = world.home.join("second-ws");
    std::fs::create_dir_all(&other.workspace).expect("dir");
    let lease = granted(&ours, &["probe:shared"], "free");
    ours.release(
        &lease,
        &End {
            standing_reasons: vec!["audit_broken".into()],
        },
    );
    let theirs = Coordinator::new(&other, "mcp");
    assert!(matches!(
        theirs.acquire(&keys(&["probe:shared"]), false),
        Err(Refused::Foreign { .. })
    ));
}

/// A lease taken and left `active` by a process that then vanished, with a last report that
/// proves no contact once `edit` has had its say over that report and the project record;
/// returns what the next process met.
fn dead_owner_met(edit: impl FnOnce(&mut Value, &mut Value)) -> Lease {
    let (world, dead) = started();
    let lease = granted(&dead, &["probe:a"], "free");
    let mut report = report_state("probe_target", &lease, "not_started", &world.load().digest);
    let mut record = project_record(&dead);
    edit(&mut report["last_report"], &mut record);
    dead.dirs
        .write_records(&[(dead.project_resource().to_owned(), record)], |_, _| true)
        .expect("record");
    write_report_state(&dead, &report);
    drop(dead);
    Coordinator::new(&world.load(), "mcp")
        .acquire(&keys(&["probe:a"]), false)
        .expect("not standing")
}

#[test]
fn a_last_report_short_of_a_no_contact_proof_leaves_the_dead_owner_adopted_as_an_incident() {
    // Unedited, the report is a proof (the test above): each edit alone takes that away.
    type Edit = fn(&mut Value, &mut Value);
    // One edit a line, so the table reads as one.
    #[rustfmt::skip]
    let cases: [(&str, Edit); 9] = [
        ("another lease's report", |r, _| r["lease_id"] = "0000".into()),
        ("a report of a released lease", |r, _| r["lease_state"] = "released".into()),
        ("a tool that proves nothing", |r, _| r["tool"] = "com_write".into()),
        ("a committed side effect", |r, _| r["side_effect_committed"] = true.into()),
        ("a side effect in progress", |r, _| r["side_effect_status"] = "started".into()),
        ("a first contact", |r, _| r["first_contact_at"] = "2026-01-01T00:00:00Z".into()),
        ("a broken audit", |r, _| r["audit_ok"] = false.into()),
        ("another configuration", |r, _| r["config_in_force"]["digest"] = "sha256:00".into()),
        ("a record already quarantined", |_, record| record["quarantine_id"] = "feedfeedfeedfeed".into()),
    ];
    for (case, edit) in cases {
        let met = dead_owner_met(edit);
        assert!(met.released_dead_owner.is_none(), "{case}: released");
        let incident = met.met.unwrap_or_else(|| panic!("{case}: not adopted"));
        assert_eq!(
            incident.reasons,
            ["owner_process_exited_without_release"],
            "{case}"
        );
    }
}

#[test]
fn a_lease_syncs_its_project_record_when_taken_and_nothing_when_it_ends_cleanly() {
    let (_world, ours) = started();
    let resources = keys(&["com:/dev/ttyx", "probe:a", "probe:b"]);
    // The first acquire also creates the coordination directories; measure a second lease.
    let warm = ours.acquire(&resources, false).expect("free");
    ours.release(&warm, &End::default());
    let (lease, acquired) = syncs_during(|| ours.acquire(&resources, false).expect("free"));
    let (_, released) = syncs_during(|| ours.release(&lease, &End::default()));
    assert_eq!(
        (acquired, released),
        (2, 0),
        "the project record and its directory when taken, whatever the number of devices; a clean end syncs nothing"
    );
    let record = ours
        .dirs
        .read_record(ours.project_resource())
        .expect("readable");
    assert_eq!(record.expect("written")["state"], "released");
    let marker = ours.dirs.read_marker("probe:a").expect("readable");
    assert_eq!(marker.expect("written")["state"], "released");
}

#[test]
fn a_clean_end_that_a_power_loss_took_back_quarantines_what_the_lease_held() {
    let (world, ours) = started();
    let lease = granted(&ours, &["probe:a"], "free");
    // The record the acquire synced; the clean end's write was never synced.
    let synced = synced_record(&ours);
    ours.release(&lease, &End::default());
    assert_power_loss_adopts(&world, ours, &synced, "probe:a");
}

#[test]
fn a_quarantine_syncs_every_marker_it_writes() {
    let (_world, ours) = started();
    let lease = granted(&ours, &["probe:a", "probe:b"], "free");
    let end = End {
        standing_reasons: vec!["audit_broken".into()],
    };
    let (status, syncs) = syncs_during(|| ours.release(&lease, &end));
    assert_eq!(status["lease_state"], "quarantined");
    assert_eq!(
        syncs, 4,
        "two markers, the project record and their directory"
    );
}

#[test]
fn an_empty_marker_such_as_a_power_loss_can_leave_is_no_record_and_the_device_leases() {
    let (_world, ours) = started();
    ours.dirs.ensure().expect("dirs");
    std::fs::write(ours.dirs.record_path("probe:a"), b"").expect("empty marker");
    let lease = granted(&ours, &["probe:a"], "leases");
    ours.release(&lease, &End::default());
}

#[test]
fn an_empty_project_record_is_never_taken_for_no_record() {
    let (_world, ours) = started();
    ours.dirs.ensure().expect("dirs");
    let project = ours.project_resource().to_owned();
    std::fs::write(ours.dirs.record_path(&project), b"").expect("empty record");
    assert!(matches!(
        ours.acquire(&keys(&["probe:a"]), false),
        Err(Refused::Invalid(_))
    ));
}

#[test]
fn a_lease_inside_another_on_the_same_device_leaves_that_devices_marker_untouched() {
    let (_world, ours) = started();
    let session = granted(&ours, &["com:/dev/ttyx"], "free");
    let marker = ours.dirs.record_path("com:/dev/ttyx");
    let before = std::fs::read(&marker).expect("the session's marker");
    let call = granted(&ours, &["com:/dev/ttyx", "probe:a"], "ours");
    let during = std::fs::read(&marker).expect("marker");
    ours.release(&call, &End::default());
    let after = std::fs::read(&marker).expect("marker");
    assert_eq!(
        (during == before, after == before),
        (true, true),
        "a call in a session neither rewrites the session's marker when taken nor when it ends"
    );
    let probe = ours.dirs.read_marker("probe:a").expect("readable");
    assert_eq!(probe.expect("written")["state"], "released");
    // The session ending after a call that outlived it: the call's marker is handed on, then released.
    let call = granted(&ours, &["com:/dev/ttyx"], "ours");
    ours.release(&session, &End::default());
    let held = ours.dirs.read_marker("com:/dev/ttyx").expect("readable");
    assert_eq!(held.expect("written")["state"], "active");
    ours.release(&call, &End::default());
    let released = ours.dirs.read_marker("com:/dev/ttyx").expect("readable");
    assert_eq!(released.expect("written")["state"], "released");
}

/// A session's lease and the report state its start committed (`status` its side effect), as
/// a server holds them between calls.
fn session_with_report(world: &testkit::Fixture, ours: &Coordinator, status: &str) -> Lease {
    let session = granted(ours, &["com:/dev/ttyx"], "free");
    let report = report_state("com_session_start", &session, status, &world.load().digest);
    write_report_state(ours, &report);
    session
}

#[test]
fn a_call_inside_a_session_takes_its_lease_without_a_sync_and_a_power_loss_still_quarantines() {
    let (world, ours) = started();
    let session = session_with_report(&world, &ours, "committed");
    // The record the session's start synced.
    let synced = synced_record(&ours);
    let (call, syncs) = acquire_counting_syncs(&ours, &["com:/dev/ttyx"]);
    assert_eq!(
        syncs, 0,
        "the call's lease holds no device the synced record lacks"
    );
    let leases = project_record(&ours)["leases"].as_array().map(Vec::len);
    assert_eq!(leases, Some(2), "the call is on record for a kill");
    drop((call, session));
    assert_power_loss_adopts(&world, ours, &synced, "com:/dev/ttyx");
}

#[test]
fn a_call_inside_a_session_whose_last_report_could_prove_no_contact_syncs_its_lease() {
    let (world, ours) = started();
    // A start that found its session already open reports the session's lease, nothing started:
    // a record listing the session alone would be released on it after a power loss.
    let session = session_with_report(&world, &ours, "not_started");
    let (call, syncs) = acquire_counting_syncs(&ours, &["com:/dev/ttyx"]);
    assert_eq!(
        syncs, 2,
        "the record listing the call is durable before the act"
    );
    // Another device is no lease inside the session: synced whatever the report says.
    std::fs::write(&ours.report_state, b"{}").expect("no report yet");
    let (other, syncs) = acquire_counting_syncs(&ours, &["com:/dev/ttyx", "probe:a"]);
    assert_eq!(syncs, 2, "a new device is synced");
    for lease in [other, call, session] {
        ours.release(&lease, &End::default());
    }
}
