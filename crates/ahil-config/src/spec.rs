//! A small description language for the document's shape, and its validator.
//!
//! One description serves two jobs: it checks a parsed document (every problem with its
//! path, so the first one in path order can be reported, as the reference does), and it
//! renders our published JSON schema. Keeping both in one place means they cannot drift.

use serde_json::{Map, Value, json};

use crate::node::{Node, Path};
use crate::patterns::{Pattern, parse_usb_hex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Bool,
    Int,
    Num,
    Str,
    Null,
    Obj,
    Arr,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Bool => "boolean",
            Ty::Int => "integer",
            Ty::Num => "number",
            Ty::Str => "string",
            Ty::Null => "null",
            Ty::Obj => "object",
            Ty::Arr => "array",
        }
    }

    fn accepts(self, node: &Node) -> bool {
        match (self, node) {
            (Ty::Bool, Node::Bool(_))
            | (Ty::Int | Ty::Num, Node::Int(_))
            | (Ty::Num, Node::Float(_))
            | (Ty::Str, Node::Str(_))
            | (Ty::Null, Node::Null)
            | (Ty::Obj, Node::Map(_))
            | (Ty::Arr, Node::Seq(_)) => true,
            // JSON Schema counts 3.0 as an integer; so does the reference.
            (Ty::Int, Node::Float(f)) => f.is_finite() && f.fract() == 0.0,
            _ => false,
        }
    }
}

/// A check that needs sibling values (the CAN frame size depends on `fd`).
pub(crate) type PostCheck = fn(&Node, &Path, &mut Vec<Problem>);

/// Every constraint is unset by default; [`Spec::of`] and the builders set the ones a key has.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spec {
    pub types: Vec<Ty>,
    pub choices: Option<Vec<Value>>,
    pub pattern: Option<Pattern>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    pub min_length: Option<usize>,
    pub min_items: Option<usize>,
    pub default: Option<Value>,
    pub description: Option<&'static str>,
    pub props: Vec<(&'static str, Spec)>,
    pub required: Vec<&'static str>,
    pub entries: Option<(Pattern, Box<Spec>)>,
    pub items: Option<Box<Spec>>,
    /// Strings are USB ids in hex and are converted to integers.
    pub usb_id: bool,
    pub deprecated: bool,
    pub post: Option<PostCheck>,
}

/// Builder methods that each set one optional field: `method => field: Type`.
macro_rules! option_setters {
    ($($method:ident => $field:ident: $ty:ty),+ $(,)?) => {$(
        pub(crate) fn $method(mut self, value: $ty) -> Self {
            self.$field = Some(value);
            self
        }
    )+};
}
pub(crate) use option_setters;

impl Spec {
    pub(crate) fn of(types: &[Ty]) -> Self {
        Self {
            types: types.to_vec(),
            ..Default::default()
        }
    }

