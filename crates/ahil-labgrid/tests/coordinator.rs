//! Our client against a real labgrid 26.0.1 coordinator, with `labgrid-client` as the lab's other
//! users.

use std::time::{Duration, Instant};

use ahil_labgrid::{Coordinator, Error, code};
use ahil_sim::labgrid::Lab;

const US: &str = "bench-host/agentic-hil";

#[test]
fn a_place_we_acquire_is_ours_for_labgrid_and_free_again_once_released() {
    let dir = tempfile::tempdir().expect("dir");
    let lab = Lab::start(dir.path());
    lab.create_place("bench-1");
    let ours = Coordinator::new(&lab.address, US);

    ours.acquire("bench-1").expect("a free place is acquired");
    assert_eq!(lab.holder("bench-1").as_deref(), Some(US));
    let listed = ours.place("bench-1").expect("places").expect("known");
    assert_eq!(listed.acquired.as_deref(), Some(US));
    let who = lab.ok("lab/admin", &["who"]);
    assert!(
        who.contains("agentic-hil") && who.contains("bench-1"),
        "{who}"
    );

    ours.release("bench-1").expect("released");
    assert_eq!(lab.holder("bench-1"), None);
}

#[test]
fn a_place_another_user_holds_is_refused_and_our_release_never_takes_it() {
    let dir = tempfile::tempdir().expect("dir");
    let lab = Lab::start(dir.path());
    lab.create_place("bench-1");
    lab.acquire("desk/alice", "bench-1");
    let ours = Coordinator::new(&lab.address, US);

    let refused = ours.acquire("bench-1").expect_err("held by alice");
    assert!(
        matches!(
            refused,
            Error::Status {
                code: code::FAILED_PRECONDITION,
                ..
            }
        ),
        "{refused}"
    );
    let listed = ours.place("bench-1").expect("places").expect("known");
    assert_eq!(listed.acquired.as_deref(), Some("desk/alice"));
    ours.release("bench-1")
        .expect("a release from a user who does not hold it is a no-op");
    assert_eq!(lab.holder("bench-1").as_deref(), Some("desk/alice"));
}

#[test]
fn an_unknown_place_is_invalid_argument_and_a_silent_address_unreachable() {
    let dir = tempfile::tempdir().expect("dir");
    let lab = Lab::start(dir.path());
    let ours = Coordinator::new(&lab.address, US);
    let refused = ours.acquire("no-such-place").expect_err("unknown");
    assert!(
        matches!(
            refused,
            Error::Status {
                code: code::INVALID_ARGUMENT,
                ..
            }
        ),
        "{refused}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let nobody = Coordinator::new(format!("127.0.0.1:{port}"), US);
    let started = Instant::now();
    let refused = nobody.places().expect_err("nobody listens");
    assert!(matches!(refused, Error::Unreachable { .. }), "{refused}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_coordinator_restarted_under_us_is_reached_again_on_the_next_call() {
    let dir = tempfile::tempdir().expect("dir");
    let lab = Lab::start(dir.path());
    lab.create_place("bench-1");
    let ours = Coordinator::new(&lab.address, US);
    ours.places().expect("connected");
    let address = lab.address.clone();
    drop(lab);
    assert!(ours.places().is_err(), "the connection is gone");
    // A new coordinator on the same port (it reloads places.yaml from the same directory).
    let _lab = Lab::start_at(dir.path(), &address);
    ours.places().expect("reconnected");
}
