//! Firmware artifacts: the one resolver `flash_firmware`, `debug_start_session` and `artifact_upload`
//! use. An agent controls every file in the workspace, so the program flashes exactly the bytes it
//! validated and reads nothing outside the approved roots:
//!
//! 1. lexical checks on the request (control characters, traversal, allowed roots, extension, the
//!    workspace) against roots frozen when the policy is built — nothing on disk is consulted;
//! 2. a safe open ([`open`]): an `openat` chain with `O_NOFOLLOW`, a single-link regular file;
//! 3. size, digest and format read from that one descriptor;
//! 4. a copy into a private staging directory, re-hashed, and the source re-checked for replacement.
//!
//! Drivers only ever receive [`StagedArtifact::path`].

mod error;
pub mod formats;
pub mod open;
mod stage;
pub mod store;
mod uses;

use std::path::{Path, PathBuf};

use ahil_config::{Config, Validation, absolute_lexical};
use serde_json::{Map, Value, json};

pub use error::{ArtifactError, ArtifactRefusal};
pub use formats::Format;
#[cfg(test)]
pub(crate) use stage::counted;
pub use stage::{SYSTEM_TEMP, StagedArtifact, Stager};
pub use uses::{ArtifactSource, ArtifactUse, Purpose};

use open::{OpenError, Opened};

/// What a tool asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactRef<'a> {
    /// `image_path`: relative to the workspace, or absolute inside it.
    Path(&'a str),
    /// `artifact_id`: an earlier upload.
    Id(&'a str),
}

/// The artifact rules of one configuration, with every root made absolute and normalised lexically
/// once, when the policy is built: a link planted later cannot move a root.
#[derive(Debug, Clone)]
pub struct ArtifactPolicy {
    workspace: PathBuf,
    roots: Vec<PathBuf>,
    upload_dir: PathBuf,
    extensions: Vec<String>,
    max_bytes: u64,
    allow_upload: bool,
    validation: Validation,
}

impl ArtifactPolicy {
    /// Freeze the `artifacts:` and `validation:` sections of `config`.
    pub fn from_config(config: &Config) -> Self {
        let workspace = absolute_lexical(&config.workspace_root, Path::new("/"));
        let artifacts = &config.artifacts;
        Self {
            roots: artifacts
                .allowed_roots
                .iter()
                .map(|root| absolute_lexical(Path::new(root), &workspace))
                .collect(),
            upload_dir: absolute_lexical(Path::new(&artifacts.upload_directory), &workspace),
            extensions: artifacts
                .allowed_extensions
                .iter()
                .map(|e| e.to_ascii_lowercase())
                .collect(),
            max_bytes: artifacts.max_upload_size_mb.saturating_mul(1024 * 1024),
            allow_upload: artifacts.allow_upload,
            validation: config.validation.clone(),
            workspace,
        }
    }

    /// The size limit in bytes (`max_upload_size_mb` MiB), for paths and uploads alike.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The workspace root, lexically absolute.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The upload directory, lexically absolute.
    pub fn upload_dir(&self) -> &Path {
        &self.upload_dir
    }

    /// Whether `extension` (lowercased, with its dot) is allowed.
    pub fn extension_allowed(&self, extension: &str) -> bool {
        self.extensions.iter().any(|e| e == extension)
    }

    /// The `validation:` switches in force.
    pub fn validation(&self) -> &Validation {
        &self.validation
    }

    /// `path` relative to the workspace, in POSIX form, as results show it.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.workspace)
            .map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
    }
}

/// The lowercased last extension of a file name, with its dot (`""` when there is none).
pub fn extension_of(name: &str) -> String {
    Path::new(name)
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy().to_ascii_lowercase()))
        .unwrap_or_default()
}

/// Whether `id` has the shape of an artifact id: 64 lowercase hex digits and an optional extension.
pub fn is_artifact_id(id: &str) -> bool {
    let (digest, rest) = id.split_at_checked(64).unwrap_or((id, ""));
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && (rest.is_empty()
            || rest.strip_prefix('.').is_some_and(|ext| {
                !ext.is_empty()
                    && ext
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            }))
}

/// The `validation` object, in the reference's key order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checks(Map<String, Value>);

