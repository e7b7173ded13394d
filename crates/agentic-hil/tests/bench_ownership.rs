//! Bench ownership across processes: real servers contending for one device, killed with SIGKILL
//! while holding it, and incidents that must be settled or stand until the operator recovers them.

mod support;

use std::path::Path;
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};
use support::World;
use support::raw::{EchoBoard, Mcp, configure_uart};

fn debugger_run() -> Value {
    json!({"devices": [{"kind": "debugger"}], "label": "contention"})
}

fn ledger(world: &World) -> Vec<Value> {
    let path = world
        .home
        .join(".local/state/agentic-hil/coordination/recovery.jsonl");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("ledger lines are JSON"))
        .collect()
}

/// A world whose `uart0` is a pty board, after a server holding a session on it was killed
/// (SIGKILL: it released nothing); the board lives as long as the test holds it.
fn killed_holding_uart0() -> (World, EchoBoard) {
    let world = World::new();
    let board = EchoBoard::start();
    configure_uart(&world, &board.device);
    let mut dead = Mcp::ours(&world);
    let started = dead.call("com_session_start", &json!({"port_id": "uart0"}));
    assert_eq!(started["isError"], false, "{started}");
    dead.kill9();
    (world, board)
}

/// Every server in `servers` asks for the debugger at the same instant; returns who got it.
fn contend(servers: &mut [Mcp]) -> Vec<(u32, Value)> {
    let barrier = Arc::new(Barrier::new(servers.len()));
    std::thread::scope(|scope| {
        let handles: Vec<_> = servers
            .iter_mut()
            .map(|server| {
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || {
                    barrier.wait();
                    (
                        server.pid(),
                        server.call("bench_run_start", &debugger_run()),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("caller"))
            .collect()
    })
}

fn winners(results: &[(u32, Value)]) -> Vec<u32> {
    results
        .iter()
        .filter(|(_, r)| r["isError"] == false)
        .map(|(pid, _)| *pid)
        .collect()
}

#[test]
fn eight_servers_contending_for_one_probe_leave_exactly_one_holder_and_a_kill_frees_it_at_once() {
    let world = World::new();
    assert!(world.run(&["init"]).status.success());
    let mut servers: Vec<Mcp> = (0..8).map(|_| Mcp::ours(&world)).collect();

    let first = contend(&mut servers);
    let won = winners(&first);
    assert_eq!(won.len(), 1, "exactly one holder: {first:?}");
    let holder = won[0];
    for (pid, result) in &first {
        if *pid == holder {
            continue;
        }
        let doc = &result["structuredContent"];
        assert_eq!(doc["error_type"], "device_busy", "{doc}");
        assert!(
            doc["summary"]
                .as_str()
                .is_some_and(|s| s.contains(&format!("pid {holder}"))),
            "the refusal names the holder: {doc}"
        );
    }

    let index = servers
        .iter()
        .position(|s| s.pid() == holder)
        .expect("holder");
    servers[index].kill9();
    servers.remove(index);

    let second = contend(&mut servers);
    let won = winners(&second);
    assert_eq!(won.len(), 1, "exactly one new holder: {second:?}");
    let taken = &second
        .iter()
        .find(|(pid, _)| *pid == won[0])
        .expect("winner")
        .1["structuredContent"];
    let reclaimed = taken["reclaimed"][0].clone();
    assert_eq!(
        reclaimed["reason"], "owner_process_exited_without_release",
        "{taken}"
    );
    assert_eq!(reclaimed["owner"]["pid"], holder, "{taken}");
}

/// The catalogue: "A COM, CAN or debug session still open keeps its own device: open_leases,
/// still_held_devices." The port stays held against another server until the session stops.
#[test]
fn a_run_stopped_under_an_open_com_session_names_the_lease_that_still_holds_the_port() {
    let world = World::new();
    let board = EchoBoard::start();
    configure_uart(&world, &board.device);
    let port = json!({"port_id": "uart0"});
    let mut ours = Mcp::ours(&world);
    let run = ours.call(
        "bench_run_start",
        &json!({"devices": [{"kind": "uart", "id": "uart0"}]}),
    );
    assert_eq!(run["isError"], false, "{run}");
    assert_eq!(ours.call("com_session_start", &port)["isError"], false);
    let stopped = ours.call("bench_run_stop", &json!({}));
    let doc = &stopped["structuredContent"];
    assert_eq!(stopped["isError"], false, "{stopped}");
    assert_eq!(doc["run_was_active"], true, "{doc}");
    let held = doc["still_held_devices"].as_array().expect("still held");
    assert_eq!(held.len(), 1, "{doc}");
    assert_eq!(
        doc["open_leases"].as_array().map(Vec::len),
        Some(1),
        "{doc}"
    );

    let mut other = Mcp::ours(&world);
    let refused = other.call("com_session_start", &port);
    assert_eq!(
        refused["isError"], true,
        "the session still holds the port: {refused}"
    );
    assert_eq!(
        refused["structuredContent"]["error_type"], "device_busy",
        "{refused}"
    );

    assert_eq!(ours.call("com_session_stop", &port)["isError"], false);
    let stopped = ours.call("bench_run_stop", &json!({}));
    assert_eq!(
        stopped["structuredContent"]["run_was_active"], false,
        "{stopped}"
    );
    assert!(
        stopped["structuredContent"]
            .get("still_held_devices")
            .is_none(),
        "{stopped}"
    );
    assert_eq!(other.call("com_session_start", &port)["isError"], false);
}

/// Another project's unresolved incident on a shared port: this project's lease status lists it as
/// a standing incident, and a session on the port is refused `resource_quarantined` before the port
/// is opened.
#[test]
fn another_projects_incident_on_a_shared_port_is_listed_and_refuses_this_projects_session() {
    let (world, board) = killed_holding_uart0();
    let port = json!({"port_id": "uart0"});
    // The dead server's own project adopts its lease as an incident.
    let (status, _) = world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], true, "{status}");

    let other = world.another_workspace("other-fw");
    configure_uart(&other, &board.device);
    let (status, code) = other.run_json(&["lease-status"]);
    assert_eq!(code, Some(0), "{status}");
    assert_eq!(
        status["blocked"], false,
        "not this project's incident: {status}"
    );
    let standing = status["standing_incidents"].as_array().expect("a list");
    assert_eq!(standing.len(), 1, "{status}");
    assert_eq!(
        standing[0]["cleanup_reasons"],
        json!(["owner_process_exited_without_release"]),
        "{status}"
    );
    let mut ours = Mcp::ours(&other);
    let refused = ours.call("com_session_start", &port);
    let doc = &refused["structuredContent"];
    assert_eq!(doc["error_type"], "resource_quarantined", "{refused}");
    assert_eq!(doc["quarantine_scope"], "foreign_project", "{refused}");
    assert_eq!(doc["target_contacted"], false, "{refused}");
}

#[test]
fn a_server_killed_holding_a_session_leaves_an_incident_the_next_call_stands_down() {
    let (world, _board) = killed_holding_uart0();
    let port = json!({"port_id": "uart0"});

    let (status, code) = world.run_json(&["lease-status"]);
    assert_eq!(code, Some(0), "{status}");
    assert_eq!(status["blocked"], true, "{status}");
    assert_eq!(status["incident_stands"], false, "{status}");
    assert_eq!(
        status["cleanup_reasons"],
        json!(["owner_process_exited_without_release"])
    );
    let quarantine_id = status["quarantine_id"].as_str().expect("id").to_owned();

    let mut next = Mcp::ours(&world);
    let seen = next.call("hardware_lease_status", &json!({}));
    assert_eq!(
        seen["isError"], false,
        "status is judged on ok alone: {seen}"
    );
    assert_eq!(
        seen["structuredContent"]["quarantine_id"],
        quarantine_id.as_str()
    );
    assert_eq!(
        seen["structuredContent"]["auto_recoverable"], false,
        "no debugger names the port"
    );
    let nothing = next.envelope("hardware_recover", &json!({}));
    assert_eq!(
        nothing["nothing_to_recover"], true,
        "only a standing incident needs recovery: {nothing}"
    );
    let started = next.call("com_session_start", &port);
    assert_eq!(
        started["isError"], false,
        "the call itself succeeds: {started}"
    );
    let doc = &started["structuredContent"];
    assert_eq!(doc["incident_stood_down"], true, "{doc}");
    assert_eq!(doc["quarantine_id"], quarantine_id.as_str());
    assert_eq!(
        doc["recovery"]["reason_not_attempted"], "no_debugger_in_incident",
        "resetting the probe proves nothing about a port: {doc}"
    );
    let line = ledger(&world)
        .into_iter()
        .find(|l| l["quarantine_id"] == quarantine_id.as_str())
        .expect("the ledger names the incident");
    assert_eq!(line["recovery"], "incident_stood_down");
    assert_eq!(line["attestation"], "no_standing_state");

    assert_eq!(next.call("com_session_stop", &port)["isError"], false);
    let (status, _) = world.run_json(&["lease-status"]);
    assert_eq!(status["blocked"], false, "{status}");
}

/// Replaces every session log in the workspace with a link, so the next append is refused.
fn break_session_logs(workspace: &Path) -> Vec<std::path::PathBuf> {
    let logs = workspace.join(".agentic-hil/logs");
    let elsewhere = workspace.join("elsewhere.jsonl");
    std::fs::write(&elsewhere, "").expect("target");
    let mut broken = Vec::new();
    for entry in std::fs::read_dir(&logs).expect("logs") {
        let path = entry.expect("entry").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("com-"))
        {
            std::fs::remove_file(&path).expect("rm");
            std::os::unix::fs::symlink(&elsewhere, &path).expect("link");
            broken.push(path);
        }
    }
    assert!(!broken.is_empty(), "a session log exists");
    broken
}

