//! Test fixture: a private HOME, workspace and tool directory per test, and a configuration written
//! where the loader looks for it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ahil_config::{
    Environment, LoadedConfig, canonical_config_path, default_state_root, render_init_config,
};

pub struct Fixture {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub workspace: PathBuf,
    pub tools: PathBuf,
    pub env: Environment,
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

impl Fixture {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let home = root.path().join("home");
        let workspace = root.path().join("ws");
        let tools = root.path().join("tools");
        for dir in [&home, &workspace, &tools] {
            fs::create_dir_all(dir).expect("fixture dirs");
        }
        let env = Environment {
            home: home.clone(),
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            // Only the fixture's tools: a host openocd must never leak into a verdict.
            path: Some(tools.clone().into_os_string()),
        };
        Self {
            _root: root,
            home,
            workspace,
            tools,
            env,
        }
    }

    /// Write an executable shell script into the tool directory (outside the workspace).
    pub fn tool(&self, name: &str, body: &str) -> PathBuf {
        let path = self.tools.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write tool");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod tool");
        path
    }

    /// The generated starter configuration (what `init` writes without a board).
    pub fn starter(&self) -> String {
        render_init_config(&self.workspace, &default_state_root(&self.env))
    }

    /// Write `text` as the workspace's configuration.
    pub fn write_config(&self, text: &str) -> PathBuf {
        let path = canonical_config_path(&self.workspace, &self.env);
        fs::create_dir_all(path.parent().expect("config path has a parent")).expect("config dir");
        fs::write(&path, text).expect("write config");
        path
    }

    /// The starter with one substitution per (from, to) pair applied; each must match.
    pub fn starter_with(&self, edits: &[(&str, &str)]) -> String {
        let mut text = self.starter();
        for (from, to) in edits {
            assert!(text.contains(from), "the starter has no `{from}`");
            text = text.replacen(from, to, 1);
        }
        text
    }

    pub fn load(&self) -> LoadedConfig {
        ahil_config::load_authoritative(&self.workspace, &self.env)
            .expect("the fixture config loads")
    }
}

/// The starter's executable line, to point it at a fake toolchain.
pub const NULL_EXECUTABLE: &str = "    executable: null";

pub fn executable_line(path: &Path) -> String {
    format!("    executable: \"{}\"", path.display())
}

/// What `f` answers, and the fsyncs this thread made through `fsio` while it ran.
pub fn syncs_during<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = crate::fsio::syncs_on_this_thread();
    let value = f();
    (value, crate::fsio::syncs_on_this_thread() - before)
}

/// Every file below `dir` (following no order), at any depth, that `keep` takes; an unreadable
/// directory counts as empty.
pub fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return found;
    };
    for path in entries.flatten().map(|entry| entry.path()) {
        if path.is_dir() {
            found.extend(files_under(&path, keep));
        } else if keep(&path) {
            found.push(path);
        }
    }
    found
}
