//! Stage 2, snapshot: which configuration decides this call, and whether the file still says the same.
//!
//! Everything the gate needs from `ahil-config`'s loaded document goes through this module, so the
//! rest of the gate sees plain values.

use std::path::{Path, PathBuf};

use ahil_config::LoadedConfig;
use serde_json::Value;

use crate::ownership::device_keys::Nodes;

/// The config in force for one call, taken once before authorization.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// `config_in_force`: digest of the bytes this process parsed, and divergence from the file.
    pub in_force: Value,
    /// `config_status`: the file re-read now.
    pub status: Value,
    /// The file changed, vanished or became unreadable since it was parsed.
    pub stale: bool,
    /// The node each configured port's device name leads to, read once for the whole call.
    pub nodes: Nodes,
}

impl Snapshot {
    /// Re-read the file and compare it with what this process parsed.
    pub fn take(loaded: &LoadedConfig) -> Self {
        let (status, in_force) = loaded.checked();
        let status = serde_json::to_value(status).unwrap_or(Value::Null);
        let in_force = serde_json::to_value(in_force).unwrap_or(Value::Null);
        let stale = matches!(
            status.get("state").and_then(Value::as_str),
            Some("changed" | "missing" | "unreadable")
        );
        Self {
            in_force,
            status,
            stale,
            nodes: Nodes::resolve(&loaded.config),
        }
    }
}

/// The pinned executable of a debugger entry: `None` for the untouched starter entry and for an
/// entry whose toolchain could not be resolved at load (it drives nothing).
pub fn pinned_debugger_executable(loaded: &LoadedConfig, name: &str) -> Option<PathBuf> {
    loaded.executables.debugger(name).map(Path::to_path_buf)
}

/// How a path is shown in a result: relative to the workspace when inside it, `<config dir>/…` or
/// `<state root>/…` when under those (results never carry those absolute paths), else as is.
pub fn display_path(
    path: &Path,
    workspace: &Path,
    config_dir: Option<&Path>,
    state_root: &Path,
) -> String {
    if let Ok(rest) = path.strip_prefix(workspace) {
        return rest.display().to_string();
    }
    if let Ok(rest) = path.strip_prefix(state_root) {
        return format!("<state_root>/{}", rest.display());
    }
    if let Some(rest) = config_dir.and_then(|dir| path.strip_prefix(dir).ok()) {
        return format!("<config_dir>/{}", rest.display());
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_state_root_or_config_dir_are_never_shown_absolute() {
        let cfg = Path::new("/home/u/.config/agentic-hil/projects/w-1");
        let state = Path::new("/home/u/.local/state/agentic-hil");
        let in_state = state.join("x/y");
        let in_config = cfg.join(".agentic-hil-disabled-executable");
        let cases = [
            (in_state.as_path(), "<state_root>/x/y"),
            (&in_config, "<config_dir>/.agentic-hil-disabled-executable"),
            (Path::new("/w/build/fw.elf"), "build/fw.elf"),
            (Path::new("/usr/bin/openocd"), "/usr/bin/openocd"),
        ];
        for (path, shown) in cases {
            assert_eq!(display_path(path, Path::new("/w"), Some(cfg), state), shown);
        }
    }
}
