//! Black-box, end to end: the places in `hardware_lease_status`, `lease-status` and `watch`, and
//! the ledger line for a dead server's place, against a real labgrid 26.0.1 coordinator on
//! loopback (`ahil_sim::labgrid::Lab`) with `labgrid-client` as the lab's other users.

#[path = "support/labgrid_bench.rs"]
mod labgrid_bench;
mod support;

use std::net::TcpListener;

use labgrid_bench::{
    ALICE, Bench, US, a_server_killed_holding_bench_1, lab_with_bench_1, reserve_bench_1_for,
    start_a_run_on_the_probe,
};
use serde_json::{Value, json};
use support::raw::Mcp;
use support::{World, call};

/// The status's one place entry (the bench's devices all belong to `bench-1`).
fn bench_1(doc: &Value) -> &Value {
    let places = doc["labgrid"]["places"]
        .as_array()
        .unwrap_or_else(|| panic!("labgrid places in the status: {doc}"));
    assert_eq!(places.len(), 1, "{doc}");
    assert_eq!(places[0]["place"], json!("bench-1"), "{doc}");
    &places[0]
}

#[tokio::test]
async fn the_status_names_another_users_acquisition_and_then_the_reservation_allocated_the_place() {
    let (_dir, lab) = lab_with_bench_1();
    lab.acquire(ALICE, "bench-1");
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;

    let (doc, is_error) = call(&client, "hardware_lease_status", json!({})).await;
    assert!(!is_error, "{doc}");
    let place = bench_1(&doc);
    assert_eq!(place["labgrid_owner"], json!(ALICE), "{doc}");
    assert_eq!(place["held_by_us"], json!(false), "{doc}");
    assert_eq!(
        place["devices"],
        json!(["debuggers.probe", "com_ports.uart0"]),
        "{doc}"
    );
    assert_eq!(doc["labgrid"]["user"], json!(US), "{doc}");

    lab.release(ALICE, "bench-1");
    reserve_bench_1_for(&lab, ALICE);
    let (doc, is_error) = call(&client, "hardware_lease_status", json!({})).await;
    assert!(!is_error, "{doc}");
    let place = bench_1(&doc);
    assert_eq!(place["labgrid_owner"], Value::Null, "{doc}");
    let reservation = &place["reservations"][0];
    assert_eq!(reservation["owner"], json!(ALICE), "{doc}");
    assert_eq!(reservation["state"], json!("allocated"), "{doc}");
    assert!(
        reservation["token"].as_str().is_some_and(|t| !t.is_empty()),
        "{doc}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn the_status_shows_our_runs_hold_in_the_server_in_lease_status_and_in_watch() {
    let (_dir, lab) = lab_with_bench_1();
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;
    let (doc, is_error) = start_a_run_on_the_probe(&client).await;
    assert!(!is_error, "{doc}");

    let (doc, _) = call(&client, "hardware_lease_status", json!({})).await;
    let place = bench_1(&doc);
    assert_eq!(place["labgrid_owner"], json!(US), "{doc}");
    assert_eq!(place["held_by_us"], json!(true), "{doc}");
    assert_eq!(place["holder"], json!("this_server"), "{doc}");
    assert_eq!(place["held_for"], json!(["run"]), "{doc}");

    // Another process sees the server's hold through the place's mark.
    let (doc, code) = bench.world.run_json(&["lease-status"]);
    assert_eq!(code, Some(0), "{doc}");
    let place = bench_1(&doc);
    assert_eq!(place["holder"], json!("live_server"), "{doc}");
    assert_eq!(place["held_for"], json!(["run"]), "{doc}");
    let text = bench.world.run(&["lease-status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("place: bench-1: ours, held for: run"),
        "{text}"
    );
    let frame = bench
        .world
        .run(&["watch", "--once", "--width", "110", "--height", "30"]);
    let frame = String::from_utf8_lossy(&frame.stdout);
    assert!(
        frame.contains("place bench-1: ours, held for: run"),
        "{frame}"
    );

    let (doc, is_error) = call(&client, "bench_run_stop", json!({})).await;
    assert!(!is_error, "{doc}");
    let (doc, _) = call(&client, "hardware_lease_status", json!({})).await;
    let place = bench_1(&doc);
    assert_eq!(place["labgrid_owner"], Value::Null, "{doc}");
    assert_eq!(place["held_by_us"], json!(false), "{doc}");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn an_unreachable_coordinator_is_shown_in_its_place_entry_and_the_status_still_answers() {
    // A port nobody listens on: the connection is refused at once.
    let address = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
        listener.local_addr().expect("address").to_string()
    };
    let bench = Bench::new(&address);
    let client = support::connect(&bench.world).await;
    let (doc, is_error) = call(&client, "hardware_lease_status", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(doc["ok"], json!(true), "{doc}");
    assert_eq!(
        doc["summary"],
        json!("No incident is open on this bench."),
        "{doc}"
    );
    let place = bench_1(&doc);
    assert!(
        place["labgrid_unavailable"]
            .as_str()
            .is_some_and(|r| r.contains(&address)),
        "{doc}"
    );
    client.cancel().await.expect("client closes");

    let (doc, code) = bench.world.run_json(&["lease-status"]);
    assert_eq!(code, Some(0), "{doc}");
    assert!(bench_1(&doc)["labgrid_unavailable"].is_string(), "{doc}");
}

#[test]
fn without_a_labgrid_section_the_status_has_no_places() {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let (doc, code) = world.run_json(&["lease-status"]);
    assert_eq!(code, Some(0), "{doc}");
    assert!(doc.get("labgrid").is_none(), "{doc}");
}

#[test]
fn the_ledger_records_the_place_a_killed_server_left_when_the_next_server_settles_it() {
    let (_dir, lab) = lab_with_bench_1();
    let bench = Bench::new(&lab.address);
    a_server_killed_holding_bench_1(&bench);

    let mut next = Mcp::ours(&bench.world);
    let status = next.call("hardware_lease_status", &json!({}));
    let place = bench_1(&status["structuredContent"]);
    assert_eq!(
        place["holder"],
        json!("dead_server"),
        "the status says whose it was before it is settled: {status}"
    );
    let reset = next.call("reset_target", &json!({"mode": "init"}));
    assert_eq!(reset["isError"], false, "{reset}");
    next.close();

    let ledger = bench
        .world
        .home
        .join(".local/state/agentic-hil/coordination/recovery.jsonl");
    let text = std::fs::read_to_string(&ledger).expect("the recovery ledger was written");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each ledger line is JSON"))
        .filter(|l: &Value| l["recovery"] == json!("labgrid_stale_released"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert_eq!(lines[0]["labgrid_place"], json!("bench-1"), "{text}");
    assert_eq!(lines[0]["labgrid_user"], json!(US), "{text}");
    assert!(lines[0]["time"].is_string(), "{text}");
    assert!(lines[0]["done"].is_string(), "{text}");
}
