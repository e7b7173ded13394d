//! Raw JSON-RPC over the server's stdin/stdout: protocol versions, line limits, stdout hygiene.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};
use support::World;
use support::raw::spawn_stdio;

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Session {
    fn start(world: &World) -> Self {
        let mut child = spawn_stdio(&mut world.command());
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("serialize");
        line.push(b'\n');
        self.stdin.write_all(&line).expect("write to server");
        self.stdin.flush().expect("flush");
    }

    /// Reads lines until the response with `id`; every line on stdout must be JSON-RPC.
    fn response(&mut self, id: i64) -> Value {
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read from server");
            assert!(n > 0, "server closed stdout before answering {id}");
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            assert_eq!(msg["jsonrpc"], json!("2.0"), "{line}");
            if msg["id"] == json!(id) {
                return msg;
            }
        }
    }

    fn initialize(&mut self, version: &str) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name":"t","version":"0"}}}));
        let answer = self.response(1);
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        answer
    }

    fn send_raw(&mut self, line: &str) {
        self.stdin
            .write_all(line.as_bytes())
            .expect("write to server");
        self.stdin.write_all(b"\n").expect("write to server");
        self.stdin.flush().expect("flush");
    }

    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin);
        self.child.wait().expect("server exits at EOF")
    }
}

#[test]
fn every_protocol_version_from_2024_11_05_is_accepted_as_asked() {
    let world = World::new();
    world.run_json(&["init"]);
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut session = Session::start(&world);
        let answer = session.initialize(version);
        assert_eq!(answer["result"]["protocolVersion"], json!(version));
        assert!(
            answer["result"]["instructions"]
                .as_str()
                .is_some_and(|s| s.contains("permission_denied"))
        );
        assert!(session.finish().success());
    }
}

/// With every log level on, the logs must exist (so this test can see them misrouted) and reach
/// stderr, while stdout stays pure JSON-RPC.
#[test]
fn with_trace_logging_stdout_carries_only_json_rpc_and_the_logs_go_to_stderr() {
    let world = World::new();
    world.run_json(&["init"]);
    let log_path = world.home.join("server-stderr.log");
    let log = std::fs::File::create(&log_path).expect("create log file");
    let mut child = world
        .command()
        .arg("mcp-stdio")
        .env("AGENTIC_HIL_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("server starts");
    let mut session = Session {
        stdin: child.stdin.take().expect("stdin piped"),
        stdout: BufReader::new(child.stdout.take().expect("stdout piped")),
        child,
    };
    session.initialize("2025-06-18");
    session.send(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    session.response(2);
    session.send(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"debugger_info","arguments":{}}}));
    session.response(3);
    assert!(session.finish().success());
    let logs = std::fs::read_to_string(&log_path).expect("read log file");
    assert!(
        !logs.trim().is_empty(),
        "trace logging produced nothing on stderr"
    );
}

#[test]
fn an_over_long_line_is_refused_and_the_server_keeps_serving() {
    let world = World::new();
    world.run_json(&["init"]);
    // With 1 MiB uploads the line limit is its floor, 10 MiB.
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("read config");
    assert!(
        text.contains("max_upload_size_mb: 64"),
        "the generated file names the upload size"
    );
    std::fs::write(
        &path,
        text.replace("max_upload_size_mb: 64", "max_upload_size_mb: 1"),
    )
    .expect("write config");
    let mut session = Session::start(&world);
    session.initialize("2025-06-18");
    let mut huge =
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"pad\":\"".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 11 * 1024 * 1024));
    huge.extend_from_slice(b"\"}}\n");
    session.stdin.write_all(&huge).expect("write huge line");
    session.send(&json!({"jsonrpc":"2.0","id":8,"method":"ping"}));
    // Its id is read from the start of the line, so the client waiting on 7 is answered.
    let refusal = session.response(7);
    assert_eq!(refusal["error"]["code"], json!(-32600));
    let pong = session.response(8);
    assert_eq!(pong["result"], json!({}));
    assert!(session.finish().success());
}

#[test]
fn a_tool_failure_is_a_result_and_an_unknown_method_is_a_protocol_error() {
    let world = World::new();
    world.run_json(&["init"]);
    let mut session = Session::start(&world);
    session.initialize("2025-06-18");
    session.send(
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"debugger_info","arguments":{"bogus": 1}}}),
    );
    let answer = session.response(2);
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(answer["result"]["isError"], json!(true));
    assert_eq!(
        answer["result"]["structuredContent"]["error_type"],
        json!("invalid_argument")
    );

    session.send(&json!({"jsonrpc":"2.0","id":3,"method":"no/such/method"}));
    let answer = session.response(3);
    assert!(answer.get("error").is_some(), "{answer}");
    assert!(session.finish().success());
}

#[test]
fn a_number_too_large_for_a_float_is_refused_as_non_finite_naming_the_argument() {
    let world = World::new();
    world.run_json(&["init"]);
    let mut session = Session::start(&world);
    session.initialize("2025-06-18");
    session.send_raw(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"debugger_info","arguments":{"timeout_s":1e400}}}"#,
    );
    let answer = session.response(4);
    let envelope = &answer["result"]["structuredContent"];
    assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
    assert_eq!(envelope["error_type"], json!("invalid_argument"));
    assert_eq!(envelope["validator"], json!("finite"));
    assert_eq!(envelope["field"], json!("timeout_s"));
    assert!(session.finish().success());
}

#[test]
fn arguments_that_are_no_object_are_refused_as_an_invalid_argument_envelope() {
    let world = World::new();
    world.run_json(&["init"]);
    let not_objects = [json!([1]), json!("x"), json!(5), json!(true)];
    let mut session = Session::start(&world);
    session.initialize("2025-06-18");
    for (id, arguments) in (5..).zip(not_objects) {
        session.send(
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
            "name":"debugger_info","arguments":arguments}}),
        );
        let answer = session.response(id);
        assert!(answer.get("error").is_none(), "{answer}");
        let envelope = &answer["result"]["structuredContent"];
        assert_eq!(answer["result"]["isError"], json!(true), "{answer}");
        assert_eq!(
            envelope["error_type"],
            json!("invalid_argument"),
            "{answer}"
        );
        assert_eq!(envelope["field"], json!("$"), "{answer}");
        assert!(envelope["remediation"][0].is_string(), "{answer}");
    }
    // Only a refusal travels that way: an object beside it is still the call's arguments.
    session.send(
        &json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{
        "name":"debugger_info","arguments":{},
        "_meta":{"io.agentic-hil/arguments-not-an-object":[1]}}}),
    );
    let answer = session.response(9);
    assert_ne!(
        answer["result"]["structuredContent"]["field"],
        json!("$"),
        "{answer}"
    );
    assert!(session.finish().success());
}
