//! `schema --output` and `mcp-config`: small documents the operator asks to have written into the workspace.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

/// What an MCP host needs to launch this server: the absolute path of this very binary.
pub fn mcp_config_snippet(workspace: &Path) -> Result<Value, Value> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|_| {
            refusal(
                "mcp_config",
                "mcp_command_untrusted",
                "The path of this agentic-hil binary could not be determined.",
                "Run the installed binary by its absolute path, then ask again.",
            )
        })?;
    if exe.starts_with(workspace) {
        // An agent can rewrite anything in the workspace, so a launcher there would let it choose
        // what the host runs as the gate.
        return Err(refusal(
            "mcp_config",
            "mcp_command_untrusted",
            "This agentic-hil binary lives inside the workspace, where an agent could replace it.",
            "Install it outside the workspace (cargo install --path crates/agentic-hil), then run mcp-config from there.",
        ));
    }
    Ok(json!({
        "mcpServers": {
            "agentic-hil": {
                "command": exe.to_string_lossy(),
                "args": ["mcp-stdio"],
            }
        }
    }))
}

/// Writes `document` to `output` (relative to the workspace) atomically; refuses a path outside the
/// workspace, through a symlink, or an existing file without `force`.
pub fn write_output(
    workspace: &Path,
    output: &Path,
    document: &Value,
    force: bool,
    what: &str,
) -> anyhow::Result<Value> {
    write_output_with(workspace, output, document, (force, what), || {})
}

/// [`write_output`], running `between` after the checks and before the write (a test swaps a
/// folder for a link there): the checks name what is wrong, the write itself goes beneath the
/// workspace without following a link, so a folder swapped in after them cannot redirect it.
fn write_output_with(
    workspace: &Path,
    output: &Path,
    document: &Value,
    (force, what): (bool, &str),
    between: impl FnOnce(),
) -> anyhow::Result<Value> {
    let tool = what.to_string();
    let Some(target) = inside_workspace(workspace, output) else {
        return Ok(refusal(
            &tool,
            "unsafe_configured_path",
            "The output path leaves the workspace.",
            "Name a file inside the workspace.",
        ));
    };
    let shown = display_relative(workspace, &target);
    if has_symlink_component(workspace, &target) {
        return Ok(refusal(
            &tool,
            "unsafe_configured_path",
            "The output path passes through a symbolic link.",
            "Name a path whose directories are real directories.",
        ));
    }
    if target.symlink_metadata().is_ok() && !force {
        return Ok(refusal(
            &tool,
            &format!("{what}_exists"),
            &format!("{shown} already exists."),
            "Pass --force to replace it, or name another file.",
        ));
    }
    let mut text = serde_json::to_string_pretty(document)?;
    text.push('\n');
    between();
    let relative = target.strip_prefix(workspace).unwrap_or(&target);
    if let Err(err) = ahil_gate::fsio::write_beneath(workspace, relative, text.as_bytes(), || {}) {
        return Ok(refusal(
            &tool,
            "unsafe_configured_path",
            &format!("{shown} was not written: {err}."),
            "Name a path whose directories are real directories.",
        ));
    }
    Ok(json!({
        "ok": true,
        "tool": tool,
        "summary": format!("Wrote {shown}."),
        "path": shown,
    }))
}

/// A command's refusal document, with the one next step it names: the shape every local command
/// (`mcp-config`, `schema --output`, the installers) refuses with.
pub fn refusal(tool: &str, error_type: &str, summary: &str, remediation: &str) -> Value {
    json!({
        "ok": false,
        "tool": tool,
        "error_type": error_type,
        "summary": summary,
        "remediation": [remediation],
    })
}

/// Lexically resolves `output` against the workspace (no symlinks followed) and keeps it only if it
/// stays inside.
fn inside_workspace(workspace: &Path, output: &Path) -> Option<PathBuf> {
    let mut resolved = if output.is_absolute() {
        PathBuf::new()
    } else {
        workspace.to_path_buf()
    };
    for component in output.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => resolved = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(part) => resolved.push(part),
        }
    }
    (resolved.starts_with(workspace) && resolved != workspace).then_some(resolved)
}

fn has_symlink_component(workspace: &Path, target: &Path) -> bool {
    let Ok(rest) = target.strip_prefix(workspace) else {
        return true;
    };
    let mut current = workspace.to_path_buf();
    for part in rest.components() {
        current.push(part);
        match current.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

fn display_relative(workspace: &Path, target: &Path) -> String {
    target.strip_prefix(workspace).map_or_else(
        |_| target.display().to_string(),
        |p| p.display().to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_climbs_out_of_the_workspace_is_not_inside_it() {
        let ws = Path::new("/w/project");
        assert_eq!(inside_workspace(ws, Path::new("../x.json")), None);
        assert_eq!(inside_workspace(ws, Path::new("/etc/passwd")), None);
        assert_eq!(
            inside_workspace(ws, Path::new("docs/../schema.json")),
            Some(PathBuf::from("/w/project/schema.json"))
        );
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_the_checks_never_leads_the_write_outside() {
        let root = tempfile::tempdir().expect("temp dir");
        let outside = tempfile::tempdir().expect("outside");
        let ws = root.path();
        std::fs::create_dir(ws.join("docs")).expect("docs");
        let doc = write_output_with(
            ws,
            Path::new("docs/schema.json"),
            &json!({}),
            (false, "schema"),
            || {
                std::fs::rename(ws.join("docs"), ws.join("moved")).expect("move");
                std::os::unix::fs::symlink(outside.path(), ws.join("docs")).expect("link");
            },
        )
        .expect("an answer");
        let there: Vec<_> = std::fs::read_dir(outside.path()).expect("list").collect();
        assert!(there.is_empty(), "written outside the workspace: {there:?}");
        assert_eq!(doc["error_type"], "unsafe_configured_path", "{doc}");
    }

    #[test]
    fn the_workspace_itself_is_not_an_output_file() {
        assert_eq!(inside_workspace(Path::new("/w/p"), Path::new(".")), None);
    }
}
