//! Black-box, end to end: the built binary as an MCP server whose debugger belongs to a labgrid
//! place, against a real labgrid 26.0.1 coordinator on loopback (`ahil_sim::labgrid::Lab`), with
//! `labgrid-client` as the lab's other users. The debugger is `ahil-sim`'s scripted OpenOCD fake,
//! whose journal shows whether anything reached the probe.

#[path = "support/labgrid_bench.rs"]
mod labgrid_bench;
mod support;

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use labgrid_bench::{
    ALICE, Bench, US, a_server_killed_holding_bench_1, lab_with_bench_1, reserve_bench_1_for,
    start_a_run_on_the_probe,
};
use serde_json::json;
use support::call;
use support::raw::Mcp;

#[tokio::test]
async fn a_place_another_labgrid_user_holds_refuses_our_reset_and_flash_naming_them_and_a_free_one_is_ours_for_the_call()
 {
    let (_dir, lab) = lab_with_bench_1();
    lab.acquire(ALICE, "bench-1");
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;

    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["labgrid_owner"], json!(ALICE), "{doc}");
    assert_eq!(doc["labgrid_place"], json!("bench-1"), "{doc}");
    assert!(
        doc["summary"].as_str().is_some_and(|s| s.contains(ALICE)),
        "{doc}"
    );
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    assert_eq!(bench.probe_runs(), 0, "nothing reached the probe");
    assert_eq!(lab.holder("bench-1").as_deref(), Some(ALICE), "still hers");

    // A flash is refused the same way, at the claim, before the image reaches the probe.
    support::sim_board::copy_firmware(&bench.world, &["ahil-fw-v2.elf"]);
    let flash = json!({"image_path": "fw/ahil-fw-v2.elf"});
    let (doc, is_error) = call(&client, "flash_firmware", flash).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["labgrid_owner"], json!(ALICE), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    assert_eq!(bench.probe_runs(), 0, "nothing reached the probe");

    lab.release(ALICE, "bench-1");
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(bench.probe_runs(), 1, "the reset ran once");
    assert_eq!(lab.holder("bench-1"), None, "released after the call");
    let events = lab.place_events();
    let ours: Vec<&String> = events.iter().skip_while(|e| !e.contains(US)).collect();
    assert!(
        ours.len() >= 2
            && ours[0].contains(&format!("bench-1: place acquired by {US}"))
            && ours[1].contains("bench-1: place released"),
        "acquired for the call, then released: {events:?}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn the_coordinator_is_not_contacted_until_a_call_touches_a_place_and_then_one_that_does_not_speak_is_labgrid_unavailable()
 {
    // A listener that counts connections and never answers them.
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let address = listener.local_addr().expect("address").to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            open.push(stream);
            let mut sink = [0u8; 64];
            let _ = open.last_mut().map(|s| s.read(&mut sink));
        }
    });
    let bench = Bench::new(&address);
    let client = support::connect(&bench.world).await;
    client.list_all_tools().await.expect("tools/list");
    let (doc, is_error) = call(&client, "project_config_describe", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "start-up, tools/list and a call on no place leave the coordinator alone"
    );

    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("labgrid_unavailable"), "{doc}");
    assert_eq!(doc["labgrid_coordinator"], json!(address), "{doc}");
    assert_eq!(doc["target_contacted"], json!(false), "{doc}");
    assert_eq!(doc["retry_safe"], json!(true), "{doc}");
    assert_eq!(bench.probe_runs(), 0, "nothing reached the probe");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_run_holds_its_place_for_its_whole_duration_and_calls_inside_it_ask_the_coordinator_nothing()
 {
    let (_dir, lab) = lab_with_bench_1();
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;

    let (doc, is_error) = call(
        &client,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger", "id": "probe"}], "label": "nightly"}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        lab.holder("bench-1").as_deref(),
        Some(US),
        "ours for the run"
    );
    let who = lab.ok(ALICE, &["who"]);
    assert!(
        who.contains("agentic-hil") && who.contains("bench-1"),
        "{who}"
    );
    let before = lab.place_events().len();
    for _ in 0..2 {
        let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
        assert!(!is_error, "{doc}");
        assert_eq!(lab.holder("bench-1").as_deref(), Some(US), "still ours");
    }
    assert_eq!(
        lab.place_events().len(),
        before,
        "no acquisition or release inside the run: {:?}",
        lab.place_events()
    );
    let refused = lab.client(ALICE, &["-p", "bench-1", "acquire", "--allow-unmatched"]);
    assert!(!refused.status.success(), "alice cannot take it meanwhile");

    let (doc, is_error) = call(&client, "bench_run_stop", json!({})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(lab.holder("bench-1"), None, "released when the run stops");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_run_over_a_place_another_user_holds_is_refused_naming_them_and_takes_no_device() {
    let (_dir, lab) = lab_with_bench_1();
    lab.acquire(ALICE, "bench-1");
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;
    let (doc, is_error) = start_a_run_on_the_probe(&client).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["labgrid_owner"], json!(ALICE), "{doc}");
    let (doc, _) = call(&client, "bench_run_status", json!({})).await;
    assert_eq!(doc["run_active"], json!(false), "no run opened: {doc}");
    assert_eq!(
        doc["held_devices"],
        json!([]),
        "no device lock taken: {doc}"
    );
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_com_session_holds_its_place_from_its_start_to_its_stop() {
    let (_dir, lab) = lab_with_bench_1();
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;

    let (doc, is_error) = call(&client, "com_session_start", json!({"port_id": "uart0"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        lab.holder("bench-1").as_deref(),
        Some(US),
        "ours while the session is open"
    );
    let (doc, is_error) = call(
        &client,
        "com_read",
        json!({"port_id": "uart0", "wait_timeout_s": 0.05}),
    )
    .await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        lab.holder("bench-1").as_deref(),
        Some(US),
        "a read inside keeps it"
    );
    let (doc, is_error) = call(&client, "com_session_stop", json!({"port_id": "uart0"})).await;
    assert!(!is_error, "{doc}");
    assert_eq!(lab.holder("bench-1"), None, "released at the stop");
    client.cancel().await.expect("client closes");
}

#[tokio::test]
async fn a_place_reserved_for_another_user_refuses_our_reset_naming_the_reservation_and_its_owner()
{
    let (_dir, lab) = lab_with_bench_1();
    reserve_bench_1_for(&lab, ALICE);
    let bench = Bench::new(&lab.address);
    let client = support::connect(&bench.world).await;
    let (doc, is_error) = call(&client, "reset_target", json!({"mode": "init"})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["labgrid_reservation"]["owner"], json!(ALICE), "{doc}");
    assert!(
        doc["labgrid_reservation"]["token"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{doc}"
    );
    assert!(
        doc["summary"]
            .as_str()
            .is_some_and(|s| s.contains("reserved for desk/alice")),
        "{doc}"
    );
    assert_eq!(bench.probe_runs(), 0, "nothing reached the probe");
    client.cancel().await.expect("client closes");
}

#[test]
fn a_server_killed_holding_a_place_leaves_it_acquired_and_the_next_server_settles_it() {
    let (_dir, lab) = lab_with_bench_1();
    let bench = Bench::new(&lab.address);
    a_server_killed_holding_bench_1(&bench);
    assert_eq!(
        lab.holder("bench-1").as_deref(),
        Some(US),
        "labgrid keeps a dead client's acquisition"
    );

    let mut next = Mcp::ours(&bench.world);
    let reset = next.call("reset_target", &json!({"mode": "init"}));
    assert_eq!(reset["isError"], false, "{reset}");
    assert_eq!(
        reset["structuredContent"]["labgrid_stale_released"],
        json!(["bench-1"]),
        "{reset}"
    );
    assert_eq!(lab.holder("bench-1"), None, "released after the call");
    next.close();
}

#[test]
fn a_place_a_live_server_of_ours_holds_is_busy_for_a_second_server_under_the_same_name() {
    let (_dir, lab) = lab_with_bench_1();
    let bench = Bench::new(&lab.address);
    let run = json!({"devices": [{"kind": "debugger", "id": "probe"}]});
    let mut live = Mcp::ours(&bench.world);
    let started = live.call("bench_run_start", &run);
    assert_eq!(started["isError"], false, "{started}");

    let mut second = Mcp::ours(&bench.world);
    let reset = second.call("reset_target", &json!({"mode": "init"}));
    assert_eq!(reset["isError"], true, "{reset}");
    let doc = &reset["structuredContent"];
    assert_eq!(doc["error_type"], json!("device_busy"), "{doc}");
    assert_eq!(doc["labgrid_owner"], json!(US), "{doc}");
    assert!(
        doc["summary"]
            .as_str()
            .is_some_and(|s| s.contains("own labgrid user")),
        "{doc}"
    );
    assert_eq!(
        lab.holder("bench-1").as_deref(),
        Some(US),
        "still the live run's"
    );
    assert_eq!(bench.probe_runs(), 0, "nothing reached the probe");
    second.close();
    live.close();
}

#[tokio::test]
async fn a_run_past_its_maximum_hold_gives_its_place_back_to_the_lab_with_no_call_from_its_agent() {
    let (_dir, lab) = lab_with_bench_1();
    // Long enough for one `labgrid-client who` on a loaded machine to see the run's hold first.
    let bench = Bench::with(&lab.address, "holds:\n  max_run_s: 5\n");
    let client = support::connect(&bench.world).await;
    let (doc, is_error) = start_a_run_on_the_probe(&client).await;
    assert!(!is_error, "{doc}");
    assert_eq!(
        lab.holder("bench-1").as_deref(),
        Some(US),
        "ours for the run"
    );

    // Alice waits for the place as a person would; the agent does not call again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while lab.holder("bench-1").is_some() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        lab.holder("bench-1"),
        None,
        "released when the hold ran out"
    );
    let who = lab.ok(ALICE, &["who"]);
    assert!(!who.contains("agentic-hil"), "nothing of ours: {who}");
    lab.acquire(ALICE, "bench-1");

    let (doc, _) = call(&client, "bench_run_status", json!({})).await;
    assert_eq!(doc["run_active"], json!(false), "{doc}");
    assert_eq!(
        doc["holds_expired"][0]["reason"],
        json!("hold_expired"),
        "{doc}"
    );
    assert_eq!(
        doc["holds_expired"][0]["closed_with"]["tool"],
        json!("bench_run_stop")
    );
    client.cancel().await.expect("client closes");
}
