//! The one result envelope every tool answers with, the continue predicate over it, and the effect
//! classification that fills the effect trio when an action did not.

use crate::ErrorType;
pub use ahil_wire::SuccessCheck;
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

/// Whether the action's side effect happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffectStatus {
    /// Nothing was started.
    NotStarted,
    /// The effect happened in full.
    Committed,
    /// Some of it happened.
    Partial,
    /// Nobody knows.
    Unknown,
}

/// What the bench's hardware looks like after the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HardwareState {
    /// Provably as before.
    Unchanged,
    /// Not known.
    Unknown,
}

/// The result envelope. Optional fields are omitted when `None`; tool-specific fields live in
/// `details`, serialized flat after the core fields in insertion order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub ok: bool,
    pub tool: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub likely_causes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remediation: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub do_not: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_contacted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_effect_committed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_effect_status: Option<SideEffectStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardware_state: Option<HardwareState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_safe: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit_ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup_ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup_required: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantined: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_ok: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_in_force: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_stale: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Tool-specific fields (backend, version, field, validator, …), in insertion order.
    #[serde(flatten)]
    pub details: IndexMap<String, Value>,
    /// Protocol metadata beside the envelope (MCP `_meta`), e.g. the mark on untrusted device bytes;
    /// never part of the envelope or its report.
    #[serde(skip)]
    pub meta: Option<Value>,
}

/// Names the envelope owns; `with` refuses them so a detail can never shadow a core field.
const CORE_FIELDS: &[&str] = &[
    "ok",
    "tool",
    "summary",
    "error_type",
    "likely_causes",
    "remediation",
    "do_not",
    "next_step",
    "target_contacted",
    "side_effect_committed",
    "side_effect_status",
    "hardware_state",
    "retry_safe",
    "audit_ok",
    "cleanup_ok",
    "cleanup_required",
    "quarantined",
    "lease_state",
    "target_ok",
    "config_in_force",
    "config_status",
    "config_stale",
    "report_path",
    "log_path",
    "started_at",
    "finished_at",
    "elapsed_ms",
];

impl Outcome {
    fn blank(tool: &str, ok: bool, summary: String) -> Self {
        Self {
            ok,
            tool: tool.to_owned(),
            summary,
            error_type: None,
            likely_causes: Vec::new(),
            remediation: Vec::new(),
            do_not: Vec::new(),
            next_step: None,
            target_contacted: None,
            side_effect_committed: None,
            side_effect_status: None,
            hardware_state: None,
            retry_safe: None,
            audit_ok: None,
            cleanup_ok: None,
            cleanup_required: None,
            quarantined: None,
            lease_state: None,
            target_ok: None,
            config_in_force: None,
            config_status: None,
            config_stale: None,
            report_path: None,
            log_path: None,
            started_at: None,
            finished_at: None,
            elapsed_ms: None,
            details: IndexMap::new(),
            meta: None,
        }
    }

    /// A successful result.
    pub fn ok(tool: impl AsRef<str>, summary: impl Into<String>) -> Self {
        Self::blank(tool.as_ref(), true, summary.into())
    }

    /// A result built from a JSON document: envelope fields it names go to their places, the rest
    /// become details in the document's order.
    pub fn from_doc(tool: &str, doc: Value) -> Self {
        let Value::Object(map) = doc else {
            return Self::blank(tool, false, "The result could not be formed.".into());
        };
        let ok = map.get("ok").and_then(Value::as_bool).unwrap_or(false);
        let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
        let flag = |key: &str| map.get(key).and_then(Value::as_bool);
        let mut outcome = Self::blank(tool, ok, text("summary").unwrap_or_default());
        outcome.error_type = text("error_type");
        outcome.next_step = text("next_step");
        outcome.retry_safe = flag("retry_safe");
        outcome.audit_ok = flag("audit_ok");
        outcome.cleanup_required = flag("cleanup_required");
        outcome.quarantined = flag("quarantined");
        outcome.lease_state = text("lease_state");
        for (key, value) in map {
            if !CORE_FIELDS.contains(&key.as_str()) {
                outcome.details.insert(key, value);
            }
        }
        outcome
    }

    /// A failed result with a public `error_type`.
    pub fn refused(
        tool: impl AsRef<str>,
        error_type: ErrorType,
        summary: impl Into<String>,
    ) -> Self {
        let mut outcome = Self::blank(tool.as_ref(), false, summary.into());
        outcome.set_error(error_type);
        outcome
    }

    /// Names the result's public `error_type`; only catalogued ones exist.
    pub fn set_error(&mut self, error_type: ErrorType) {
        self.error_type = Some(error_type.as_str().to_owned());
    }

    /// Says this result as `interrupted` by its client's cancel (`cancelled: true`, with `summary`),
    /// keeping what the action set about its contact and effect, and its details: work it finished
    /// stands as done, while the call did not end as asked. An earlier error's advice goes with it.
    pub fn interrupt(&mut self, summary: impl Into<String>) {
        self.ok = false;
        self.set_error(ErrorType::Interrupted);
        self.summary = summary.into();
        self.likely_causes.clear();
        self.remediation.clear();
        self.do_not.clear();
        self.next_step = None;
        self.set("cancelled", true);
    }

