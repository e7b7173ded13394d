//! Every JSON-RPC line a client sends gets its one answer, and none stops the server: a corpus of
//! malformed lines (broken JSON, NaN, invalid UTF-8, deep nesting, wrong envelopes, batches, seeded
//! random bytes, a 300 MB line) each followed by a tools/list that must still be answered.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{Value, json};
use support::World;
use support::raw::spawn_stdio;

/// The issue asks for every answer within a second of its line.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// The line limit with `max_upload_size_mb: 1` is its floor, 10 MiB. Reading a 300 MB line must not
/// hold it: the peak resident set stays far below the line (the server's own baseline, the limit,
/// and slack for the allocator).
const PEAK_RSS_LIMIT_KB: u64 = 96 * 1024;

/// What a line must be answered with.
#[derive(Debug, Clone)]
enum Expect {
    /// Exactly one answer carrying this id.
    Id(Value),
    /// Exactly one error with a null id and this code.
    Null(i64),
    /// No answer: JSON-RPC answers no notification, response or blank line.
    Nothing,
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<Value>,
}

impl Server {
    fn start(world: &World) -> Self {
        let mut child = spawn_stdio(&mut world.command());
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, answers) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let doc: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
                // A batch is answered by one array; each element is one answer.
                let items = match doc {
                    Value::Array(items) => items,
                    one => vec![one],
                };
                for item in items {
                    if tx.send(item).is_err() {
                        return;
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            answers,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("the server reads its stdin");
        stdin.write_all(b"\n").expect("the server reads its stdin");
        stdin.flush().expect("flush");
    }

    fn next(&self, waiting_for: &str) -> Value {
        self.answers
            .recv_timeout(ANSWER_WITHIN)
            .unwrap_or_else(|_| {
                panic!("no answer within {ANSWER_WITHIN:?} while waiting for {waiting_for}")
            })
    }

    fn peak_rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in kB")
    }

