//! Parsing a document and loading the authoritative configuration of a workspace.

use crate::digest::hex;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::discover::{
    ConfigLocation, Environment, canonical_config_path, check_workspace_not_home, resolve_lenient,
};
use crate::error::{ConfigError, Refusal};
use crate::model::Config;
use crate::node::{MAX_CONFIG_BYTES, Path as KeyPath, parse_yaml};
use crate::paths::{WalkError, is_within, walk_no_links};
use crate::patterns::Pattern;
use crate::pin::{PinnedExecutables, check_workspace_paths, pin_executables};
use crate::precheck::precheck;
use crate::schema::config_spec;
use crate::spec::{Problem, check};
use crate::{rules, time};

/// A configuration loaded for a workspace, with what it was loaded from.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub config: Config,
    pub path: PathBuf,
    /// `path` as results may show it (`~/...`).
    pub display_path: String,
    /// `sha256:<hex>` of the exact bytes parsed.
    pub digest: String,
    pub loaded_at: String,
    pub workspace: PathBuf,
    pub from_override: bool,
    /// Whether the file wrote `recovery.auto_recover` (otherwise the default applies).
    pub auto_recover_explicit: bool,
    pub executables: PinnedExecutables,
}

/// `sha256:` digest of bytes, as the reference writes it.
pub fn digest_bytes(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// Parses and checks a document; `~` in the roots is the account's home.
pub fn parse_config(bytes: &[u8]) -> Result<Config, ConfigError> {
    parse_document(bytes, &Environment::from_process().account_home()).map(|(c, _)| c)
}

/// The document checks (§2.3 1-18), with `home` (the account's) for `~` in the roots. Returns the
/// config and whether `auto_recover` was set.
pub(crate) fn parse_document(bytes: &[u8], home: &Path) -> Result<(Config, bool), ConfigError> {
    if bytes.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::invalid(
            Refusal::new("The configuration file is larger than any real configuration (4 MiB).")
                .with("bytes", bytes.len()),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        ConfigError::unreadable(
            Refusal::new("The configuration file is not UTF-8 text.").with(
                "backend_error",
                format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            ),
        )
    })?;
    let root = parse_yaml(text)?;
    precheck(&root)?;
    let mut problems = Vec::new();
    let value = check(&root, config_spec(), &KeyPath::root(), &mut problems);
    if let Some(first) = first_problem(problems) {
        return Err(problem_error(first));
    }
    let mut cfg: Config = serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        ConfigError::invalid(
            Refusal::new(format!("`{field}` holds a value out of range."))
                .at(if field == "." { "$".to_owned() } else { field })
                .with("reason", e.into_inner().to_string()),
        )
    })?;
    for bus in cfg.can_buses.values_mut() {
        bus.settle_defaults();
    }
    for ext in &mut cfg.artifacts.allowed_extensions {
        *ext = ext.to_lowercase();
    }
    rules::check_roots(&mut cfg, home)?;
    rules::check_entries(&cfg)?;
    let explicit = root
        .get("recovery")
        .and_then(|r| r.get("auto_recover"))
        .is_some();
    Ok((cfg, explicit))
}

fn first_problem(mut problems: Vec<Problem>) -> Option<Problem> {
    // The reference reports the first error in path order; the sort is stable, so at one
    // path the first problem found (the type check) wins.
    problems.sort_by(|a, b| a.path().cmp(b.path()));
    problems.into_iter().next()
}

