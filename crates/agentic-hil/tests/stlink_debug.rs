//! Black-box, end to end: debug sessions on a `type: stlink` debugger through ST-LINK_gdbserver
//! (`gdb_server_executable`), with real gdb. The server is `ahil-sim`'s ST-LINK shim: it takes the
//! server's arguments, serves gdb on the `-p` port and relays to a real emulated board (started with
//! `agentic-hil sim start` under a `type: qemu` entry), answering the server's monitor commands itself.

mod support;

use serde_json::{Value, json};

use support::debugging::run_to_the_tick_breakpoint;
use support::shim::{Bench, Server, alive, gone, reset_is_busy_and_on_tick_breaks_twice};
use support::{call, ok};

fn bench(scenario: &str, timeout_s: u32) -> Bench {
    Bench::new(Server::Stlink, scenario, timeout_s)
}

#[tokio::test]
async fn an_stlink_session_breaks_on_on_tick_reads_a_growing_counter_and_stops_with_the_board_halted()
 {
    let bench = bench("ok", 10);
    let (board, client, doc) = bench.session(json!({})).await;
    assert_eq!(doc["backend"], "stlink", "{doc}");
    assert_eq!(doc["session"]["status"], "halted", "{doc}");
    assert_eq!(doc["session"]["backend"], "stlink", "{doc}");
    let port = doc["session"]["gdb_port"].as_u64().expect("a gdb port");
    assert_ne!(board.vm_status(), "running", "an attach halts the core");
    let argv = bench.calls().pop().expect("the server was run");
    let tools = bench.tools.display().to_string();
    assert_eq!(
        argv,
        [
            "-p",
            &port.to_string(),
            "-e",
            "-d",
            "-cp",
            &tools,
            "-i",
            "SIM0",
            "-g"
        ],
        "the server serves the reserved port for this probe, beside the programmer"
    );

    reset_is_busy_and_on_tick_breaks_twice(&client).await;
    assert!(bench.monitor().is_empty(), "an attach resets nothing");

    let doc = bench.stop_with_the_core_halted(&client, &board).await;
    assert_eq!(
        doc["halt_confirmed_by"], "server_killed_while_halted",
        "{doc}"
    );
    assert_eq!(doc["session"]["backend"], "stlink", "{doc}");
    let log_path = doc["log_path"]
        .as_str()
        .expect("the stop names the session log");
    let log = std::fs::read_to_string(bench.world.workspace.join(log_path))
        .expect("the session log is in the workspace");
    for wanted in [
        "\"server_started\"",
        "\"stop\"",
        "Waiting for debugger connection",
    ] {
        assert!(log.contains(wanted), "{wanted} in the session log: {log}");
    }
    let doc = ok(&client, "debug_get_session_status", json!({})).await;
    assert_eq!(doc["active"], false, "{doc}");
    // Outside a session the symbol reads go back to the offline path, which needs a flashed ELF.
    let (doc, _) = call(&client, "debug_symbol_value", json!({"symbol": "counter"})).await;
    assert_eq!(doc["error_type"], "symbol_source_not_available", "{doc}");
    drop(client);
}

#[tokio::test]
async fn a_reset_halt_session_resets_through_the_servers_monitor_and_runs_to_the_tick_breakpoint() {
    let bench = bench("ok", 10);
    let (board, client, doc) = bench.session(json!({"mode": "reset_halt"})).await;
    assert_eq!(
        doc["session"]["load_phase"], "pre_load_reset_confirmed",
        "{doc}"
    );
    assert_eq!(
        bench.monitor(),
        ["reset", "halt"],
        "gdb reset the core through ST-LINK_gdbserver"
    );
    assert_ne!(board.vm_status(), "running", "reset into halt");
    run_to_the_tick_breakpoint(&client).await;
    bench.stop_with_the_core_halted(&client, &board).await;
    drop(client);
}

#[tokio::test]
async fn a_server_that_finds_no_stlink_fails_the_start_with_its_words_and_leaves_nothing() {
    let bench = bench("exit-early", 10);
    let client = support::connect(&bench.world).await;
    for _ in 0..2 {
        let doc = bench.refused_start(&client, json!({})).await;
        assert_eq!(doc["error_type"], "adapter_not_found", "{doc}");
        assert_eq!(doc["backend"], "stlink", "{doc}");
        assert_eq!(doc["backend_error_type"], "probe_not_found", "{doc}");
        assert_eq!(doc["side_effect_status"], "not_started", "{doc}");
        assert!(
            doc["server_output_tail"]
                .as_array()
                .is_some_and(|lines| lines.iter().any(|l| l
                    .as_str()
                    .is_some_and(|l| l.contains("No ST-LINK detected")))),
            "{doc}"
        );
        assert!(!alive(bench.shim_pid()), "the server is gone");
    }
    bench.assert_nothing_started(&client).await;
    drop(client);
}

/// A start that must fail with `probe_server_open_failed` of `class`, leaving neither the server
/// nor gdb, and no session; answers the refusal.
async fn a_refused_start(bench: &Bench, class: &str) -> Value {
    let client = support::connect(&bench.world).await;
    let doc = bench.refused_start(&client, json!({})).await;
    assert_eq!(doc["error_type"], "probe_server_open_failed", "{doc}");
    assert_eq!(doc["backend_error_type"], class, "{doc}");
    assert_eq!(doc["backend"], "stlink", "{doc}");
    assert!(gone(bench.shim_pid()), "the server was killed");
    bench.assert_nothing_started(&client).await;
    doc
}

#[tokio::test]
async fn a_server_that_never_opens_its_port_is_probe_server_open_failed_and_is_killed() {
    a_refused_start(&bench("no-port", 1), "gdb_server_not_ready").await;
}

#[tokio::test]
async fn a_server_listening_beyond_loopback_is_stopped_before_gdb_connects() {
    let bench = bench("all-interfaces", 10);
    let _board = bench.start_board();
    let doc = a_refused_start(&bench, "gdb_server_not_loopback").await;
    assert!(
        doc["listen_addresses"].as_array().is_some_and(|a| a
            .iter()
            .any(|a| a.as_str().is_some_and(|a| a.starts_with("0.0.0.0:")))),
        "{doc}"
    );
}

#[test]
fn a_server_killed_mid_session_takes_gdb_and_the_stlink_server_with_it_and_leaves_the_core_halted()
{
    bench("ok", 10).kill_the_server_mid_session();
}

#[tokio::test]
async fn a_stop_is_refused_while_the_halt_cannot_be_confirmed_on_an_stlink_server() {
    let bench = bench("deaf", 10);
    let (board, client, _) = bench.session(json!({})).await;
    let (doc, is_error) = call(&client, "debug_continue", json!({"timeout_s": 0.5})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["halt_confirmed"], false, "{doc}");
    let (doc, is_error) = call(&client, "debug_stop_session", json!({})).await;
    assert!(is_error, "{doc}");
    assert_eq!(doc["error_type"], "halt_not_confirmed", "{doc}");
    assert_eq!(doc["status"], "cleanup_required", "{doc}");
    assert_eq!(board.vm_status(), "running", "the core still runs");
    drop(client);
}
