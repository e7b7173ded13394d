//! The program a host will launch as the gate. A host runs it with the operator's rights at every
//! session start, so it must be a fixed file an agent cannot swap.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub struct Refusal {
    pub error_type: &'static str,
    pub summary: String,
    pub remediation: &'static str,
}

/// This binary (or `requested`), resolved, checked to be an absolute executable file outside the
/// system temp dir and outside the workspace.
pub fn resolve(workspace: &Path, requested: Option<&Path>) -> Result<String, Refusal> {
    let untrusted = |summary: String| Refusal {
        error_type: "mcp_command_untrusted",
        summary,
        remediation: "Run the installed agentic-hil by its absolute path (cargo install --locked --path crates/agentic-hil), then run this again.",
    };
    let candidate = match requested {
        Some(path) if !path.is_absolute() => {
            return Err(untrusted(format!(
                "The launcher {} is not an absolute path.",
                path.display()
            )));
        }
        Some(path) => path.to_path_buf(),
        None => std::env::current_exe()
            .map_err(|_| untrusted("The path of this agentic-hil binary is unknown.".to_owned()))?,
    };
    let path = std::fs::canonicalize(&candidate).map_err(|_| {
        untrusted(format!(
            "The launcher {} does not resolve to a file.",
            candidate.display()
        ))
    })?;
    let executable = std::fs::metadata(&path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
    if !executable {
        return Err(untrusted(format!(
            "The launcher {} is not an executable file.",
            path.display()
        )));
    }
    let unsafe_place = |summary: String| Refusal {
        error_type: "unsafe_configured_path",
        summary,
        remediation: "Install agentic-hil at a fixed place outside the workspace and the temp directory (cargo install --locked --path crates/agentic-hil), then run the installed copy.",
    };
    if path.starts_with(workspace) {
        return Err(unsafe_place(
            "The launcher lives inside the workspace, where an agent could replace it.".to_owned(),
        ));
    }
    if under_temp_dir(&path) {
        return Err(unsafe_place(format!(
            "The launcher {} is under the temp directory, which is cleaned and writable by others.",
            path.display()
        )));
    }
    path.into_os_string().into_string().map_err(|_| {
        untrusted(
            "The launcher's path is not valid UTF-8, which host files cannot hold.".to_owned(),
        )
    })
}

/// Under this process's temp dir (`TMPDIR`, else `/tmp`), as the host that runs the launcher sees it.
fn under_temp_dir(path: &Path) -> bool {
    let temp = std::env::temp_dir();
    let resolved: PathBuf = std::fs::canonicalize(&temp).unwrap_or(temp);
    path.starts_with(&resolved)
}
