//! Black-box: device output leaves the gate in pieces (a `com_read` takes as few bytes as it is
//! asked for; the session log's mirror records the reader's chunks where the device paused), and
//! a credential the device prints is masked in the stream, not only within one piece: read one
//! byte at a time or logged in two chunks, it shows as `[redacted]`, never its bytes in a row,
//! and a token whose shape is only known once whole (a key id, `user:pass@host`) is held back
//! by a cut read until it is.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::World;
use support::raw::{EchoBoard, configure_uart};
use support::sim_board::{SimBoard, sim_world};

/// What the board echoes of the typed credential (it answers in upper case).
const SECRET: &str = "DEVSECRET";

/// The `text` of the `prefix` session log mirror's received chunks, joined; none may follow its
/// stop.
fn logged_rx(world: &World, prefix: &str) -> String {
    let logs = world.workspace.join(".agentic-hil/logs");
    let mut joined = String::new();
    for entry in std::fs::read_dir(&logs).expect("the logs directory") {
        let path = entry.expect("entry").path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let is_jsonl = path.extension().is_some_and(|e| e == "jsonl");
        if !(is_jsonl && name.is_some_and(|n| n.starts_with(prefix))) {
            continue;
        }
        for line in std::fs::read_to_string(&path).expect("the log").lines() {
            let record: Value = serde_json::from_str(line).expect("a JSON line");
            assert!(
                !joined.ends_with("<stop>"),
                "a received chunk is logged after the stop: {record}"
            );
            if record["event"] == "stop" {
                joined.push_str("<stop>");
            }
            if record["direction"] == "rx" {
                joined.push_str(record["text"].as_str().unwrap_or_default());
            }
        }
    }
    joined
}

