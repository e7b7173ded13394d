//! Hostile input at the MCP surface: random lines (broken framing, invalid UTF-8, batches, wrong
//! ids, unknown methods) and random arguments to every listed tool. The server must never panic or
//! hang, must answer every request with a structured error or result, and must write nothing outside
//! its own HOME and the workspace.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use support::World;
use support::raw::spawn_stdio;

/// Silence for this long after a request means the server hung.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// The last line sent, named when the server stops answering.
    last_sent: String,
}

impl Server {
    fn start(world: &World) -> Self {
        let mut cmd = Command::new(World::binary());
        world.scrub(&mut cmd);
        let mut child = spawn_stdio(&mut cmd);
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            stdin,
            lines,
            last_sent: String::new(),
        };
        server.send_bytes(
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "hostile", "version": "1"}}})
            .to_string()
            .as_bytes(),
        );
        server.answer("init");
        server.send_bytes(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        self.last_sent = String::from_utf8_lossy(bytes).chars().take(400).collect();
        let mut line = bytes.to_vec();
        line.push(b'\n');
        // A server that closed its stdin has already failed the test below.
        let _ = stdin.write_all(&line);
        let _ = stdin.flush();
    }

    /// Waits for the answer whose id is the string `id`; every line on the way must be JSON-RPC.
    fn answer(&mut self, id: &str) -> Value {
        loop {
            let line = self.lines.recv_timeout(ANSWER_WITHIN).unwrap_or_else(|_| {
                panic!(
                    "no answer to id {id}: the server hung or died; last sent: {}",
                    self.last_sent
                )
            });
            let doc: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            // A batch is answered by an array of answers.
            let docs = match doc {
                Value::Array(items) if !items.is_empty() => items,
                one => vec![one],
            };
            for doc in docs {
                assert_eq!(doc["jsonrpc"], "2.0", "{line}");
                if doc["id"].as_str() == Some(id) {
                    return doc;
                }
            }
        }
    }

    fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        for _ in 0..200 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("the server did not exit within 10 s of the end of stdin");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Values an attacker would try in any argument.
fn hostile_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("../../etc/passwd".to_owned()),
            Just("/etc/shadow".to_owned()),
            Just("~/.ssh/id_rsa".to_owned()),
            Just("fw/\u{0}evil.elf".to_owned()),
            Just("\u{202e}fle.exe".to_owned()),
            Just("x".repeat(100_000)),
            Just(".agentic-hil/../../outside".to_owned()),
            "[a-z_/.]{0,24}",
            any::<String>(),
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One line of input, as bytes.
#[derive(Debug, Clone)]
enum Message {
    Raw(Vec<u8>),
    Call {
        tool: usize,
        args: Vec<(usize, Value)>,
        extra: Option<(String, Value)>,
    },
    Request {
        method: String,
        id: Value,
    },
    Batch(usize),
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Message::Raw),
        6 => (
            0..64usize,
            prop::collection::vec((0..16usize, hostile_value()), 0..5),
            proptest::option::of(("[a-z]{1,8}", hostile_value())),
        )
            .prop_map(|(tool, args, extra)| Message::Call { tool, args, extra }),
        2 => (
            prop_oneof![
                Just("tools/list".to_owned()),
                Just("resources/list".to_owned()),
                Just("prompts/get".to_owned()),
                Just("initialize".to_owned()),
                "[a-z/]{1,20}",
            ],
            prop_oneof![
                any::<i64>().prop_map(Value::from),
                "[a-z]{1,8}".prop_map(Value::String),
                Just(json!({"nested": 1})),
                Just(json!([1, 2])),
                Just(Value::Null),
            ],
        )
            .prop_map(|(method, id)| Message::Request { method, id }),
        1 => (1..4usize).prop_map(Message::Batch),
    ]
}

/// Every listed tool with the names of its arguments.
fn tools(server: &mut Server) -> Vec<(String, Vec<String>)> {
    schemas(server)
        .into_iter()
        .map(|(name, schema)| {
            let keys = schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            (name, keys)
        })
        .collect()
}