impl Checks {
    fn new(require_allowed_root: bool) -> Self {
        let mut map = Map::new();
        for key in [
            "path_traversal_safe",
            "exists",
            "allowed_root",
            "allowed_extension",
            "within_workspace",
            "sha256_computed",
        ] {
            map.insert(key.into(), Value::Bool(false));
        }
        map.insert(
            "require_allowed_root".into(),
            Value::Bool(require_allowed_root),
        );
        Self(map)
    }

    pub(crate) fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_owned(), value.into());
    }

    pub(crate) fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

/// An artifact that passed every check, read from one descriptor and held in memory; not yet staged.
#[derive(Debug)]
pub struct CheckedArtifact {
    source: &'static str,
    display: String,
    file_name: String,
    bytes: Vec<u8>,
    sha256: String,
    opened: Opened,
    components: Vec<String>,
    checks: Checks,
    report_sha256: bool,
    format: Option<Format>,
}

impl CheckedArtifact {
    /// The sha256 of the validated bytes (lowercase hex).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The validated bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The validated bytes and their sha256, for a writer that stores them.
    pub fn into_known(self) -> Known {
        Known {
            bytes: self.bytes,
            sha256: self.sha256,
        }
    }

    /// The workspace-relative path.
    pub fn display_path(&self) -> &str {
        &self.display
    }

    /// The file's own name.
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    /// The `validation` object.
    pub fn validation(&self) -> Value {
        self.checks.clone().into_value()
    }

    /// The `artifact` object of a result: workspace-relative paths only.
    pub fn report(&self) -> Value {
        let mut report = Map::new();
        report.insert("source".into(), json!(self.source));
        report.insert("path".into(), json!(self.display));
        report.insert("resolved_path".into(), json!(self.display));
        if self.report_sha256 {
            report.insert("sha256".into(), json!(self.sha256));
        }
        report.insert("integrity_sha256".into(), json!(self.sha256));
        report.insert("size_bytes".into(), json!(self.bytes.len()));
        report.insert("validation".into(), self.validation());
        Value::Object(report)
    }

    /// Copy the validated bytes into a private staging directory and prove the source was not
    /// replaced meanwhile. See [`Stager::stage`].
    pub fn stage(
        self,
        stager: &Stager,
        policy: &ArtifactPolicy,
    ) -> Result<StagedArtifact, ArtifactRefusal> {
        stager.stage(&self, policy)
    }
}

pub use ahil_config::digest::{hex, sha256_hex};

/// Resolve and check `request` without staging it.
pub fn check(
    policy: &ArtifactPolicy,
    request: ArtifactRef<'_>,
) -> Result<CheckedArtifact, ArtifactRefusal> {
    check_with(policy, request, None)
}

/// The bytes of a file this process just wrote and synced, with their sha256: a check of that
/// file takes them instead of reading and hashing the file again.
pub struct Known {
    pub bytes: Vec<u8>,
    pub sha256: String,
}

