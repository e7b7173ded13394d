//! Black-box, end to end: debug sessions on a `type: openocd` debugger, with real gdb. The `openocd`
//! is `ahil-sim`'s gdb-server shim: it takes OpenOCD's arguments, serves gdb on the port it is given
//! and relays to a real emulated board (started with `agentic-hil sim start` under a `type: qemu`
//! entry), answering OpenOCD's monitor commands itself.

mod support;

use serde_json::json;
use std::time::Duration;

use support::debugging::run_to_the_tick_breakpoint;
use support::shim::{Bench, Server, alive, gone, reset_is_busy_and_on_tick_breaks_twice};
use support::{call, ok};

fn bench(scenario: &str, timeout_s: u32) -> Bench {
    Bench::new(Server::OpenOcd, scenario, timeout_s)
}

#[tokio::test]
async fn an_openocd_session_breaks_on_on_tick_reads_a_growing_counter_and_stops_with_the_board_halted()
 {
    let bench = bench("ok", 10);
    let (board, client, doc) = bench.session(json!({})).await;
    assert_eq!(doc["backend"], "openocd", "{doc}");
    assert_eq!(doc["session"]["status"], "halted", "{doc}");
    assert_eq!(doc["session"]["load_phase"], "target_connected", "{doc}");
    assert_eq!(
        doc["session"]["firmware_load_status"], "not_started",
        "{doc}"
    );
    let port = doc["session"]["gdb_port"].as_u64().expect("a gdb port");
    assert_ne!(board.vm_status(), "running", "an attach halts the core");
    let argv = bench.calls().pop().expect("the shim was run");
    for expected in [
        "adapter serial SIM0".to_owned(),
        "bindto 127.0.0.1".to_owned(),
        format!("gdb_port {port}"),
        "tcl_port disabled".to_owned(),
        "telnet_port disabled".to_owned(),
        "init; halt".to_owned(),
    ] {
        assert!(argv.contains(&expected), "{expected} in {argv:?}");
    }

    reset_is_busy_and_on_tick_breaks_twice(&client).await;

    assert!(bench.monitor().is_empty(), "an attach resets nothing");
    let doc = bench.stop_with_the_core_halted(&client, &board).await;
    assert_eq!(doc["detach_resume_guard_confirmed"], true, "{doc}");
    assert_eq!(
        bench.monitor(),
        ["$_TARGETNAME configure -event gdb-detach {}; $_TARGETNAME configure -event gdb-end {}"],
        "the detach handlers were emptied before gdb left"
    );
    assert_eq!(doc["session"]["backend"], "openocd", "{doc}");
    let log_path = doc["log_path"]
        .as_str()
        .expect("the stop names the session log");
    let log = std::fs::read_to_string(bench.world.workspace.join(log_path))
        .expect("the session log is in the workspace");
    for wanted in [
        "\"server_started\"",
        "\"stop\"",
        &format!("Listening on port {port} for gdb connections"),
        "-target-disconnect",
    ] {
        assert!(log.contains(wanted), "{wanted} in the session log: {log}");
    }
    // The probe is free again.
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    drop(client);
}

#[tokio::test]
async fn a_reset_halt_session_resets_through_openocd_and_runs_to_the_tick_breakpoint() {
    let bench = bench("ok", 10);
    let (board, client, doc) = bench.session(json!({"mode": "reset_halt"})).await;
    assert_eq!(
        doc["session"]["load_phase"], "pre_load_reset_confirmed",
        "{doc}"
    );
    let argv = bench.calls().pop().expect("the shim was run");
    assert_eq!(
        argv.last().map(String::as_str),
        Some("init; reset halt"),
        "{argv:?}"
    );
    assert_ne!(board.vm_status(), "running", "reset into halt");
    assert_eq!(
        bench.monitor(),
        ["reset halt"],
        "gdb reset the core through OpenOCD"
    );
    run_to_the_tick_breakpoint(&client).await;
    bench.stop_with_the_core_halted(&client, &board).await;
    drop(client);
}

#[tokio::test]
async fn a_load_session_writes_the_elf_between_two_resets_and_records_the_load_as_committed() {
    let bench = bench("ok", 10);
    let (board, client, doc) = bench.session(json!({"mode": "load"})).await;
    assert_eq!(
        doc["session"]["load_phase"], "post_load_reset_confirmed",
        "{doc}"
    );
    assert_eq!(doc["session"]["firmware_load_status"], "committed", "{doc}");
    assert_eq!(
        bench.monitor(),
        ["reset halt", "reset halt"],
        "a reset before and after the download"
    );
    assert_ne!(board.vm_status(), "running", "halted at reset");
    run_to_the_tick_breakpoint(&client).await;
    ok(&client, "debug_stop_session", json!({})).await;
    drop(client);
}

