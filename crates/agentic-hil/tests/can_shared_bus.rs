//! Black-box: shared CAN buses (`shares:`). Two MCP servers (two agents, two workspaces under one
//! HOME) attach as two participants of one bus whose adapter is the bridge simulator; the broker
//! between them owns the adapter and gives each its filtered queue.

mod support;

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};
use support::{World, frame_ids, ok, refused};

const TESTER: &str = "      tester:\n        permissions:\n          allow_write: true\n        filter:\n          - {id: 2016, mask: 2032}\n";
const MONITOR: &str = "      monitor:\n        filter:\n          - {id: 256, mask: 2047}\n          - {id: 2016, mask: 2047}\n";
const TINY: &str = "      tiny:\n        max_frames: 2\n        permissions:\n          allow_write: true\n        filter:\n          - {id: 291, mask: 2047}\n";
const SILENT: &str = "      silent:\n        requires_listen_only: true\n        filter:\n          - {id: 256, mask: 2047}\n";

/// Two shared buses: `shared` (an ECU answering 0x7E0 with 0x7E8, a periodic 0x100) and
/// `shared_lo`, listen-only, whose writer share can never attach.
fn can_buses(world: &World) -> String {
    let bridge = world.write_fake_tool(
        "bridge-shared",
        &format!(
            "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 30\n",
            support::can_bridge_simulator().display()
        ),
    );
    let mut yaml = String::from("can_buses:\n");
    for (name, extra, shares) in [
        (
            "shared",
            "",
            [TESTER, MONITOR, TINY, SILENT].concat(),
        ),
        (
            "shared_lo",
            "    listen_only: true\n",
            "      watch:\n        requires_listen_only: true\n      writer:\n        permissions:\n          allow_write: true\n".to_owned(),
        ),
    ] {
        let _ = write!(
            yaml,
            "  {name}:\n    adapter: process\n    channel: sim-{name}\n    executable: \"{}\"\n    timeout_s: 2\n{extra}    permissions:\n      allow_write: true\n    shares:\n{shares}",
            bridge.display()
        );
    }
    yaml.trim_end().to_owned()
}

fn provisioned(world: &World) {
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let config = world.config_path();
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(
        text.contains("can_buses: {}"),
        "the template has an empty can_buses"
    );
    std::fs::write(
        &config,
        text.replacen("can_buses: {}", &can_buses(world), 1),
    )
    .expect("write");
}

/// A world and a second workspace under the same HOME, each with the shared buses.
fn two_worlds() -> (World, World) {
    let world = World::new();
    provisioned(&world);
    let other = world.another_workspace("other-fw");
    provisioned(&other);
    (world, other)
}

fn start(participant: &str) -> Value {
    json!({"bus_id": "shared", "participant": participant})
}