#[test]
fn a_lost_session_log_quarantines_the_bench_until_the_operator_recovers_it() {
    let world = World::new();
    let board = EchoBoard::start();
    configure_uart(&world, &board.device);
    let port = json!({"port_id": "uart0"});
    let write = json!({"port_id": "uart0", "text": "ping\n"});
    let mut server = Mcp::ours(&world);
    assert_eq!(server.call("com_session_start", &port)["isError"], false);
    break_session_logs(&world.workspace);

    let broke = server.envelope("com_write", &write);
    assert_eq!(broke["audit_ok"], false, "{broke}");
    assert_eq!(broke["quarantined"], true, "{broke}");
    assert_eq!(broke["lease_state"], "quarantined", "{broke}");
    let quarantine_id = broke["quarantine_id"].as_str().expect("id").to_owned();

    let refused = server.envelope("com_write", &write);
    assert_eq!(refused["error_type"], "resource_quarantined", "{refused}");
    assert_eq!(refused["quarantine_id"], quarantine_id.as_str());
    assert_eq!(refused["target_contacted"], false);

    let agent = server.envelope(
        "hardware_recover",
        &json!({"operator_statement": "looks fine"}),
    );
    assert_eq!(
        agent["error_type"], "recovery_requires_physical_check",
        "an audit break is the operator's alone: {agent}"
    );
    // Containment is let through while it stands (its own evidence is still lost, so it says so).
    let stopped = server.envelope("com_session_stop", &port);
    assert_ne!(stopped["error_type"], "resource_quarantined", "{stopped}");
    assert_eq!(stopped["was_active"], true, "{stopped}");

    let (status, _) = world.run_json(&["lease-status"]);
    assert_eq!(status["incident_stands"], true, "{status}");
    let (doc, code) = world.run_json(&["recover"]);
    assert_eq!(code, Some(1));
    assert_eq!(doc["error_type"], "operator_confirmation_required");
    let (doc, _) = world.run_json(&["recover", "--confirm-safe-state"]);
    assert_eq!(doc["error_type"], "quarantine_id_required", "{doc}");
    let (doc, _) = world.run_json(&["recover", "--confirm-safe-state", "--quarantine-id", "0123"]);
    assert_eq!(doc["error_type"], "quarantine_changed", "{doc}");
    let (doc, code) = world.run_json(&[
        "recover",
        "--confirm-safe-state",
        "--quarantine-id",
        &quarantine_id,
    ]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["recovered_quarantine_id"], quarantine_id.as_str());
    let line = ledger(&world).pop().expect("a ledger line");
    assert_eq!(line["actor"], "human");
    assert_eq!(line["via"], "cli:recover");

    let (doc, _) = world.run_json(&["recover", "--confirm-safe-state"]);
    assert_eq!(doc["nothing_to_recover"], true, "{doc}");
    assert_eq!(server.call("com_session_start", &port)["isError"], false);
    assert_eq!(server.call("com_write", &write)["isError"], false);
}