fn problem_error(p: Problem) -> ConfigError {
    let field = p.path().to_string();
    let r = match p {
        Problem::Unknown {
            parent,
            rejected,
            allowed,
            ..
        } => {
            let place = if parent.is_root() {
                "at the top level".to_owned()
            } else {
                format!("under {parent}")
            };
            let names = rejected
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let noun = if rejected.len() == 1 {
                "field"
            } else {
                "fields"
            };
            Refusal::new(format!("Unknown configuration {noun} {names} {place}."))
                .with("rejected_fields", json!(rejected))
                .with("allowed_fields", json!(allowed))
                .fix("Compare `rejected_fields` with `allowed_fields`; a newer release may have written the key (then upgrade).")
        }
        Problem::WrongType {
            expected, value, ..
        } => {
            let mut r = Refusal::new(format!("`{field}` has the wrong type."));
            r = if expected.len() == 1 {
                r.with("expected_type", expected[0])
            } else {
                r.with("expected_type", json!(expected))
            };
            if let Some(v) = value {
                r = r.with("value", v);
            }
            r
        }
        Problem::Choice { allowed, value, .. } => {
            Refusal::new(format!("`{field}` has an unsupported value."))
                .with("allowed_values", json!(allowed))
                .with("value", value)
        }
        Problem::Bound {
            validator,
            limit,
            value,
            ..
        } => {
            let rel = match validator {
                "minimum" => "at least",
                "maximum" => "at most",
                _ => "greater than",
            };
            Refusal::new(format!("`{field}` must be {rel} {limit}."))
                .with("validator", validator)
                .with("limit", limit)
                .with("value", value)
        }
        Problem::Pattern { value, .. } => {
            Refusal::new(format!("`{field}` does not have the allowed form."))
                .with("validator", "pattern")
                .with("value", value)
        }
        Problem::Name { value, pattern, .. } => Refusal::new(match pattern {
            Pattern::Channel => {
                format!("Channel keys under `{field}` are channel numbers counted from 1.")
            }
            _ => format!(
                "An entry name under `{field}` may use only letters, digits, `_`, `.` and `-`."
            ),
        })
        .with("validator", "pattern")
        .with("value", value),
        Problem::Required { missing, .. } => Refusal::new(format!(
            "Required key {} is missing{}.",
            missing
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if field == "$" {
                String::new()
            } else {
                format!(" under `{field}`")
            }
        ))
        .with("validator", "required")
        .with("missing", json!(missing)),
        Problem::TooShort {
            validator, value, ..
        } => Refusal::new(format!("`{field}` must not be empty."))
            .with("validator", validator)
            .with("value", value),
    };
    ConfigError::invalid(r.at(field))
}

fn read_error(e: &io::Error, shown: &str) -> ConfigError {
    match e.kind() {
        io::ErrorKind::NotFound => ConfigError::not_found(
            Refusal::new("No configuration file exists at the expected location.")
                .with("path", shown.to_owned()),
        ),
        _ => ConfigError::unreadable(
            Refusal::new("The configuration file could not be read.")
                .with("path", shown.to_owned())
                .with("backend_error", e.kind().to_string()),
        ),
    }
}

/// Reads and parses one file (no workspace binding, no pinning).
pub fn load_config_file(path: &Path) -> Result<Config, ConfigError> {
    let env = Environment::from_process();
    let shown = env.display_path(path);
    let md = fs::metadata(path).map_err(|e| read_error(&e, &shown))?;
    if !md.is_file() {
        return Err(ConfigError::unreadable(
            Refusal::new("The configuration path is not a regular file.").with("path", shown),
        ));
    }
    let bytes = fs::read(path).map_err(|e| read_error(&e, &shown))?;
    parse_document(&bytes, &env.account_home()).map(|(c, _)| c)
}

/// Opens the file refusing links on the way, checks it is one single-link regular file,
/// and returns its bytes.
pub(crate) fn read_config_bytes(path: &Path, shown: &str) -> Result<Vec<u8>, ConfigError> {
    match walk_no_links(path, false) {
        Ok(()) => {}
        Err(WalkError::Unsafe) => {
            return Err(ConfigError::unsafe_path(
                Refusal::new(
                    "The configuration path contains a symbolic link or a non-directory component.",
                )
                .with("path", shown.to_owned()),
            ));
        }
        Err(WalkError::Missing) => {
            return Err(read_error(&io::Error::from(io::ErrorKind::NotFound), shown));
        }
        Err(WalkError::Io(e)) => return Err(read_error(&e, shown)),
    }
    let before = fs::symlink_metadata(path).map_err(|e| read_error(&e, shown))?;
    if !before.is_file() {
        return Err(ConfigError::unreadable(
            Refusal::new("The configuration path is not a regular file.")
                .with("path", shown.to_owned()),
        ));
    }
    if before.nlink() != 1 {
        return Err(ConfigError::invalid(
            Refusal::new("The configuration must be a single-link regular file; this one has other hard links.")
                .with("path", shown.to_owned())
                .fix("Copy the file to a fresh one instead of linking it."),
        ));
    }
    after_check();
    // A FIFO swapped in after the check is opened without waiting for a writer (a plan lives in the
    // agent's workspace, which it can change at any moment), a link without being followed; the
    // identity check below refuses either.
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOFOLLOW).bits().cast_signed())
        .open(path)
        .map_err(|e| read_error(&e, shown))?;
    let after = f.metadata().map_err(|e| read_error(&e, shown))?;
    // The file we opened must be the one we inspected; otherwise it was swapped in between. A
    // swapped-in file can reuse the freed inode number, so what was opened is judged itself too.
    if after.dev() != before.dev()
        || after.ino() != before.ino()
        || !after.is_file()
        || after.nlink() != 1
    {
        return Err(ConfigError::unsafe_path(
            Refusal::new("The configuration file changed while it was being opened.")
                .with("path", shown.to_owned()),
        ));
    }
    let mut bytes = Vec::new();
    f.by_ref()
        .take(u64::try_from(MAX_CONFIG_BYTES).unwrap_or(u64::MAX) + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| read_error(&e, shown))?;
    Ok(bytes)
}