fn broker_pid(started: &Value) -> u32 {
    started["broker"]["broker_pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or_else(|| panic!("a broker pid: {started}"))
}

/// Whether `pid` exists at all (a zombie nobody reaped counts).
fn exists(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn two_servers_are_two_participants_and_each_sees_only_what_its_filter_accepts() {
    let (world, other) = two_worlds();
    let first = support::connect(&world).await;
    let second = support::connect(&other).await;
    let tester = ok(&first, "can_session_start", start("tester")).await;
    let monitor = ok(&second, "can_session_start", start("monitor")).await;
    let pid = broker_pid(&tester);
    assert_eq!(tester["adapter"], "broker", "{tester}");
    assert_eq!(tester["session"]["participant"], "tester", "{tester}");
    assert_eq!(broker_pid(&monitor), pid, "one broker owns the bus");
    let list = ok(&first, "can_buses_list", json!({})).await;
    assert_eq!(
        list["buses"]["shared"]["active_participants"],
        json!(["monitor", "tester"]),
        "{list}"
    );

    ok(
        &first,
        "can_send",
        json!({"bus_id": "shared", "participant": "tester", "frame_id": "0x7E0", "data_hex": "1001"}),
    )
    .await;
    let answer = ok(
        &first,
        "can_read",
        json!({"bus_id": "shared", "until_id": 0x7e8, "wait_timeout_s": 5}),
    )
    .await;
    assert_eq!(answer["until_matched"], true, "{answer}");
    assert!(
        frame_ids(&answer)
            .iter()
            .all(|id| (0x7e0..=0x7ef).contains(id)),
        "the tester's filter keeps the periodic frame out: {answer}"
    );
    let seen = ok(
        &second,
        "can_read",
        json!({"bus_id": "shared", "until_id": 0x7e0, "wait_timeout_s": 5}),
    )
    .await;
    assert_eq!(
        seen["until_matched"], true,
        "the tester's frame reaches the monitor: {seen}"
    );
    let more = ok(
        &second,
        "can_read",
        json!({"bus_id": "shared", "until_id": 0x100, "wait_timeout_s": 5}),
    )
    .await;
    let mut all = frame_ids(&seen);
    all.extend(frame_ids(&more));
    assert!(all.contains(&0x100), "{more}");
    assert!(
        all.iter().all(|id| *id == 0x100 || *id == 0x7e0),
        "the ECU's answer is outside the monitor's filter: {all:?}"
    );

    let left = ok(&second, "can_session_stop", json!({"bus_id": "shared"})).await;
    assert_eq!(left["last_participant"], false, "{left}");
    assert_eq!(left["close_result"]["adapter_closed"], false, "{left}");
    assert!(exists(pid), "the broker stays for the other participant");
    let closing = ok(&first, "can_session_stop", json!({"bus_id": "shared"})).await;
    assert_eq!(closing["last_participant"], true, "{closing}");
    assert_eq!(closing["close_result"]["adapter_closed"], true, "{closing}");
    assert_eq!(
        closing["close_result"]["safe_state_confirmed"], true,
        "{closing}"
    );
    assert_eq!(closing["broker_exited"], true, "{closing}");
    assert!(!exists(pid), "the broker process is gone and reaped");
    let list = ok(&first, "can_buses_list", json!({})).await;
    assert_eq!(list["buses"]["shared"]["active_participants"], json!([]));

    // The broker's bus frame log is chained in the first server's audit trail.
    let bus_log = tester["broker"]["bus_frame_log"].as_str().expect("bus log");
    let text = std::fs::read_to_string(world.workspace.join(bus_log)).expect("the bus frame log");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        events.first().map(|e| e["event"].clone()),
        Some(json!("broker_start"))
    );
    assert!(events.iter().any(|e| e["event"] == "frame"
        && e["direction"] == "tx"
        && e["participant"] == "tester"
        && e["delivered_to"] == json!(["monitor"])));
    assert_eq!(
        events.last().map(|e| e["event"].clone()),
        Some(json!("broker_stop"))
    );
}

#[tokio::test]
async fn writes_outside_the_filter_the_budget_or_the_listen_only_rules_are_refused() {
    let (world, other) = two_worlds();
    let first = support::connect(&world).await;
    let second = support::connect(&other).await;
    ok(&first, "can_session_start", start("tiny")).await;
    let send = |id: &str| json!({"bus_id": "shared", "frame_id": id, "data_hex": "00"});
    let outside = refused(
        &first,
        "can_send",
        send("0x124"),
        "can_participant_filter_violation",
    )
    .await;
    assert_eq!(outside["retry_safe"], true, "{outside}");
    ok(&first, "can_send", send("0x123")).await;
    ok(&first, "can_send", send("0x123")).await;
    refused(
        &first,
        "can_send",
        send("0x123"),
        "can_participant_frame_budget_exhausted",
    )
    .await;

    // A reader cannot write; a writer and a participant that needs silence cannot share the bus.
    ok(&second, "can_session_start", start("monitor")).await;
    let denied = refused(&second, "can_send", send("0x100"), "permission_denied").await;
    assert_eq!(
        denied["permission"],
        "can_buses.shared.shares.monitor.permissions.allow_write"
    );
    ok(&second, "can_session_stop", json!({"bus_id": "shared"})).await;
    refused(
        &second,
        "can_session_start",
        start("silent"),
        "can_listen_only_conflict",
    )
    .await;

    let lo = |p: &str| json!({"bus_id": "shared_lo", "participant": p});
    refused(
        &second,
        "can_session_start",
        lo("writer"),
        "can_listen_only_conflict",
    )
    .await;
    ok(&second, "can_session_start", lo("watch")).await;
    refused(
        &second,
        "can_send",
        json!({"bus_id": "shared_lo", "frame_id": 1}),
        "can_listen_only_mode",
    )
    .await;
    ok(&second, "can_session_stop", json!({"bus_id": "shared_lo"})).await;
    ok(&first, "can_session_stop", json!({"bus_id": "shared"})).await;
}

#[tokio::test]
async fn a_participant_is_attached_once_and_is_named_on_a_shared_bus_when_none_is_open() {
    let (world, other) = two_worlds();
    let first = support::connect(&world).await;
    let second = support::connect(&other).await;
    refused(
        &first,
        "can_session_start",
        json!({"bus_id": "shared"}),
        "can_participant_required",
    )
    .await;
    // As in the reference: on a shared bus a stop with no session open names whose it would be.
    refused(
        &first,
        "can_session_stop",
        json!({"bus_id": "shared"}),
        "can_participant_required",
    )
    .await;
    let nothing = ok(&first, "can_session_stop", start("tester")).await;
    assert_eq!(nothing["was_active"], false, "{nothing}");
    let unknown = refused(
        &first,
        "can_session_start",
        start("nobody"),
        "can_participant_not_configured",
    )
    .await;
    assert!(
        unknown["configured_participants"]
            .as_array()
            .is_some_and(|p| p.contains(&json!("tester")))
    );
    ok(&first, "can_session_start", start("tester")).await;
    let busy = refused(&second, "can_session_start", start("tester"), "device_busy").await;
    assert_eq!(busy["retry_safe"], true, "{busy}");
    let again = ok(&first, "can_session_start", start("tester")).await;
    assert_eq!(again["already_active"], true, "{again}");
    assert_eq!(again["participant"], "tester", "{again}");
    assert_eq!(again.get("adapter"), None, "{again}");
    refused(
        &first,
        "can_read",
        json!({"bus_id": "shared", "participant": "monitor"}),
        "session_not_active",
    )
    .await;
    ok(&first, "can_session_stop", json!({"bus_id": "shared"})).await;
}

#[tokio::test]
async fn a_broker_killed_with_sigkill_leaves_no_lock_held_and_the_next_attach_starts_a_new_one() {
    let (world, other) = two_worlds();
    let first = support::connect(&world).await;
    let second = support::connect(&other).await;
    let started = ok(&first, "can_session_start", start("tester")).await;
    let pid = broker_pid(&started);
    let killed = std::process::Command::new("/bin/kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    for _ in 0..50 {
        if !exists(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!exists(pid), "the killed broker is reaped");
    let lost = refused(
        &first,
        "can_read",
        json!({"bus_id": "shared"}),
        "can_broker_disconnected",
    )
    .await;
    assert!(
        lost["summary"]
            .as_str()
            .is_some_and(|s| !s.contains(&world.home.display().to_string()))
    );

    let next = ok(&second, "can_session_start", start("monitor")).await;
    assert_ne!(broker_pid(&next), pid, "a new broker owns the bus");
    let stopped = ok(&first, "can_session_stop", json!({"bus_id": "shared"})).await;
    assert_eq!(stopped["was_active"], true, "{stopped}");
    ok(&first, "can_session_start", start("tester")).await;
    ok(&first, "can_session_stop", json!({"bus_id": "shared"})).await;
    ok(&second, "can_session_stop", json!({"bus_id": "shared"})).await;
}

#[tokio::test]
async fn a_peer_without_the_broker_key_is_refused_and_attaches_nothing() {
    use std::io::{BufRead, BufReader, Write};
    let (world, _other) = two_worlds();
    let first = support::connect(&world).await;
    ok(&first, "can_session_start", start("tester")).await;
    let dir = world.home.join(".agentic-hil/can-brokers");
    let socket = std::fs::read_dir(&dir)
        .expect("the broker directory")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "sock"))
        .expect("the broker socket");
    let mut stream = std::os::unix::net::UnixStream::connect(&socket).expect("connect");
    let hello = json!({"message": "attach", "key": "00".repeat(32), "protocol_version": 1, "participant": "monitor"});
    writeln!(stream, "{hello}").expect("write");
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .expect("an answer");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(
        answer["error_type"], "can_broker_authentication_failed",
        "{answer}"
    );
    let list = ok(&first, "can_buses_list", json!({})).await;
    assert_eq!(
        list["buses"]["shared"]["active_participants"],
        json!(["tester"]),
        "{list}"
    );
    ok(&first, "can_session_stop", json!({"bus_id": "shared"})).await;
}