#[test]
fn a_server_that_ends_on_eof_or_sigterm_closes_its_sessions_and_leaves_no_incident() {
    for how in ["eof", "sigterm"] {
        let world = World::new();
        let board = EchoBoard::start();
        configure_uart(&world, &board.device);
        let port = json!({"port_id": "uart0"});
        let mut server = Mcp::ours(&world);
        assert_eq!(server.call("com_session_start", &port)["isError"], false);
        let code = if how == "eof" {
            server.close()
        } else {
            server.terminate()
        };
        assert_eq!(code, Some(0), "{how}: the server exits cleanly");
        let (status, _) = world.run_json(&["lease-status"]);
        assert_eq!(status["blocked"], false, "{how}: {status}");
        assert_eq!(status["record"]["state"], "released", "{how}: {status}");
        assert!(ledger(&world).is_empty(), "{how}: nothing to record");
        let logs = world.workspace.join(".agentic-hil/logs");
        let session_log = std::fs::read_dir(&logs)
            .expect("logs")
            .map(|e| e.expect("entry").path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("com-"))
            })
            .expect("the session log");
        let text = std::fs::read_to_string(session_log).expect("log");
        assert!(
            text.lines().last().is_some_and(|l| l.contains("\"stop\"")),
            "{how}: the session was closed, not dropped: {text}"
        );
        let mut next = Mcp::ours(&world);
        let taken = next.envelope("com_session_start", &port);
        assert_eq!(taken["ok"], true, "{how}: {taken}");
        assert!(taken.get("incident_stood_down").is_none(), "{how}: {taken}");
    }
}

