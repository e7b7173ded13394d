//! A JSON tree as block-style YAML that our loader (and the reference's safe loader) reads back to
//! the same tree.
//!
//! Every string is double-quoted with ASCII-only escapes, so no value can be mistaken for a number,
//! a boolean, a comment, an anchor or a line break, whatever it holds. Keys are plain only when they
//! are plain identifiers that no YAML resolver reads as anything but a string.

use std::fmt::Write as _;

use serde_json::Value;

/// The document as YAML text, ending with one newline.
pub(crate) fn to_yaml(document: &Value) -> String {
    let mut out = String::new();
    match document {
        Value::Object(members) if !members.is_empty() => write_map(&mut out, members, 0),
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
    out
}

fn write_map(out: &mut String, members: &serde_json::Map<String, Value>, indent: usize) {
    for (key, value) in members {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key_text(key));
        out.push(':');
        write_child(out, value, indent);
    }
}

/// The value after `key:` or `-`: inline when it is a scalar or empty, else on the next lines.
fn write_child(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(members) if !members.is_empty() => {
            out.push('\n');
            write_map(out, members, indent + 2);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, indent + 2);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        match item {
            Value::Object(members) if !members.is_empty() => {
                // The first member shares the dash's line; the rest align under it.
                let mut nested = String::new();
                write_map(&mut nested, members, indent + 2);
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                out.push_str(&nested[indent + 2..]);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push_str(&" ".repeat(indent));
                out.push_str("-\n");
                write_seq(out, inner, indent + 2);
            }
            scalar => {
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// Words some YAML resolver (1.1 or 1.2) reads as something other than a string.
const RESOLVED_WORDS: &[&str] = &[
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf",
];

fn key_text(key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !RESOLVED_WORDS.contains(&key.to_ascii_lowercase().as_str());
    if plain { key.to_owned() } else { quote(key) }
}

/// A double-quoted YAML scalar using only escapes both YAML 1.1 and 1.2 define.
fn quote(text: &str) -> String {
    ahil_wire::quote::quoted(text, |out, c| match c {
        ' '..='~' => out.push(c),
        c if u32::from(c) <= 0xFFFF => {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
        c => {
            let _ = write!(out, "\\U{:08x}", u32::from(c));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::parse_yaml;
    use proptest::prelude::*;
    use serde_json::json;

    fn round_trip(value: &Value) -> Value {
        let text = to_yaml(value);
        parse_yaml(&text)
            .unwrap_or_else(|e| panic!("{e}: {text}"))
            .to_json()
    }

    #[test]
    fn nested_maps_lists_and_tricky_strings_read_back_unchanged() {
        let doc = json!({
            "version": 3,
            "target": {"name": "a: b # c", "controller": "yes"},
            "debuggers": {"dut": {"timeout_s": 60.0, "probe_id": null, "permissions": {}}},
            "artifacts": {"allowed_roots": ["."], "allowed_extensions": []},
            "can_buses": {"b": {"shares": {"s": {"filter": [{"id": 1, "mask": 2047, "extended": false}]}}}},
            "true": "\u{85}line\u{2028}sep\u{1F600}",
            "odd key": "-",
        });
        assert_eq!(round_trip(&doc), doc);
    }

    #[test]
    fn line_breaks_and_tabs_are_written_as_their_short_escapes_on_one_line() {
        let text = to_yaml(&json!({"k": "a\nb\r\tc\"d\\e\u{7f}"}));
        assert_eq!(text, "k: \"a\\nb\\r\\tc\\\"d\\\\e\\u007f\"\n");
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e12f64..1e12).prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ]
    }

    fn tree() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-zA-Z_ :#-]{1,8}", inner), 0..4)
                    .prop_map(|pairs| { Value::Object(pairs.into_iter().collect()) }),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_tree_reads_back_as_itself(members in prop::collection::vec(("[a-z_]{1,6}", tree()), 1..5)) {
            let doc = Value::Object(members.into_iter().collect());
            prop_assert_eq!(round_trip(&doc), doc);
        }
    }
}
