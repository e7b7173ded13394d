//! The step catalogue: every action a plan may name, its keys and its rules, as shapes.
//!
//! Key names, types, bounds, patterns, defaults and version markers are the compatibility
//! surface shared with the reference plan schema; the descriptions are ours.

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::shape::{Fault, Kind, Obj, Pat, Shape, Text, check};
use crate::node::{Node, Path};

/// Plan format versions this loader reads.
pub(crate) const VERSIONS: [i128; 5] = [2, 3, 4, 5, 6];
/// Most steps one list may hold (nested lists too).
pub(crate) const MAX_STEPS: usize = 128;
/// Longest `delay` step.
pub(crate) const MAX_DELAY_MS: i128 = 600_000;

/// Route keys in the order a doubly-named step is judged: the later one is blamed.
pub(crate) const ROUTE_KEYS: [&str; 4] = ["device", "debugger", "port_id", "bus_id"];

/// One step kind: its action, its `$defs` name in the schema, and its shape.
pub(crate) struct StepKind {
    pub action: &'static str,
    pub def: &'static str,
    pub shape: Shape,
}

static CATALOGUE: LazyLock<Vec<StepKind>> = LazyLock::new(build);

pub(crate) fn catalogue() -> &'static [StepKind] {
    &CATALOGUE
}

pub(crate) fn step_kind(action: &str) -> Option<&'static StepKind> {
    catalogue().iter().find(|k| k.action == action)
}

pub(crate) fn actions() -> Vec<&'static str> {
    catalogue().iter().map(|k| k.action).collect()
}

fn s(min_len: usize, pat: Option<Pat>) -> Shape {
    Shape::new(Kind::Str(Text {
        min_len,
        pat,
        no_parent: false,
    }))
}

fn name() -> Shape {
    s(0, Some(Pat::Name))
}

fn boolean(default: bool) -> Shape {
    Shape::new(Kind::Bool).default(json!(default))
}

fn int(min: Option<i128>, max: Option<i128>) -> Shape {
    Shape::new(Kind::Int { min, max })
}

fn timeout() -> Shape {
    Shape::new(Kind::Num {
        min: Some(0.0),
        above: None,
    })
    .describe("Seconds; 0 asks once without waiting.")
}

fn positive_timeout() -> Shape {
    Shape::new(Kind::Num {
        min: None,
        above: Some(0.0),
    })
    .describe("Seconds, more than 0.")
}

/// A file path a step names: any non-empty text.
fn path() -> Shape {
    s(1, None)
}

fn symbol() -> Shape {
    s(0, Some(Pat::Symbol))
}

fn can_id() -> Shape {
    Shape::new(Kind::OneOf(vec![
        int(Some(0), None),
        s(0, Some(Pat::CanId)),
    ]))
}

fn range(integers: bool) -> Shape {
    let n = || {
        if integers {
            int(None, None)
        } else {
            Shape::new(Kind::Num {
                min: None,
                above: None,
            })
        }
    };
    obj(Obj {
        props: vec![("min", n()), ("max", n())],
        required: vec!["min", "max"],
        ..Obj::default()
    })
    .describe("Inclusive bounds for the captured number.")
}

fn obj(o: Obj) -> Shape {
    Shape::new(Kind::Obj(Box::new(o)))
}

