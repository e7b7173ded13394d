//! Where `debug_dump_symbol_ihex` may write: a `.hex`/`.ihex` path inside the workspace (and inside
//! `artifacts.allowed_roots` while `validation.require_allowed_root`), with no `..` segment and no link on
//! the way, so an agent cannot aim the dump at a file outside the project.

use crate::ErrorType;
use std::path::{Component, Path, PathBuf};

use ahil_config::Config;

use crate::envelope::Outcome;
use ahil_config::absolute_lexical;

/// A checked output path.
#[derive(Debug, Clone)]
pub struct Output {
    pub path: PathBuf,
    pub display: String,
    workspace: PathBuf,
}

fn refused(tool: &str, summary: &str) -> Box<Outcome> {
    Box::new(
        Outcome::refused(tool, ErrorType::OutputValidationFailed, summary)
            .with_remediation([
                "Give a workspace-relative path ending .hex or .ihex under one of artifacts.allowed_roots.",
            ])
            .not_contacted(),
    )
}

/// Checks `text` against the configuration's rules; touches no file.
pub fn check(tool: &str, config: &Config, text: &str) -> Result<Output, Box<Outcome>> {
    let given = Path::new(text);
    // A newline or an escape in a file name would forge lines and colours wherever the name is
    // shown (a terminal's listing, a CI log); no dump needs one.
    if text.chars().any(char::is_control) {
        return Err(refused(
            tool,
            "output_path may not contain control characters.",
        ));
    }
    if given.components().any(|c| c == Component::ParentDir) {
        return Err(refused(tool, "output_path may not contain a `..` segment."));
    }
    let extension = given
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !matches!(extension.as_deref(), Some("hex" | "ihex")) {
        return Err(refused(tool, "output_path must end .hex or .ihex."));
    }
    let workspace = absolute_lexical(&config.workspace_root, Path::new("/"));
    let path = absolute_lexical(given, &workspace);
    if !path.starts_with(&workspace) || path == workspace {
        return Err(refused(tool, "output_path must lie inside the workspace."));
    }
    if config.validation.require_allowed_root
        && !config
            .artifacts
            .allowed_roots
            .iter()
            .any(|root| path.starts_with(absolute_lexical(Path::new(root), &workspace)))
    {
        return Err(refused(
            tool,
            "output_path must lie under one of artifacts.allowed_roots.",
        ));
    }
    let display = path
        .strip_prefix(&workspace)
        .map_or_else(|_| text.to_owned(), |p| p.display().to_string());
    Ok(Output {
        path,
        display,
        workspace,
    })
}

impl Output {
    /// Creates the missing folders and replaces the file atomically, refusing a link anywhere below the
    /// workspace on the way.
    pub fn write(&self, text: &str) -> Result<(), String> {
        self.write_with(text, || {})
    }

    /// [`Output::write`], running `between` after the folders are opened and before the file is
    /// written (tests swap a folder for a link there).
    fn write_with(&self, text: &str, between: impl FnOnce()) -> Result<(), String> {
        let relative = self
            .path
            .strip_prefix(&self.workspace)
            .map_err(|_| "the path left the workspace".to_owned())?;
        crate::fsio::write_beneath(&self.workspace, relative, text.as_bytes(), between)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace with `fw/out/` and a folder outside it, and the output `fw/out/dump.hex`.
    /// Whether nothing was written in `dir`.
    fn is_empty(dir: &Path) -> bool {
        std::fs::read_dir(dir)
            .expect("a directory")
            .next()
            .is_none()
    }

    fn world() -> (tempfile::TempDir, PathBuf, PathBuf, Output) {
        let root = tempfile::tempdir().expect("temp dir");
        let workspace = root.path().join("ws");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(workspace.join("fw/out")).expect("fw/out");
        std::fs::create_dir(&outside).expect("outside");
        let output = Output {
            path: workspace.join("fw/out/dump.hex"),
            display: "fw/out/dump.hex".to_owned(),
            workspace: workspace.clone(),
        };
        (root, workspace, outside, output)
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_the_walk_never_leads_the_write_outside() {
        let (_root, workspace, outside, output) = world();
        let written = output.write_with(":00000001FF\n", || {
            std::fs::rename(workspace.join("fw/out"), workspace.join("fw/moved")).expect("move");
            std::os::unix::fs::symlink(&outside, workspace.join("fw/out")).expect("link");
        });
        assert_eq!(written, Ok(()));
        assert!(
            is_empty(&outside),
            "the dump was written outside the workspace"
        );
        let kept = std::fs::read_to_string(workspace.join("fw/moved/dump.hex")).expect("dump");
        assert_eq!(kept, ":00000001FF\n");
    }

    #[test]
    fn a_link_on_the_way_or_at_the_name_is_refused_and_nothing_is_written_outside() {
        for (link, target) in [("fw/out", ""), ("fw/out/dump.hex", "dump.hex")] {
            let (_root, workspace, outside, output) = world();
            let at = workspace.join(link);
            let _ = std::fs::remove_dir(&at);
            std::os::unix::fs::symlink(outside.join(target), &at).expect("link");
            let refused = output.write(":00000001FF\n").expect_err(link);
            assert!(refused.contains("is a link"), "{link}: {refused}");
            assert!(is_empty(&outside), "{link}");
        }
    }

    #[test]
    fn an_output_path_with_a_control_character_is_refused_before_any_file_is_touched() {
        let (_root, workspace, _outside, _output) = world();
        let config: Config = serde_json::from_value(serde_json::json!({
            "workspace_root": workspace,
            "state_root": "/nonexistent-state",
            "artifacts": {"allowed_roots": ["fw"]},
        }))
        .expect("a config");
        assert!(check("debug_dump_symbol_ihex", &config, "fw/ab.hex").is_ok());
        for text in ["fw/a\nb.hex", "fw/a\u{1b}[2Jb.hex", "fw/a\rb.hex"] {
            let refused = check("debug_dump_symbol_ihex", &config, text).expect_err(text);
            assert_eq!(
                refused.error_type.as_deref(),
                Some("output_validation_failed")
            );
        }
    }

    #[test]
    fn missing_folders_are_created_inside_the_workspace() {
        let (_root, workspace, _outside, mut output) = world();
        output.path = workspace.join("fw/new/deeper/dump.hex");
        output.write("x").expect("written");
        assert_eq!(std::fs::read_to_string(&output.path).expect("dump"), "x");
    }
}
