//! The one error type of this crate and its public vocabulary.
//!
//! Every refusal carries a short summary, an optional dotted `field`, a map of extra
//! details and a remediation list. The `error_type` strings are shared with the reference
//! implementation, so they live in exactly one function below.

use serde_json::{Map, Value};

/// The accessors every refusal enum of this crate answers with, read from its [`Refusal`] payload
/// (the enum supplies `fn refusal(&self) -> &Refusal`).
macro_rules! refusal_accessors {
    () => {
        /// One sentence: what is wrong.
        pub fn summary(&self) -> String {
            self.refusal().summary.clone()
        }

        /// Dotted key path (`[i]` for list items, `$` for the root) when one key is to blame.
        pub fn field(&self) -> Option<&str> {
            self.refusal().field.as_deref()
        }

        /// Extra machine-readable fields; `field` is repeated here when present.
        pub fn details(&self) -> serde_json::Map<String, serde_json::Value> {
            self.refusal().details_map()
        }

        /// The next steps, most useful first.
        pub fn remediation(&self) -> Vec<String> {
            self.refusal().remediation.clone()
        }
    };
}
pub(crate) use refusal_accessors;

/// Declares a refusal enum of this crate: each variant boxes a [`Refusal`] (so a `Result` stays one
/// pointer wide), its constructor adds the variant's advice when the site gave none, and
/// `fn error_type` is the layer's one table of public names (the error catalogue's test reads its
/// arms from the invocation).
macro_rules! refusal_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$doc:meta])*
                $variant:ident, $constructor:ident, $advice:literal;
            )+
        }
        fn error_type(&self) {
            $($named:ident => $error_type:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, thiserror::Error)]
        pub enum $name {
            $(
                $(#[$doc])*
                #[error("{}", .0.summary)]
                $variant(Box<$crate::error::Refusal>),
            )+
        }

        impl $name {
            $(
                pub(crate) fn $constructor(r: $crate::error::Refusal) -> Self {
                    Self::$variant(Box::new(r.or_fix($advice)))
                }
            )+

            fn refusal(&self) -> &$crate::error::Refusal {
                match self {
                    $(Self::$variant(r))|+ => r,
                }
            }

            /// The stable public name of this refusal, shared with the reference.
            pub fn error_type(&self) -> &'static str {
                match self {
                    $(Self::$named(_) => $error_type,)+
                }
            }

            /// The refusal as a result document of its own: `ok: false`, then `who` answers (a
            /// tool, a path), the error and its details (none displacing `who`), the next steps.
            pub fn document(&self, who: (&str, serde_json::Value)) -> serde_json::Value {
                let mut doc = serde_json::Map::new();
                doc.insert("ok".into(), false.into());
                doc.insert(who.0.into(), who.1);
                doc.insert("error_type".into(), self.error_type().into());
                doc.insert("summary".into(), self.summary().into());
                for (key, value) in self.details() {
                    doc.entry(key).or_insert(value);
                }
                doc.insert("remediation".into(), self.remediation().into());
                serde_json::Value::Object(doc)
            }

            $crate::error::refusal_accessors!();
        }
    };
}
pub(crate) use refusal_enum;

/// What a refusal says beyond its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub summary: String,
    pub field: Option<String>,
    pub details: Map<String, Value>,
    pub remediation: Vec<String>,
}

impl Refusal {
    /// Extra machine-readable fields; `field` is repeated here when present.
    pub fn details_map(&self) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(f) = &self.field {
            out.insert("field".into(), Value::String(f.clone()));
        }
        for (k, v) in &self.details {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    /// Every refusal says what to do next: `step` unless the site gave its own.
    pub(crate) fn or_fix(mut self, step: &str) -> Self {
        if self.remediation.is_empty() {
            self.remediation.push(step.to_owned());
        }
        self
    }

    pub(crate) fn new(summary: impl Into<String>) -> Self {
        Self {
            summary: summary.into(),
            field: None,
            details: Map::new(),
            remediation: Vec::new(),
        }
    }

    pub(crate) fn at(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub(crate) fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    pub(crate) fn fix(mut self, step: impl Into<String>) -> Self {
        self.remediation.push(step.into());
        self
    }
}

refusal_enum! {
    /// A configuration that cannot be used, and why.
    pub enum ConfigError {
        /// The document or its binding breaks a rule.
        Invalid, invalid, "Correct the key named in `field`, then run `agentic-hil doctor`.";
        /// No file where the configuration should be.
        NotFound, not_found, "Run `agentic-hil init` in the workspace to write the configuration.";
        /// A file exists but cannot be read as text.
        Unreadable, unreadable,
            "Make the file a readable UTF-8 regular file, then run `agentic-hil doctor`.";
        /// A path on the way to a file or directory is a link or not a directory.
        UnsafePath, unsafe_path,
            "Name the real location: no symbolic link and no file may stand on the path.";
        /// The workspace is the home directory or contains it.
        WorkspaceIsHome, workspace_is_home,
            "Change into the project directory and run the command there.";
    }
    fn error_type(&self) {
        Invalid => "config_invalid",
        NotFound => "config_file_not_found",
        Unreadable => "config_unreadable",
        UnsafePath => "unsafe_configured_path",
        WorkspaceIsHome => "workspace_is_home",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanError;

    // One variant a line, so the table reads as one.
    #[rustfmt::skip]
    #[test]
    fn every_variant_of_every_refusal_enum_maps_to_its_public_name() {
        let r = || Refusal::new("x");
        let cases = [
            (ConfigError::invalid(r()).error_type(), "config_invalid"),
            (ConfigError::not_found(r()).error_type(), "config_file_not_found"),
            (ConfigError::unreadable(r()).error_type(), "config_unreadable"),
            (ConfigError::unsafe_path(r()).error_type(), "unsafe_configured_path"),
            (ConfigError::workspace_is_home(r()).error_type(), "workspace_is_home"),
            (PlanError::invalid(r()).error_type(), "test_config_invalid"),
            (PlanError::not_found(r()).error_type(), "test_config_not_found"),
            (PlanError::unreadable(r()).error_type(), "test_config_unreadable"),
            (PlanError::unsafe_path(r()).error_type(), "unsafe_configured_path"),
        ];
        for (named, name) in cases {
            assert_eq!(named, name);
        }
    }

    #[test]
    fn details_repeat_the_field_and_remediation_is_never_empty() {
        let e = ConfigError::invalid(Refusal::new("bad").at("a.b").with("value", 3));
        assert_eq!(e.field(), Some("a.b"));
        assert_eq!(e.details()["field"], "a.b");
        assert_eq!(e.details()["value"], 3);
        assert!(!e.remediation().is_empty());
    }

    #[test]
    fn a_result_document_leads_with_who_answers_and_no_detail_displaces_it() {
        let e = ConfigError::invalid(Refusal::new("bad").at("a.b").with("tool", "other"));
        let doc = e.document(("tool", "agentic-hil grant".into()));
        let keys: Vec<&str> = doc
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "ok",
                "tool",
                "error_type",
                "summary",
                "field",
                "remediation"
            ]
        );
        assert_eq!(doc["ok"], false);
        assert_eq!(doc["tool"], "agentic-hil grant");
        assert_eq!(doc["error_type"], "config_invalid");
        assert_eq!(doc["field"], "a.b");
        assert_eq!(doc["remediation"], serde_json::json!(e.remediation()));
    }
}