/// "A declared run still holds the bus" (can_session_stop), for a shared bus: the run holds its
/// participant, never the bus the broker owns, so another server's participant attaches beside it.
#[tokio::test]
async fn a_declared_run_still_holds_its_participant_of_a_shared_bus_and_only_that_one() {
    let (world, other) = two_worlds();
    let first = support::connect(&world).await;
    let second = support::connect(&other).await;
    let run = |participant: Option<&str>| {
        let mut device = json!({"kind": "can", "id": "shared"});
        if let Some(name) = participant {
            device["participant"] = json!(name);
        }
        json!({"devices": [device]})
    };
    refused(
        &first,
        "bench_run_start",
        run(None),
        "can_participant_required",
    )
    .await;
    refused(
        &first,
        "bench_run_start",
        run(Some("nobody")),
        "can_participant_not_configured",
    )
    .await;
    let declared = ok(&first, "bench_run_start", run(Some("tester"))).await;
    let key = declared["declared_devices"][0].clone();
    assert!(
        key.as_str().is_some_and(|k| k.ends_with("#tester")),
        "the run holds the participant's key: {declared}"
    );

    ok(&second, "can_session_start", start("monitor")).await;
    refused(&second, "can_session_start", start("tester"), "device_busy").await;
    ok(&first, "can_session_start", start("tester")).await;
    refused(
        &first,
        "can_session_start",
        start("monitor"),
        "undeclared_device",
    )
    .await;
    let left = ok(&first, "can_session_stop", start("tester")).await;
    assert_eq!(left["last_participant"], false, "{left}");
    refused(&second, "can_session_start", start("tester"), "device_busy").await;

    // A session still open keeps its own device when the run ends.
    ok(&first, "can_session_start", start("tester")).await;
    let ended = ok(&first, "bench_run_stop", json!({})).await;
    assert_eq!(ended["still_held_devices"], json!([key]), "{ended}");
    assert!(
        ended["open_leases"]
            .as_array()
            .is_some_and(|l| !l.is_empty()),
        "{ended}"
    );
    ok(&first, "can_session_stop", start("tester")).await;
    ok(&second, "can_session_start", start("tester")).await;
    ok(&second, "can_session_stop", start("tester")).await;
    let closing = ok(&second, "can_session_stop", start("monitor")).await;
    assert_eq!(closing["close_result"]["adapter_closed"], true, "{closing}");
}