#[tokio::test]
async fn an_openocd_that_exits_before_its_port_opens_fails_the_start_with_its_words_and_leaves_nothing()
 {
    let bench = bench("exit-early", 10);
    let client = support::connect(&bench.world).await;
    for _ in 0..2 {
        let doc = bench.refused_start(&client, json!({})).await;
        assert_eq!(doc["error_type"], "adapter_not_found", "{doc}");
        assert_eq!(doc["backend_error_type"], "adapter_not_found", "{doc}");
        assert_eq!(doc["load_phase"], "server_spawned", "{doc}");
        assert_eq!(doc["firmware_load_status"], "not_started", "{doc}");
        assert_eq!(doc["side_effect_status"], "not_started", "{doc}");
        assert_eq!(doc["retry_safe"], true, "{doc}");
        assert!(!alive(bench.shim_pid()), "the shim is gone");
    }
    bench.assert_nothing_started(&client).await;
    drop(client);
}

#[tokio::test]
async fn an_openocd_that_never_opens_its_port_is_killed_at_the_timeout() {
    let bench = bench("no-port", 1);
    let client = support::connect(&bench.world).await;
    let doc = bench
        .refused_start(&client, json!({"mode": "reset_halt"}))
        .await;
    assert_eq!(doc["error_type"], "timeout", "{doc}");
    assert_eq!(doc["backend_error_type"], "gdb_server_not_ready", "{doc}");
    // OpenOCD already ran `init; reset halt`: what that did is not known.
    assert_eq!(doc["side_effect_status"], "unknown", "{doc}");
    assert_eq!(doc["retry_safe"], false, "{doc}");
    assert!(gone(bench.shim_pid()), "the server was killed");
    drop(client);
}

#[test]
fn a_server_killed_mid_session_takes_gdb_and_openocd_with_it_and_leaves_the_core_halted() {
    bench("ok", 10).kill_the_server_mid_session();
}

/// Runs the core past a lost halt: `debug_continue` times out and its interrupt is not confirmed.
async fn run_past_an_unconfirmed_halt(client: &support::Client) {
    ok(
        client,
        "debug_start_session",
        json!({"image_path": "fw/fw.elf"}),
    )
    .await;
    let (doc, is_error) = call(client, "debug_continue", json!({"timeout_s": 0.5})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "timeout", "{doc}");
    assert_eq!(doc["halt_confirmed"], false, "{doc}");
}

#[tokio::test]
async fn a_stop_after_a_lost_interrupt_halts_the_core_again_before_it_lets_go() {
    let bench = bench("lose-first-interrupt", 10);
    let board = bench.start_board();
    let client = support::connect(&bench.world).await;
    run_past_an_unconfirmed_halt(&client).await;
    assert_eq!(
        board.vm_status(),
        "running",
        "the lost interrupt left it running"
    );
    let doc = ok(&client, "debug_stop_session", json!({})).await;
    assert_eq!(doc["halt_confirmed"], true, "{doc}");
    assert!(
        bench.monitor().iter().any(|m| m.contains("gdb-detach {}")),
        "the detach handlers were emptied: {:?}",
        bench.monitor()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(board.vm_status(), "running", "the stop halted the core");
    drop(client);
}

#[tokio::test]
async fn a_stop_is_refused_while_the_halt_cannot_be_confirmed_and_sends_no_detach_guard() {
    let bench = bench("deaf", 10);
    let board = bench.start_board();
    let client = support::connect(&bench.world).await;
    run_past_an_unconfirmed_halt(&client).await;
    let (doc, is_error) = call(&client, "debug_stop_session", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "halt_not_confirmed", "{doc}");
    assert_eq!(doc["status"], "cleanup_required", "{doc}");
    assert_eq!(doc["hardware_state"], "unknown", "{doc}");
    assert!(
        !bench.monitor().iter().any(|m| m.contains("gdb-detach")),
        "no detach guard on a running core: {:?}",
        bench.monitor()
    );
    assert_eq!(board.vm_status(), "running", "the core still runs");
    drop(client);
}
