//! The refusals of the test-plan loader and their public names.
//!
//! Plans have their own vocabulary (`test_config_*`) in the reference, distinct from the
//! authoritative configuration's, so they get their own enum; the payload is the crate's
//! [`Refusal`] so both layers render the same way.

use crate::error::{ConfigError, Refusal, refusal_enum};

refusal_enum! {
    /// A test plan that cannot be used, and why.
    pub enum PlanError {
        /// The plan, or where it was named, breaks a rule.
        Invalid, invalid,
            "Correct the plan key named in `field`, then run `agentic-hil check-plan <plan>`.";
        /// No file at the named path.
        NotFound, not_found,
            "Name a plan file inside the workspace (default `.agentic-hil/testconfig.yaml`).";
        /// The file exists but could not be read.
        Unreadable, unreadable, "Make the plan a readable regular file for this user.";
        /// A link or a non-regular file stands on the path.
        UnsafePath, unsafe_path,
            "Name the plan by its real location: no symbolic link, no hard link, a regular file.";
    }
    fn error_type(&self) {
        Invalid => "test_config_invalid",
        NotFound => "test_config_not_found",
        Unreadable => "test_config_unreadable",
        UnsafePath => "unsafe_configured_path",
    }
}

impl PlanError {
    /// Re-labels a refusal of the shared file reader as a plan refusal, keeping its details
    /// but not its configuration-specific advice.
    pub(crate) fn from_config(e: &ConfigError, summary: &str) -> Self {
        let mut r = Refusal::new(summary);
        r.details = e.details();
        r.field = e.field().map(str::to_owned);
        match e {
            ConfigError::NotFound(_) => Self::not_found(r),
            ConfigError::UnsafePath(_) => Self::unsafe_path(r),
            ConfigError::Unreadable(_) => Self::unreadable(r),
            ConfigError::Invalid(_) | ConfigError::WorkspaceIsHome(_) => Self::invalid(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_refusal_keeps_its_kind_and_details_but_not_its_advice() {
        let e = ConfigError::NotFound(Box::new(Refusal::new("c").with("path", "p")));
        let p = PlanError::from_config(&e, "No plan.");
        assert_eq!(p.error_type(), "test_config_not_found");
        assert_eq!(p.details()["path"], "p");
        assert_eq!(p.summary(), "No plan.");
        assert!(!p.remediation().is_empty());
    }
}
