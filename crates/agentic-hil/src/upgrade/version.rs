//! Versions as this binary prints them (`agentic-hil X.Y.Z`), and asking a binary for its own.

use std::cmp::Ordering;
use std::path::Path;
use std::time::Duration;

use super::exec::{Ran, run_with_deadline};

/// How long a binary may take to print its version before we call it broken.
const VERSION_DEADLINE: Duration = Duration::from_secs(20);

/// A release number. Pre-release tags order before the release they precede, compared as text
/// (enough for the `-rc.N` tags we publish).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    numbers: [u64; 3],
    pre: Option<String>,
    text: String,
}

impl Version {
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().trim_start_matches('v');
        let (core, pre) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre.to_owned())),
            None => (text, None),
        };
        let core = core.split('+').next()?;
        let mut parts = core.split('.');
        let mut numbers = [0u64; 3];
        for slot in &mut numbers {
            *slot = parts.next()?.parse().ok()?;
        }
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            numbers,
            pre,
            text: text.to_owned(),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.numbers
            .cmp(&other.numbers)
            .then_with(|| match (&self.pre, &other.pre) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a.cmp(b),
            })
    }
}

/// The version this process runs.
pub fn running() -> Version {
    Version::parse(env!("CARGO_PKG_VERSION")).expect("the crate version is X.Y.Z")
}

/// Why a binary's version could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("it could not be started ({0})")]
    NotStarted(std::io::Error),
    #[error("`--version` did not finish within {} s", VERSION_DEADLINE.as_secs())]
    TimedOut,
    #[error("`--version` failed ({0})")]
    Failed(String),
    #[error("`--version` printed {0:?}, not `agentic-hil X.Y.Z`")]
    NotOurs(String),
}

/// Runs `binary --version` and reads an agentic-hil version from it.
pub fn probe(binary: &Path) -> Result<Version, ProbeError> {
    let ran = run_with_deadline(
        super::exec::pinned(binary).arg("--version"),
        VERSION_DEADLINE,
    )
    .map_err(ProbeError::NotStarted)?;
    let Ran::Finished(output) = ran else {
        return Err(ProbeError::TimedOut);
    };
    if !output.status.success() {
        return Err(ProbeError::Failed(output.status.to_string()));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().next().unwrap_or("").trim();
    line.strip_prefix("agentic-hil ")
        .and_then(Version::parse)
        .ok_or_else(|| ProbeError::NotOurs(line.chars().take(80).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).expect(text)
    }

    #[test]
    fn versions_order_by_number_then_release_after_its_prerelease() {
        assert!(v("0.2.0") > v("0.1.9"));
        assert!(v("1.0.0") > v("0.99.99"));
        assert!(v("0.2.0") > v("0.2.0-rc.1"));
        assert!(v("0.2.0-rc.2") > v("0.2.0-rc.1"));
        assert_eq!(v("v0.1.0").cmp(&v("0.1.0")), Ordering::Equal);
    }

    #[test]
    fn malformed_versions_are_not_versions() {
        for bad in ["", "1", "1.2", "1.2.3.4", "a.b.c", "1.2.x"] {
            assert!(Version::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_running_version_parses() {
        assert_eq!(running().as_str(), env!("CARGO_PKG_VERSION"));
    }
}