    /// Closes stdin and returns what was still on stdout, and the exit code.
    fn finish(mut self) -> (Vec<Value>, Option<i32>) {
        drop(self.stdin.take());
        let status = self
            .child
            .wait()
            .expect("the server exits at the end of stdin");
        (self.answers.try_iter().collect(), status.code())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn line(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).expect("serialize")
}

/// The corpus: (what it is, the line, what it must get).
fn corpus() -> Vec<(String, Vec<u8>, Expect)> {
    let call = |id: &str, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":"{id}","method":"tools/call","params":{{"name":"com_read","arguments":{arguments}}}}}"#
        )
        .into_bytes()
    };
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{{"a":{}{}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        ("broken JSON", b"{not json".to_vec(), Expect::Null(-32700)),
        ("a NaN literal", br#"{"jsonrpc":"2.0","id":"nan","method":"tools/call","params":{"name":"com_read","arguments":{"port_id":"uart","wait_timeout_s":NaN}}}"#.to_vec(), Expect::Null(-32700)),
        ("invalid UTF-8", b"{\"jsonrpc\":\"2.0\",\"id\":\"utf\",\"method\":\"p\xc3\x28ing\"}".to_vec(), Expect::Null(-32700)),
        ("bare invalid bytes", b"\xff\xfe\xfd".to_vec(), Expect::Null(-32700)),
        ("a lone surrogate", br#"{"jsonrpc":"2.0","id":"sur","method":"ping","params":{"s":"\ud800"}}"#.to_vec(), Expect::Null(-32700)),
        ("10 000 levels of nesting", deep.into_bytes(), Expect::Null(-32700)),
        ("a million-element array", format!(r#"{{"jsonrpc":"2.0","id":"many","method":"ping","params":{{"a":[{}1]}}}}"#, "1,".repeat(1_000_000)).into_bytes(), Expect::Null(-32700)),
        ("trailing garbage", br#"{"jsonrpc":"2.0","id":"tr","method":"ping"} x"#.to_vec(), Expect::Null(-32700)),
        ("params an array", line(&json!({"jsonrpc":"2.0","id":"p-arr","method":"tools/list","params":[1]})), Expect::Id(json!("p-arr"))),
        ("params a string", line(&json!({"jsonrpc":"2.0","id":71,"method":"ping","params":"x"})), Expect::Id(json!(71))),
        ("params null", line(&json!({"jsonrpc":"2.0","id":"p-null","method":"tools/list","params":null})), Expect::Id(json!("p-null"))),
        ("jsonrpc 1.0", line(&json!({"jsonrpc":"1.0","id":"v1","method":"ping"})), Expect::Id(json!("v1"))),
        ("no jsonrpc", line(&json!({"id":"v0","method":"ping"})), Expect::Id(json!("v0"))),
        ("method a number", line(&json!({"jsonrpc":"2.0","id":"m5","method":5})), Expect::Id(json!("m5"))),
        ("neither method nor result", line(&json!({"jsonrpc":"2.0","id":"none"})), Expect::Id(json!("none"))),
        ("tools/call without params", line(&json!({"jsonrpc":"2.0","id":"nop","method":"tools/call"})), Expect::Id(json!("nop"))),
        ("tools/call with a numeric name", line(&json!({"jsonrpc":"2.0","id":"n5","method":"tools/call","params":{"name":5}})), Expect::Id(json!("n5"))),
        ("a 101-digit number", call("long-n", &format!(r#"{{"port_id":"uart","max_bytes":{}}}"#, "9".repeat(101))), Expect::Id(json!("long-n"))),
        ("1e400", call("inf", r#"{"port_id":"uart","wait_timeout_s":1e400}"#), Expect::Id(json!("inf"))),
        ("an object id", line(&json!({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})), Expect::Null(-32600)),
        ("a fractional id", br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_vec(), Expect::Null(-32600)),
        ("an id past i64", br#"{"jsonrpc":"2.0","id":18446744073709551621,"method":"ping"}"#.to_vec(), Expect::Null(-32600)),
        ("a malformed notification", line(&json!({"jsonrpc":"2.0","method":1,"params":"bar"})), Expect::Null(-32600)),
        ("a number", b"5".to_vec(), Expect::Null(-32600)),
        ("a string", b"\"tools/list\"".to_vec(), Expect::Null(-32600)),
        ("an empty batch", b"[]".to_vec(), Expect::Null(-32600)),
        ("a batch", line(&json!([{"jsonrpc":"2.0","id":"b1","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}])), Expect::Id(json!("b1"))),
        ("an unknown notification", line(&json!({"jsonrpc":"2.0","method":"notifications/bogus","params":{"x":1}})), Expect::Nothing),
        ("a response nobody asked for", line(&json!({"jsonrpc":"2.0","id":"r1","result":{}})), Expect::Nothing),
        ("a blank line", b"   \t".to_vec(), Expect::Nothing),
    ];
    // Seeded, so a failure names a line that can be sent again.
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[23; 32]);
    let mut random = Vec::new();
    for i in 0..24 {
        let mut bytes = vec![0u8; 1 + (rng.next_u32() as usize % 400)];
        rng.fill_bytes(&mut bytes);
        for b in &mut bytes {
            if *b == b'\n' {
                *b = b' ';
            }
        }
        // An opening brace that is never closed keeps the line unparsable, whatever follows.
        bytes.insert(0, b'{');
        random.push((format!("random bytes #{i}"), bytes, Expect::Null(-32700)));
    }
    cases
        .into_iter()
        .map(|(name, bytes, expect)| (name.to_owned(), bytes, expect))
        .chain(random)
        .collect()
}

#[test]
fn every_malformed_line_gets_one_answer_and_the_server_keeps_serving_in_bounded_memory() {
    let world = World::new();
    world.run_json(&["init"]);
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("read config");
    std::fs::write(
        &path,
        text.replace("max_upload_size_mb: 64", "max_upload_size_mb: 1"),
    )
    .expect("write config");
    let mut server = Server::start(&world);
    // rmcp ends a session whose first message is not a request; these must not reach it.
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server.send(br#"{"jsonrpc":"2.0","id":"early","result":{}}"#);
    server.send(&line(
        &json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    ));
    while server.next("init")["id"] != "init" {}
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut count = |answer: &Value| {
        *seen.entry(answer["id"].to_string()).or_default() += 1;
    };
    for (index, (name, bytes, expect)) in corpus().into_iter().enumerate() {
        server.send(&bytes);
        let probe = format!("probe-{index}");
        server.send(&line(
            &json!({"jsonrpc":"2.0","id":probe,"method":"tools/list"}),
        ));
        check_window(&server, &name, &expect, &probe, &mut count);
    }

    // 300 MB in one line, its id at the start.
    let mut huge = br#"{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":""#.to_vec();
    let stdin = server.stdin.as_mut().expect("stdin");
    stdin.write_all(&huge).expect("write");
    let block = vec![b'a'; 1024 * 1024];
    for _ in 0..300 {
        stdin
            .write_all(&block)
            .expect("the server reads the huge line");
    }
    huge.clear();
    huge.extend_from_slice(b"\"}}");
    server.send(&huge);
    server.send(br#"{"jsonrpc":"2.0","id":"probe-huge","method":"tools/list"}"#);
    let mut count_huge = |answer: &Value| {
        if answer["id"] == "huge" {
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
            assert!(
                answer["error"]["data"]["max_message_bytes"].is_u64(),
                "{answer}"
            );
        }
        count(answer);
    };
    check_window(
        &server,
        "a 300 MB line",
        &Expect::Id(json!("huge")),
        "probe-huge",
        &mut count_huge,
    );
    let peak = server.peak_rss_kb();
    assert!(
        peak < PEAK_RSS_LIMIT_KB,
        "reading a 300 MB line raised the server's peak RSS to {peak} kB"
    );

    let (rest, code) = server.finish();
    for answer in &rest {
        count(answer);
    }
    assert_eq!(code, Some(0), "the server ends cleanly at the end of stdin");
    let repeated: Vec<_> = seen
        .iter()
        .filter(|(id, n)| id.as_str() != "null" && **n != 1)
        .collect();
    assert!(
        repeated.is_empty(),
        "ids answered more than once: {repeated:?}"
    );
}

/// Reads the answers between a case and its probe: the case's own (by id, or the one null-id error
/// written before the probe's answer) and the probe's, which says the server still serves.
fn check_window(
    server: &Server,
    name: &str,
    expect: &Expect,
    probe: &str,
    count: &mut dyn FnMut(&Value),
) {
    let mut nulls = Vec::new();
    let mut by_id = 0;
    let mut probe_seen = false;
    while !probe_seen || (matches!(expect, Expect::Id(_)) && by_id == 0) {
        let answer = server.next(&format!("the answers to {name}"));
        count(&answer);
        if answer["id"] == probe {
            assert!(answer["result"]["tools"].is_array(), "{name}: {answer}");
            probe_seen = true;
        } else if answer["id"].is_null() {
            // Refusals written by the framing go out before any later answer.
            assert!(
                !probe_seen,
                "{name}: a null-id answer after the probe's: {answer}"
            );
            nulls.push(answer);
        } else if let Expect::Id(id) = expect
            && &answer["id"] == id
        {
            by_id += 1;
        } else {
            panic!("{name}: an answer to nothing sent: {answer}");
        }
    }
    match expect {
        Expect::Null(code) => {
            assert_eq!(nulls.len(), 1, "{name}: {nulls:?}");
            assert_eq!(nulls[0]["error"]["code"], *code, "{name}: {}", nulls[0]);
        }
        Expect::Id(_) | Expect::Nothing => assert!(nulls.is_empty(), "{name}: {nulls:?}"),
    }
}

/// The server's cap on requests worked on at once (`mcp/in_flight.rs`).
const MAX_IN_FLIGHT: usize = 64;
/// A workspace whose debugger is a fake openocd that does not answer while `hold` exists: every
/// call that reaches it stays in flight until the test removes the file, with no hardware.
fn slow_world() -> (World, std::path::PathBuf) {
    let world = World::new();
    let (_, code) = world.run_json(&["init"]);
    assert_eq!(code, Some(0), "init succeeds");
    let hold = world.home.join("hold");
    world.bind_fake_openocd(&format!(
        "#!/bin/sh\nwhile [ -e '{}' ]; do sleep 0.05; done\necho 'Open On-Chip Debugger 0.12.0' >&2\nexit 0\n",
        hold.display()
    ));
    (world, hold)
}

#[test]
fn a_flood_of_slow_calls_runs_at_most_the_cap_at_once_answers_every_line_and_still_takes_a_cancel()
{
    let flood = MAX_IN_FLIGHT + 16;
    let (world, hold) = slow_world();
    let mut server = Server::start(&world);
    server.send(&line(
        &json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    ));
    while server.next("init")["id"] != "init" {}
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    std::fs::write(&hold, "").expect("hold the fake debugger");

    // Every line at once, no answer waited for.
    let mut lines = Vec::new();
    for i in 0..flood {
        lines.extend(line(
            &json!({"jsonrpc":"2.0","id":format!("slow-{i}"),"method":"tools/call",
            "params":{"name":"probe_target","arguments":{}}}),
        ));
        lines.push(b'\n');
    }
    let stdin = server.stdin.as_mut().expect("stdin");
    stdin.write_all(&lines).expect("the server reads the flood");
    stdin.flush().expect("flush");

    // Those beyond the cap are answered at once; those within it are still running.
    let mut refused = Vec::new();
    let early = std::time::Instant::now() + Duration::from_secs(3);
    while let Some(left) = early.checked_duration_since(std::time::Instant::now()) {
        let Ok(answer) = server.answers.recv_timeout(left) else {
            break;
        };
        assert_eq!(
            answer["error"]["code"], -32000,
            "only a refusal is answered this early: {answer}"
        );
        assert_eq!(
            answer["error"]["data"]["max_in_flight"], MAX_IN_FLIGHT,
            "{answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Wait for the answers")),
            "{answer}"
        );
        refused.push(answer["id"].as_str().expect("an id").to_owned());
    }
    assert_eq!(
        refused.len(),
        flood - MAX_IN_FLIGHT,
        "the requests beyond the cap, and only those, were refused: {refused:?}"
    );

    // At the cap, a cancel still reaches a running call: its answer is never sent.
    let running: Vec<String> = (0..flood)
        .map(|i| format!("slow-{i}"))
        .filter(|id| !refused.contains(id))
        .collect();
    let cancelled = running[0].clone();
    server.send(&line(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":cancelled,"reason":"enough"}}),
    ));
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_file(&hold).expect("let the fake debugger answer");

    let mut answered: HashMap<String, Value> = HashMap::new();
    let deadline = std::time::Instant::now() + Duration::from_mins(2);
    while answered.len() < running.len() - 1 {
        let left = deadline
            .checked_duration_since(std::time::Instant::now())
            .unwrap_or_else(|| panic!("not every running call was answered: {answered:?}"));
        let Ok(answer) = server.answers.recv_timeout(left) else {
            continue;
        };
        let id = answer["id"].as_str().expect("an id").to_owned();
        assert_ne!(id, cancelled, "the cancelled call was answered: {answer}");
        assert!(
            running.contains(&id),
            "an answer to nothing running: {answer}"
        );
        assert_eq!(
            answer["result"]["structuredContent"]["tool"], "probe_target",
            "a call within the cap ran to its end: {answer}"
        );
        assert!(answered.insert(id, answer).is_none(), "answered twice");
    }
    // The slots are free again: the next request is run, not refused.
    server.send(br#"{"jsonrpc":"2.0","id":"after","method":"tools/list"}"#);
    loop {
        let answer = server.next("the request after the flood");
        assert_ne!(answer["id"], json!(cancelled), "{answer}");
        if answer["id"] == "after" {
            assert!(answer["result"]["tools"].is_array(), "{answer}");
            break;
        }
    }
    let (rest, code) = server.finish();
    assert!(
        rest.iter().all(|a| a["id"] != json!(cancelled)),
        "the cancelled call was answered: {rest:?}"
    );
    assert_eq!(code, Some(0), "{rest:?}");
}
