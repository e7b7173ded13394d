//! YAML bytes to an untyped tree, with the refusals that belong to the YAML layer.
//!
//! The tree keeps the distinctions the rules need (integer versus float, a string versus a
//! number) and refuses what the reference's safe loader refuses: duplicate keys, keys that
//! are not strings, several documents. Non-finite floats pass through so that the document
//! check can name the key that holds one.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::options::{DuplicateKeyPolicy, MergeKeyPolicy, NonFiniteFloatPolicy};

use crate::error::{ConfigError, Refusal};

/// Largest configuration file we parse at all; real ones are a few KiB.
pub(crate) const MAX_CONFIG_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn entries(&self) -> &[(String, Node)] {
        match self {
            Node::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The node as JSON. Non-finite floats become null; callers refuse them first.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => i64::try_from(*i)
                .map(Value::from)
                .or_else(|_| u64::try_from(*i).map(Value::from))
                .unwrap_or_else(|_| {
                    #[allow(clippy::cast_precision_loss)]
                    let f = *i as f64;
                    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
                }),
            Node::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Node::Str(s) => Value::String(s.clone()),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }

    /// The node as JSON when it is a scalar (what a refusal quotes as the offending value).
    pub(crate) fn scalar_json(&self) -> Option<serde_json::Value> {
        match self {
            Node::Seq(_) | Node::Map(_) => None,
            other => Some(other.to_json()),
        }
    }

    /// The node as a number, integer or float alike.
    pub(crate) fn number(&self) -> Option<f64> {
        match self {
            #[allow(clippy::cast_precision_loss)]
            Node::Int(i) => Some(*i as f64),
            Node::Float(f) => Some(*f),
            _ => None,
        }
    }
}

/// A dotted path into the document: `a.b[2].c`, `$` for the root.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Path(Vec<Seg>);

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

impl Path {
    pub(crate) fn root() -> Self {
        Self(Vec::new())
    }

    pub(crate) fn key(&self, k: &str) -> Self {
        let mut v = self.0.clone();
        v.push(Seg::Key(k.to_owned()));
        Self(v)
    }

    pub(crate) fn index(&self, i: usize) -> Self {
        let mut v = self.0.clone();
        v.push(Seg::Index(i));
        Self(v)
    }

    pub(crate) fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("$");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

const NON_STRING_KEY: &str = "mapping keys must be strings";

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(i128::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(i128::from(v)))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        i128::try_from(v)
            .map(Node::Int)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Node, E> {
        Err(E::custom("binary values are not accepted"))
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(NodeSeed)? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            // The parser refuses duplicates already; this keeps the invariant if a policy
            // ever changes underneath us.
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let value = map.next_value_seed(NodeSeed)?;
            entries.push((key, value));
        }
        Ok(Node::Map(entries))
    }
}

struct NodeSeed;

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Node;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

impl<'de> de::Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

/// Accepts only keys the YAML resolver typed as strings, as the reference loader does.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

/// Visits of every other scalar, each refused with [`NON_STRING_KEY`] (serde's default message
/// would name the type instead).
macro_rules! refuse_as_keys {
    ($($visit:ident($($ty:ty)?)),+ $(,)?) => {$(
        fn $visit<E: de::Error>(self $(, _: $ty)?) -> Result<String, E> {
            Err(E::custom(NON_STRING_KEY))
        }
    )+};
}

impl Visitor<'_> for KeyVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string mapping key")
    }
    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    refuse_as_keys!(
        visit_bool(bool),
        visit_i64(i64),
        visit_u64(u64),
        visit_i128(i128),
        visit_u128(u128),
        visit_f64(f64),
        visit_unit(),
        visit_none(),
    );
}

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        // Budgets sized for a configuration file, far below the library defaults, so a
        // hostile file cannot make the loader spend memory or time.
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(MAX_CONFIG_BYTES),
            max_events: 200_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_depth: 48,
            max_documents: 1,
            max_nodes: 100_000,
            max_total_scalar_bytes: MAX_CONFIG_BYTES,
            max_merge_keys: 0,
        },
        duplicate_keys: DuplicateKeyPolicy::Error,
        // A merge key silently copies policy from elsewhere in the file; the reference
        // refuses the duplicates it creates, we refuse the construct.
        merge_keys: MergeKeyPolicy::Error,
        // YAML 1.1 reads `010` as octal, as the reference's loader does.
        legacy_octal_numbers: true,
        non_finite_float_policy: NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
    }
}

