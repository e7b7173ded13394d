//! JSON text in the reference's own layout, so both implementations write byte-identical lines and
//! each can verify the other's chain: compact lines use `", "` and `": "`, documents use two-space
//! indentation, and every non-ASCII character is escaped as `\uXXXX` (surrogate pairs above the BMP).

use std::fmt::Write;

use serde_json::Value;

/// One JSONL record (without the newline).
pub fn line(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, None, 0);
    out
}

/// A document: two-space indent and a trailing newline.
pub fn document(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Some(2), 0);
    out.push('\n');
    out
}

fn write(out: &mut String, value: &Value, indent: Option<usize>, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, indent, depth + 1, i == 0);
                write(out, item, indent, depth + 1);
            }
            close(out, indent, depth);
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                separator(out, indent, depth + 1, i == 0);
                string(out, key);
                out.push_str(": ");
                write(out, item, indent, depth + 1);
            }
            close(out, indent, depth);
            out.push('}');
        }
    }
}

fn separator(out: &mut String, indent: Option<usize>, depth: usize, first: bool) {
    match indent {
        None if !first => out.push_str(", "),
        None => {}
        Some(width) => {
            if !first {
                out.push(',');
            }
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', width * depth));
        }
    }
}

fn close(out: &mut String, indent: Option<usize>, depth: usize) {
    if let Some(width) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * depth));
    }
}

fn string(out: &mut String, s: &str) {
    // The shared escapes (decision 0019), then JSON's own: `\b`, `\f`, printable ASCII as it is,
    // every other character as its UTF-16 units.
    ahil_wire::quote::push_quoted(out, s, |out, c| match c {
        '\u{08}' => out.push_str("\\b"),
        '\u{0c}' => out.push_str("\\f"),
        c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
        c => {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_uses_spaced_separators_and_ascii_escapes() {
        let value = json!({"event": "start", "n": 3, "text": "a\u{2014}b\u{1F600}", "list": [1, true, null]});
        assert_eq!(
            line(&value),
            r#"{"event": "start", "n": 3, "text": "a\u2014b\ud83d\ude00", "list": [1, true, null]}"#
        );
    }

    #[test]
    fn a_document_is_indented_by_two_and_ends_with_a_newline() {
        let value = json!({"version": 1, "last_report": null, "empty": [], "o": {"a": [1]}});
        assert_eq!(
            document(&value),
            "{\n  \"version\": 1,\n  \"last_report\": null,\n  \"empty\": [],\n  \"o\": {\n    \"a\": [\n      1\n    ]\n  }\n}\n"
        );
    }

    #[test]
    fn the_shared_escapes_and_jsons_own_ones_are_written_as_before_the_shared_quoting() {
        let value = json!("\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}é");
        assert_eq!(line(&value), r#""\"\\\n\r\t\b\f\u0001\u007f\u00e9""#);
    }

    #[test]
    fn control_characters_round_trip_through_serde() {
        let value = json!({"s": "\u{0001}\t\"\\"});
        let back: Value = serde_json::from_str(&line(&value)).expect("parses");
        assert_eq!(back, value);
    }
}
