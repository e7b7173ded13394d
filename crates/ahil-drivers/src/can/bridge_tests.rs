use std::path::PathBuf;
use std::time::Instant;

use super::*;

const OPEN_OK: &str = r#"{"id":1,"result":{"ok":true,"protocol_version":2,"listen_only":true}}"#;
const CLOSE_OK: &str =
    r#"{"id":2,"result":{"ok":true,"protocol_version":2,"safe_state_confirmed":true}}"#;

/// A bridge running `body`, and the directory it is alone in.
fn script(body: &str) -> (tempfile::TempDir, PathBuf) {
    crate::probe_cli::fake::install_sh("bridge.sh", body)
}

fn request(listen_only: bool) -> OpenRequest {
    OpenRequest::classic("sim0", listen_only, Duration::from_millis(500))
}

/// How an open of a bridge running `body` is refused.
fn refusal(body: &str, listen_only: bool) -> CanError {
    let (_dir, exe) = script(body);
    Bridge::open(&exe, &request(listen_only))
        .err()
        .expect("refused")
}

#[test]
fn an_open_skips_noise_lines_and_a_close_confirms_the_safe_state_and_reaps() {
    let (_dir, exe) = script(&format!(
        "read l; echo 'not json'; echo '[1]'; echo '{OPEN_OK}'; read l; echo '{CLOSE_OK}'; sleep 30"
    ));
    let (bridge, opened) = Bridge::open(&exe, &request(true)).expect("opens");
    assert!(opened.listen_only_confirmed);
    assert_eq!(opened.backend, "process");
    let closed = bridge.close();
    assert!(closed.safe_state_confirmed && closed.process_reaped);
}

#[test]
fn a_listen_only_open_without_the_echo_is_refused_after_closing() {
    let error = refusal(
        &format!(
            "read l; echo '{}'; read l; echo '{CLOSE_OK}'",
            r#"{"id":1,"result":{"ok":true,"protocol_version":2}}"#
        ),
        true,
    );
    assert_eq!(error.error_type(), "can_listen_only_unconfirmed");
}

#[test]
fn an_open_answer_with_another_protocol_version_is_refused() {
    let error = refusal(
        r#"read l; echo '{"id":1,"result":{"ok":true,"protocol_version":1}}'; read l"#,
        false,
    );
    assert_eq!(error.error_type(), "can_adapter_protocol_unsupported");
}

#[test]
fn a_silent_bridge_times_out_and_is_killed() {
    let started = Instant::now();
    let error = refusal("exec sleep 30", false);
    assert_eq!(error.error_type(), "can_adapter_timeout");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_bridge_that_dies_reports_its_last_stderr_line() {
    let error = refusal("read l; echo 'no adapter attached' >&2; exit 3", false);
    assert_eq!(error.error_type(), "can_adapter_process_exited");
    assert!(error.to_string().contains("no adapter attached"), "{error}");
}

#[test]
fn a_bridge_refusal_keeps_its_own_error_type_and_says_whether_the_channel_was_open() {
    let error = refusal(
        r#"read l; echo '{"id":1,"error":{"error_type":"can_channel_not_available","summary":"no such channel","channel_open":false}}'"#,
        false,
    );
    assert_eq!(error.public_error_type(), "can_channel_not_available");
    assert!(matches!(error.contact(), crate::Contact::None { .. }));
}

#[test]
fn a_missing_executable_fails_to_start() {
    let error = Bridge::open(Path::new("/nonexistent/bridge"), &request(false))
        .err()
        .expect("refused");
    assert_eq!(error.error_type(), "can_adapter_process_start_failed");
}

#[test]
fn a_send_is_answered_while_a_read_waits_at_a_concurrent_bridge() {
    // Answers the send (id 3) at once, then the read (id 2) it received first.
    let (_dir, exe) = script(&format!(
        "read l; echo '{}'; read l; read l; echo '{}'; sleep 0.5; echo '{}'; read l",
        r#"{"id":1,"result":{"ok":true,"protocol_version":2}}"#,
        r#"{"id":3,"result":{"ok":true}}"#,
        r#"{"id":2,"result":{"ok":true,"frames":[]}}"#,
    ));
    let (bridge, _) = Bridge::open(&exe, &request(false)).expect("opens");
    let bridge = std::sync::Arc::new(bridge);
    let reader = std::thread::spawn({
        let bridge = std::sync::Arc::clone(&bridge);
        move || bridge.read(10, Duration::from_millis(400))
    });
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let frame = Frame::new(1, false, false, vec![]).expect("valid");
    bridge.send(&frame).expect("sent");
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "the send did not wait for the read"
    );
    assert_eq!(reader.join().expect("reader").expect("read"), vec![]);
}

#[test]
fn a_helper_the_bridge_forked_is_killed_with_it_and_the_group_is_verified_empty() {
    let (dir, exe) = script(&format!(
        "sleep 60 & echo $! > \"$(dirname \"$0\")/helper.pid\"; read l; echo '{OPEN_OK}'; read l; echo '{CLOSE_OK}'; sleep 60"
    ));
    let (bridge, _) = Bridge::open(&exe, &request(true)).expect("opens");
    let helper = crate::probe_cli::fake::read_pid(&dir.path().join("helper.pid"));
    let closed = bridge.close();
    assert!(closed.safe_state_confirmed && closed.process_reaped);
    let stat = std::fs::read_to_string(format!("/proc/{helper}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, r)| r.split_whitespace().next());
    assert!(
        matches!(state, None | Some("Z" | "X")),
        "the helper still runs: {stat}"
    );
}
