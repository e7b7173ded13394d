//! A shape language for test plans: one description both checks a parsed plan (faults with
//! key paths) and renders our JSON schema, so the two cannot drift.
//!
//! Plans need combinators the configuration's `Spec` lacks (exactly one of two keys, a key
//! that requires another, alternatives, a recursive step list, version markers), so they get
//! this small language of their own; the YAML tree and key paths are shared.

use serde_json::{Map, Value, json};

use crate::node::{Node, Path};
use crate::spec::{option_setters, properties};

/// The string shapes plans use, each with the regular expression our schema publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pat {
    /// Configuration entry names (`device`, `debugger`, `port_id`, `bus_id`, `participant`).
    Name,
    /// A C or C++ symbol, `::`-qualified.
    Symbol,
    /// Hex digits with optional whitespace between them.
    Hex,
    /// A CAN id written as `0x` hex or decimal.
    CanId,
    /// A source file for a breakpoint.
    File,
}

impl Pat {
    pub(crate) fn regex(self) -> &'static str {
        match self {
            Pat::Name => "^[A-Za-z0-9_.-]+$",
            Pat::Symbol => "^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$",
            Pat::Hex => "^[0-9A-Fa-f\\s]*$",
            Pat::CanId => "^(?:0[xX][0-9A-Fa-f]+|[0-9]+)$",
            Pat::File => "^[A-Za-z0-9_./\\\\:-]+$",
        }
    }

    pub(crate) fn matches(self, s: &str) -> bool {
        let ident = |p: &str| {
            let mut b = p.bytes();
            b.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
        };
        match self {
            Pat::Name => {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            }
            Pat::Symbol => s.split("::").all(ident),
            // Python's `\s` also matches Unicode spaces; ASCII whitespace only refuses more.
            Pat::Hex => s
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c.is_whitespace()),
            Pat::CanId => match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()),
                None => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
            },
            Pat::File => {
                !s.is_empty()
                    && s.bytes().all(|b| {
                        b.is_ascii_alphanumeric()
                            || matches!(b, b'_' | b'.' | b'/' | b'\\' | b':' | b'-')
                    })
            }
        }
    }
}

