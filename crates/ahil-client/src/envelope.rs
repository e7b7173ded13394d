//! The result envelope every tool answers with, and the continue predicate over it.

use std::fmt;

pub use ahil_wire::SuccessCheck;
use serde_json::{Map, Value};

/// One tool's result document (MCP `structuredContent`), with the server's `isError` beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    doc: Map<String, Value>,
    is_error: bool,
}

static NULL: Value = Value::Null;

impl Envelope {
    /// An envelope from a result document; anything but an object is kept under `value`.
    pub fn new(doc: Value, is_error: bool) -> Self {
        let doc = match doc {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_owned(), other)]),
        };
        Self { doc, is_error }
    }

    /// A tool's answer, not a protocol error, as the tests write one.
    #[cfg(test)]
    pub(crate) fn answer(doc: Value) -> Self {
        Self::new(doc, false)
    }

    pub fn ok(&self) -> bool {
        self.doc.get("ok") == Some(&Value::Bool(true))
    }

    /// The server's `isError`: true when the call did not conclusively succeed.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    pub fn tool(&self) -> Option<&str> {
        self.str("tool")
    }

    pub fn summary(&self) -> Option<&str> {
        self.str("summary")
    }

    pub fn error_type(&self) -> Option<&str> {
        self.str("error_type")
    }

    pub fn get(&self, field: &str) -> Option<&Value> {
        self.doc.get(field)
    }

    pub fn str(&self, field: &str) -> Option<&str> {
        self.doc.get(field).and_then(Value::as_str)
    }

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.doc
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.doc)
    }

    /// The first check that stops a caller from going on, or `None` when it may.
    pub fn failed_success_check(&self) -> Option<SuccessCheck> {
        ahil_wire::first_failed(|name| self.doc.get(name))
    }

    /// See [`overall_success`].
    pub fn overall_success(&self) -> bool {
        self.failed_success_check().is_none()
    }
}

/// Whether a caller may go on: `ok`, no failed target, audit or cleanup, nothing left to clean up
/// or quarantined, a lease in a normal state, and a known effect and hardware state.
pub fn overall_success(envelope: &Envelope) -> bool {
    envelope.overall_success()
}

impl std::ops::Index<&str> for Envelope {
    type Output = Value;

    /// The field, or `null` when absent (as `serde_json::Value` indexes).
    fn index(&self, field: &str) -> &Value {
        self.doc.get(field).unwrap_or(&NULL)
    }
}

impl fmt::Display for Envelope {
    /// One line: `tool: error_type: summary`, then the whole document for a failed assertion.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tool = self.tool().unwrap_or("?");
        match self.failed_success_check() {
            None => write!(f, "{tool}: {}", self.summary().unwrap_or_default())?,
            Some(check) => write!(
                f,
                "{tool}: {}: {}",
                self.error_type().unwrap_or(check.name()),
                self.summary().unwrap_or_default()
            )?,
        }
        write!(f, " {}", Value::Object(self.doc.clone()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_ok_envelope_with_nothing_pending_succeeds() {
        let doc = Envelope::answer(
            json!({"ok": true, "tool": "probe_target", "lease_state": "released",
            "side_effect_status": "committed", "hardware_state": "changed"}),
        );
        assert!(doc.overall_success(), "{doc}");
        assert_eq!(doc.failed_success_check(), None);
    }

    #[test]
    fn each_bad_field_alone_stops_the_caller_and_is_named() {
        for (field, value) in [
            ("ok", json!(false)),
            ("target_ok", json!(false)),
            ("audit_ok", json!(false)),
            ("cleanup_ok", json!(false)),
            ("cleanup_required", json!(true)),
            ("quarantined", json!(true)),
            ("lease_state", json!("blocked")),
            ("lease_state", json!(7)),
            ("side_effect_status", json!("unknown")),
            ("side_effect_status", json!("partial")),
            ("hardware_state", json!("unknown")),
        ] {
            let mut doc = json!({"ok": true});
            doc[field] = value.clone();
            let doc = Envelope::answer(doc);
            assert!(!doc.overall_success(), "{field}={value}");
            assert_eq!(
                doc.failed_success_check().map(SuccessCheck::name),
                Some(field)
            );
        }
    }

    #[test]
    fn a_missing_ok_is_not_success() {
        assert_eq!(
            Envelope::answer(json!({"tool": "x"})).failed_success_check(),
            Some(SuccessCheck::Ok)
        );
    }

    #[test]
    fn the_first_failing_check_in_order_is_the_one_named() {
        let doc =
            Envelope::answer(json!({"ok": true, "hardware_state": "unknown", "quarantined": true}));
        assert_eq!(doc.failed_success_check(), Some(SuccessCheck::Quarantined));
    }

    #[test]
    fn indexing_a_missing_field_gives_null() {
        let doc = Envelope::answer(json!({"ok": true, "data": {"text": "boot ok"}}));
        assert_eq!(doc["data"]["text"], "boot ok");
        assert_eq!(doc["absent"], Value::Null);
    }
}