mod across_processes {
    //! Random sequences of session starts, stops, crashes and status reads over three servers on
    //! one port: never two holders, and every crash of a holder is accounted for in the ledger or
    //! still open.

    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Step {
        Start(usize),
        Stop(usize),
        Crash(usize),
        Status,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0..3usize).prop_map(Step::Start),
            2 => (0..3usize).prop_map(Step::Stop),
            2 => (0..3usize).prop_map(Step::Crash),
            1 => Just(Step::Status),
        ]
    }

    fn settled_lines(world: &World) -> usize {
        ledger(world)
            .iter()
            .filter(|l| {
                matches!(
                    l["recovery"].as_str(),
                    Some("incident_stood_down" | "incident_resolved")
                )
            })
            .count()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 10, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn no_two_holders_and_no_lost_incident(steps in proptest::collection::vec(step(), 4..14)) {
            let world = World::new();
            let board = EchoBoard::start();
            configure_uart(&world, &board.device);
            let port = json!({"port_id": "uart0"});
            let mut servers: Vec<Option<Mcp>> = (0..3).map(|_| None).collect();
            let mut holder: Option<usize> = None;
            let mut crashed_holding = 0usize;
            for step in steps {
                match step {
                    Step::Start(i) => {
                        let server = servers[i].get_or_insert_with(|| Mcp::ours(&world));
                        let doc = server.envelope("com_session_start", &port);
                        match holder {
                            Some(h) if h != i => {
                                prop_assert_eq!(doc["ok"].clone(), json!(false), "two holders: {}", doc);
                                prop_assert_eq!(doc["error_type"].clone(), json!("device_busy"), "{}", doc);
                            }
                            _ => {
                                prop_assert_eq!(doc["ok"].clone(), json!(true), "{}", doc);
                                holder = Some(i);
                            }
                        }
                    }
                    Step::Stop(i) => {
                        if let Some(server) = servers[i].as_mut() {
                            let doc = server.envelope("com_session_stop", &port);
                            match holder {
                                Some(h) if h != i => {
                                    prop_assert_eq!(doc["error_type"].clone(), json!("device_busy"), "{}", doc);
                                }
                                _ => {
                                    prop_assert_eq!(doc["was_active"].clone(), json!(holder == Some(i)), "{}", doc);
                                }
                            }
                            if holder == Some(i) {
                                holder = None;
                            }
                        }
                    }
                    Step::Crash(i) => {
                        if let Some(mut server) = servers[i].take() {
                            server.kill9();
                            if holder == Some(i) {
                                holder = None;
                                crashed_holding += 1;
                            }
                        }
                    }
                    Step::Status => {
                        let (status, code) = world.run_json(&["lease-status"]);
                        prop_assert_eq!(code, Some(0), "{}", status);
                        prop_assert_eq!(status["incident_stands"].clone(), json!(false), "{}", status);
                    }
                }
            }
            for server in servers.iter_mut().flatten() {
                server.kill9();
            }
            let crashed_holding = crashed_holding + usize::from(holder.is_some());
            let (status, _) = world.run_json(&["lease-status"]);
            let open = usize::from(status["blocked"] == json!(true));
            prop_assert_eq!(
                settled_lines(&world) + open,
                crashed_holding,
                "every crash of a holder is settled or still open: {} {:?}",
                status,
                ledger(&world)
            );
        }
    }
}