#[tokio::test]
async fn one_server_is_two_participants_each_with_its_own_filtered_queue() {
    let (world, _other) = two_worlds();
    let server = support::connect(&world).await;
    let tester = ok(&server, "can_session_start", start("tester")).await;
    let monitor = ok(&server, "can_session_start", start("monitor")).await;
    let pid = broker_pid(&tester);
    assert_eq!(broker_pid(&monitor), pid, "one broker owns the bus");
    let list = ok(&server, "can_buses_list", json!({})).await;
    let bus = &list["buses"]["shared"];
    assert_eq!(
        bus["active_participants"],
        json!(["monitor", "tester"]),
        "{list}"
    );
    assert_eq!(bus["sessions"]["tester"]["participant"], "tester", "{list}");
    assert_eq!(
        bus["sessions"]["monitor"]["participant"], "monitor",
        "{list}"
    );
    refused(
        &server,
        "can_read",
        json!({"bus_id": "shared"}),
        "can_participant_required",
    )
    .await;

    ok(
        &server,
        "can_send",
        json!({"bus_id": "shared", "participant": "tester", "frame_id": "0x7E0", "data_hex": "1001"}),
    )
    .await;
    let answer = ok(
        &server,
        "can_read",
        json!({"bus_id": "shared", "participant": "tester", "until_id": 0x7e8, "wait_timeout_s": 5}),
    )
    .await;
    assert_eq!(answer["until_matched"], true, "{answer}");
    assert!(
        frame_ids(&answer)
            .iter()
            .all(|id| (0x7e0..=0x7ef).contains(id)),
        "the tester's filter keeps the periodic frame out: {answer}"
    );
    let seen = ok(
        &server,
        "can_read",
        json!({"bus_id": "shared", "participant": "monitor", "until_id": 0x7e0, "wait_timeout_s": 5}),
    )
    .await;
    assert_eq!(
        seen["until_matched"], true,
        "the tester's frame reaches the monitor: {seen}"
    );
    assert!(
        frame_ids(&seen)
            .iter()
            .all(|id| *id == 0x100 || *id == 0x7e0),
        "the ECU's answer is outside the monitor's filter: {seen}"
    );

    let left = ok(&server, "can_session_stop", start("tester")).await;
    assert_eq!(left["last_participant"], false, "{left}");
    assert_eq!(left["close_result"]["adapter_closed"], false, "{left}");
    let list = ok(&server, "can_buses_list", json!({})).await;
    assert_eq!(
        list["buses"]["shared"]["active_participants"],
        json!(["monitor"])
    );
    let closing = ok(&server, "can_session_stop", json!({"bus_id": "shared"})).await;
    assert_eq!(
        closing["participant"], "monitor",
        "the one left is the default: {closing}"
    );
    assert_eq!(closing["close_result"]["adapter_closed"], true, "{closing}");
    assert_eq!(closing["broker_exited"], true, "{closing}");
    assert!(!exists(pid), "the broker process is gone and reaped");
}

