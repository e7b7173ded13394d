//! What a driver knows when it fails, in the vocabulary the gate publishes.
//!
//! A driver never decides retry safety or quarantine; it reports what it *knows* about contact with the
//! target through [`Contact`], and the gate turns that into `target_contacted`, `retry_safe` and incidents.

use std::time::Duration;

pub use ahil_job::Contact;

/// A driver failure. Each variant maps to exactly one public `error_type`.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The configured or autodetected executable does not exist or cannot be run.
    #[error("debugger executable could not be started: {detail}")]
    DebuggerNotFound {
        /// The OS's reason (e.g. "No such file or directory").
        detail: String,
        /// What the driver knows about contact.
        contact: Contact,
    },
    /// The operation ran past its deadline and its process group was killed.
    #[error("the command did not finish within {limit:?}")]
    Timeout {
        /// The deadline that expired.
        limit: Duration,
        /// What the driver knows about contact.
        contact: Contact,
        /// Output captured before the kill (stdout then stderr), for the log.
        output: String,
    },
    /// The backend ran and reported a failure the driver could not classify further.
    #[error("the backend failed: {detail}")]
    Backend {
        /// The backend's own words, or the exit status.
        detail: String,
        /// What the driver knows about contact.
        contact: Contact,
        /// Exit code when the backend exited normally.
        exit_code: Option<i32>,
        /// Output captured (stdout then stderr), for the log.
        output: String,
    },
    /// The host refused something the driver needed (spawning, pipes, reading output).
    #[error("host I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// A CLI backend ran and its own words (or exit, or missing success text) put the failure in one
    /// of the published classes.
    #[error("{}", .0.summary)]
    Classified(Box<Classified>),
}

/// One run of a backend CLI, as the log keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    /// The command line (arguments with whitespace quoted).
    pub command: String,
    /// The exit code, when the child exited by itself.
    pub returncode: Option<i32>,
    /// Whether the deadline (or a cancel) killed it.
    pub timed_out: bool,
    /// Captured stdout.
    pub stdout: String,
    /// Captured stderr.
    pub stderr: String,
}

/// A classified CLI failure: the public `error_type`, the backend's finer class, and the evidence.
#[derive(Debug, Clone)]
pub struct Classified {
    /// The public `error_type` (`adapter_not_found`, `verify_failed`, …).
    pub error_type: &'static str,
    /// The backend's own class (`probe_not_found`, `flash_unconfirmed`, …).
    pub backend_error_type: &'static str,
    /// One sentence for the agent.
    pub summary: String,
    /// What usually causes this class.
    pub likely_causes: Vec<String>,
    /// What the driver can prove about contact.
    pub contact: Contact,
    /// The runs that led here, oldest first.
    pub transcripts: Vec<Transcript>,
    /// Class-specific evidence (`rejected_commands`, `operation_result`, `erase_abort_point`, …).
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl DriverError {
    /// The public `error_type` of this failure.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::DebuggerNotFound { .. } => "debugger_not_found",
            Self::Timeout { .. } => "timeout",
            Self::Backend { .. } => "debugger_error",
            Self::Io(_) => "backend_error",
            Self::Classified(c) => c.error_type,
        }
    }

    /// What the driver knows about contact with the target. An I/O failure of the host happened before
    /// or beside the backend, so the driver cannot prove anything about it and says `Possible`; callers
    /// that know better (a version check) wrap it in their own variant.
    pub fn contact(&self) -> Contact {
        match self {
            Self::DebuggerNotFound { contact, .. }
            | Self::Timeout { contact, .. }
            | Self::Backend { contact, .. } => contact.clone(),
            Self::Io(_) => Contact::Possible,
            Self::Classified(c) => c.contact.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_maps_to_one_public_error_type() {
        let none = Contact::none("no target");
        let cases: [(DriverError, &str); 4] = [
            (
                DriverError::DebuggerNotFound {
                    detail: "x".into(),
                    contact: none.clone(),
                },
                "debugger_not_found",
            ),
            (
                DriverError::Timeout {
                    limit: Duration::from_secs(1),
                    contact: none.clone(),
                    output: String::new(),
                },
                "timeout",
            ),
            (
                DriverError::Backend {
                    detail: "x".into(),
                    contact: Contact::Possible,
                    exit_code: Some(1),
                    output: String::new(),
                },
                "debugger_error",
            ),
            (DriverError::Io(std::io::Error::other("x")), "backend_error"),
        ];
        for (error, expected) in cases {
            assert_eq!(error.error_type(), expected);
        }
    }

    #[test]
    fn an_io_failure_claims_no_proof_of_no_contact() {
        assert_eq!(
            DriverError::Io(std::io::Error::other("x")).contact(),
            Contact::Possible
        );
    }
}
