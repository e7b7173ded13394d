//! Adding and removing our server entry in a host's registration file, never touching an entry the
//! operator wrote unless they pass `--force`. JSON and JSONC files are edited through their syntax
//! tree (`jsonc`), Codex's TOML through `toml_edit` (`codex`), so the rest of each file stays as the
//! operator wrote it.

use std::path::{Path, PathBuf};

use super::codex;
use super::host::{Agent, Registry, SERVER_NAME};
use super::journal::Journal;
use super::jsonc;
use super::record::Edit;

/// Why a registration was not written.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{0} holds an agentic-hil entry that agentic-hil did not write.")]
    Conflict(String),
    #[error("{0} is not a file agentic-hil can edit safely ({1}).")]
    Unparsable(String, String),
    #[error("{0} could not be written: {1}")]
    Io(String, std::io::Error),
    #[error("{0} kept changing while agentic-hil edited it.")]
    ChangedUnderneath(String),
}

impl RegistryError {
    pub fn error_type(&self) -> &'static str {
        match self {
            RegistryError::Conflict(_) => "mcp_config_conflict",
            RegistryError::Unparsable(..) => "agent_mcp_config_invalid",
            RegistryError::Io(..) | RegistryError::ChangedUnderneath(_) => "output_write_failed",
        }
    }
}

/// What a step did.
pub enum Change {
    Written {
        replaced_foreign: bool,
        /// Whether an entry was there before (then the record cannot undo the write byte-wise).
        replaced: bool,
        /// Key paths created on the way to the entry, for the install record.
        created_keys: Vec<Vec<String>>,
    },
    Unchanged,
}

/// What uninstall found.
pub enum Removal {
    Removed,
    Absent,
    /// Present but not ours (or unreadable): kept, with the reason.
    Kept(String),
}

/// The file a write lands in: a symlinked host file (dotfile managers do that) is edited at its
/// target so the link survives.
pub fn real_file(file: &Path) -> PathBuf {
    if file
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf())
    } else {
        file.to_path_buf()
    }
}

fn read_text(file: &Path, shown: &str) -> Result<Option<String>, RegistryError> {
    match std::fs::read(file) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| RegistryError::Unparsable(shown.to_owned(), "not UTF-8".to_owned())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(RegistryError::Io(shown.to_owned(), err)),
    }
}

pub fn install(
    agent: Agent,
    home: &Path,
    launcher: &str,
    force: bool,
    shown: &str,
    journal: &mut Journal,
) -> Result<Change, RegistryError> {
    retry(|| {
        let registry = agent.registry(home);
        let (Registry::Json { file, .. } | Registry::TomlBlock { file }) = &registry;
        let file = real_file(file);
        let text = read_text(&file, shown)?.unwrap_or_default();
        let (after, change) = match registry {
            Registry::Json { keys, .. } => {
                install_json(agent, &text, keys, launcher, force, shown)?
            }
            Registry::TomlBlock { .. } => install_toml(&text, launcher, force, shown)?,
        };
        if let Some(after) = after {
            commit(&file, &text, after.as_bytes(), shown, journal)?;
        }
        Ok(change)
    })
}

pub fn uninstall(
    agent: Agent,
    home: &Path,
    shown: &str,
    journal: &mut Journal,
) -> Result<Removal, RegistryError> {
    retry(|| match agent.registry(home) {
        Registry::Json { file, keys } => {
            uninstall_json(agent, &real_file(&file), keys, shown, journal)
        }
        Registry::TomlBlock { file } => uninstall_toml(&real_file(&file), shown, journal),
    })
}

fn unparsable(shown: &str) -> impl Fn(String) -> RegistryError + '_ {
    move |why| RegistryError::Unparsable(shown.to_owned(), why)
}

/// The JSON file's text with our entry at `keys` (`None`: it is there already), and what changed.
fn install_json(
    agent: Agent,
    text: &str,
    keys: &[&str],
    launcher: &str,
    force: bool,
    shown: &str,
) -> Result<(Option<String>, Change), RegistryError> {
    let root = jsonc::parse(text).map_err(unparsable(shown))?;
    let top = jsonc::root_object(&root).map_err(unparsable(shown))?;
    let mut created_keys = Vec::new();
    let servers = jsonc::walk(top, keys, Some(&mut created_keys))
        .map_err(unparsable(shown))?
        .expect("created on the way");
    let wanted = agent.entry(launcher);
    let mut replaced_foreign = false;
    let replaced = servers.get(SERVER_NAME).is_some();
    if let Some(prop) = servers.get(SERVER_NAME) {
        let existing = prop.value().and_then(|node| node.to_serde_value());
        if existing.as_ref() == Some(&wanted) {
            return Ok((None, Change::Unchanged));
        }
        if !existing.as_ref().is_some_and(|e| agent.is_our_entry(e)) {
            if !force {
                return Err(RegistryError::Conflict(shown.to_owned()));
            }
            replaced_foreign = true;
        }
        prop.set_value(jsonc::input(&wanted));
    } else {
        servers.append(SERVER_NAME, jsonc::input(&wanted));
    }
    let change = Change::Written {
        replaced_foreign,
        replaced,
        created_keys,
    };
    Ok((Some(root.to_string()), change))
}

