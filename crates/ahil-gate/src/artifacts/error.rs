//! The artifact layer's refusals and the one place they map to public `error_type`s.

use crate::ErrorType;
use serde_json::Value;

use super::Checks;
use crate::envelope::Outcome;

/// Why an artifact was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactError {
    #[error("Firmware artifact path contains control characters.")]
    ControlCharacters,
    #[error("Firmware artifact path contains traversal segments.")]
    Traversal,
    #[error("Firmware artifact is outside allowed artifact roots.")]
    OutsideRoots,
    #[error("Firmware artifact extension is not allowed.")]
    Extension,
    #[error(
        "Firmware artifact is outside workspace_root. Artifact paths must stay inside the configured workspace; no permission relaxes this."
    )]
    OutsideWorkspace,
    #[error("Firmware artifact does not exist.")]
    NotFound,
    #[error("Firmware artifact must be a single-link regular file that can be opened safely.")]
    UnsafeFile(String),
    #[error("Firmware artifact could not be read: {0}.")]
    Unreadable(String),
    #[error("Firmware artifact is {bytes} bytes, over the {max_bytes}-byte limit.")]
    TooLarge { bytes: u64, max_bytes: u64 },
    #[error("Firmware artifact failed basic format plausibility checks.")]
    Format(String),
    #[error("Using uploaded artifacts is disabled: `artifacts.allow_upload` is false.")]
    UploadsDisabled,
    #[error("artifact_id must be 64 lowercase hex digits, optionally followed by an extension.")]
    BadId,
    #[error("Firmware artifact content changed after validation.")]
    Changed(String),
    #[error("Firmware artifact could not be staged: {0}.")]
    Staging(String),
    #[error("The upload destination is not a safe place to write: {0}.")]
    UnsafeDestination(String),
}

impl ArtifactError {
    /// The public `error_type`.
    pub fn error_type(&self) -> ErrorType {
        match self {
            Self::ControlCharacters
            | Self::Traversal
            | Self::OutsideRoots
            | Self::Extension
            | Self::OutsideWorkspace
            | Self::UnsafeFile(_)
            | Self::Unreadable(_)
            | Self::Format(_) => ErrorType::ArtifactValidationFailed,
            Self::NotFound => ErrorType::ArtifactNotFound,
            Self::TooLarge { .. } => ErrorType::ArtifactTooLarge,
            Self::UploadsDisabled => ErrorType::PermissionDenied,
            Self::BadId => ErrorType::InvalidArgument,
            Self::Changed(_) => ErrorType::ArtifactChanged,
            Self::Staging(_) => ErrorType::ArtifactStagingFailed,
            Self::UnsafeDestination(_) => ErrorType::UnsafeConfiguredPath,
        }
    }
}

/// A refusal with the `validation` object as far as the checks got.
#[derive(Debug, Clone)]
pub struct ArtifactRefusal {
    pub error: ArtifactError,
    pub validation: Value,
}

impl ArtifactRefusal {
    pub(crate) fn new(error: ArtifactError, checks: Checks) -> Self {
        Self {
            error,
            validation: checks.into_value(),
        }
    }

    /// A refusal that happened before any check ran (no `validation` object).
    pub(crate) fn bare(error: ArtifactError) -> Self {
        Self {
            error,
            validation: Value::Null,
        }
    }

    /// The public `error_type`.
    pub fn error_type(&self) -> ErrorType {
        self.error.error_type()
    }

    /// The refusal as an envelope for `tool`. Nothing reached the target.
    pub fn to_outcome(&self, tool: &str) -> Outcome {
        let mut outcome = Outcome::refused(tool, self.error_type(), self.error.to_string());
        match &self.error {
            ArtifactError::TooLarge { bytes, max_bytes } => {
                outcome.set("bytes", *bytes);
                outcome.set("max_bytes", *max_bytes);
            }
            ArtifactError::UploadsDisabled => outcome.set("permission", "artifacts.allow_upload"),
            ArtifactError::UnsafeFile(why)
            | ArtifactError::Format(why)
            | ArtifactError::Changed(why) => outcome.set("reason", why.clone()),
            _ => {}
        }
        if !self.validation.is_null() {
            outcome.set("validation", self.validation.clone());
        }
        outcome = outcome.with_remediation([remediation(&self.error)]);
        outcome.not_contacted()
    }
}

fn remediation(error: &ArtifactError) -> &'static str {
    match error {
        ArtifactError::ControlCharacters
        | ArtifactError::Traversal
        | ArtifactError::OutsideRoots
        | ArtifactError::OutsideWorkspace => {
            "Pass a path inside the workspace under artifacts.allowed_roots, with no `..` segment."
        }
        ArtifactError::Extension => {
            "Pass an image whose extension is in artifacts.allowed_extensions (.elf, .hex, .bin by default)."
        }
        ArtifactError::NotFound => {
            "Build the firmware first, or pass the path or artifact_id it was written to."
        }
        ArtifactError::UnsafeFile(_) => {
            "Pass the build output itself: a regular file with one link, reached without symbolic links."
        }
        ArtifactError::TooLarge { .. } => {
            "Pass a smaller image; the limit is artifacts.max_upload_size_mb."
        }
        ArtifactError::Format(_) => "Rebuild the image; its content does not match its extension.",
        ArtifactError::UploadsDisabled => {
            "Pass image_path instead; only the operator can set artifacts.allow_upload."
        }
        ArtifactError::BadId => "Use the artifact_id that artifact_upload returned, unchanged.",
        ArtifactError::Changed(_) => {
            "Wait until the build has finished writing the image, then call again."
        }
        ArtifactError::Unreadable(_) | ArtifactError::Staging(_) => {
            "Call again; if it repeats, run `agentic-hil doctor`."
        }
        ArtifactError::UnsafeDestination(_) => {
            "The operator must point artifacts.upload_directory at a plain directory inside the workspace."
        }
    }
}
