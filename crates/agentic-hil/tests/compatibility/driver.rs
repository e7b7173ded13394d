//! The driver: each step's call made to one implementation in its own world, the fields read off
//! its answers, and the two sides held to the table of listed differences.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::differences::{DIFFERENCES, Difference};
use crate::support::raw::Mcp;
use crate::support::{World, reference};

/// One call made to both implementations.
pub enum Call {
    Tool(&'static str, Value),
    /// A command line; `--json` is added, and a nonzero exit is `isError`.
    Cli(&'static [&'static str]),
    /// Appends text to the configuration file behind the running server's back; nothing compared.
    AppendToConfig(&'static str),
}

pub struct Step {
    pub case: &'static str,
    pub call: Call,
    /// Compared beside `isError` and `error_type`: a dotted path into the envelope, optionally
    /// `#len` (an array's length), `#leaks_root` (whether the value names the test's temp root) or
    /// `#type` (the value's JSON type: a shape compared where the value is each machine's own),
    /// or `array@name@path` (`path` in the element of `array` whose `key` is `name`), or `a|b` (the
    /// first of them that is not null).
    pub fields: &'static [&'static str],
}

/// What a lease status is compared by, over MCP (`hardware_lease_status`) and the command line
/// (`lease-status`).
pub const LEASE_STATUS: &[&str] = &[
    "ok",
    "owner_active",
    "bench_held",
    "blocked",
    "incident_stands",
    "held_devices#len",
    "standing_incidents#len",
    "leases#len",
];

pub fn tool(
    case: &'static str,
    name: &'static str,
    args: Value,
    fields: &'static [&'static str],
) -> Step {
    Step {
        case,
        call: Call::Tool(name, args),
        fields,
    }
}

pub fn append_to_config(case: &'static str, text: &'static str) -> Step {
    Step {
        case,
        call: Call::AppendToConfig(text),
        fields: &[],
    }
}

pub fn cli(
    case: &'static str,
    args: &'static [&'static str],
    fields: &'static [&'static str],
) -> Step {
    Step {
        case,
        call: Call::Cli(args),
        fields,
    }
}