/// [`check`] of a file whose content is `known`: every path, link and size check runs on the
/// opened file as usual; the content checks run on the known bytes, which must be as long as it.
pub fn check_with(
    policy: &ArtifactPolicy,
    request: ArtifactRef<'_>,
    known: Option<Known>,
) -> Result<CheckedArtifact, ArtifactRefusal> {
    let v = &policy.validation;
    let mut checks = Checks::new(v.require_allowed_root);
    let refuse =
        |error: ArtifactError, checks: &Checks| Err(ArtifactRefusal::new(error, checks.clone()));
    let (raw, source): (String, &'static str) = match request {
        ArtifactRef::Path(raw) => (raw.to_owned(), "path"),
        ArtifactRef::Id(id) => {
            // A backstop for callers outside the pipeline; in a tool call policy has already
            // refused an ungranted artifact_id (`Action::UploadedArtifact`).
            if !policy.allow_upload {
                return refuse(ArtifactError::UploadsDisabled, &checks);
            }
            if !is_artifact_id(id) {
                return refuse(ArtifactError::BadId, &checks);
            }
            (policy.upload_dir.join(id).display().to_string(), "upload")
        }
    };
    // Control characters and NUL never name a firmware image; refuse before any filesystem call.
    if raw.chars().any(char::is_control) {
        return refuse(ArtifactError::ControlCharacters, &checks);
    }
    let traversal = raw.split(['/', '\\']).any(|segment| segment == "..");
    checks.set("path_traversal_safe", !traversal);
    let resolved = absolute_lexical(Path::new(&raw), &policy.workspace);
    let within = resolved.starts_with(&policy.workspace);
    let in_root = policy.roots.iter().any(|root| resolved.starts_with(root))
        || (policy.allow_upload && resolved.starts_with(&policy.upload_dir));
    let file_name = resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = extension_of(&file_name);
    let extension_ok = policy.extension_allowed(&extension);
    checks.set("allowed_root", in_root && !traversal);
    checks.set("allowed_extension", extension_ok);
    checks.set("within_workspace", within && !traversal);
    if traversal {
        return refuse(ArtifactError::Traversal, &checks);
    }
    if v.require_allowed_root && !in_root {
        return refuse(ArtifactError::OutsideRoots, &checks);
    }
    if v.require_allowed_extension && !extension_ok {
        return refuse(ArtifactError::Extension, &checks);
    }
    if !within {
        return refuse(ArtifactError::OutsideWorkspace, &checks);
    }
    let relative = resolved
        .strip_prefix(&policy.workspace)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let components: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let opened = match open_components(policy, &components) {
        Ok(opened) => opened,
        Err(OpenError::NotFound) => return refuse(ArtifactError::NotFound, &checks),
        Err(OpenError::Unsafe(why)) => {
            checks.set("regular_file", false);
            checks.set("single_link", false);
            checks.set(
                "backend_error",
                "Configured file must be a single-link regular file.",
            );
            return refuse(ArtifactError::UnsafeFile(why.to_owned()), &checks);
        }
        Err(OpenError::Io(error)) => {
            return refuse(ArtifactError::Unreadable(error.to_string()), &checks);
        }
    };
    checks.set("exists", true);
    checks.set("regular_file", true);
    checks.set("single_link", true);
    if opened.id.size > policy.max_bytes {
        return refuse(
            ArtifactError::TooLarge {
                bytes: opened.id.size,
                max_bytes: policy.max_bytes,
            },
            &checks,
        );
    }
    let read = match known {
        Some(known) if u64::try_from(known.bytes.len()).ok() == Some(opened.id.size) => {
            Ok(Some((known.bytes, known.sha256)))
        }
        _ => open::read_hashed(&opened.file, policy.max_bytes, opened.id.size),
    };
    let (bytes, sha256) = match read {
        Ok(Some(read)) => read,
        Ok(None) => {
            return refuse(
                ArtifactError::TooLarge {
                    bytes: policy.max_bytes.saturating_add(1),
                    max_bytes: policy.max_bytes,
                },
                &checks,
            );
        }
        Err(error) => return refuse(ArtifactError::Unreadable(error.to_string()), &checks),
    };
    checks.set("sha256_computed", v.compute_sha256);
    let format = Format::from_extension(&extension);
    if v.inspect_known_formats
        && let Some(format) = format
    {
        let verdict = format.check(&bytes, policy.max_bytes);
        checks.set(format.validation_key(), verdict.is_ok());
        if let Err(reason) = verdict {
            checks.set("format_error", reason.clone());
            return refuse(ArtifactError::Format(reason), &checks);
        }
    }
    Ok(CheckedArtifact {
        source,
        display: policy.display(&resolved),
        file_name,
        bytes,
        sha256,
        opened,
        components,
        checks,
        report_sha256: v.compute_sha256,
        format,
    })
}

/// Opens the workspace (the operator's, links followed) and walks `components` beneath it.
fn open_components(policy: &ArtifactPolicy, components: &[String]) -> Result<Opened, OpenError> {
    let base = open::open_dir(&policy.workspace)?;
    let names: Vec<&str> = components.iter().map(String::as_str).collect();
    open::open_beneath(&base, &names)
}

/// Check `request` and stage it: what `flash_firmware` and `debug_start_session` call.
pub fn resolve(
    policy: &ArtifactPolicy,
    stager: &Stager,
    request: ArtifactRef<'_>,
) -> Result<StagedArtifact, ArtifactRefusal> {
    check(policy, request)?.stage(stager, policy)
}
