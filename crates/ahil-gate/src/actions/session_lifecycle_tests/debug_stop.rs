//! A debug stop whose stop event cannot be written to its session log, on a session registered by
//! hand: an ST-LINK server already gone and no gdb, so the stop runs to its end with no process.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{Debug, World, debug_ops};
use crate::catalogue::ToolId;
use crate::debug::{Live, Loopback, Server};
use crate::ownership::SessionLocks;
use crate::session_lifecycle::{Registry, SessionLog};

/// A halted session on `case`'s sessions whose log is `name`, holding `keys`.
fn live(world: &World, case: &Debug, name: &str, keys: Vec<String>) -> Live {
    let staged = crate::artifacts::resolve(
        &case.policy,
        &case.stager,
        crate::artifacts::ArtifactRef::Path("fw.elf"),
    )
    .expect("the ELF stages");
    Live {
        session_id: "debug-test".to_owned(),
        mode: "attach".to_owned(),
        started_at: ahil_config::time::now_millis(),
        status: "halted",
        gdb: None,
        elf: staged,
        breakpoints: Vec::new(),
        next_breakpoint: 1,
        stop: None,
        log: SessionLog {
            audit: world.audit.clone(),
            name: name.to_owned(),
            path: world.audit.log_path(name),
        },
        gdb_transcript: Vec::new(),
        server: Server::Stlink(Loopback {
            process: None,
            port: 0,
            load_phase: "none",
            firmware_load_status: "not_loaded",
        }),
        locks: SessionLocks::take(&world.ours, keys, "debug_session:probe").expect("a free lock"),
        step: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        byte_order: ("little", "test"),
    }
}

#[test]
fn a_debug_stop_whose_stop_event_could_not_be_logged_says_why_as_the_other_stops_do() {
    let world = World::new();
    let case = Debug::new(&world);
    let keys = vec!["probe:lifecycle-debugger".to_owned()];
    let session = live(&world, &case, "gdb-debug-test.jsonl", keys.clone());
    assert!(case.sessions.register(session).is_ok(), "a free slot");
    world.block_logs();
    let limit = Duration::from_secs(1);
    let stopped = debug_ops::stop_session(
        ToolId::DebugStopSession,
        &case.sessions,
        &Value::Null,
        limit,
    );
    let outcome = &stopped.outcome;
    assert!(outcome.ok, "{:?}", outcome.summary);
    assert_eq!(outcome.audit_ok, Some(false));
    let error = (outcome.details.get("audit_error")).expect("the stop says why it is unaudited");
    assert_eq!(error["error_type"], "audit_write_failed", "{error}");
    // The stop still ended the session: its lock is free and its slot empty.
    assert!(!case.sessions.is_active());
    assert!(SessionLocks::take(&Arc::clone(&world.theirs), keys, "next").is_ok());
}

#[test]
fn a_debug_call_whose_event_could_not_be_logged_says_why_as_a_session_write_does() {
    let world = World::new();
    let case = Debug::new(&world);
    let keys = vec!["probe:lifecycle-debugger".to_owned()];
    let session = live(&world, &case, "gdb-debug-test.jsonl", keys);
    assert!(case.sessions.register(session).is_ok(), "a free slot");
    world.block_logs();
    let limits = debug_ops::Limits {
        max_dump: 0,
        output: None,
    };
    let cleared = debug_ops::run(
        ToolId::DebugClearBreakpoints,
        &case.sessions,
        &Value::Null,
        Duration::from_secs(1),
        &limits,
        &ahil_drivers::process::CancelFlag::default(),
    );
    let outcome = &cleared.outcome;
    assert_eq!(outcome.audit_ok, Some(false), "{:?}", outcome.summary);
    let error = (outcome.details.get("audit_error")).expect("the call says why it is unaudited");
    assert_eq!(error["error_type"], "audit_write_failed", "{error}");
    assert!(
        outcome.log_path.is_none(),
        "a log that was not written is not named"
    );
}