#[test]
fn init_force_does_not_rewrite_the_configuration_under_an_open_run() {
    let world = World::new();
    assert!(world.run(&["init"]).status.success());
    let before = std::fs::read(world.config_path()).expect("config");
    let mut server = Mcp::ours(&world);
    assert_eq!(
        server.call("bench_run_start", &debugger_run())["isError"],
        false
    );
    let (doc, code) = world.run_json(&["init", "--force"]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["error_type"], "config_write_in_open_run", "{doc}");
    assert_eq!(std::fs::read(world.config_path()).expect("config"), before);
    assert_eq!(server.call("bench_run_stop", &json!({}))["isError"], false);
    let (doc, code) = world.run_json(&["init", "--force"]);
    assert_eq!(code, Some(0), "{doc}");
}

/// `bench_run_start` waiting for a device another server holds: this server's own status answers
/// at once meanwhile (the wait used to hold the run slot, up to `wait_s` of 900 s), and once the
/// client cancels the start, the device freed later is not taken for a run nobody was told of.
#[test]
fn a_waiting_run_start_holds_up_no_status_and_once_cancelled_takes_nothing() {
    let board = EchoBoard::start();
    let world = World::new();
    configure_uart(&world, &board.device);
    let mut holder = Mcp::ours(&world);
    let mut waiter = Mcp::ours(&world);
    let opened = holder.envelope("com_session_start", &json!({"port_id": "uart0"}));
    assert_eq!(opened["ok"], true, "{opened}");
    waiter.send(
        &json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {
        "name": "bench_run_start",
        "arguments": {"devices": [{"kind": "uart", "id": "uart0"}], "wait_s": 30}}}),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    let asked = std::time::Instant::now();
    let status = waiter.envelope("bench_run_status", &json!({}));
    assert_eq!(status["run_active"], false, "{status}");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(3),
        "bench_run_status waited {:?} behind the start's wait",
        asked.elapsed()
    );
    waiter.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 900, "reason": "the user changed their mind"}}),
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    let closed = holder.envelope("com_session_stop", &json!({"port_id": "uart0"}));
    assert_eq!(closed["was_active"], true, "{closed}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let status = waiter.envelope("bench_run_status", &json!({}));
    assert_eq!(
        status["run_active"], false,
        "a cancelled start opened a run: {status}"
    );
    let reopened = holder.envelope("com_session_start", &json!({"port_id": "uart0"}));
    assert_eq!(reopened["ok"], true, "the port is free again: {reopened}");
}
