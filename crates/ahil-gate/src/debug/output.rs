//! Where `debug_dump_symbol_ihex` may write: a `.hex`/`.ihex` path inside the workspace (and inside
//! `artifacts.allowed_roots` while `validation.require_allowed_root`), with no `..` segment and no link on
//! the way, so an agent cannot aim the dump at a file outside the project.

use crate::ErrorType;
use std::path::{Component, Path, PathBuf};

use ahil_config::Config;

use crate::artifacts::lexical;
use crate::envelope::Outcome;

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
    let workspace = lexical(Path::new("/"), &config.workspace_root);
    let path = lexical(&workspace, given);
    if !path.starts_with(&workspace) || path == workspace {
        return Err(refused(tool, "output_path must lie inside the workspace."));
    }
    if config.validation.require_allowed_root
        && !config
            .artifacts
            .allowed_roots
            .iter()
            .any(|root| path.starts_with(lexical(&workspace, Path::new(root))))
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
        let relative = self
            .path
            .strip_prefix(&self.workspace)
            .map_err(|_| "the path left the workspace".to_owned())?;
        let mut at = self.workspace.clone();
        for component in relative.components() {
            at.push(component);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(format!(
                        "`{}` is a link",
                        at.strip_prefix(&self.workspace).unwrap_or(&at).display()
                    ));
                }
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    if at != self.path {
                        std::fs::create_dir(&at).map_err(|e| e.kind().to_string())?;
                    }
                }
                Err(error) => return Err(error.kind().to_string()),
            }
        }
        crate::fsio::write_atomic(&self.path, text.as_bytes(), 0o644)
            .map_err(|e| e.kind().to_string())
    }
}