/// Creates the state root if needed and proves it writable, refusing links on the way.
pub(crate) fn prepare_state_root(state_root: &Path, env: &Environment) -> Result<(), ConfigError> {
    let shown = env.display_path(state_root);
    let unsafe_err = || {
        ConfigError::unsafe_path(
            Refusal::new("`state_root` contains a symbolic link or a non-directory component.")
                .at("state_root")
                .with("path", shown.clone()),
        )
    };
    let invalid = |e: &io::Error| {
        ConfigError::invalid(
            Refusal::new("`state_root` cannot be created or written.")
                .at("state_root")
                .with("path", shown.clone())
                .with("backend_error", e.kind().to_string())
                .fix("Make the directory writable for this user, or choose another state_root."),
        )
    };
    match walk_no_links(state_root, true) {
        Ok(()) | Err(WalkError::Missing) => {}
        Err(WalkError::Unsafe) => return Err(unsafe_err()),
        Err(WalkError::Io(e)) => return Err(invalid(&e)),
    }
    if !state_root.exists() {
        let mut b = fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.recursive(true)
            .create(state_root)
            .map_err(|e| invalid(&e))?;
        walk_no_links(state_root, false).map_err(|_| unsafe_err())?;
    }
    if !state_root.is_dir() {
        return Err(unsafe_err());
    }
    let probe = state_root.join(format!(
        ".agentic-hil-write-probe-{}-{}",
        std::process::id(),
        hex(&Sha256::digest(time::utc_now().as_bytes()))[..8].to_owned()
    ));
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| invalid(&e))?;
    fs::remove_file(&probe).map_err(|e| invalid(&e))?;
    Ok(())
}

/// Loads the configuration in force for `workspace`, with every check of §2.2 in order.
pub fn load_authoritative(
    workspace: &Path,
    env: &Environment,
) -> Result<LoadedConfig, ConfigError> {
    let (workspace, loc) = locate(workspace, env)?;
    let shown = env.display_path(&loc.path);
    let bytes = read_config_bytes(&loc.path, &shown)?;
    admit_located(&bytes, workspace, loc, env)
}

/// The startup check of a document that is about to replace the file at `path`: exactly what
/// `load_authoritative` would check of those bytes, so a write never leaves a file the next start
/// refuses. `path` must be the file a start in `workspace` reads.
pub fn admit(
    bytes: &[u8],
    workspace: &Path,
    path: &Path,
    env: &Environment,
) -> Result<LoadedConfig, ConfigError> {
    let (workspace, loc) = locate(workspace, env)?;
    if resolve_lenient(&loc.path) != resolve_lenient(path) {
        return Err(ConfigError::invalid(
            Refusal::new("The file being written is not the one a start in this workspace reads.")
                .with("path", env.display_path(path))
                .with("expected_path", env.display_path(&loc.path)),
        ));
    }
    // The bytes are new, but the path they land at is the one a start opens refusing links.
    if let Err(WalkError::Unsafe) = walk_no_links(path, false) {
        return Err(ConfigError::unsafe_path(
            Refusal::new(
                "The configuration path contains a symbolic link or a non-directory component.",
            )
            .with("path", env.display_path(path)),
        ));
    }
    admit_located(bytes, workspace, loc, env)
}

/// The workspace, resolved, and the configuration file a start there reads.
fn locate(workspace: &Path, env: &Environment) -> Result<(PathBuf, ConfigLocation), ConfigError> {
    let workspace = workspace.canonicalize().map_err(|e| {
        ConfigError::invalid(
            Refusal::new("The workspace directory does not exist or cannot be resolved.")
                .with("workspace", workspace.display().to_string())
                .with("backend_error", e.kind().to_string()),
        )
    })?;
    check_workspace_not_home(&workspace, env)?;
    let loc = ConfigLocation::select(&workspace, env)?;
    Ok((workspace, loc))
}