/// What a value may be.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Str(Text),
    Int {
        min: Option<i128>,
        max: Option<i128>,
    },
    Num {
        min: Option<f64>,
        above: Option<f64>,
    },
    Bool,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// One of these integers (a plan's `version`).
    IntChoice(&'static [i128]),
    /// Exactly this string (a step's `action`).
    Const(&'static str),
    /// Exactly one alternative fits.
    OneOf(Vec<Shape>),
    Obj(Box<Obj>),
    /// A step list: the recursion point of `repeat`.
    Steps,
}

/// A string rule; its check and its schema fragment sit together so they cannot drift.
#[derive(Debug, Clone)]
pub(crate) struct Text {
    pub min_len: usize,
    pub pat: Option<Pat>,
    /// Refuse `..` as a path segment (breakpoint files).
    pub no_parent: bool,
}

impl Text {
    fn check(&self, s: &str, at: &Path, out: &mut Vec<Fault>) {
        if s.chars().count() < self.min_len {
            out.push(Fault::new(at.clone(), "minLength").with("value", json!(s)));
        } else if let Some(p) = self.pat
            && !p.matches(s)
        {
            out.push(Fault::new(at.clone(), "pattern").with("value", json!(s)));
        } else if self.no_parent && s.split(['/', '\\']).any(|seg| seg == "..") {
            out.push(Fault::new(at.clone(), "not").with("value", json!(s)));
        }
    }

    fn render(&self, m: &mut Map<String, Value>) {
        m.insert("type".into(), json!("string"));
        if self.min_len > 0 {
            m.insert("minLength".into(), json!(self.min_len));
        }
        if let Some(p) = self.pat {
            m.insert("pattern".into(), json!(p.regex()));
        }
        if self.no_parent {
            m.insert(
                "not".into(),
                json!({"pattern": "(?:^|[/\\\\])\\.\\.(?:$|[/\\\\])"}),
            );
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub kind: Kind,
    pub describe: Option<&'static str>,
    pub default: Option<Value>,
    /// Plan format version that introduced this key.
    pub since: Option<u8>,
}

impl Shape {
    pub(crate) fn new(kind: Kind) -> Self {
        Self {
            kind,
            describe: None,
            default: None,
            since: None,
        }
    }

    option_setters! {
        describe => describe: &'static str,
        default => default: Value,
        since => since: u8,
    }
}

/// An object with a closed set of keys and the cross-key rules plans use.
#[derive(Debug, Clone, Default)]
pub(crate) struct Obj {
    pub props: Vec<(&'static str, Shape)>,
    /// Reported in this order: the first missing one is named.
    pub required: Vec<&'static str>,
    /// Exactly one of these keys.
    pub exactly_one: Vec<&'static str>,
    /// At least one of these keys.
    pub at_least_one: Vec<&'static str>,
    /// `(a, b)`: `a` needs `b`; blamed on the object.
    pub needs: Vec<(&'static str, &'static str)>,
    /// `(a, b, shape)`: beside `a`, `b` is required (blamed on `b`) and, if given, must
    /// also fit `shape`.
    pub then: Vec<(&'static str, &'static str, Option<Shape>)>,
    /// `(a, b)`: never both.
    pub excludes: Vec<(&'static str, &'static str)>,
    pub since: Option<u8>,
}

impl Obj {
    pub(crate) fn prop(&self, k: &str) -> Option<&Shape> {
        self.props.iter().find(|(n, _)| *n == k).map(|(_, s)| s)
    }
}

/// One thing wrong with a plan, at a key path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault {
    /// The key reported as `field`.
    pub at: Path,
    /// Where a JSON Schema validator would place the error: the object itself for a
    /// stray or missing key. The first fault by this path is the one reported, as in
    /// the reference, and ties keep the order the checks ran in.
    pub rank: Path,
    pub validator: &'static str,
    pub details: Vec<(&'static str, Value)>,
}

impl Fault {
    pub(crate) fn new(at: Path, validator: &'static str) -> Self {
        Self {
            rank: at.clone(),
            at,
            validator,
            details: Vec::new(),
        }
    }
    pub(crate) fn ranked(mut self, rank: &Path) -> Self {
        self.rank = rank.clone();
        self
    }
    pub(crate) fn with(mut self, k: &'static str, v: Value) -> Self {
        self.details.push((k, v));
        self
    }
}

/// How a step list is checked; supplied by the catalogue so this module stays generic.
pub(crate) type StepsCheck = fn(&Node, &Path, &mut Vec<Fault>);

fn int_of(node: &Node) -> Option<i128> {
    match node {
        Node::Int(i) => Some(*i),
        // JSON Schema counts 3.0 as an integer; so does the reference.
        #[allow(clippy::cast_possible_truncation)]
        Node::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 => Some(*f as i128),
        _ => None,
    }
}

/// Checks `node` against `shape`, pushing every fault found.
pub(crate) fn check(
    node: &Node,
    shape: &Shape,
    at: &Path,
    steps: StepsCheck,
    out: &mut Vec<Fault>,
) {
    let wrong = |expected: &str| {
        let mut f = Fault::new(at.clone(), "type").with("expected_type", json!(expected));
        if let Some(v) = node.scalar_json() {
            f = f.with("value", v);
        }
        f
    };
    match &shape.kind {
        Kind::Str(text) => {
            let Node::Str(s) = node else {
                out.push(wrong("string"));
                return;
            };
            text.check(s, at, out);
        }
        Kind::Int { min, max } => {
            let Some(i) = int_of(node).filter(|_| !matches!(node, Node::Bool(_))) else {
                out.push(wrong("integer"));
                return;
            };
            bound(out, at, node, "minimum", *min, |m| i < m);
            bound(out, at, node, "maximum", *max, |m| i > m);
        }
        Kind::Num { min, above } => {
            let Some(n) = node.number() else {
                out.push(wrong("number"));
                return;
            };
            bound(out, at, node, "minimum", *min, |m| n < m);
            bound(out, at, node, "exclusiveMinimum", *above, |m| n <= m);
        }
        Kind::Bool => {
            if !matches!(node, Node::Bool(_)) {
                out.push(wrong("boolean"));
            }
        }
        Kind::Choice(values) => {
            if !matches!(node, Node::Str(s) if values.contains(&s.as_str())) {
                out.push(
                    Fault::new(at.clone(), "enum")
                        .with("value", node.scalar_json().unwrap_or(Value::Null))
                        .with("allowed_values", json!(values)),
                );
            }
        }
        Kind::IntChoice(values) => {
            let fits =
                !matches!(node, Node::Bool(_)) && int_of(node).is_some_and(|i| values.contains(&i));
            if !fits {
                out.push(
                    Fault::new(at.clone(), "enum")
                        .with("value", node.scalar_json().unwrap_or(Value::Null))
                        .with("allowed_values", json!(values)),
                );
            }
        }
        Kind::Const(v) => {
            if !matches!(node, Node::Str(s) if s == v) {
                out.push(Fault::new(at.clone(), "const").with("value", json!(v)));
            }
        }
        Kind::OneOf(alts) => {
            let fits = alts
                .iter()
                .filter(|a| {
                    let mut scratch = Vec::new();
                    check(node, a, at, steps, &mut scratch);
                    scratch.is_empty()
                })
                .count();
            if fits != 1 {
                let mut f = Fault::new(at.clone(), "oneOf");
                let keys: Vec<&str> = alts
                    .iter()
                    .filter_map(|a| match &a.kind {
                        Kind::Obj(o) => Some(o.required.clone()),
                        _ => None,
                    })
                    .flatten()
                    .collect();
                if !keys.is_empty() {
                    f = f.with("exactly_one_of", json!(keys));
                }
                if let Some(v) = node.scalar_json() {
                    f = f.with("value", v);
                }
                out.push(f);
            }
        }
        Kind::Obj(obj) => match node {
            Node::Map(entries) => check_obj(entries, obj, at, steps, out),
            _ => out.push(wrong("object")),
        },
        Kind::Steps => steps(node, at, out),
    }
}

/// The `validator` fault, when the schema sets a `limit` and the value is `outside` it.
fn bound<T: Copy + serde::Serialize>(
    out: &mut Vec<Fault>,
    at: &Path,
    node: &Node,
    validator: &'static str,
    limit: Option<T>,
    outside: impl FnOnce(T) -> bool,
) {
    if let Some(m) = limit
        && outside(m)
    {
        out.push(
            Fault::new(at.clone(), validator)
                .with("limit", json!(m))
                .with("value", node.to_json()),
        );
    }
}

fn check_obj(
    entries: &[(String, Node)],
    obj: &Obj,
    at: &Path,
    steps: StepsCheck,
    out: &mut Vec<Fault>,
) {
    let has = |k: &str| entries.iter().any(|(e, _)| e == k);
    let mut unknown: Vec<&str> = entries
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| obj.prop(k).is_none())
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        // One stray key is named by its own path; several by their object, as the
        // reference does.
        let blamed = if unknown.len() == 1 {
            at.key(unknown[0])
        } else {
            at.clone()
        };
        let mut allowed: Vec<&str> = obj.props.iter().map(|(k, _)| *k).collect();
        allowed.sort_unstable();
        out.push(
            Fault::new(blamed, "additionalProperties")
                .ranked(at)
                .with("rejected_fields", json!(unknown))
                .with("allowed_fields", json!(allowed)),
        );
    }
    if let Some(missing) = obj.required.iter().find(|k| !has(k)) {
        out.push(Fault::new(at.key(missing), "required").ranked(at));
    }
    if !obj.exactly_one.is_empty() && obj.exactly_one.iter().filter(|k| has(k)).count() != 1 {
        out.push(Fault::new(at.clone(), "oneOf").with("exactly_one_of", json!(obj.exactly_one)));
    }
    if !obj.at_least_one.is_empty() && !obj.at_least_one.iter().any(|k| has(k)) {
        out.push(Fault::new(at.clone(), "anyOf").with("at_least_one_of", json!(obj.at_least_one)));
    }
    for (a, b) in &obj.needs {
        if has(a) && !has(b) {
            out.push(
                Fault::new(at.clone(), "dependentRequired")
                    .with("key", json!(a))
                    .with("requires", json!(b)),
            );
        }
    }
    for (a, b, shape) in &obj.then {
        if !has(a) {
            continue;
        }
        match (entries.iter().find(|(k, _)| k == b), shape) {
            (None, _) => out.push(
                Fault::new(at.key(b), "required")
                    .ranked(at)
                    .with("because_of", json!(a)),
            ),
            (Some((_, v)), Some(s)) => check(v, s, &at.key(b), steps, out),
            (Some(_), None) => {}
        }
    }
    for (a, b) in &obj.excludes {
        if has(a) && has(b) {
            out.push(Fault::new(at.clone(), "not").with("exclusive_fields", json!([a, b])));
        }
    }
    for (k, v) in entries {
        if let Some(s) = obj.prop(k) {
            check(v, s, &at.key(k), steps, out);
        }
    }
}

/// Renders a shape as a JSON Schema fragment; step kinds are referenced from `$defs`.
pub(crate) fn render(shape: &Shape) -> Value {
    let mut m = Map::new();
    match &shape.kind {
        Kind::Str(text) => text.render(&mut m),
        Kind::Int { min, max } => {
            m.insert("type".into(), json!("integer"));
            if let Some(v) = min {
                m.insert("minimum".into(), json!(v));
            }
            if let Some(v) = max {
                m.insert("maximum".into(), json!(v));
            }
        }
        Kind::Num { min, above } => {
            m.insert("type".into(), json!("number"));
            if let Some(v) = min {
                m.insert("minimum".into(), whole(*v));
            }
            if let Some(v) = above {
                m.insert("exclusiveMinimum".into(), whole(*v));
            }
        }
        Kind::Bool => {
            m.insert("type".into(), json!("boolean"));
        }
        Kind::Choice(values) => {
            m.insert("type".into(), json!("string"));
            m.insert("enum".into(), json!(values));
        }
        Kind::IntChoice(values) => {
            m.insert("enum".into(), json!(values));
        }
        Kind::Const(v) => {
            m.insert("const".into(), json!(v));
        }
        Kind::OneOf(alts) => {
            m.insert(
                "oneOf".into(),
                Value::Array(alts.iter().map(render).collect()),
            );
        }
        Kind::Obj(obj) => render_obj(obj, &mut m),
        Kind::Steps => {
            m.insert("$ref".into(), json!("#/$defs/steps"));
        }
    }
    if let Some(d) = shape.describe {
        m.insert("description".into(), json!(d));
    }
    if let Some(d) = &shape.default {
        m.insert("default".into(), d.clone());
    }
    if let Some(v) = shape.since {
        m.insert("x-since-version".into(), json!(v));
    }
    Value::Object(m)
}

fn whole(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        #[allow(clippy::cast_possible_truncation)]
        let i = v as i64;
        json!(i)
    } else {
        json!(v)
    }
}

fn required_alternatives(keys: &[&str], exclusive: bool) -> Value {
    Value::Array(
        keys.iter()
            .map(|k| {
                let others: Vec<&str> = keys.iter().copied().filter(|o| o != k).collect();
                if exclusive && !others.is_empty() {
                    json!({"required": [k], "not": {"required": others}})
                } else {
                    json!({"required": [k]})
                }
            })
            .collect(),
    )
}

fn render_obj(obj: &Obj, m: &mut Map<String, Value>) {
    m.insert("type".into(), json!("object"));
    m.insert("additionalProperties".into(), json!(false));
    if !obj.required.is_empty() {
        m.insert("required".into(), json!(obj.required));
    }
    if let Some(v) = obj.since {
        m.insert("x-since-version".into(), json!(v));
    }
    if !obj.exactly_one.is_empty() {
        m.insert(
            "oneOf".into(),
            required_alternatives(&obj.exactly_one, true),
        );
    }
    if !obj.at_least_one.is_empty() {
        m.insert(
            "anyOf".into(),
            required_alternatives(&obj.at_least_one, false),
        );
    }
    if !obj.needs.is_empty() {
        let d: Map<String, Value> = obj
            .needs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), json!([b])))
            .collect();
        m.insert("dependentRequired".into(), Value::Object(d));
    }
    let mut dep = Map::new();
    for (a, b) in &obj.excludes {
        dep.insert((*a).to_owned(), json!({"not": {"required": [b]}}));
    }
    for (a, b, shape) in &obj.then {
        let mut s = json!({"required": [b]});
        if let (Some(shape), Value::Object(o)) = (shape, &mut s) {
            o.insert("properties".into(), json!({ *b: render(shape) }));
        }
        dep.insert((*a).to_owned(), s);
    }
    if !dep.is_empty() {
        m.insert("dependentSchemas".into(), Value::Object(dep));
    }
    m.insert("properties".into(), properties(&obj.props, render));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_steps(_: &Node, _: &Path, _: &mut Vec<Fault>) {}

    /// What `shape` finds wrong with `node` at the document's root.
    fn faults(node: &Node, shape: &Shape) -> Vec<Fault> {
        let mut out = Vec::new();
        check(node, shape, &Path::root(), no_steps, &mut out);
        out
    }

    #[test]
    fn patterns_accept_what_their_regex_accepts() {
        assert!(Pat::Symbol.matches("ns::capture_done"));
        assert!(!Pat::Symbol.matches("1x"));
        assert!(!Pat::Symbol.matches("a::"));
        assert!(Pat::CanId.matches("0X1f") && Pat::CanId.matches("12"));
        assert!(!Pat::CanId.matches("0x") && !Pat::CanId.matches("-1"));
        assert!(Pat::Hex.matches("") && Pat::Hex.matches("de ad\tBE"));
        assert!(!Pat::Hex.matches("0g"));
        assert!(Pat::File.matches("src\\main.c") && !Pat::File.matches("a b.c"));
    }

    #[test]
    fn an_integral_float_is_an_integer_but_a_boolean_is_not() {
        let s = Shape::new(Kind::Int {
            min: Some(1),
            max: None,
        });
        assert!(faults(&Node::Float(3.0), &s).is_empty());
        assert_eq!(faults(&Node::Bool(true), &s)[0].validator, "type");
    }

    #[test]
    fn a_parent_segment_in_a_file_is_refused_but_dots_in_names_are_not() {
        let s = Shape::new(Kind::Str(Text {
            min_len: 0,
            pat: Some(Pat::File),
            no_parent: true,
        }));
        assert!(faults(&Node::Str("a..b/c.c".into()), &s).is_empty());
        assert_eq!(
            faults(&Node::Str("src/../x.c".into()), &s)[0].validator,
            "not"
        );
    }
}