    /// The NOT_CONTACTED marker set: the failure provably never reached the bench.
    #[must_use]
    pub fn not_contacted(mut self) -> Self {
        self.target_contacted = Some(false);
        self.not_started(true)
    }

    /// Nothing was started, but repeating the call unchanged will not help (`retry_safe` as given).
    /// Used by refusals that are final until a person acts (no config, wrong probe count).
    #[must_use]
    pub fn not_started(mut self, retry_safe: bool) -> Self {
        self.side_effect_committed = Some(false);
        self.side_effect_status = Some(SideEffectStatus::NotStarted);
        self.hardware_state = Some(HardwareState::Unchanged);
        self.retry_safe = Some(retry_safe);
        self
    }

    /// Add a tool-specific field. Core field names are refused (debug builds panic, release builds drop
    /// the value) because a detail must never shadow the envelope.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.set(key, value);
        self
    }

    /// In-place form of [`Outcome::with`].
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        debug_assert!(
            !CORE_FIELDS.contains(&key),
            "`{key}` is an envelope field; set it directly"
        );
        if !CORE_FIELDS.contains(&key) {
            self.details.insert(key.to_owned(), value.into());
        }
    }

    /// A detail by name.
    pub fn detail(&self, key: &str) -> Option<&Value> {
        self.details.get(key)
    }

    /// Add likely causes (at most three are kept: an agent reads the first, a person the first two).
    #[must_use]
    pub fn with_causes(mut self, causes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.likely_causes
            .extend(causes.into_iter().map(Into::into));
        self.likely_causes.truncate(3);
        self
    }

    /// Set the remediation lines.
    #[must_use]
    pub fn with_remediation(mut self, lines: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.remediation = lines.into_iter().map(Into::into).collect();
        self
    }

    /// Set the `do_not` lines.
    #[must_use]
    pub fn with_do_not(mut self, lines: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.do_not = lines.into_iter().map(Into::into).collect();
        self
    }

    /// Set `next_step`.
    #[must_use]
    pub fn with_next_step(mut self, step: impl Into<String>) -> Self {
        self.next_step = Some(step.into());
        self
    }

    /// The envelope as a JSON object.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|error| {
            // Every field is a plain JSON value, so this cannot fail; keep an answer anyway.
            serde_json::json!({"ok": false, "tool": self.tool, "error_type": "internal_error",
                "summary": format!("The result could not be serialized: {error}")})
        })
    }

    /// Whether an agent may go on after this result (see [`overall_success`]).
    pub fn succeeded(&self) -> bool {
        overall_success(self)
    }
}

/// The first failing check of a result document, or `None` when it succeeded.
pub fn failed_success_check_value(result: &Value) -> Option<SuccessCheck> {
    ahil_wire::first_failed(|name| result.get(name))
}

/// The first failing check of an envelope, or `None` when it succeeded.
pub fn failed_success_check(outcome: &Outcome) -> Option<SuccessCheck> {
    failed_success_check_value(&outcome.to_value())
}

/// The continue predicate: `ok` alone is the call's own verdict; this also demands a clean audit, no
/// cleanup or quarantine, a lease in a normal state, and a known effect and hardware state.
pub fn overall_success(outcome: &Outcome) -> bool {
    failed_success_check(outcome).is_none()
}

/// [`overall_success`] over a result document.
pub fn overall_success_value(result: &Value) -> bool {
    failed_success_check_value(result).is_none()
}

/// Refusals that happen before anything is sent to a device.
const PRE_EFFECT_ERRORS: &[&str] = &[
    "permission_denied",
    "invalid_argument",
    "session_already_active",
    "session_not_active",
    "not_supported",
    "artifact_not_found",
    "artifact_validation_failed",
    "output_validation_failed",
    "resource_busy",
];

/// Fill the effect trio of an effect tool's result when the action did not. Unknown is the default:
/// absence of evidence is never read as "nothing happened".
pub fn mark_side_effect(outcome: &mut Outcome) {
    // Which tools must say whether their effect happened is their declaration's `reports_effect`.
    let reports_effect =
        crate::catalogue::Gate::of(&outcome.tool).is_some_and(|g| g.reports_effect);
    if !reports_effect || outcome.side_effect_status.is_some() {
        return;
    }
    let error_type = outcome.error_type.as_deref();
    // `committed: None` leaves the field as the action set it: an unknown effect claims nothing.
    let (committed, status, retry_safe) = if outcome.ok || outcome.target_ok == Some(false) {
        (Some(true), SideEffectStatus::Committed, false)
    } else if error_type.is_some_and(|e| PRE_EFFECT_ERRORS.contains(&e)) {
        (Some(false), SideEffectStatus::NotStarted, true)
    } else if error_type == Some("resource_quarantined") {
        (Some(false), SideEffectStatus::NotStarted, false)
    } else if outcome.side_effect_committed == Some(false) {
        (Some(false), SideEffectStatus::NotStarted, true)
    } else if outcome.side_effect_committed == Some(true) {
        (Some(true), SideEffectStatus::Partial, false)
    } else {
        (None, SideEffectStatus::Unknown, false)
    };
    if committed.is_some() {
        outcome.side_effect_committed = committed;
    }
    outcome.side_effect_status = Some(status);
    outcome.retry_safe = Some(retry_safe);
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