    pub(crate) fn object(props: Vec<(&'static str, Spec)>) -> Self {
        let mut s = Self::of(&[Ty::Obj]);
        s.props = props;
        s
    }

    pub(crate) fn map_of(names: Pattern, entry: Spec) -> Self {
        let mut s = Self::of(&[Ty::Obj]);
        s.entries = Some((names, Box::new(entry)));
        s
    }

    pub(crate) fn list_of(item: Spec) -> Self {
        let mut s = Self::of(&[Ty::Arr]);
        s.items = Some(Box::new(item));
        s
    }

    option_setters! {
        default => default: Value,
        pattern => pattern: Pattern,
        min => minimum: f64,
        max => maximum: f64,
        above => exclusive_minimum: f64,
        min_length => min_length: usize,
        min_items => min_items: usize,
        describe => description: &'static str,
        post => post: PostCheck,
    }

    pub(crate) fn choices(mut self, v: &[Value]) -> Self {
        self.choices = Some(v.to_vec());
        self
    }
    pub(crate) fn required(mut self, keys: &[&'static str]) -> Self {
        self.required = keys.to_vec();
        self
    }
    pub(crate) fn usb_id(mut self) -> Self {
        self.usb_id = true;
        self
    }
    pub(crate) fn deprecated(mut self) -> Self {
        self.deprecated = true;
        self
    }

    pub(crate) fn prop(&self, key: &str) -> Option<&Spec> {
        self.props.iter().find(|(k, _)| *k == key).map(|(_, s)| s)
    }

    /// Keys this object accepts, sorted, for `allowed_fields`.
    pub(crate) fn allowed_fields(&self) -> Vec<String> {
        let mut v: Vec<String> = self.props.iter().map(|(k, _)| (*k).to_owned()).collect();
        v.sort();
        v
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Problem {
    Unknown {
        at: Path,
        parent: Path,
        rejected: Vec<String>,
        allowed: Vec<String>,
    },
    WrongType {
        at: Path,
        expected: Vec<&'static str>,
        value: Option<Value>,
    },
    Choice {
        at: Path,
        allowed: Vec<Value>,
        value: Value,
    },
    Bound {
        at: Path,
        validator: &'static str,
        limit: Value,
        value: Value,
    },
    Pattern {
        at: Path,
        value: Value,
    },
    Name {
        at: Path,
        value: String,
        pattern: Pattern,
    },
    Required {
        at: Path,
        missing: Vec<String>,
    },
    TooShort {
        at: Path,
        validator: &'static str,
        value: Value,
    },
}

impl Problem {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Problem::Unknown { at, .. }
            | Problem::WrongType { at, .. }
            | Problem::Choice { at, .. }
            | Problem::Bound { at, .. }
            | Problem::Pattern { at, .. }
            | Problem::Name { at, .. }
            | Problem::Required { at, .. }
            | Problem::TooShort { at, .. } => at,
        }
    }
}

/// Checks `node` against `spec`, collecting every problem, and returns the node as JSON
/// with the conversions the typed model expects (integral floats to integers, hex USB ids
/// to numbers). The returned value is meaningful only when no problem was collected.
pub(crate) fn check(node: &Node, spec: &Spec, at: &Path, out: &mut Vec<Problem>) -> Value {
    let Some(ty) = spec.types.iter().copied().find(|t| t.accepts(node)) else {
        out.push(Problem::WrongType {
            at: at.clone(),
            expected: spec.types.iter().map(|t| t.name()).collect(),
            value: node.scalar_json(),
        });
        return Value::Null;
    };
    if let Some(choices) = &spec.choices {
        let v = node.to_json();
        if !choices.contains(&v) {
            out.push(Problem::Choice {
                at: at.clone(),
                allowed: choices.clone(),
                value: v,
            });
        }
    }
    let value = match node {
        Node::Str(s) => {
            if let Some(p) = spec.pattern
                && !p.matches(s)
            {
                out.push(Problem::Pattern {
                    at: at.clone(),
                    value: Value::String(s.clone()),
                });
            }
            if let Some(n) = spec.min_length
                && s.chars().count() < n
            {
                out.push(Problem::TooShort {
                    at: at.clone(),
                    validator: "minLength",
                    value: Value::String(s.clone()),
                });
            }
            if spec.usb_id {
                parse_usb_hex(s).map_or(Value::Null, Value::from)
            } else {
                Value::String(s.clone())
            }
        }
        Node::Int(_) | Node::Float(_) => {
            check_bounds(node, spec, at, out);
            match (ty, node) {
                #[allow(clippy::cast_possible_truncation)]
                (Ty::Int, Node::Float(f)) => Value::from(*f as i64),
                _ => node.to_json(),
            }
        }
        Node::Map(entries) => check_object(entries, spec, at, out),
        Node::Seq(items) => {
            if let Some(n) = spec.min_items
                && items.len() < n
            {
                out.push(Problem::TooShort {
                    at: at.clone(),
                    validator: "minItems",
                    value: json!([]),
                });
            }
            let mut converted = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match &spec.items {
                    Some(item_spec) => converted.push(check(item, item_spec, &at.index(i), out)),
                    None => converted.push(item.to_json()),
                }
            }
            Value::Array(converted)
        }
        Node::Bool(_) | Node::Null => node.to_json(),
    };
    if let Some(post) = spec.post {
        post(node, at, out);
    }
    value
}

fn check_bounds(node: &Node, spec: &Spec, at: &Path, out: &mut Vec<Problem>) {
    let Some(n) = node.number() else { return };
    let mut bound = |validator: &'static str, limit: f64| {
        out.push(Problem::Bound {
            at: at.clone(),
            validator,
            limit: limit_json(limit),
            value: node.to_json(),
        });
    };
    if let Some(min) = spec.minimum
        && n < min
    {
        bound("minimum", min);
    }
    if let Some(max) = spec.maximum
        && n > max
    {
        bound("maximum", max);
    }
    if let Some(min) = spec.exclusive_minimum
        && n <= min
    {
        bound("exclusiveMinimum", min);
    }
}

pub(crate) fn limit_json(limit: f64) -> Value {
    if limit.fract() == 0.0 && limit.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        Value::from(limit as i64)
    } else {
        json!(limit)
    }
}

fn check_object(
    entries: &[(String, Node)],
    spec: &Spec,
    at: &Path,
    out: &mut Vec<Problem>,
) -> Value {
    let mut obj = Map::new();
    if let Some((names, entry_spec)) = &spec.entries {
        for (name, child) in entries {
            if !names.matches(name) {
                out.push(Problem::Name {
                    at: at.clone(),
                    value: name.clone(),
                    pattern: *names,
                });
            }
            obj.insert(name.clone(), check(child, entry_spec, &at.key(name), out));
        }
        return Value::Object(obj);
    }
    let mut rejected: Vec<String> = entries
        .iter()
        .filter(|(k, _)| spec.prop(k).is_none())
        .map(|(k, _)| k.clone())
        .collect();
    if !rejected.is_empty() {
        rejected.sort();
        // One stray key is named by its own path; several are named by their parent.
        let blamed = if rejected.len() == 1 {
            at.key(&rejected[0])
        } else {
            at.clone()
        };
        out.push(Problem::Unknown {
            at: blamed,
            parent: at.clone(),
            rejected,
            allowed: spec.allowed_fields(),
        });
    }
    let missing: Vec<String> = spec
        .required
        .iter()
        .filter(|k| !entries.iter().any(|(e, _)| e == *k))
        .map(|k| (*k).to_owned())
        .collect();
    if !missing.is_empty() {
        out.push(Problem::Required {
            at: at.clone(),
            missing,
        });
    }
    for (key, child) in entries {
        if let Some(child_spec) = spec.prop(key) {
            obj.insert(key.clone(), check(child, child_spec, &at.key(key), out));
        }
    }
    Value::Object(obj)
}

