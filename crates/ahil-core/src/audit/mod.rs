//! The audit trail: evidence an agent editing the workspace cannot rewrite.
//!
//! Canonical copies live under the configured `state_root`, in a per-project namespace
//! (`projects/<first 24 hex of sha256(realpath(config) + "\0" + realpath(workspace))>`), and are always
//! written before the workspace mirrors, which are untrusted views checked against them.
//!
//! * [`safe`]: path checks, atomic writes, locked appends.
//! * [`chain`]: hash-chained JSONL logs with a digest sidecar, and their verification.
//! * [`report`]: one report per audited call, the trusted report state, and its repair.
//! * [`sink`]: the one output step every sink's writer requires ([`Scrubbed`]).
//! * [`redact`]: its redaction half (`shapes`: the credential shapes it knows by form).
//! * [`stream`]: the same pass for device output that leaves in pieces (reads, log chunks).
//! * [`errors`]: the error catalogue.

use crate::ErrorType;
use std::path::{Component, Path, PathBuf};

use ahil_config::LoadedConfig;
use serde_json::{Value, json};

pub mod chain;
pub mod error_type;
pub mod errors;
pub mod json;
mod record;
pub mod redact;
pub mod report;
pub mod safe;
mod settle;
mod shapes;
pub mod sink;
pub mod stream;

pub use chain::{ChainFault, MirrorVerdict, Sidecar, verify_chain, verify_mirror};
pub use record::{audit_broken_hook, record, unavailable};
pub use redact::{redact, redact_text};
pub use sink::{Scrubbed, Sink};
pub use stream::{MaskedStream, Pulled, StreamMask, Took};

/// Why the audit trail could not be read or written. Messages name files relative to their base
/// directory, never by absolute path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// A link, a multi-link file or a non-directory on the way.
    #[error("`{what}` {why}")]
    UnsafePath { what: String, why: &'static str },
    /// The filesystem refused.
    #[error("`{what}` could not be written or read ({class})")]
    Io {
        what: String,
        class: String,
        errno: Option<i32>,
    },
    /// A canonical log disagrees with its sidecar, or the sidecar is unreadable.
    #[error("`{what}`: {why}")]
    StateInvalid { what: String, why: String },
    /// `report-state.json` is not the document this program writes.
    #[error("`{what}`: {why}")]
    ReportStateDamaged { what: String, why: String },
}

impl AuditError {
    pub(crate) fn unsafe_path(base: &Path, path: &Path, why: &'static str) -> Self {
        Self::UnsafePath {
            what: safe::shown(base, path),
            why,
        }
    }

    pub(crate) fn io(base: &Path, path: &Path, err: &std::io::Error) -> Self {
        Self::Io {
            what: safe::shown(base, path),
            class: format!("{:?}", err.kind()),
            errno: err.raw_os_error(),
        }
    }

    /// The public error type.
    pub fn error_type(&self) -> ErrorType {
        match self {
            Self::UnsafePath { .. } => ErrorType::UnsafeConfiguredPath,
            Self::Io { .. } => ErrorType::AuditWriteFailed,
            Self::StateInvalid { .. } => ErrorType::CoordinationStateInvalid,
            Self::ReportStateDamaged { .. } => ErrorType::ReportStateDamaged,
        }
    }

    /// `audit_error` as results carry it: type, one sentence, and `error_class`/`errno` for I/O.
    pub fn to_value(&self) -> Value {
        let mut doc = json!({"error_type": self.error_type(), "summary": self.to_string()});
        if let Self::Io { class, errno, .. } = self {
            doc["error_class"] = class.clone().into();
            doc["errno"] = errno.map_or(Value::Null, Value::from);
        }
        doc
    }
}

/// Where one project's audit trail lives. Every directory is fixed when the gate starts: a
/// configuration edited later cannot move the evidence.
#[derive(Debug, Clone)]
pub struct Audit {
    state_root: PathBuf,
    project: PathBuf,
    workspace: PathBuf,
    reports_rel: String,
    logs_rel: String,
    /// The output step of every workspace view this trail writes (and of its canonical copies,
    /// which the views must equal byte for byte).
    sink: Sink,
}