/// Every listed tool with its input schema.
fn schemas(server: &mut Server) -> Vec<(String, Value)> {
    server.send_bytes(br#"{"jsonrpc":"2.0","id":"schemas","method":"tools/list"}"#);
    let listed = server.answer("schemas");
    listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| {
            let name = tool["name"].as_str().expect("name").to_owned();
            (name, tool["inputSchema"].clone())
        })
        .collect()
}

/// A hostile value of each JSON type, so a member can be sent as the type its schema names.
#[derive(Debug, Clone)]
struct Typed {
    text: String,
    integer: i64,
    number: f64,
    flag: bool,
    other: Value,
}

fn typed() -> impl Strategy<Value = Typed> {
    (
        prop_oneof![
            1 => Just("../../etc/passwd".to_owned()),
            1 => Just("x".repeat(100_000)),
            1 => Just(String::new()),
            // Plausible names and ids, which get past the first checks to the deeper ones.
            4 => "[a-z][a-z0-9_.:-]{0,11}",
            1 => "[a-z_/.=!]{0,24}",
            1 => any::<String>(),
        ],
        any::<i64>(),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
        any::<bool>(),
        hostile_value(),
    )
        .prop_map(|(text, integer, number, flag, other)| Typed {
            text,
            integer,
            number,
            flag,
            other,
        })
}

/// The material for one tool's schema-shaped arguments: which `oneOf`/`anyOf` branch's required
/// members to send, and for each member (in schema order) whether it is sent and as what.
#[derive(Debug, Clone)]
struct Shaped {
    branch: usize,
    members: Vec<(bool, Typed)>,
}

fn shaped() -> impl Strategy<Value = Shaped> {
    (
        0..4usize,
        prop::collection::vec((any::<bool>(), typed()), 12),
    )
        .prop_map(|(branch, members)| Shaped { branch, members })
}

/// Arguments that have the shape `schema` asks for (its required members and those of one branch,
/// each of the type it names), with hostile contents.
fn shaped_arguments(schema: &Value, shape: &Shaped) -> Value {
    fn names(list: &Value) -> Vec<&str> {
        list.as_array()
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
    let mut required: Vec<&str> = names(&schema["required"]);
    // Members only another branch requires are left out, so the call usually passes the schema.
    let mut excluded: Vec<&str> = Vec::new();
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema[key].as_array().filter(|b| !b.is_empty()) {
            let chosen = shape.branch % branches.len();
            for (i, branch) in branches.iter().enumerate() {
                if i == chosen {
                    required.extend(names(&branch["required"]));
                } else {
                    excluded.extend(names(&branch["required"]));
                }
            }
        }
    }
    let mut arguments = serde_json::Map::new();
    let Some(properties) = schema["properties"].as_object() else {
        return Value::Object(arguments);
    };
    for (i, (name, member)) in properties.iter().enumerate() {
        let (send, value) = &shape.members[i % shape.members.len()];
        let required = required.contains(&name.as_str());
        if !required && (!*send || excluded.contains(&name.as_str())) {
            continue;
        }
        let kind = member["type"]
            .as_str()
            .or_else(|| member["type"][0].as_str())
            .unwrap_or("");
        let value = match kind {
            "string" => Value::String(value.text.clone()),
            "integer" => Value::from(value.integer),
            "number" => Value::from(value.number),
            "boolean" => Value::Bool(value.flag),
            _ => value.other.clone(),
        };
        arguments.insert(name.clone(), value);
    }
    Value::Object(arguments)
}

