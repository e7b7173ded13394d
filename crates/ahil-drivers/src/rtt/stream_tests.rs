use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;
use crate::rtt::link::{Link, Locate, Options};

fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    (listener, port)
}

fn options(up: Vec<u32>, down: Vec<u32>) -> Options {
    Options {
        locate: Locate::At(0),
        up,
        down,
        ring_bytes: 4096,
        interval: Duration::from_millis(5),
    }
}

/// Dropped with the source: records that the server was let go.
struct Server(Arc<AtomicBool>);

impl Drop for Server {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn wait_for(ring: &crate::serial::Ring, text: &str) -> String {
    let seen =
        String::from_utf8_lossy(&crate::serial::ring::take_until_seen(ring, text)).into_owned();
    assert!(seen.contains(text), "{text:?} never came: {seen:?}");
    seen
}

#[test]
fn a_stream_links_bytes_reach_the_ring_and_a_write_reaches_the_server_on_the_same_channel() {
    let (listener, port) = listener();
    let serving = std::thread::spawn(move || {
        let (mut client, _) = listener.accept().expect("the link connects");
        client.write_all(b"boot ok\n").expect("send");
        let mut got = [0u8; 5];
        client.read_exact(&mut got).expect("the write arrives");
        client.write_all(&got).expect("echo");
        std::thread::sleep(Duration::from_millis(200));
    });
    let released = Arc::new(AtomicBool::new(false));
    let source = StreamSource::connect(
        &[ChannelPort { index: 0, port }],
        Box::new(Server(Arc::clone(&released))),
    )
    .expect("the stream connects");
    let link = Link::with_source(
        Box::new(source),
        0x2000_0070,
        &options(vec![0], vec![0]),
        None,
    )
    .expect("the link starts");
    let ring = link.ring(0).expect("up channel 0 has a ring");
    wait_for(ring, "boot ok");
    assert_eq!(link.write(0, b"ping\n").expect("the write goes out"), 5);
    wait_for(ring, "ping");
    serving.join().expect("the server thread ends");
    assert!(link.close(Duration::from_secs(2)), "the poller stops");
    assert!(
        released.load(Ordering::SeqCst),
        "closing the link lets go of the server"
    );
}

#[test]
fn a_stream_the_server_closed_is_the_links_last_error_and_is_connected_again() {
    let (listener, port) = listener();
    let serving = std::thread::spawn(move || {
        let (first, _) = listener.accept().expect("the first connection");
        drop(first);
        let (mut second, _) = listener.accept().expect("the link connects again");
        second.write_all(b"after reset\n").expect("send");
        std::thread::sleep(Duration::from_millis(300));
    });
    let source = StreamSource::connect(&[ChannelPort { index: 0, port }], Box::new(()))
        .expect("the stream connects");
    let link = Link::with_source(Box::new(source), 0, &options(vec![0], Vec::new()), None)
        .expect("the link starts");
    wait_for(link.ring(0).expect("ring"), "after reset");
    let error = link.last_error().expect("the closed stream was noted");
    assert!(error.contains("closed by the server"), "{error}");
    serving.join().expect("the server thread ends");
}

#[test]
fn a_port_nothing_serves_is_refused_at_connect_as_unreachable_memory() {
    let (listener, port) = listener();
    drop(listener);
    let Err(error) = StreamSource::connect(&[ChannelPort { index: 1, port }], Box::new(())) else {
        panic!("a closed port must not connect");
    };
    assert_eq!(error.error_type(), "rtt_memory_unavailable");
    assert!(error.to_string().contains("channel 1"), "{error}");
}

#[test]
fn a_channel_no_stream_serves_is_refused() {
    let (listener, port) = listener();
    let mut source = StreamSource::connect(&[ChannelPort { index: 0, port }], Box::new(()))
        .expect("the stream connects");
    drop(listener);
    let error = source
        .write_down(2, b"x")
        .expect_err("no stream for channel 2");
    assert_eq!(error.error_type(), "rtt_control_block_invalid");
}