/// `program init` in `world`, which must succeed: each implementation writes its own file.
pub fn init(world: &World, program: &Path) {
    let mut cmd = Command::new(program);
    world.scrub(&mut cmd);
    let out = cmd.arg("init").output().expect("init runs");
    assert!(
        out.status.success(),
        "{} init: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Installs ahil-sim's scripted OpenOCD fake (`probe_cli.py`, which both servers run) in the
/// world's `tools/`, scenario `ok`; its path, for the configuration's `executable`.
pub fn install_openocd_fake(world: &World) -> PathBuf {
    crate::support::fakes::install_probe_cli(world, "openocd.py", "ok")
}

pub fn edit_config(world: &World, from: &str, to: &str) {
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("config");
    assert!(text.contains(from), "the generated file has {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write config");
}

pub fn lookup(doc: &Value, path: &str) -> Value {
    let mut cur = doc;
    for part in path.split('.') {
        cur = match part.parse::<usize>() {
            Ok(index) => &cur[index],
            Err(_) => &cur[part],
        };
    }
    cur.clone()
}

/// A field of one answer; `result` is the whole `tools/call` result.
pub fn field(result: &Value, spec: &str, root: &Path) -> Value {
    if spec == "isError" {
        return Value::Bool(result["isError"].as_bool().unwrap_or(false));
    }
    // `a|b`: the first of the fields that is not null (a refusal that puts it at another level).
    if spec.contains('|') {
        return spec
            .split('|')
            .map(|one| field(result, one, root))
            .find(|value| !value.is_null())
            .unwrap_or(Value::Null);
    }
    let envelope = &result["structuredContent"];
    // `keys@name@field`: `field` of the element of array `keys` whose `key` is `name` (key names
    // hold dots, so they cannot be path segments).
    if let [array, key, rest] = spec.splitn(3, '@').collect::<Vec<_>>()[..] {
        let element = lookup(envelope, array)
            .as_array()
            .and_then(|items| items.iter().find(|item| item["key"] == key).cloned())
            .unwrap_or(Value::Null);
        return lookup(&element, rest);
    }
    let (path, op) = spec.split_once('#').unwrap_or((spec, ""));
    let value = lookup(envelope, path);
    match op {
        "" => value,
        "len" => value.as_array().map_or(Value::Null, |a| json!(a.len())),
        "leaks_root" => json!(value.to_string().contains(&root.display().to_string())),
        "type" => json!(match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }),
        other => panic!("unknown field operation {other}"),
    }
}

pub fn run_cli(world: &World, program: &Path, args: &[&str]) -> Value {
    let mut cmd = Command::new(program);
    world.scrub(&mut cmd);
    let out = cmd.args(args).arg("--json").output().expect("the CLI runs");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} {args:?} printed no JSON ({e}): {}\n{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    json!({"isError": !out.status.success(), "structuredContent": doc})
}

/// One observed value: (case, field, value).
pub type Observed = Vec<(&'static str, String, Value)>;

/// Runs every step against `program` in a fresh world prepared by `bench` (which returns what must
/// stay alive while the steps run: a pty board, a simulator).
pub fn observe<G>(program: &Path, bench: &dyn Fn(&World, &Path) -> G, steps: &[Step]) -> Observed {
    let world = World::new();
    init(&world, program);
    let _guard = bench(&world, program);
    let root = world.home.parent().expect("the world's root").to_path_buf();
    let mut mcp: Option<Mcp> = None;
    let mut seen = Vec::new();
    for step in steps {
        let result = match &step.call {
            Call::Tool(name, args) => mcp
                .get_or_insert_with(|| Mcp::start(&world, program))
                .call(name, args),
            Call::Cli(args) => run_cli(&world, program, args),
            Call::AppendToConfig(text) => {
                let path = world.config_path();
                let mut body = std::fs::read_to_string(&path).expect("config");
                body.push_str(text);
                std::fs::write(&path, body).expect("write config");
                continue;
            }
        };
        assert!(
            result["structuredContent"].is_object(),
            "{}: {} answered no envelope: {result}",
            step.case,
            program.display()
        );
        for spec in ["isError", "error_type"].iter().chain(step.fields) {
            seen.push((step.case, (*spec).to_owned(), field(&result, spec, &root)));
        }
    }
    seen
}

pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?} is JSON in the table: {e}"))
}

/// Runs `steps` on both, then holds the differences under `scope` to [`DIFFERENCES`].
pub fn compare<G>(scope: &str, bench: &dyn Fn(&World, &Path) -> G, steps: &[Step]) {
    for step in steps {
        assert!(
            step.case.starts_with(scope),
            "{} is outside {scope}",
            step.case
        );
    }
    let ours = observe(Path::new(World::binary()), bench, steps);
    let theirs = observe(&reference(), bench, steps);
    judge(scope, &ours, &theirs);
}

/// Holds the values both observed (in the same order) under `scope` to [`DIFFERENCES`]: an
/// unlisted difference fails, and so does a listed one that did not occur.
pub fn judge(scope: &str, ours: &Observed, theirs: &Observed) {
    let listed: Vec<&Difference> = DIFFERENCES
        .iter()
        .filter(|d| d.0.starts_with(scope))
        .collect();
    let mut failures = String::new();
    let mut occurred = vec![false; listed.len()];
    for ((case, spec, mine), (_, _, other)) in ours.iter().zip(theirs) {
        let entry = listed.iter().position(|d| d.0 == *case && d.1 == spec);
        match entry {
            Some(i) if parse(listed[i].2) == *mine && parse(listed[i].3) == *other => {
                occurred[i] = true;
            }
            Some(i) => {
                let d = listed[i];
                let _ = writeln!(
                    failures,
                    "{case} {spec}: listed as ours {} / reference {} ({}), now ours {mine} / reference {other}",
                    d.2,
                    d.3,
                    d.4.id()
                );
                occurred[i] = true;
            }
            None if mine != other => {
                let _ = writeln!(
                    failures,
                    "{case} {spec}: ours {mine}, reference {other} (not in DIFFERENCES)"
                );
            }
            None => {}
        }
    }
    for (d, seen) in listed.iter().zip(&occurred) {
        if !seen {
            let _ = writeln!(
                failures,
                "{} {}: listed ({}) but never compared: a step is missing",
                d.0,
                d.1,
                d.4.id()
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{scope}: differences from the list:\n{failures}"
    );
}
