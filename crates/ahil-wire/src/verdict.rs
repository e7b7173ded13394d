//! `ahil-verdict`: the continue predicate over a tool's result document. The gate computes it for
//! `isError` and reports; a test suite's client computes it again from the document it received.
//! One definition keeps the two from drifting: a check added to one side alone would let a caller
//! go on where the gate says it must stop.

use serde_json::Value;

/// The nine checks of the continue predicate, in the order they are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuccessCheck {
    /// `ok` is true.
    Ok,
    /// `target_ok` is not false.
    TargetOk,
    /// `audit_ok` is not false.
    AuditOk,
    /// `cleanup_ok` is not false.
    CleanupOk,
    /// `cleanup_required` is not true.
    CleanupRequired,
    /// `quarantined` is not true.
    Quarantined,
    /// `lease_state` is absent, `active` or `released`.
    LeaseState,
    /// `side_effect_status` is neither `unknown` nor `partial`.
    SideEffectStatus,
    /// `hardware_state` is not `unknown`.
    HardwareState,
}

impl SuccessCheck {
    /// Every check, in evaluation order.
    pub const ALL: [Self; 9] = [
        Self::Ok,
        Self::TargetOk,
        Self::AuditOk,
        Self::CleanupOk,
        Self::CleanupRequired,
        Self::Quarantined,
        Self::LeaseState,
        Self::SideEffectStatus,
        Self::HardwareState,
    ];

    /// The check's name: the field it reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::TargetOk => "target_ok",
            Self::AuditOk => "audit_ok",
            Self::CleanupOk => "cleanup_ok",
            Self::CleanupRequired => "cleanup_required",
            Self::Quarantined => "quarantined",
            Self::LeaseState => "lease_state",
            Self::SideEffectStatus => "side_effect_status",
            Self::HardwareState => "hardware_state",
        }
    }

    /// Whether the check passes on its field's value (`None` when the field is absent).
    pub fn passes(self, field: Option<&Value>) -> bool {
        match self {
            Self::Ok => field == Some(&Value::Bool(true)),
            Self::TargetOk | Self::AuditOk | Self::CleanupOk => field != Some(&Value::Bool(false)),
            Self::CleanupRequired | Self::Quarantined => field != Some(&Value::Bool(true)),
            Self::LeaseState => match field {
                None | Some(Value::Null) => true,
                Some(Value::String(state)) => state == "active" || state == "released",
                Some(_) => false,
            },
            Self::SideEffectStatus => {
                !matches!(field.and_then(Value::as_str), Some("unknown" | "partial"))
            }
            Self::HardwareState => field.and_then(Value::as_str) != Some("unknown"),
        }
    }
}

/// The first failing check of a result document whose fields `field` looks up, or `None` when a
/// caller may go on. The gate holds a document as a `Value`, the client as a map: each passes its
/// own lookup.
pub fn first_failed<'a>(field: impl Fn(&str) -> Option<&'a Value>) -> Option<SuccessCheck> {
    SuccessCheck::ALL
        .into_iter()
        .find(|check| !check.passes(field(check.name())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_document_that_is_not_an_object_fails_on_ok() {
        let doc = json!([true]);
        assert_eq!(first_failed(|name| doc.get(name)), Some(SuccessCheck::Ok));
    }

    #[test]
    fn an_ok_document_with_every_other_field_absent_passes() {
        let doc = json!({"ok": true});
        assert_eq!(first_failed(|name| doc.get(name)), None);
    }
}