/// A server with a COM session open on a fresh echo board's `uart0`; the board and the world live
/// as long as the test holds them.
async fn echo_session() -> (World, EchoBoard, support::Client) {
    let world = World::new();
    let board = EchoBoard::start();
    configure_uart(&world, &board.device);
    let client = support::connect(&world).await;
    let port = json!({"port_id": "uart0", "clear_buffer": true});
    support::ok(&client, "com_session_start", port).await;
    (world, board, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_read_a_byte_at_a_time_or_logged_in_pieces_is_masked() {
    let (world, _board, client) = echo_session().await;
    // Writes with a pause between: the board echoes a chunk each, credentials cut between them,
    // and a last word with no end.
    for text in [
        "boot\npassword=dev",
        "secret ok\n",
        "id akiakeyidsec",
        "ret12345 scp ci:devsecret@host:/x done\n",
        "prompt>",
    ] {
        support::ok(
            &client,
            "com_write",
            json!({"port_id": "uart0", "text": text}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut shown = String::new();
    let mut hex = String::new();
    for _ in 0..200 {
        let doc = support::ok(
            &client,
            "com_read",
            json!({"port_id": "uart0", "max_bytes": 1, "wait_timeout_s": 0.2}),
        )
        .await;
        let text = doc["data"]["text"].as_str().unwrap_or_default();
        shown.push_str(text);
        hex.push_str(doc["data"]["hex"].as_str().unwrap_or_default());
        if shown.ends_with("DONE\n") {
            break;
        }
    }
    support::ok(&client, "com_session_stop", json!({"port_id": "uart0"})).await;
    client.cancel().await.expect("client closes");
    // A key id or `user:pass@host` is only a credential once whole: its bytes wait until it is.
    assert_eq!(
        shown, "BOOT\nPASSWORD=[redacted] OK\nID [redacted] SCP CI:[redacted]@HOST:/X DONE\n",
        "read a byte at a time"
    );
    // The hex, two characters a byte, spells the masked text too.
    let shown_hex = shown.bytes().fold(String::new(), |mut hex, b| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
        hex
    });
    assert_eq!(hex, shown_hex);
    let logged = logged_rx(&world, "com-");
    assert!(
        !logged.contains(&SECRET[3..])
            && !logged.contains("KEYID")
            && logged.contains("PASSWORD=[redacted] OK")
            && logged.ends_with("DONE\nPROMPT><stop>"),
        "the mirror shows the received stream masked: {logged:?}"
    );
}

/// The firmware echoes RTT down channel 0 to up channel 0 as the bytes arrive, between its tick
/// lines: a credential written in two pieces comes back in two chunks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rtt_credential_read_a_byte_at_a_time_or_logged_in_pieces_is_masked() {
    let world = sim_world(
        "  board:\n    type: qemu\n    timeout_s: 10\n    rtt:\n\
         \x20     scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
         \x20       - {name: terminal, direction: up, index: 0}\n\
         \x20       - {name: terminal_in, direction: down, index: 0}\n\
         \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
         \x20     allow_rtt_write: true\n",
        "",
        &["ahil-fw-v1.elf"],
    );
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    support::ok(&client, "rtt_session_start", json!({})).await;
    // Just after a tick line, so the next one (200 ms on) falls after the two pieces.
    let tick = json!({"channel": "terminal", "until": "rtt tick 2\n", "wait_timeout_s": 10});
    support::ok(&client, "rtt_read", tick).await;
    for text in ["password=rttsecret ok id AKIAKEYIDSEC", "RET12345 done\n"] {
        support::ok(
            &client,
            "rtt_write",
            json!({"channel": "terminal_in", "text": text}),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    let mut shown = String::new();
    for _ in 0..600 {
        let doc = support::ok(
            &client,
            "rtt_read",
            json!({"channel": "terminal", "max_bytes": 1, "wait_timeout_s": 0.5}),
        )
        .await;
        shown.push_str(doc["data"]["text"].as_str().unwrap_or_default());
        if shown.contains(" done\n") {
            break;
        }
    }
    // A last word with no end, just before the stop: logged as the link ends.
    let tick = json!({"channel": "terminal", "until": "tick", "wait_timeout_s": 10});
    support::ok(&client, "rtt_read", tick).await;
    let prompt = json!({"channel": "terminal_in", "text": "prompt>"});
    support::ok(&client, "rtt_write", prompt).await;
    tokio::time::sleep(Duration::from_millis(40)).await;
    support::ok(&client, "rtt_session_stop", json!({})).await;
    client.cancel().await.expect("client closes");
    assert!(
        shown.ends_with("password=[redacted] ok id [redacted] done\n"),
        "read a byte at a time: {shown:?}"
    );
    let logged = logged_rx(&world, "rtt-");
    assert!(
        !logged.contains("rttsec")
            && !logged.contains("KEYIDSEC")
            && logged.contains("password=[redacted] ok id [redacted] done\n")
            && logged.contains("prompt>"),
        "the mirror shows the received stream masked: {logged:?}"
    );
}

/// What the echo board prints for each probe: a key id between ordinary words.
const PLANTED: &str = "boot id akiaiosfodnn7example ready\n";
const PLANTED_SHOWN: &str = "BOOT ID [redacted] READY\n";

/// Has the echo board print [`PLANTED`] and waits for it to arrive.
async fn plant(client: &support::Client) {
    let write = json!({"port_id": "uart0", "text": PLANTED});
    support::ok(client, "com_write", write).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_until_on_a_prefix_of_a_printed_credential_never_matches_and_text_after_it_does() {
    let (world, _board, client) = echo_session().await;
    // Each probe reads as an `until` that never arrives: the whole masked line after the full
    // wait, never the credential's bytes, never an early end.
    for probe in [
        "AKIA",
        "AKIAI",
        "AKIAIOSFODNN7EXAMPLE",
        "ID AKIAI",
        "EXAMPLE READY",
    ] {
        plant(&client).await;
        let started = std::time::Instant::now();
        let read = json!({"port_id": "uart0", "until": probe, "wait_timeout_s": 0.6});
        let doc = support::ok(&client, "com_read", read).await;
        assert!(
            started.elapsed() >= Duration::from_millis(600),
            "{probe}: the wait ran out"
        );
        assert_eq!(doc["until_matched"], json!(false), "{probe}: {doc}");
        assert_eq!(doc["data"]["text"], json!(PLANTED_SHOWN), "{probe}: {doc}");
        assert_eq!(
            doc["bytes_read"],
            json!(PLANTED_SHOWN.len()),
            "{probe}: {doc}"
        );
    }
    // Ordinary text after the credential matches, and the read ends there.
    plant(&client).await;
    let read = json!({"port_id": "uart0", "until": "READY", "wait_timeout_s": 5});
    let doc = support::ok(&client, "com_read", read).await;
    assert_eq!(doc["until_matched"], json!(true), "{doc}");
    assert_eq!(doc["matched"], json!("READY"), "{doc}");
    assert_eq!(
        doc["data"]["text"],
        json!("BOOT ID [redacted] READY"),
        "{doc}"
    );
    assert_eq!(doc["buffer_remaining_bytes"], json!(1), "{doc}");
    support::ok(&client, "com_session_stop", json!({"port_id": "uart0"})).await;
    // A test plan's expect reads the same stream: the prefix is never seen, the text after is.
    for (expect, passes) in [("AKIAI", false), ("ID [redacted] READY", true)] {
        let plan = world.write_plan(
            "probe.yaml",
            &format!(
                "version: 5\nname: probe\nsteps:\n\
                 - {{device: uart0, action: uart_open, clear_buffer: true}}\n\
                 - {{device: uart0, action: uart_write, text: \"{}\"}}\n\
                 - {{device: uart0, action: uart_expect, text: \"{expect}\", timeout_s: 1}}\n\
                 - {{device: uart0, action: uart_close}}\n",
                PLANTED.trim_end()
            ),
        );
        let (doc, _) = support::call(
            &client,
            "test_reactor_run",
            json!({"test_config_path": plan}),
        )
        .await;
        let expected = doc["steps"][2]["result"].clone();
        assert_eq!(expected["ok"], json!(passes), "{expect}: {doc}");
        if !passes {
            assert_eq!(expected["error_type"], "uart_expect_timeout", "{doc}");
            let tail = expected["received_tail"].as_str().unwrap_or_default();
            assert!(!tail.contains("AKIA"), "{tail:?}");
        }
    }
    client.cancel().await.expect("client closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rtt_until_on_a_prefix_of_a_printed_credential_never_matches_and_text_after_it_does() {
    let world = sim_world(
        "  board:\n    type: qemu\n    timeout_s: 10\n    rtt:\n\
         \x20     scan: {start: \"0x20000000\", size: 4096}\n      channels:\n\
         \x20       - {name: terminal, direction: up, index: 0}\n\
         \x20       - {name: terminal_in, direction: down, index: 0}\n\
         \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
         \x20     allow_rtt_write: true\n",
        "",
        &["ahil-fw-v1.elf"],
    );
    let _board = SimBoard::start(&world);
    let client = support::connect(&world).await;
    support::ok(&client, "rtt_session_start", json!({})).await;
    let echo = json!({"channel": "terminal_in", "text": "id AKIAKEYIDSECRET12345 echoed\n"});
    support::ok(&client, "rtt_write", echo.clone()).await;
    let probe = json!({"channel": "terminal", "until": "AKIAK", "wait_timeout_s": 0.8});
    let started = std::time::Instant::now();
    let doc = support::ok(&client, "rtt_read", probe).await;
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "the wait ran out"
    );
    assert_eq!(doc["until_matched"], json!(false), "{doc}");
    let text = doc["data"]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("id [redacted] echoed\n") && !text.contains("AKIA"),
        "{text:?}"
    );
    support::ok(&client, "rtt_write", echo).await;
    let after = json!({"channel": "terminal", "until": "] echoed", "wait_timeout_s": 10});
    let doc = support::ok(&client, "rtt_read", after).await;
    assert_eq!(doc["until_matched"], json!(true), "{doc}");
    let text = doc["data"]["text"].as_str().unwrap_or_default();
    assert!(text.ends_with("id [redacted] echoed"), "{text:?}");
    support::ok(&client, "rtt_session_stop", json!({})).await;
    client.cancel().await.expect("client closes");
}

/// A `com_read` waiting for text, cancelled by its client: it stops waiting at once, is recorded as
/// `interrupted` (not `ok` with nothing read) and takes nothing, so the board's answer to the next
/// write is there for the next read (it used to wait out its 30 s, hold up every read of the port
/// meanwhile and swallow the bytes with its answer).
#[test]
fn a_cancelled_com_read_takes_nothing_and_holds_up_no_later_read() {
    let board = EchoBoard::start();
    let world = World::new();
    configure_uart(&world, &board.device);
    let mut server = support::raw::Mcp::ours(&world);
    let opened = server.envelope("com_session_start", &json!({"port_id": "uart0"}));
    assert_eq!(opened["ok"], true, "{opened}");
    let waits = json!({"port_id": "uart0", "until": "never printed", "wait_timeout_s": 30});
    support::cancel_a_read(&mut server, &world, "com_read", &waits);
    let written = server.envelope("com_write", &json!({"port_id": "uart0", "text": "hello\r"}));
    assert_eq!(written["ok"], true, "{written}");
    let asked = std::time::Instant::now();
    let read = server.envelope(
        "com_read",
        &json!({"port_id": "uart0", "until": "HELLO", "wait_timeout_s": 5}),
    );
    assert_eq!(read["until_matched"], true, "the echo is there: {read}");
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "the read waited {:?} behind the cancelled one",
        asked.elapsed()
    );
}

/// A read waiting for its `until` ends when its session is stopped, and says the session ended
/// rather than that its wait ran out, with what arrived before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_waiting_for_its_until_when_the_session_stops_says_the_session_ended() {
    let (_world, _board, client) = echo_session().await;
    let text = json!({"port_id": "uart0", "text": "boot\n"});
    support::ok(&client, "com_write", text).await;
    let waiting = json!({"port_id": "uart0", "until": "never printed", "wait_timeout_s": 30});
    let read = support::ok(&client, "com_read", waiting);
    let stop = async {
        tokio::time::sleep(Duration::from_millis(800)).await;
        support::ok(&client, "com_session_stop", json!({"port_id": "uart0"})).await
    };
    let (read, _) = tokio::join!(read, stop);
    assert_eq!(read["until_matched"], json!(false), "{read}");
    assert_eq!(
        read["summary"],
        "The COM port session ended before the until text was seen; the bytes so far are returned.",
        "{read}"
    );
    assert_eq!(read["data"]["text"], "BOOT\n", "{read}");
}