/// Parses one YAML document. Empty and `null` documents are an empty mapping.
pub(crate) fn parse_yaml(text: &str) -> Result<Node, ConfigError> {
    if text.trim().is_empty() || only_comments(text) {
        return Ok(Node::Map(Vec::new()));
    }
    match serde_saphyr::from_str_with_options::<Node>(text, options()) {
        Ok(Node::Null) => Ok(Node::Map(Vec::new())),
        Ok(node) => Ok(node),
        Err(e) => {
            let mut r = Refusal::new("The configuration file is not valid YAML.");
            if let Some(loc) = e.location()
                && loc.line() > 0
            {
                r = r.with("line", loc.line()).with("column", loc.column());
            }
            let reason = first_line(&e.to_string());
            if !reason.is_empty() {
                r = r.with("reason", reason);
            }
            Err(ConfigError::invalid(r.fix(
                "Fix the YAML at `line`/`column`: keys must be unique plain strings, one document per file, no merge keys.",
            )))
        }
    }
}

fn only_comments(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

fn first_line(s: &str) -> String {
    // The library's message may quote the document; keep it short and free of file text.
    let line = s.lines().next().unwrap_or_default();
    // Drop the library's advice about its own options; it means nothing to a user.
    let line = line.replace(", set DuplicateKeyPolicy in Options if acceptable", "");
    line.chars().take(160).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Node, ConfigError> {
        parse_yaml(s)
    }

    #[test]
    fn an_empty_document_is_an_empty_mapping() {
        assert_eq!(parse("").unwrap(), Node::Map(vec![]));
        assert_eq!(parse("# only a comment\n").unwrap(), Node::Map(vec![]));
        assert_eq!(parse("~\n").unwrap(), Node::Map(vec![]));
    }

    #[test]
    fn duplicate_keys_are_refused_with_a_line() {
        let e = parse("a: 1\nb:\n  c: 1\n  c: 2\n").unwrap_err();
        assert_eq!(e.error_type(), "config_invalid");
        assert_eq!(e.details()["line"], 4);
    }

    #[test]
    fn non_string_keys_are_refused() {
        for doc in [
            "1: a\n",
            "true: a\n",
            "~: a\n",
            "a:\n  2.5: x\n",
            "? [a]\n: b\n",
        ] {
            let e = parse(doc).unwrap_err();
            assert_eq!(e.error_type(), "config_invalid", "{doc}");
            assert!(e.field().is_none());
        }
        // A scalar key is refused in our words, whatever its type.
        for doc in ["1: a\n", "true: a\n", "~: a\n", "a:\n  2.5: x\n"] {
            let reason = parse(doc).unwrap_err().details()["reason"].to_string();
            assert!(reason.contains(NON_STRING_KEY), "{doc}: {reason}");
        }
    }

    #[test]
    fn quoted_number_keys_are_strings() {
        let n = parse("'1': a\n").unwrap();
        assert_eq!(n.get("1"), Some(&Node::Str("a".into())));
    }

    #[test]
    fn scalars_keep_their_yaml_types() {
        let n = parse("a: 0x200\nb: 1.5\nc: yes\nd: '12'\ne: .nan\nf: 010\ng: null\n").unwrap();
        assert_eq!(n.get("a"), Some(&Node::Int(0x200)));
        assert_eq!(n.get("b"), Some(&Node::Float(1.5)));
        assert_eq!(n.get("c"), Some(&Node::Bool(true)));
        assert_eq!(n.get("d"), Some(&Node::Str("12".into())));
        assert!(matches!(n.get("e"), Some(Node::Float(f)) if f.is_nan()));
        assert_eq!(n.get("f"), Some(&Node::Int(8)));
        assert_eq!(n.get("g"), Some(&Node::Null));
    }

    #[test]
    fn several_documents_and_merge_keys_are_refused() {
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
        assert!(parse("x: &a {k: 1}\ny:\n  <<: *a\n").is_err());
    }

    #[test]
    fn paths_render_dotted_with_indices() {
        let p = Path::root().key("a").index(2).key("b");
        assert_eq!(p.to_string(), "a[2].b");
        assert_eq!(Path::root().to_string(), "$");
    }
}
