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

/// A configuration that cannot be used, and why.
///
/// Boxed payloads keep `Result<_, ConfigError>` one pointer wide.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The document or its binding breaks a rule.
    #[error("{}", .0.summary)]
    Invalid(Box<Refusal>),
    /// No file where the configuration should be.
    #[error("{}", .0.summary)]
    NotFound(Box<Refusal>),
    /// A file exists but cannot be read as text.
    #[error("{}", .0.summary)]
    Unreadable(Box<Refusal>),
    /// A path on the way to a file or directory is a link or not a directory.
    #[error("{}", .0.summary)]
    UnsafePath(Box<Refusal>),
    /// The workspace is the home directory or contains it.
    #[error("{}", .0.summary)]
    WorkspaceIsHome(Box<Refusal>),
}

impl ConfigError {
    pub(crate) fn invalid(r: Refusal) -> Self {
        Self::Invalid(Box::new(r.or_fix(
            "Correct the key named in `field`, then run `agentic-hil doctor`.",
        )))
    }

    pub(crate) fn not_found(r: Refusal) -> Self {
        Self::NotFound(Box::new(r.or_fix(
            "Run `agentic-hil init` in the workspace to write the configuration.",
        )))
    }

    pub(crate) fn unreadable(r: Refusal) -> Self {
        Self::Unreadable(Box::new(r.or_fix(
            "Make the file a readable UTF-8 regular file, then run `agentic-hil doctor`.",
        )))
    }

    pub(crate) fn unsafe_path(r: Refusal) -> Self {
        Self::UnsafePath(Box::new(r.or_fix(
            "Name the real location: no symbolic link and no file may stand on the path.",
        )))
    }

    pub(crate) fn workspace_is_home(r: Refusal) -> Self {
        Self::WorkspaceIsHome(Box::new(
            r.or_fix("Change into the project directory and run the command there."),
        ))
    }

    fn refusal(&self) -> &Refusal {
        match self {
            Self::Invalid(r)
            | Self::NotFound(r)
            | Self::Unreadable(r)
            | Self::UnsafePath(r)
            | Self::WorkspaceIsHome(r) => r,
        }
    }

    /// The stable public name of this refusal.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "config_invalid",
            Self::NotFound(_) => "config_file_not_found",
            Self::Unreadable(_) => "config_unreadable",
            Self::UnsafePath(_) => "unsafe_configured_path",
            Self::WorkspaceIsHome(_) => "workspace_is_home",
        }
    }

    refusal_accessors!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_maps_to_its_public_name() {
        let r = || Refusal::new("x");
        assert_eq!(ConfigError::invalid(r()).error_type(), "config_invalid");
        assert_eq!(
            ConfigError::not_found(r()).error_type(),
            "config_file_not_found"
        );
        assert_eq!(
            ConfigError::unreadable(r()).error_type(),
            "config_unreadable"
        );
        assert_eq!(
            ConfigError::unsafe_path(r()).error_type(),
            "unsafe_configured_path"
        );
        assert_eq!(
            ConfigError::workspace_is_home(r()).error_type(),
            "workspace_is_home"
        );
    }

    #[test]
    fn details_repeat_the_field_and_remediation_is_never_empty() {
        let e = ConfigError::invalid(Refusal::new("bad").at("a.b").with("value", 3));
        assert_eq!(e.field(), Some("a.b"));
        assert_eq!(e.details()["field"], "a.b");
        assert_eq!(e.details()["value"], 3);
        assert!(!e.remediation().is_empty());
    }
}
