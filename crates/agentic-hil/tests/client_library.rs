//! Black-box through `ahil-client`, the library test suites use: its session bookkeeping against
//! the real server's device locks.

mod support;

use ahil_client::{Launch, ReadOptions};
use support::World;
use support::raw::{EchoBoard, configure_uart};

fn launch(world: &World) -> Launch {
    Launch::new(&world.workspace)
        .program(World::binary())
        .env_clear()
        .env("HOME", &world.home)
        // This world's home is the account's, as for every server a test starts.
        .env("AHIL_TEST_ACCOUNT_HOME", &world.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("XDG_CONFIG_HOME", world.home.join(".config"))
        .env("XDG_STATE_HOME", world.home.join(".local/state"))
        .env("LANG", "C.UTF-8")
        .check_results(support::checked_result)
}

#[test]
fn end_sessions_stops_what_the_client_opened_while_its_server_keeps_running() {
    let world = World::new();
    let board = EchoBoard::start();
    configure_uart(&world, &board.device);
    let mut first = launch(&world).spawn().expect("the first server starts");
    let mut second = launch(&world).spawn().expect("the second server starts");

    let started = first.com_session_start("uart0").expect("answers");
    assert!(started.overall_success(), "{started}");
    let written = first.com_write("uart0", "ping\n").expect("answers");
    assert!(written.overall_success(), "{written}");
    let read = first
        .com_read("uart0", &ReadOptions::until("PING", 5.0))
        .expect("answers");
    assert!(read.overall_success(), "{read}");

    let refused = second.com_session_start("uart0").expect("answers");
    assert_eq!(refused.error_type(), Some("device_busy"), "{refused}");
    assert!(second.open_sessions().is_empty(), "a refusal opens nothing");

    assert_eq!(
        first.open_sessions(),
        ["com_session_stop(port_id=\"uart0\")"]
    );
    first.end_sessions().expect("the stop is confirmed");
    assert!(first.open_sessions().is_empty());
    let taken = second.com_session_start("uart0").expect("answers");
    assert!(taken.overall_success(), "the port is free again: {taken}");

    // The first server is still there to answer.
    assert!(first.probe_target().is_ok());
    second.close().expect("its stop is confirmed");
    assert_eq!(first.close().expect("nothing left to end"), Some(0));
}
