//! Each session kind's claim and log as the lifecycle builds them from what the kind declares: the
//! holder records, the log files and their first event keep the form they had when each kind wrote
//! its own.

use std::sync::Arc;

use serde_json::Value;

use super::{Debug, World, can_participant, can_session, com_session, debug, rtt_session};
use crate::session_lifecycle::SessionKind;

/// The claim's label and refusal, and the log's name with its stamp (the start's time) taken out.
fn names(kind: &impl SessionKind) -> (String, &'static str, String, String) {
    let claim = kind.claim();
    let (log, started) = kind.log_start();
    assert_eq!(claim.keys, ["the:key"], "{log}");
    let stamp = log
        .split(['-', '.'])
        .find(|part| {
            part.bytes().all(|b| b.is_ascii_alphanumeric())
                && part.bytes().filter(u8::is_ascii_digit).count() >= 14
        })
        .unwrap_or_else(|| panic!("{log} has a stamp"));
    let log = log.replacen(stamp, "<stamp>", 1);
    (claim.label, claim.refused, log, started.to_string())
}

#[test]
fn every_session_kind_names_its_claim_log_and_start_event_as_it_always_did() {
    let world = World::new();
    let key = "the:key";
    let keys = || vec![key.to_owned()];
    let com = com_session::test_kind("uart", "/dev/ttyX", keys(), &world.host(&Arc::default()));
    assert_eq!(
        names(&com),
        (
            "com_session:uart".to_owned(),
            "the device lock was refused before the port was opened",
            "com-<stamp>-uart.jsonl".to_owned(),
            r#"{"event":"start","port_id":"uart","device":"/dev/ttyX"}"#.to_owned(),
        )
    );
    let bridge = std::path::Path::new("/nonexistent/bridge");
    let can = can_session::test_kind("bus", bridge, key, &world.host(&Arc::default()));
    assert_eq!(
        names(&can),
        (
            "can_session:bus".to_owned(),
            "the device lock was refused before the adapter was opened",
            "can-<stamp>-bus.jsonl".to_owned(),
            r#"{"event":"start","bus_id":"bus","adapter":"process","channel":"sim0","bitrate":500000,"fd":false,"listen_only":false}"#.to_owned(),
        )
    );
    let home = &world.fixture.home;
    let part = can_participant::test_kind(home, "tester", key, &world.host(&Arc::default()));
    assert_eq!(
        names(&part),
        (
            "can_session:bus#tester".to_owned(),
            "the participant lock was refused before the broker was asked",
            "can-<stamp>-bus-tester.jsonl".to_owned(),
            r#"{"event":"start","bus_id":"bus","participant":"tester","adapter":"socketcan","channel":"","listen_only":false}"#.to_owned(),
        )
    );
    let rtt = rtt_session::test_kind(home, keys(), &world.host(&Arc::default()));
    assert_eq!(
        names(&rtt),
        (
            "rtt_session:board".to_owned(),
            "the device lock was refused before the target's memory was read",
            "rtt-<stamp>-board.jsonl".to_owned(),
            r#"{"event":"start","debugger":"board"}"#.to_owned(),
        )
    );
    let case = Debug::new(&world);
    let staged = crate::artifacts::resolve(
        &case.policy,
        &case.stager,
        crate::artifacts::ArtifactRef::Path("fw.elf"),
    )
    .expect("the ELF stages");
    let sha256 = staged.sha256().to_owned();
    let gdb = debug::test_kind(
        &case.openocd,
        None,
        keys(),
        staged,
        &world.host(&case.sessions),
    );
    let (label, refused, log, started) = names(&gdb);
    assert_eq!(
        (label.as_str(), refused, log.as_str()),
        (
            "debug_session:probe",
            "the device lock was refused before gdb started",
            "gdb-debug-<stamp>.jsonl",
        )
    );
    let started: Value = serde_json::from_str(&started).expect("an event");
    let session_id = started["session_id"].as_str().expect("a session id");
    assert!(session_id.starts_with("debug-"), "{started}");
    assert_eq!(
        started.to_string(),
        format!(
            r#"{{"event":"start","session_id":"{session_id}","mode":"attach","backend":"openocd","artifact":{{"path":"fw.elf","sha256":"{sha256}"}}}}"#
        )
    );
}
