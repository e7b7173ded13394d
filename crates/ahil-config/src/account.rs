//! The home of the account this process runs as: what `~` in the operator's configuration means,
//! and where the machine-wide meeting places of every server of the account live (device locks, CAN
//! brokers).
//!
//! Not `$HOME`: an agent's `.mcp.json` sets the server's environment, and a server given another
//! HOME (its configuration still found through `XDG_CONFIG_HOME` or `AGENTIC_HIL_CONFIG`) would take
//! its locks in a folder no other server looks in, and drive a board another server holds; a
//! `state_root: ~/…` would move its evidence, incidents and quarantines to a fresh folder. The
//! password database names the account's home whatever the environment says; with the account's
//! own HOME, as the reference runs, the two are the same folder, so the reference and we still
//! exclude each other.

use std::path::{Path, PathBuf};

use crate::discover::{Environment, canonical_config_path, default_state_root, resolve_lenient};
use crate::error::{ConfigError, Refusal};

impl Environment {
    /// The account's home: the password database's entry for this process's user. A user the
    /// database does not know (a container run under a bare uid) falls back to the environment's
    /// HOME, as before there was this lookup. A test build takes `AHIL_TEST_ACCOUNT_HOME` first
    /// ([`ahil_wire::home::account_home`]), and an environment a unit test built by hand (its HOME
    /// is not the process's) is its own account.
    pub fn account_home(&self) -> PathBuf {
        let of_this_process = ahil_wire::home::process_home() == Some(self.home.as_path());
        if ahil_wire::TEST_SEAMS && !of_this_process {
            return self.home.clone();
        }
        ahil_wire::home::account_home().map_or_else(|| self.home.clone(), Path::to_path_buf)
    }
}

impl Environment {
    /// The environment `agentic-hil init` sees in the account's own shell with nothing overridden:
    /// the account's home, the XDG folders' defaults below it, no `AGENTIC_HIL_CONFIG`.
    #[must_use]
    pub fn of_account(&self) -> Self {
        Self {
            home: self.account_home(),
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            path: self.path.clone(),
        }
    }
}

/// Refuses to write a first configuration for `workspace` at `path` with `state_root` unless both
/// are where the account's own would be: the server's environment (HOME, `XDG_CONFIG_HOME`,
/// `XDG_STATE_HOME`, `AGENTIC_HIL_CONFIG`) is the agent's to set, and a file written where only
/// that server looks would shadow the one the operator keeps, or gets later from `init`.
pub fn check_first_configuration_place(
    workspace: &Path,
    env: &Environment,
    path: &Path,
    state_root: &Path,
) -> Result<(), ConfigError> {
    let account = env.of_account();
    let expected_path = canonical_config_path(workspace, &account);
    let expected_state = default_state_root(&account);
    if resolve_lenient(path) == resolve_lenient(&expected_path)
        && resolve_lenient(state_root) == resolve_lenient(&expected_state)
    {
        return Ok(());
    }
    Err(ConfigError::invalid(
        Refusal::new(
            "This server looks for its configuration where the account does not keep it (HOME, XDG_CONFIG_HOME, XDG_STATE_HOME or AGENTIC_HIL_CONFIG is overridden), so it writes none there.",
        )
        .with("path", env.display_path(path))
        .with("expected_path", env.display_path(&expected_path))
        .fix("Run `agentic-hil init` in the project from the operator's shell, or start the server without those overrides."),
    ))
}
