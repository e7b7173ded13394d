//! The refusals every configuration edit answers alike, whichever command or tool made it.

use ahil_config::ConfigError;

use crate::ErrorType;
use crate::envelope::Outcome;

/// The configuration layer's own refusal (a file that does not load, a result that does not
/// validate): nothing was written, and the layer's remediation is the next step.
pub fn config_refusal(tool: impl AsRef<str>, e: &ConfigError) -> Outcome {
    let mut outcome = Outcome::refused(tool, ErrorType::layer(e.error_type()), e.summary());
    for (k, v) in e.details() {
        outcome.set(&k, v);
    }
    outcome.with_remediation(e.remediation()).not_started(false)
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
