//! The refusals every configuration edit answers alike, whichever command or tool made it.

use ahil_config::ConfigError;
use serde_json::{Map, Value};

use crate::ErrorType;
use crate::envelope::Outcome;

/// The configuration layer's own refusal (a file that does not load, a result that does not
/// validate): nothing was written, and the layer's remediation is the next step.
pub fn config_refusal(tool: impl AsRef<str>, e: &ConfigError) -> Outcome {
    layer_refusal(tool, e.error_type(), e.summary(), e.details())
        .with_remediation(e.remediation())
        .not_started(false)
}

/// A configuration or plan error as a refusal of `tool`: the layer's `error_type` and `details`
/// under `summary` (the error's own, or it and what was left undone).
pub fn layer_refusal(
    tool: impl AsRef<str>,
    error_type: &str,
    summary: String,
    details: Map<String, Value>,
) -> Outcome {
    let mut outcome = Outcome::refused(tool, ErrorType::layer(error_type), summary);
    for (k, v) in details {
        outcome.set(&k, v);
    }
    outcome
}

/// The edited file could not take the place of the old one, which is left as it was. Only the
/// error's class is shown: the OS message may carry the configuration directory's absolute path.
pub fn replace_failed(tool: impl AsRef<str>, e: &std::io::Error) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::ConfigWriteFailed,
        "The configuration file could not be replaced; it is unchanged.",
    )
    .with("error_class", format!("{:?}", e.kind()))
}
