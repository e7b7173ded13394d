//! Where the authoritative configuration of a workspace lives.
//!
//! The file sits outside the workspace, under the user's config root, in a directory whose
//! name is derived from the workspace path, so a repository cannot ship its own policy.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{ConfigError, Refusal};
use crate::paths::{expand_tilde, normalize};

/// The process environment the configuration depends on, captured once so tests can
/// supply their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub home: PathBuf,
    pub xdg_config_home: Option<PathBuf>,
    pub xdg_state_home: Option<PathBuf>,
    /// `AGENTIC_HIL_CONFIG`.
    pub config_override: Option<OsString>,
    /// Where a program named without a path is looked up at load: [`TRUSTED_SEARCH_PATH`] in a
    /// real process (tests supply their own).
    pub path: Option<OsString>,
}

/// The directories a bare program name is looked up in when the configuration is loaded: the
/// system's own, fixed here. The process's `PATH` is never searched: it is whatever the server's
/// launcher set, and an agent's `.mcp.json` sets it. A tool installed elsewhere is named in the
/// configuration by its absolute path.
pub const TRUSTED_SEARCH_PATH: &str =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment variable that selects a configuration file explicitly.
pub const CONFIG_ENV_VAR: &str = "AGENTIC_HIL_CONFIG";

fn absolute_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

impl Environment {
    pub fn from_process() -> Self {
        Self {
            // Resolved once, and the same path every child is given (`ahil_wire::home`).
            home: ahil_wire::home::process_home()
                .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
            xdg_config_home: absolute_var("XDG_CONFIG_HOME"),
            xdg_state_home: absolute_var("XDG_STATE_HOME"),
            config_override: std::env::var_os(CONFIG_ENV_VAR),
            path: Some(OsString::from(TRUSTED_SEARCH_PATH)),
        }
    }

    /// A path as results may show it: `~/...` below home, otherwise unchanged.
    pub fn display_path(&self, p: &Path) -> String {
        for home in [self.home.clone(), resolve_lenient(&self.home)] {
            if let Ok(rest) = p.strip_prefix(&home) {
                return if rest.as_os_str().is_empty() {
                    "~".to_owned()
                } else {
                    format!("~/{}", rest.display())
                };
            }
        }
        p.display().to_string()
    }

    /// The override, if set and non-empty.
    pub(crate) fn override_value(&self) -> Option<&OsString> {
        self.config_override.as_ref().filter(|v| !v.is_empty())
    }
}

/// Canonicalizes the longest existing prefix and appends the rest, like Python's
/// non-strict `resolve()`.
pub(crate) fn resolve_lenient(p: &Path) -> PathBuf {
    let p = normalize(p);
    let mut existing = p.clone();
    let mut tail = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                tail.push(name);
                existing = parent.to_path_buf();
            }
            _ => return p,
        }
    }
}

/// Directory name for a workspace: a readable prefix plus 10 hex of its path's SHA-256.
pub(crate) fn project_leaf(workspace: &Path) -> String {
    let name = workspace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut safe = String::with_capacity(name.len());
    let mut in_run = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-') {
            safe.push(ch);
            in_run = false;
        } else if !in_run {
            safe.push('-');
            in_run = true;
        }
    }
    let safe = safe.trim_matches(|c| c == '.' || c == '-');
    let safe = if safe.is_empty() { "workspace" } else { safe };
    let digest = Sha256::digest(workspace.to_string_lossy().as_bytes());
    format!("{safe}-{}", &crate::digest::hex(&digest)[..10])
}

/// The candidate files for a workspace, best first: the XDG location, then the
/// `~/.agentic-hil/projects` fallback.
pub fn config_candidates(workspace: &Path, env: &Environment) -> Vec<PathBuf> {
    let workspace = resolve_lenient(workspace);
    let leaf = project_leaf(&workspace);
    let config_root = env
        .xdg_config_home
        .clone()
        .unwrap_or_else(|| env.home.join(".config"));
    vec![
        resolve_lenient(&config_root.join("agentic-hil").join("projects"))
            .join(&leaf)
            .join("config.yaml"),
        env.home
            .join(".agentic-hil")
            .join("projects")
            .join(&leaf)
            .join("config.yaml"),
    ]
}

/// The canonical file: the first candidate that exists, else the default location.
pub fn canonical_config_path(workspace: &Path, env: &Environment) -> PathBuf {
    let candidates = config_candidates(workspace, env);
    candidates
        .iter()
        .find(|p| p.symlink_metadata().is_ok())
        .or_else(|| candidates.first())
        .cloned()
        .unwrap_or_default()
}

/// `$XDG_STATE_HOME/agentic-hil`, else `~/.local/state/agentic-hil`.
pub fn default_state_root(env: &Environment) -> PathBuf {
    env.xdg_state_home
        .clone()
        .unwrap_or_else(|| env.home.join(".local").join("state"))
        .join("agentic-hil")
}

/// Which file to load, and whether the operator chose it explicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigLocation {
    pub path: PathBuf,
    pub from_override: bool,
}