/// Every file under `root`, relative.
fn files_under(root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.push(
                path.strip_prefix(root)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
            );
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_input_always_gets_a_structured_answer_and_never_a_hang(
        messages in prop::collection::vec(message(), 1..40)
    ) {
        let world = World::new();
        prop_assert!(world.run(&["init"]).status.success());
        let root = world.home.parent().expect("root").to_path_buf();
        let mut server = Server::start(&world);
        let listed = tools(&mut server);
        let mut next = 0u64;
        for message in messages {
            next += 1;
            match message {
                Message::Raw(bytes) => {
                    // A raw line may by chance be a newline; it splits into two lines, both junk.
                    server.send_bytes(&bytes);
                }
                Message::Call { tool, args, extra } => {
                    let (name, keys) = &listed[tool % listed.len()];
                    let mut arguments = serde_json::Map::new();
                    for (key, value) in args {
                        if !keys.is_empty() {
                            arguments.insert(keys[key % keys.len()].clone(), value);
                        }
                    }
                    if let Some((key, value)) = extra {
                        arguments.insert(key, value);
                    }
                    let id = format!("c{next}");
                    server.send_bytes(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}}).to_string().as_bytes());
                    let answer = server.answer(&id);
                    if let Some(result) = answer.get("result") {
                        let doc = &result["structuredContent"];
                        prop_assert!(doc["ok"].is_boolean(), "{}: {}", name, answer);
                        prop_assert!(doc["summary"].is_string(), "{}: {}", name, answer);
                        if result["isError"] == true {
                            prop_assert!(doc["error_type"].is_string(), "{}: {}", name, answer);
                        }
                    } else {
                        prop_assert!(answer["error"]["code"].is_i64(), "{}", answer);
                    }
                }
                Message::Request { method, id } => {
                    let request = json!({"jsonrpc": "2.0", "id": id, "method": method});
                    server.send_bytes(request.to_string().as_bytes());
                }
                Message::Batch(n) => {
                    let batch: Vec<Value> = (0..n)
                        .map(|i| json!({"jsonrpc": "2.0", "id": format!("b{next}-{i}"), "method": "tools/list"}))
                        .collect();
                    server.send_bytes(Value::Array(batch).to_string().as_bytes());
                }
            }
        }
        // Still serving after all of it.
        server.send_bytes(br#"{"jsonrpc":"2.0","id":"final","method":"tools/list"}"#);
        let last = server.answer("final");
        prop_assert!(last["result"]["tools"].is_array(), "{}", last);
        prop_assert_eq!(server.finish(), Some(0));
        let outside: Vec<String> = files_under(&root)
            .into_iter()
            .filter(|p| !(p.starts_with("home") || p.starts_with("work")))
            .collect();
        prop_assert!(outside.is_empty(), "files written outside HOME and the workspace: {:?}", outside);
    }
}

proptest! {
    // A dropped request costs ANSWER_WITHIN per shrinking step, so shrinking is bounded.
    #![proptest_config(ProptestConfig {
        cases: 12, failure_persistence: None, max_shrink_time: 90_000, ..ProptestConfig::default()
    })]

    #[test]
    fn every_tool_given_arguments_of_its_schemas_shape_answers_structurally(
        shapes in prop::collection::vec(shaped(), 64)
    ) {
        let world = World::new();
        prop_assert!(world.run(&["init"]).status.success());
        let root = world.home.parent().expect("root").to_path_buf();
        let mut server = Server::start(&world);
        for (i, (name, schema)) in schemas(&mut server).into_iter().enumerate() {
            let arguments = shaped_arguments(&schema, &shapes[i % shapes.len()]);
            let id = format!("s{i}");
            server.send_bytes(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}).to_string().as_bytes());
            let answer = server.answer(&id);
            let result = &answer["result"];
            prop_assert!(result["structuredContent"]["ok"].is_boolean(), "{}: {}", name, answer);
            prop_assert!(result["structuredContent"]["summary"].is_string(), "{}: {}", name, answer);
        }
        prop_assert_eq!(server.finish(), Some(0));
        let outside: Vec<String> = files_under(&root)
            .into_iter()
            .filter(|p| !(p.starts_with("home") || p.starts_with("work")))
            .collect();
        prop_assert!(outside.is_empty(), "files written outside HOME and the workspace: {:?}", outside);
    }
}
