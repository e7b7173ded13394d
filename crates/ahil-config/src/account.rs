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

use std::path::PathBuf;

use crate::discover::Environment;

impl Environment {
    /// The account's home: the password database's entry for this process's user. A user the
    /// database does not know (a container run under a bare uid) falls back to the environment's
    /// HOME, as before there was this lookup. A debug build takes `AHIL_TEST_ACCOUNT_HOME` when set,
    /// else the environment's HOME.
    pub fn account_home(&self) -> PathBuf {
        if cfg!(debug_assertions) {
            return std::env::var_os(ahil_wire::home::TEST_ACCOUNT_HOME)
                .filter(|v| !v.is_empty())
                .map_or_else(|| self.home.clone(), PathBuf::from);
        }
        ahil_wire::home::password_database_home().unwrap_or_else(|| self.home.clone())
    }
}