impl ConfigLocation {
    /// The override when set (it must be absolute), otherwise the canonical path.
    pub fn select(workspace: &Path, env: &Environment) -> Result<Self, ConfigError> {
        let Some(raw) = env.override_value() else {
            return Ok(Self {
                path: canonical_config_path(workspace, env),
                from_override: false,
            });
        };
        let text = raw.to_string_lossy();
        let path = expand_tilde(&text, &env.home);
        if !path.is_absolute() {
            return Err(ConfigError::invalid(
                Refusal::new(format!("{CONFIG_ENV_VAR} must hold an absolute path."))
                    .with("path", text.into_owned())
                    .with("environment_variable", CONFIG_ENV_VAR)
                    .fix(format!(
                        "Set {CONFIG_ENV_VAR} to the full path of the file, or unset it."
                    )),
            ));
        }
        Ok(Self {
            path: normalize(&path),
            from_override: true,
        })
    }
}

/// Refuses a workspace that is the home directory or one of its ancestors: a config bound
/// there would authorize every project below it, and children would read the agent's dotfiles. Both
/// homes are judged: the HOME the server was given and the account's, which children get.
pub fn check_workspace_not_home(workspace: &Path, env: &Environment) -> Result<(), ConfigError> {
    let ws = resolve_lenient(workspace);
    for home in [&env.home, &env.account_home()] {
        check_home(&ws, &resolve_lenient(home))?;
    }
    Ok(())
}

fn check_home(ws: &Path, home: &Path) -> Result<(), ConfigError> {
    if home.starts_with(ws) {
        let summary = if home == ws {
            "The workspace is the home directory, which is not a project."
        } else {
            "The workspace contains the home directory, which is not a project."
        };
        return Err(ConfigError::workspace_is_home(
            Refusal::new(summary)
                .with("workspace_root", ws.display().to_string())
                .fix(
                    "Change into the project directory (or create one) and run the command there.",
                ),
        ));
    }
    Ok(())
}

/// Refuses a configuration file inside the workspace it would authorize (`AGENTIC_HIL_CONFIG`
/// pointing into the project), where the agent's own edit tools could widen it. `init` asks
/// before it keeps or writes one, as the load does before it reads one.
pub fn check_config_outside_workspace(
    config: &Path,
    workspace: &Path,
    env: &Environment,
) -> Result<(), ConfigError> {
    if resolve_lenient(config).starts_with(resolve_lenient(workspace)) {
        return Err(ConfigError::invalid(
            Refusal::new("The configuration must be stored outside the workspace it authorizes.")
                .with("path", env.display_path(config))
                .fix("Unset AGENTIC_HIL_CONFIG (init then writes the file outside the project), or point it outside the project."),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(home: &Path) -> Environment {
        Environment {
            home: home.to_path_buf(),
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            path: None,
        }
    }

    #[test]
    fn a_real_process_looks_programs_up_in_the_system_directories_never_in_its_path() {
        // The test runner's PATH (cargo's, rustup's, the user's) is not the trusted list.
        assert_ne!(
            std::env::var_os("PATH"),
            Some(OsString::from(TRUSTED_SEARCH_PATH))
        );
        assert_eq!(
            Environment::from_process().path,
            Some(OsString::from(TRUSTED_SEARCH_PATH))
        );
    }

    #[test]
    fn the_leaf_matches_the_reference_for_tmp_x_ws() {
        // Computed by the reference: /tmp/x/ws -> ws-13ad34c6d6.
        assert_eq!(project_leaf(Path::new("/tmp/x/ws")), "ws-13ad34c6d6");
    }

    #[test]
    fn unsafe_characters_collapse_to_one_dash_and_edges_are_trimmed() {
        let leaf = project_leaf(Path::new("/a/.my  project!!"));
        assert!(leaf.starts_with("my-project-"), "{leaf}");
        assert!(project_leaf(Path::new("/")).starts_with("workspace-"));
        assert!(project_leaf(Path::new("/x/...")).starts_with("workspace-"));
    }

    #[test]
    fn display_paths_hide_the_home_directory() {
        let e = env(Path::new("/home/op"));
        assert_eq!(
            e.display_path(Path::new("/home/op/.config/x")),
            "~/.config/x"
        );
        assert_eq!(e.display_path(Path::new("/etc/x")), "/etc/x");
    }

    #[test]
    fn state_root_follows_xdg_state_home() {
        let mut e = env(Path::new("/home/op"));
        assert_eq!(
            default_state_root(&e),
            PathBuf::from("/home/op/.local/state/agentic-hil")
        );
        e.xdg_state_home = Some(PathBuf::from("/var/st"));
        assert_eq!(default_state_root(&e), PathBuf::from("/var/st/agentic-hil"));
    }

    #[test]
    fn a_relative_override_is_refused() {
        let mut e = env(Path::new("/home/op"));
        e.config_override = Some("rel.yaml".into());
        let err = ConfigLocation::select(Path::new("/w"), &e).unwrap_err();
        assert_eq!(err.error_type(), "config_invalid");
        assert_eq!(err.details()["environment_variable"], CONFIG_ENV_VAR);
    }

    #[test]
    fn an_empty_override_means_no_override() {
        let mut e = env(Path::new("/home/op"));
        e.config_override = Some(OsString::new());
        assert!(
            !ConfigLocation::select(Path::new("/w"), &e)
                .expect("canonical")
                .from_override
        );
    }
}