impl Audit {
    /// The audit trail of a loaded configuration.
    pub fn for_config(loaded: &LoadedConfig) -> Self {
        Self::new(
            &loaded.config.state_root,
            &loaded.path,
            &loaded.workspace,
            &loaded.config.reports.directory,
            &loaded.config.logs.directory,
        )
    }

    /// The audit trail for explicit locations; `reports_dir` and `logs_dir` are workspace-relative.
    pub fn new(
        state_root: &Path,
        config_path: &Path,
        workspace: &Path,
        reports_dir: &str,
        logs_dir: &str,
    ) -> Self {
        let digest = project_digest(config_path, workspace);
        let mut sink = Sink::for_process().with_root(state_root, "<state_root>");
        if let Some(dir) = config_path.parent() {
            sink = sink.with_root(dir, "<config_dir>");
        }
        Self {
            state_root: state_root.to_path_buf(),
            project: state_root.join("projects").join(&digest[..24]),
            workspace: workspace.to_path_buf(),
            reports_rel: lexical_relative(workspace, reports_dir),
            logs_rel: lexical_relative(workspace, logs_dir),
            sink,
        }
    }

    /// The output step of this trail's writers.
    pub fn sink(&self) -> &Sink {
        &self.sink
    }

    /// The state root (trusted base of every canonical file).
    pub fn state_root(&self) -> &Path {
        &self.state_root
    }

    /// `<state_root>/projects/<P24>`.
    pub fn project_dir(&self) -> &Path {
        &self.project
    }

    /// The workspace (base of every mirror).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The workspace reports directory, workspace-relative POSIX.
    pub fn reports_rel(&self) -> &str {
        &self.reports_rel
    }

    /// The workspace logs directory, workspace-relative POSIX.
    pub fn logs_rel(&self) -> &str {
        &self.logs_rel
    }

    fn reports_dir(&self) -> PathBuf {
        self.workspace.join(&self.reports_rel)
    }

    fn logs_dir(&self) -> PathBuf {
        self.workspace.join(&self.logs_rel)
    }

    fn canonical_reports(&self) -> PathBuf {
        self.project.join("reports")
    }

    fn canonical_logs(&self) -> PathBuf {
        self.project.join("audit-logs")
    }

    /// Audit readiness, proven before an audited action starts: both workspace directories take a
    /// probe file and the report state is readable. A failure here refuses the action
    /// (`audit_unavailable`) before anything touches the bench.
    pub fn readiness(&self) -> Result<(), AuditError> {
        for dir in [self.reports_dir(), self.logs_dir()] {
            safe::ensure_dir(&self.workspace, &dir)?;
            safe::probe(&self.workspace, &dir)?;
        }
        safe::ensure_dir(&self.state_root, &self.canonical_reports())?;
        safe::ensure_dir(&self.state_root, &self.canonical_logs())?;
        report::load_state(self).map(|_| ())
    }
}

/// The full project digest: `sha256(realpath(config) + "\0" + realpath(workspace))`, lowercase hex.
pub fn project_digest(config_path: &Path, workspace: &Path) -> String {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let identity = format!(
        "{}\0{}",
        real(config_path).display(),
        real(workspace).display()
    );
    ahil_config::digest::sha256_hex(identity.as_bytes())
}

/// A configured directory as a workspace-relative POSIX path, resolved lexically (`.` and `..`
/// folded, never above the workspace) so a link created later cannot move it.
fn lexical_relative(workspace: &Path, dir: &str) -> String {
    let path = Path::new(dir);
    let rest = path.strip_prefix(workspace).unwrap_or(path);
    let mut parts: Vec<String> = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    parts.join("/")
}

/// The reference's file-name filter: anything outside `[A-Za-z0-9_.-]` becomes `_`.
pub fn safe_filename(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Test-only crash point: a child test process SIGKILLs itself here when `AHIL_AUDIT_CRASH` names
/// `point`, so a test can prove what survives a kill between two writes (no destructor, no flush).
#[cfg(test)]
pub(crate) fn crash_point(point: &str) {
    if std::env::var("AHIL_AUDIT_CRASH").is_ok_and(|v| v == point) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

#[cfg(not(test))]
pub(crate) fn crash_point(_point: &str) {}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