/// Every check of a start after the file's bytes are read: the document, the machine, the
/// workspace binding, the pinned programs and the device identities.
fn admit_located(
    bytes: &[u8],
    workspace: PathBuf,
    loc: ConfigLocation,
    env: &Environment,
) -> Result<LoadedConfig, ConfigError> {
    let shown = env.display_path(&loc.path);
    let (mut cfg, auto_recover_explicit) =
        parse_document(bytes, &env.account_home()).map_err(|e| with_path(e, &shown))?;

    // Machine checks: the workspace named by the file exists, the state root is usable.
    let ws_real = cfg.workspace_root.canonicalize().map_err(|_| {
        ConfigError::invalid(
            Refusal::new("`workspace_root` must be an existing directory.")
                .at("workspace_root")
                .with("value", cfg.workspace_root.display().to_string()),
        )
    })?;
    if !ws_real.is_dir() {
        return Err(ConfigError::invalid(
            Refusal::new("`workspace_root` must be an existing directory.").at("workspace_root"),
        ));
    }
    prepare_state_root(&cfg.state_root, env)?;

    let real_path = loc.path.canonicalize().unwrap_or_else(|_| loc.path.clone());
    if is_within(&loc.path, &ws_real)
        || is_within(&real_path, &ws_real)
        || is_within(&loc.path, &cfg.workspace_root)
    {
        return Err(ConfigError::invalid(
            Refusal::new("The configuration must be stored outside the workspace it authorizes.")
                .with("path", shown)
                .with("workspace_root", ws_real.display().to_string())
                .fix("Move it to the path `agentic-hil init` prints, or point AGENTIC_HIL_CONFIG outside the project."),
        ));
    }
    if ws_real != workspace {
        return Err(ConfigError::invalid(
            Refusal::new("The configuration is bound to a different workspace.")
                .with("path", shown)
                .with("workspace_root", ws_real.display().to_string())
                .with("expected_workspace", workspace.display().to_string())
                .fix("Run from the workspace the file names, or run `agentic-hil init` here."),
        ));
    }
    if !loc.from_override {
        let canonical = canonical_config_path(&workspace, env);
        if resolve_lenient(&real_path) != resolve_lenient(&canonical) {
            return Err(ConfigError::invalid(
                Refusal::new(
                    "The discovered configuration is not the canonical file for this workspace.",
                )
                .with("path", shown)
                .with("expected_path", env.display_path(&canonical)),
            ));
        }
    }
    cfg.workspace_root = ws_real;
    let executables = pin_executables(&cfg, env)?;
    check_workspace_paths(&cfg)?;
    let pinned = |name: &str| executables.debugger(name).map(|p| p.display().to_string());
    rules::check_debugger_collisions(&cfg, Some(&pinned))?;

    Ok(LoadedConfig {
        config: cfg,
        display_path: shown,
        path: loc.path,
        digest: digest_bytes(bytes),
        loaded_at: time::utc_now(),
        workspace,
        from_override: loc.from_override,
        auto_recover_explicit,
        executables,
    })
}

/// Document refusals name the file they came from (as a display path).
fn with_path(e: ConfigError, shown: &str) -> ConfigError {
    let add = |mut r: Box<Refusal>| {
        r.details.entry("path").or_insert_with(|| json!(shown));
        r
    };
    match e {
        ConfigError::Invalid(r) => ConfigError::Invalid(add(r)),
        ConfigError::NotFound(r) => ConfigError::NotFound(add(r)),
        ConfigError::Unreadable(r) => ConfigError::Unreadable(add(r)),
        ConfigError::UnsafePath(r) => ConfigError::UnsafePath(add(r)),
        ConfigError::WorkspaceIsHome(r) => ConfigError::WorkspaceIsHome(add(r)),
    }
}

/// Where [`read_config_bytes`]'s checks by path end and its open begins (a test swaps the file
/// there).
fn after_check() {
    #[cfg(test)]
    tests::AFTER_CHECK.with(|hook| {
        if let Some(hook) = hook.borrow_mut().take() {
            hook();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        pub(super) static AFTER_CHECK: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
    }

    #[test]
    fn a_fifo_swapped_in_after_the_check_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("plan.yaml");
        fs::write(&path, "version: 5\n").expect("plan");
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let read = path.clone();
        // The hook is the reading thread's own: it runs between the check and the open.
        std::thread::spawn(move || {
            let swapped = read.clone();
            AFTER_CHECK.with(|hook| {
                *hook.borrow_mut() = Some(Box::new(move || {
                    fs::remove_file(&swapped).expect("remove");
                    rustix::fs::mknodat(
                        rustix::fs::CWD,
                        &swapped,
                        rustix::fs::FileType::Fifo,
                        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
                        0,
                    )
                    .expect("fifo");
                }));
            });
            let _ = done_tx.send(read_config_bytes(&read, "plan.yaml").is_err());
        });
        let answered = done_rx.recv_timeout(std::time::Duration::from_secs(5));
        if answered.is_err() {
            // Release the reader blocked on the FIFO before failing.
            let _ = fs::OpenOptions::new().write(true).open(&path);
        }
        assert_eq!(
            answered,
            Ok(true),
            "the read hung on the FIFO or accepted it"
        );
    }
}
