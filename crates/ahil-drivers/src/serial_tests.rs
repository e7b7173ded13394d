use super::*;

fn options(device: &str, cap: usize) -> OpenOptions {
    OpenOptions {
        device: device.to_owned(),
        baud: 115_200,
        assert_dtr: true,
        assert_rts: false,
        max_buffer_bytes: cap,
        write_timeout: Duration::from_secs(1),
        reader_poll: Duration::from_millis(20),
    }
}

fn wait() -> Duration {
    Duration::from_secs(5)
}

#[test]
fn each_serial_failure_keeps_its_published_error_type() {
    use strum::IntoEnumIterator;
    let types: Vec<&str> = SerialError::iter().map(|e| e.error_type()).collect();
    assert_eq!(
        types.join(" "),
        "com_port_discovery_failed com_port_busy com_port_open_failed serial_write_failed \
         serial_write_incomplete com_port_close_failed"
    );
}

#[test]
fn bytes_sent_by_the_device_are_read_each_byte_once() {
    let mut peer = PtyPeer::open().expect("pty pair");
    let port = Port::open(&options(peer.device(), 4096), None).expect("open");
    let sent = b"noise\r\nboot ok\r\nmore";
    peer.send(sent).expect("send");
    assert_eq!(ring::take_until_seen(port.ring(), "more"), sent);
    assert!(port.ring().take(64, Instant::now()).bytes.is_empty());
    port.close(wait()).expect("closes");
}

#[test]
fn a_written_line_arrives_at_the_device_end() {
    let mut peer = PtyPeer::open().expect("pty pair");
    let port = Port::open(&options(peer.device(), 4096), None).expect("open");
    assert_eq!(port.write(b"ping\n").expect("write"), 5);
    let mut got = Vec::new();
    while got.len() < 5 {
        let chunk = peer.receive(wait()).expect("receive");
        assert!(!chunk.is_empty(), "the line never arrived");
        got.extend(chunk);
    }
    assert_eq!(got, b"ping\n");
    port.close(wait()).expect("closes");
}

#[test]
fn modem_lines_on_a_pty_are_reported_not_fatal() {
    let peer = PtyPeer::open().expect("pty pair");
    let port = Port::open(&options(peer.device(), 64), None).expect("a pty opens");
    assert!(port.modem().dtr_error.is_some(), "{:?}", port.modem());
    port.close(wait()).expect("closes");
}

#[test]
fn overflow_beyond_the_cap_is_counted_and_the_newest_bytes_kept() {
    let mut peer = PtyPeer::open().expect("pty pair");
    let port = Port::open(&options(peer.device(), 16), None).expect("open");
    peer.send(b"0123456789abcdefXYZW").expect("send");
    let deadline = Instant::now() + wait();
    while port.ring().levels().1 + (port.ring().levels().0 as u64) < 20 && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let taken = port.ring().take(64, Instant::now());
    assert_eq!(taken.overflow, 4);
    assert_eq!(taken.bytes, b"456789abcdefXYZW");
    port.close(wait()).expect("closes");
}

#[test]
fn a_second_open_of_a_held_port_is_refused_as_busy() {
    let peer = PtyPeer::open().expect("pty pair");
    let port = Port::open(&options(peer.device(), 64), None).expect("open");
    let second = Port::open(&options(peer.device(), 64), None).expect_err("held");
    assert_eq!(second.error_type(), "com_port_busy");
    port.close(wait()).expect("closes");
    let again = Port::open(&options(peer.device(), 64), None).expect("free after close");
    again.close(wait()).expect("closes");
}

#[test]
fn a_missing_device_fails_to_open_without_contact() {
    let err = Port::open(&options("/dev/does-not-exist-ahil", 64), None).expect_err("missing");
    assert_eq!(err.error_type(), "com_port_open_failed");
    assert!(matches!(err.contact(), Contact::None { .. }));
}

#[test]
fn the_tap_sees_every_received_chunk() {
    let mut peer = PtyPeer::open().expect("pty pair");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tap: RxTap = Box::new({
        let seen = Arc::clone(&seen);
        move |bytes| seen.lock().expect("tap lock").extend_from_slice(bytes)
    });
    let port = Port::open(&options(peer.device(), 64), Some(tap)).expect("open");
    peer.send(b"hello").expect("send");
    assert_eq!(ring::take_until_seen(port.ring(), "hello"), b"hello");
    port.close(wait()).expect("closes");
    assert_eq!(seen.lock().expect("tap lock").as_slice(), b"hello");
}
