//! Whether the file on disk is still the one in force.
//!
//! A running server keeps what it parsed at startup; these answers compare that with the
//! bytes on disk now, by digest, on every call.

use std::io;

use serde::Serialize;

use crate::load::{LoadedConfig, digest_bytes, read_config_bytes};
use crate::time::utc_now;

/// How the file on disk relates to the loaded configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileState {
    Unchanged,
    Changed,
    Missing,
    Unreadable,
    /// The configuration did not come from a file this process read.
    Unknown,
}

impl FileState {
    /// A changed, missing or unreadable file means the process enforces stale policy.
    pub fn reload_required(self) -> bool {
        matches!(self, Self::Changed | Self::Missing | Self::Unreadable)
    }

    /// The `error_type` results carry while stale.
    pub fn error_type(self) -> Option<&'static str> {
        match self {
            Self::Changed => Some("config_stale"),
            Self::Missing => Some("config_file_not_found"),
            Self::Unreadable => Some("config_unreadable"),
            Self::Unchanged | Self::Unknown => None,
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Self::Unchanged => "The file on disk is byte-for-byte the configuration in force.",
            Self::Changed => "The file on disk changed since it was loaded; restart to enforce it.",
            Self::Missing => "The configuration file is gone; the loaded copy is still in force.",
            Self::Unreadable => {
                "The configuration file cannot be read now; the loaded copy is still in force."
            }
            Self::Unknown => "This configuration was not loaded from a file.",
        }
    }
}

/// `config_status`, as results and `doctor` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigStatus {
    pub path: String,
    pub digest_algorithm: &'static str,
    pub loaded_digest: String,
    pub loaded_at: String,
    pub description_source: &'static str,
    pub current_digest: Option<String>,
    pub state: FileState,
    pub reload_required: bool,
    pub checked_at: String,
    pub summary: String,
}

/// `config_in_force`, recorded in every report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigInForce {
    pub path: String,
    pub digest_algorithm: &'static str,
    pub digest: String,
    pub description_source: &'static str,
    pub file_state: FileState,
    pub file_digest: Option<String>,
    pub diverged_from_file: bool,
    pub checked_at: String,
}

impl LoadedConfig {
    fn current(&self) -> (FileState, Option<String>) {
        match read_config_bytes(&self.path, &self.display_path) {
            Ok(bytes) => {
                let d = digest_bytes(&bytes);
                let state = if d == self.digest {
                    FileState::Unchanged
                } else {
                    FileState::Changed
                };
                (state, Some(d))
            }
            Err(e) if e.error_type() == "config_file_not_found" => (FileState::Missing, None),
            Err(_) => match std::fs::symlink_metadata(&self.path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => (FileState::Missing, None),
                _ => (FileState::Unreadable, None),
            },
        }
    }

    /// Re-reads the file now and compares digests.
    pub fn status(&self) -> ConfigStatus {
        self.checked().0
    }

    /// What a report records about the policy it ran under.
    pub fn in_force(&self) -> ConfigInForce {
        self.checked().1
    }

    /// Both views of one re-read of the file: a call needs the two, and each read walks the path
    /// component by component and hashes the whole file.
    pub fn checked(&self) -> (ConfigStatus, ConfigInForce) {
        let (state, current_digest) = self.current();
        let checked_at = utc_now();
        let in_force = ConfigInForce {
            path: self.display_path.clone(),
            digest_algorithm: "sha256",
            digest: self.digest.clone(),
            description_source: "startup",
            file_state: state,
            file_digest: current_digest.clone(),
            diverged_from_file: state != FileState::Unchanged,
            checked_at: checked_at.clone(),
        };
        let status = ConfigStatus {
            path: self.display_path.clone(),
            digest_algorithm: "sha256",
            loaded_digest: self.digest.clone(),
            loaded_at: self.loaded_at.clone(),
            description_source: "startup",
            current_digest,
            state,
            reload_required: state.reload_required(),
            checked_at,
            summary: state.summary().to_owned(),
        };
        (status, in_force)
    }
}