#[test]
fn a_cancelled_read_of_a_participant_takes_no_frame_and_holds_up_no_later_read() {
    let (world, _other) = two_worlds();
    let mut server = support::raw::Mcp::ours(&world);
    let tester = server.envelope("can_session_start", &start("tester"));
    assert_eq!(tester["ok"], true, "{tester}");
    let answer = support::can_read_after_a_cancelled_one(
        &mut server,
        &world,
        &json!({"bus_id": "shared", "participant": "tester", "frame_id": "0x7E0", "data_hex": "1001"}),
        &json!({"bus_id": "shared", "participant": "tester", "until_id": 0x123, "wait_timeout_s": 30}),
        &json!({"bus_id": "shared", "participant": "tester", "until_id": 0x7e8, "wait_timeout_s": 5}),
    );
    assert_eq!(
        answer["until_matched"], true,
        "the answer is still there: {answer}"
    );
}

/// A plan step runs as the participant it names, so its share's grants are the step's: a plan that
/// sends as a participant whose share may not write is refused at preflight, naming the share's
/// grant, before its first step opens the bus (it used to pass preflight, open the bus and start
/// its broker, and fail only at the send).
#[test]
fn a_plan_that_sends_as_a_participant_that_may_not_write_is_refused_before_any_step() {
    let world = World::new();
    provisioned(&world);
    let plan = world.write_plan(
        "monitor-sends.yaml",
        "version: 6\nname: monitor-sends\nsteps:\n\
         \x20 - {device: shared, action: can_open, participant: monitor}\n\
         \x20 - {device: shared, action: can_send, participant: monitor, frame_id: 0x100, data_hex: \"01\"}\n",
    );
    let (doc, code) = world.run_json(&["test-reactor", "--test-config", &plan]);
    assert_eq!(code, Some(1), "{doc}");
    assert_eq!(doc["error_type"], "permission_denied", "{doc}");
    assert_eq!(
        doc["validation_error"]["permission"],
        "can_buses.shared.shares.monitor.permissions.allow_write",
        "{doc}"
    );
    assert_eq!(doc["validation_error"]["field"], "steps[1].action", "{doc}");
    assert_eq!(doc["steps"], json!([]), "no step ran: {doc}");
}