/// A comparator over text (version 3 on): exactly one of `equals` and `pattern`, and `range` (on the
/// number the pattern captures) only beside `pattern`. `what` are the properties that pick what is
/// compared, before the three.
fn equals_or_pattern(
    what: Vec<(&'static str, Shape)>,
    required: Vec<&'static str>,
    equals: Shape,
    pattern: &'static str,
) -> Shape {
    let mut props = what;
    props.extend([
        ("equals", equals),
        ("pattern", s(1, None).describe(pattern)),
        ("range", range(false)),
    ]);
    obj(Obj {
        props,
        required,
        exactly_one: vec!["equals", "pattern"],
        needs: vec![("range", "pattern")],
        since: Some(3),
        ..Obj::default()
    })
}

fn text_comparator() -> Shape {
    equals_or_pattern(
        vec![],
        vec![],
        s(1, None).describe("A whole line, or on the last pass the whole text."),
        "A regular expression searched in the text.",
    )
    .describe("What the text read must show for the step to pass.")
}

fn can_comparator() -> Shape {
    equals_or_pattern(
        vec![
            ("id", can_id()),
            ("id_mask", can_id()),
            ("extended", boolean(false)),
        ],
        vec!["id"],
        s(0, Some(Pat::Hex)).describe("The payload, in hex."),
        "A regular expression over the payload hex.",
    )
    .describe("Which frame must arrive for the step to pass.")
}

fn symbol_comparator() -> Shape {
    obj(Obj {
        props: vec![
            ("equals", int(None, None)),
            ("range", range(true)),
            (
                "mask",
                int(Some(0), None).describe("Compare `value & mask` with `equals`."),
            ),
            ("signed", boolean(false)),
        ],
        exactly_one: vec!["equals", "range"],
        needs: vec![("mask", "equals")],
        excludes: vec![("mask", "signed")],
        since: Some(5),
        ..Obj::default()
    })
    .describe("What the value in target memory must be for the step to pass.")
}

fn location() -> Shape {
    let one = |key: &'static str| {
        obj(Obj {
            props: vec![(key, symbol())],
            required: vec![key],
            ..Obj::default()
        })
    };
    let file = obj(Obj {
        props: vec![
            (
                "file",
                Shape::new(Kind::Str(Text {
                    min_len: 0,
                    pat: Some(Pat::File),
                    no_parent: true,
                })),
            ),
            ("line", int(Some(1), None)),
        ],
        required: vec!["file", "line"],
        ..Obj::default()
    });
    Shape::new(Kind::OneOf(vec![
        symbol(),
        one("symbol"),
        one("function"),
        file,
    ]))
    .describe("Where to stop: a symbol, `{symbol}`, `{function}` or `{file, line}`.")
}

/// Route keys a step kind accepts.
#[derive(Clone, Copy)]
enum Routes {
    Debugger,
    Port,
    Bus,
    Any,
    None,
}

fn route_props(r: Routes) -> Vec<(&'static str, Shape)> {
    let device = || {
        name()
            .since(3)
            .describe("The configuration entry this step drives.")
    };
    match r {
        Routes::Debugger => vec![("device", device()), ("debugger", name())],
        Routes::Port => vec![("device", device()), ("port_id", name())],
        Routes::Bus => vec![
            ("device", device()),
            ("bus_id", name()),
            (
                "participant",
                s(1, Some(Pat::Name))
                    .since(6)
                    .describe("A named participant of a shared bus."),
            ),
        ],
        Routes::Any => vec![
            ("device", device()),
            ("debugger", name()),
            ("port_id", name()),
            ("bus_id", name()),
        ],
        Routes::None => Vec::new(),
    }
}

fn route_required(r: Routes) -> Vec<&'static str> {
    match r {
        Routes::Debugger | Routes::None => Vec::new(),
        Routes::Port => vec!["device", "port_id"],
        Routes::Bus => vec!["device", "bus_id"],
        Routes::Any => ROUTE_KEYS.to_vec(),
    }
}