/// Renders a spec as a JSON Schema (draft 2020-12) fragment, inlined, no `$ref`.
pub(crate) fn to_json_schema(spec: &Spec) -> Value {
    let mut m = Map::new();
    let types: Vec<&str> = spec.types.iter().map(|t| t.name()).collect();
    m.insert(
        "type".into(),
        if types.len() == 1 {
            json!(types[0])
        } else {
            json!(types)
        },
    );
    if let Some(d) = spec.description {
        m.insert("description".into(), json!(d));
    }
    if let Some(c) = &spec.choices {
        m.insert("enum".into(), Value::Array(c.clone()));
    }
    if let Some(p) = spec.pattern {
        m.insert("pattern".into(), json!(p.regex()));
    }
    for (key, v) in [
        ("minimum", spec.minimum),
        ("maximum", spec.maximum),
        ("exclusiveMinimum", spec.exclusive_minimum),
    ] {
        if let Some(v) = v {
            m.insert(key.into(), limit_json(v));
        }
    }
    if let Some(n) = spec.min_length {
        m.insert("minLength".into(), json!(n));
    }
    if let Some(n) = spec.min_items {
        m.insert("minItems".into(), json!(n));
    }
    if spec.deprecated {
        m.insert("deprecated".into(), json!(true));
    }
    if let Some((names, entry)) = &spec.entries {
        m.insert("propertyNames".into(), json!({"pattern": names.regex()}));
        m.insert("additionalProperties".into(), to_json_schema(entry));
    } else if spec.types.contains(&Ty::Obj) {
        m.insert("properties".into(), properties(&spec.props, to_json_schema));
        m.insert("additionalProperties".into(), json!(false));
        if !spec.required.is_empty() {
            m.insert("required".into(), json!(spec.required));
        }
    }
    if let Some(items) = &spec.items {
        m.insert("items".into(), to_json_schema(items));
    }
    if let Some(d) = &spec.default {
        m.insert("default".into(), d.clone());
    }
    Value::Object(m)
}

/// A JSON Schema `properties` object: each named property's schema, by `render`, in order.
pub(crate) fn properties<S>(props: &[(&'static str, S)], render: fn(&S) -> Value) -> Value {
    let props: Map<String, Value> = props
        .iter()
        .map(|(k, s)| ((*k).to_owned(), render(s)))
        .collect();
    Value::Object(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Spec {
        Spec::object(vec![
            ("n", Spec::of(&[Ty::Int]).min(1.0)),
            ("s", Spec::of(&[Ty::Str]).choices(&[json!("a"), json!("b")])),
            (
                "v",
                Spec::of(&[Ty::Int, Ty::Str, Ty::Null])
                    .usb_id()
                    .pattern(Pattern::UsbHex),
            ),
        ])
        .required(&["n"])
    }

    fn problems(doc: &Node) -> (Value, Vec<Problem>) {
        let mut out = Vec::new();
        let v = check(doc, &small(), &Path::root(), &mut out);
        (v, out)
    }

    #[test]
    fn integral_floats_count_as_integers_and_hex_ids_become_numbers() {
        let doc = Node::Map(vec![
            ("n".into(), Node::Float(3.0)),
            ("v".into(), Node::Str("0483".into())),
        ]);
        let (v, p) = problems(&doc);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(v, json!({"n": 3, "v": 1155}));
    }

    #[test]
    fn one_unknown_key_is_blamed_on_itself_and_several_on_their_parent() {
        let one = Node::Map(vec![("n".into(), Node::Int(1)), ("x".into(), Node::Null)]);
        assert_eq!(problems(&one).1[0].path().to_string(), "x");
        let two = Node::Map(vec![
            ("n".into(), Node::Int(1)),
            ("x".into(), Node::Null),
            ("y".into(), Node::Null),
        ]);
        assert_eq!(problems(&two).1[0].path().to_string(), "$");
    }

    #[test]
    fn a_missing_required_key_is_reported_at_its_object() {
        let p = problems(&Node::Map(vec![])).1;
        assert!(
            matches!(&p[0], Problem::Required { missing, .. } if missing == &vec!["n".to_owned()])
        );
    }

    #[test]
    fn booleans_are_not_numbers() {
        let doc = Node::Map(vec![("n".into(), Node::Bool(true))]);
        assert!(matches!(problems(&doc).1[0], Problem::WrongType { .. }));
    }
}