/// Writes `after` over `file` unless the file changed since it was read as `before`: hosts rewrite
/// their own files while running (Claude Code keeps state in `~/.claude.json`), and a change made
/// between our read and our write would be lost.
fn commit(
    file: &Path,
    before: &str,
    after: &[u8],
    shown: &str,
    journal: &mut Journal,
) -> Result<(), RegistryError> {
    let now = std::fs::read(file).unwrap_or_default();
    if now != before.as_bytes() {
        return Err(RegistryError::ChangedUnderneath(shown.to_owned()));
    }
    journal
        .write(file, after)
        .map_err(|err| RegistryError::Io(shown.to_owned(), err))
}

/// Runs an edit again, a few times, while the file changes under it.
fn retry<T>(mut edit: impl FnMut() -> Result<T, RegistryError>) -> Result<T, RegistryError> {
    let mut attempt = 0;
    loop {
        match edit() {
            Err(RegistryError::ChangedUnderneath(_)) if attempt < 4 => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

fn uninstall_json(
    agent: Agent,
    file: &Path,
    keys: &[&str],
    shown: &str,
    journal: &mut Journal,
) -> Result<Removal, RegistryError> {
    let Some(text) = read_text(file, shown)? else {
        return Ok(Removal::Absent);
    };
    let kept = |why: String| Ok(Removal::Kept(unparsable(shown)(why).to_string()));
    let root = match jsonc::parse(&text) {
        Ok(root) => root,
        Err(why) => return kept(why),
    };
    let Some(top) = root.object_value() else {
        return Ok(Removal::Absent);
    };
    let servers = match jsonc::walk(top, keys, None) {
        Ok(Some(servers)) => servers,
        Ok(None) => return Ok(Removal::Absent),
        Err(why) => return kept(why),
    };
    let Some(prop) = servers.get(SERVER_NAME) else {
        return Ok(Removal::Absent);
    };
    let entry = prop.value().and_then(|node| node.to_serde_value());
    if !entry.is_some_and(|e| agent.is_our_entry(&e)) {
        return Ok(Removal::Kept(
            "agentic-hil did not write this entry; it is the operator's to remove.".to_owned(),
        ));
    }
    prop.remove();
    commit(file, &text, root.to_string().as_bytes(), shown, journal)?;
    Ok(Removal::Removed)
}

/// The TOML file's text with our block (`None`: it is there already), and what changed.
fn install_toml(
    text: &str,
    launcher: &str,
    force: bool,
    shown: &str,
) -> Result<(Option<String>, Change), RegistryError> {
    let installed = match codex::install(text, launcher, force) {
        Ok(Some(installed)) => installed,
        Ok(None) => return Ok((None, Change::Unchanged)),
        Err(codex::Refused::Foreign) => return Err(RegistryError::Conflict(shown.to_owned())),
        Err(codex::Refused::Unparsable(why)) => return Err(unparsable(shown)(why)),
    };
    let change = Change::Written {
        replaced_foreign: installed.replaced_foreign,
        replaced: installed.replaced,
        created_keys: installed.created_keys,
    };
    Ok((Some(installed.text), change))
}

fn uninstall_toml(
    file: &Path,
    shown: &str,
    journal: &mut Journal,
) -> Result<Removal, RegistryError> {
    let Some(text) = read_text(file, shown)? else {
        return Ok(Removal::Absent);
    };
    match codex::uninstall(&text) {
        codex::Taken::Absent => Ok(Removal::Absent),
        codex::Taken::Kept(why) => Ok(Removal::Kept(why)),
        codex::Taken::Removed(updated) => {
            commit(file, &text, updated.as_bytes(), shown, journal)?;
            Ok(Removal::Removed)
        }
    }
}

/// After the structural removal of a recorded file the operator changed meanwhile: the keys install
/// created go once empty, and a file install created goes once nothing is left in it. Returns
/// whether the file was removed.
pub fn prune(edit: &Edit, shown: &str, journal: &mut Journal) -> Result<bool, RegistryError> {
    let Some(text) = read_text(&edit.path, shown)? else {
        return Ok(false);
    };
    let toml = edit.path.extension().is_some_and(|e| e == "toml");
    let pruned = if toml {
        codex::prune(&text, &edit.created_keys)
    } else {
        jsonc::parse(&text).ok().map(|root| {
            jsonc::prune(&root, &edit.created_keys);
            root.to_string()
        })
    };
    let Some(pruned) = pruned else {
        return Ok(false);
    };
    let empty = if toml {
        pruned.trim().is_empty()
    } else {
        jsonc::is_bare_empty_object(&pruned)
    };
    if edit.created && empty {
        journal
            .remove(&edit.path)
            .map_err(|err| RegistryError::Io(shown.to_owned(), err))?;
        return Ok(true);
    }
    if pruned != text {
        commit(&edit.path, &text, pruned.as_bytes(), shown, journal)?;
    }
    Ok(false)
}