struct Def {
    action: &'static str,
    schema_name: &'static str,
    routes: Routes,
    props: Vec<(&'static str, Shape)>,
    required: Vec<&'static str>,
    since: Option<u8>,
    describe: &'static str,
}

fn kind(d: Def, tune: impl FnOnce(&mut Obj)) -> StepKind {
    let mut props = route_props(d.routes);
    props.push(("action", Shape::new(Kind::Const(d.action))));
    props.extend(d.props);
    let mut required = vec!["action"];
    required.extend(d.required);
    let mut o = Obj {
        props,
        required,
        at_least_one: route_required(d.routes),
        since: d.since,
        ..Obj::default()
    };
    tune(&mut o);
    StepKind {
        action: d.action,
        def: d.schema_name,
        shape: obj(o).describe(d.describe),
    }
}

fn def(
    action: &'static str,
    def: &'static str,
    routes: Routes,
    props: Vec<(&'static str, Shape)>,
    required: &[&'static str],
) -> Def {
    Def {
        action,
        schema_name: def,
        routes,
        props,
        required: required.to_vec(),
        since: None,
        describe: "",
    }
}

impl Def {
    fn since(mut self, v: u8) -> Self {
        self.since = Some(v);
        self
    }
    fn describe(mut self, d: &'static str) -> Self {
        self.describe = d;
        self
    }
}

fn plain(d: Def) -> StepKind {
    kind(d, |_| {})
}

fn build() -> Vec<StepKind> {
    [
        board_kinds(),
        uart_kinds(),
        can_kinds(),
        debug_kinds(),
        control_kinds(),
        rtt_kinds(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Steps on the board itself.
fn board_kinds() -> Vec<StepKind> {
    use Routes::Debugger;
    vec![
        plain(
            def(
                "flash",
                "flash",
                Debugger,
                vec![
                    ("image_path", path()),
                    ("reset_after_flash", boolean(false)),
                ],
                &["image_path"],
            )
            .describe("Write an image to the target."),
        ),
        plain(
            def(
                "reset",
                "reset",
                Debugger,
                vec![(
                    "mode",
                    Shape::new(Kind::Choice(&["run", "halt", "init"])).default(json!("run")),
                )],
                &[],
            )
            .describe("Reset the target."),
        ),
    ]
}

/// Step kinds of ours alone, after the reference's: a plan that uses one is not one the reference
/// runs (its schema marks them `x-agentic-hil-only`).
pub(crate) const OURS: &[&str] = &["rtt_expect"];

/// RTT steps: the debugger's RTT session, opened by the run's first such step.
fn rtt_kinds() -> Vec<StepKind> {
    vec![kind(
        def(
            "rtt_expect",
            "rttExpect",
            Routes::Debugger,
            vec![
                (
                    "channel",
                    s(1, Some(Pat::Name)).describe("An up channel of the debugger's rtt section."),
                ),
                ("text", s(1, None)),
                ("pattern", s(1, None)),
                ("timeout_s", positive_timeout()),
            ],
            &["channel", "timeout_s"],
        )
        .describe("Wait for text or a pattern on an RTT up channel of the debugger (ours alone)."),
        |o| o.exactly_one = vec!["text", "pattern"],
    )]
}

/// Serial-line steps.
fn uart_kinds() -> Vec<StepKind> {
    use Routes::Port;
    vec![
        plain(
            def(
                "uart_open",
                "uartOpen",
                Port,
                vec![("clear_buffer", boolean(true))],
                &[],
            )
            .describe("Open a serial session."),
        ),
        kind(
            def(
                "uart_write",
                "uartWrite",
                Port,
                vec![("text", s(0, None)), ("hex", s(0, Some(Pat::Hex)))],
                &[],
            )
            .since(3)
            .describe("Send text or hex bytes on a serial line."),
            |o| o.exactly_one = vec!["text", "hex"],
        ),
        kind(
            def(
                "uart_read",
                "uartRead",
                Port,
                vec![
                    ("comparator", text_comparator().since(3)),
                    ("timeout_s", timeout()),
                ],
                &[],
            )
            .since(3)
            .describe("Read a serial line, optionally until a comparator is met."),
            |o| o.then = vec![("comparator", "timeout_s", Some(positive_timeout()))],
        ),
        kind(
            def(
                "uart_expect",
                "uartExpect",
                Port,
                vec![
                    ("text", s(1, None)),
                    ("pattern", s(1, None)),
                    ("timeout_s", positive_timeout()),
                ],
                &["timeout_s"],
            )
            .describe("Wait for text or a pattern on a serial line (version 2 spelling)."),
            |o| o.exactly_one = vec!["text", "pattern"],
        ),
        plain(
            def("uart_close", "uartClose", Port, vec![], &[]).describe("Close a serial session."),
        ),
    ]
}

/// CAN steps.
fn can_kinds() -> Vec<StepKind> {
    use Routes::Bus;
    vec![
        plain(
            def(
                "can_open",
                "canOpen",
                Bus,
                vec![("clear_rx_queue", boolean(true))],
                &[],
            )
            .describe("Open a CAN session."),
        ),
        plain(def("can_close", "canClose", Bus, vec![], &[]).describe("Close a CAN session.")),
        plain(
            def(
                "can_send",
                "canSend",
                Bus,
                vec![
                    ("frame_id", can_id()),
                    ("extended", boolean(false)),
                    ("rtr", boolean(false)),
                    ("data_hex", s(0, Some(Pat::Hex)).default(json!(""))),
                ],
                &["frame_id"],
            )
            .describe("Send one CAN frame."),
        ),
        kind(
            def(
                "can_read",
                "canRead",
                Bus,
                vec![
                    ("comparator", can_comparator().since(3)),
                    ("max_frames", int(Some(1), None)),
                    ("timeout_s", positive_timeout().since(3)),
                    ("wait_timeout_s", timeout()),
                ],
                &[],
            )
            .describe("Read CAN frames, optionally until a comparator is met."),
            |o| {
                o.needs = vec![("timeout_s", "comparator")];
                o.then = vec![("comparator", "timeout_s", None)];
            },
        ),
    ]
}

/// Debug-session steps.
fn debug_kinds() -> Vec<StepKind> {
    use Routes::Debugger;
    vec![
        plain(
            def(
                "debug_start",
                "debugStart",
                Debugger,
                vec![
                    ("image_path", path()),
                    (
                        "mode",
                        Shape::new(Kind::Choice(&["attach", "reset_halt", "load"]))
                            .default(json!("attach")),
                    ),
                    ("timeout_s", timeout()),
                ],
                &["image_path"],
            )
            .describe("Start a debug session on an ELF image."),
        ),
        plain(
            def(
                "run_until_breakpoint",
                "runUntilBreakpoint",
                Debugger,
                vec![("location", location()), ("timeout_s", timeout())],
                &["location"],
            )
            .describe("Run the target until it stops at a location."),
        ),
        plain(
            def(
                "dump_memory",
                "dumpMemory",
                Debugger,
                vec![("symbol", symbol()), ("output_path", path())],
                &["symbol", "output_path"],
            )
            .describe("Write a symbol's memory to an Intel HEX file."),
        ),
        plain(
            def(
                "read_symbol",
                "readSymbol",
                Debugger,
                vec![
                    ("symbol", symbol()),
                    ("size_bytes", int(Some(1), None)),
                    ("comparator", symbol_comparator().since(5)),
                ],
                &["symbol"],
            )
            .since(5)
            .describe("Read a symbol's value, optionally judging it."),
        ),
        plain(
            def(
                "debug_stop",
                "debugStop",
                Debugger,
                vec![("timeout_s", timeout())],
                &[],
            )
            .describe("End the debug session."),
        ),
    ]
}

/// Steps that hold a device or run others.
fn control_kinds() -> Vec<StepKind> {
    use Routes::{Any, None as NoRoute};
    vec![
        plain(
            def(
                "delay",
                "delay",
                Any,
                vec![("duration_ms", int(Some(1), Some(MAX_DELAY_MS)))],
                &["duration_ms"],
            )
            .since(3)
            .describe("Wait, holding the named device."),
        ),
        kind(
            def(
                "repeat",
                "repeat",
                NoRoute,
                vec![
                    ("count", int(Some(1), None)),
                    (
                        "duration_s",
                        Shape::new(Kind::Num {
                            min: None,
                            above: Some(0.0),
                        }),
                    ),
                    ("steps", Shape::new(Kind::Steps)),
                ],
                &["steps"],
            )
            .since(4)
            .describe("Run nested steps by count and/or for a wall time."),
            |o| o.at_least_one = vec!["count", "duration_s"],
        ),
    ]
}

/// Checks a step list as a list: its type and length, not its steps.
pub(crate) fn check_list(node: &Node, at: &Path, out: &mut Vec<Fault>) {
    let Node::Seq(items) = node else {
        let mut f = Fault::new(at.clone(), "type").with("expected_type", json!("array"));
        if !matches!(node, Node::Map(_)) {
            f = f.with("value", node.to_json());
        }
        out.push(f);
        return;
    };
    if items.is_empty() {
        out.push(Fault::new(at.clone(), "minItems").with("limit", json!(1)));
    }
    if items.len() > MAX_STEPS {
        out.push(
            Fault::new(at.clone(), "maxItems")
                .with("limit", json!(MAX_STEPS))
                .with("value", json!(items.len())),
        );
    }
}

/// Checks one step against the kind its `action` names.
pub(crate) fn check_step(item: &Node, here: &Path, out: &mut Vec<Fault>) {
    if !matches!(item, Node::Map(_)) {
        out.push(Fault::new(here.clone(), "step_type").with("value", scalar_or_null(item)));
        return;
    }
    match item.get("action") {
        Some(Node::Str(a)) if step_kind(a).is_some() => {
            if let Some(k) = step_kind(a) {
                check(item, &k.shape, here, check_steps, out);
            }
        }
        other => out.push(
            Fault::new(here.key("action"), "action")
                .with("value", other.map_or(Value::Null, scalar_or_null))
                .with("allowed_values", json!(actions())),
        ),
    }
}

/// Checks a nested step list: the list, then every step in it.
pub(crate) fn check_steps(node: &Node, at: &Path, out: &mut Vec<Fault>) {
    check_list(node, at, out);
    if let Node::Seq(items) = node {
        for (i, item) in items.iter().enumerate() {
            check_step(item, &at.index(i), out);
        }
    }
}

fn scalar_or_null(n: &Node) -> Value {
    match n {
        Node::Seq(_) | Node::Map(_) => Value::Null,
        other => other.to_json(),
    }
}

/// The version marker of a key in a step kind, or of the kind itself for `action`.
pub(crate) fn key_since(kind: &StepKind, key: &str) -> Option<u8> {
    let Kind::Obj(o) = &kind.shape.kind else {
        return None;
    };
    if key == "action" {
        return o.since;
    }
    let shape = o.prop(key)?;
    shape.since.or(match &shape.kind {
        Kind::Obj(inner) => inner.since,
        _ => None,
    })
}
