//! Adding and removing our server entry in a host's registration file, never touching an entry the
//! operator wrote unless they pass `--force`.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::host::{Agent, Registry, SERVER_NAME};
use super::journal::Journal;
use super::marked::{Found, Markers};

const CODEX_MARKERS: Markers = Markers {
    start: "# >>> agentic-hil mcp (managed) >>>",
    end: "# <<< agentic-hil mcp (managed) <<<",
};

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
    Written { replaced_foreign: bool },
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
fn real_file(file: &Path) -> PathBuf {
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
    retry(|| match agent.registry(home) {
        Registry::Json { file, keys } => install_json(
            agent,
            &real_file(&file),
            keys,
            launcher,
            force,
            shown,
            journal,
        ),
        Registry::TomlBlock { file } => {
            install_toml(&real_file(&file), launcher, force, shown, journal)
        }
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

fn parse_object(text: &str, shown: &str) -> Result<Map<String, Value>, RegistryError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(RegistryError::Unparsable(
            shown.to_owned(),
            "its top level is not an object".to_owned(),
        )),
        // JSON with comments (VS Code allows them) lands here too: rewriting would drop them.
        Err(err) => Err(RegistryError::Unparsable(
            shown.to_owned(),
            format!("not plain JSON: {err}"),
        )),
    }
}

/// The object at `keys`, created on the way if `create`.
fn servers<'a>(
    root: &'a mut Map<String, Value>,
    keys: &[&str],
    create: bool,
    shown: &str,
) -> Result<Option<&'a mut Map<String, Value>>, RegistryError> {
    let mut current = root;
    for key in keys {
        if !current.contains_key(*key) {
            if !create {
                return Ok(None);
            }
            current.insert((*key).to_owned(), Value::Object(Map::new()));
        }
        match current.get_mut(*key) {
            Some(Value::Object(next)) => current = next,
            _ => {
                return Err(RegistryError::Unparsable(
                    shown.to_owned(),
                    format!("`{key}` is not an object"),
                ));
            }
        }
    }
    Ok(Some(current))
}

fn to_text(root: &Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(root).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

fn install_json(
    agent: Agent,
    file: &Path,
    keys: &[&str],
    launcher: &str,
    force: bool,
    shown: &str,
    journal: &mut Journal,
) -> Result<Change, RegistryError> {
    let text = read_text(file, shown)?.unwrap_or_default();
    let mut root = parse_object(&text, shown)?;
    let wanted = agent.entry(launcher);
    let servers = servers(&mut root, keys, true, shown)?.expect("created on the way");
    let mut replaced_foreign = false;
    if let Some(existing) = servers.get(SERVER_NAME) {
        if *existing == wanted {
            return Ok(Change::Unchanged);
        }
        if !agent.is_our_entry(existing) {
            if !force {
                return Err(RegistryError::Conflict(shown.to_owned()));
            }
            replaced_foreign = true;
        }
    }
    servers.insert(SERVER_NAME.to_owned(), wanted);
    commit(file, &text, to_text(&root).as_bytes(), shown, journal)?;
    Ok(Change::Written { replaced_foreign })
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
    let mut root = match parse_object(&text, shown) {
        Ok(root) => root,
        Err(err) => return Ok(Removal::Kept(err.to_string())),
    };
    let servers = match servers(&mut root, keys, false, shown) {
        Ok(Some(servers)) => servers,
        Ok(None) => return Ok(Removal::Absent),
        Err(err) => return Ok(Removal::Kept(err.to_string())),
    };
    match servers.get(SERVER_NAME) {
        None => return Ok(Removal::Absent),
        Some(entry) if !agent.is_our_entry(entry) => {
            return Ok(Removal::Kept(
                "agentic-hil did not write this entry; it is the operator's to remove.".to_owned(),
            ));
        }
        Some(_) => {}
    }
    // shift_remove keeps the order of the operator's other servers.
    servers.shift_remove(SERVER_NAME);
    commit(file, &text, to_text(&root).as_bytes(), shown, journal)?;
    Ok(Removal::Removed)
}

/// A TOML basic string.
fn toml_string(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn codex_body(launcher: &str) -> String {
    format!(
        "[mcp_servers.{SERVER_NAME}]\ncommand = {}\nargs = [\"mcp-stdio\"]\nenabled = true\n",
        toml_string(launcher)
    )
}

/// Whether a table header outside our block already names our server.
fn foreign_table_line(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    ["agentic-hil", "\"agentic-hil\"", "'agentic-hil'"]
        .iter()
        .any(|name| {
            let head = format!("[mcp_servers.{name}");
            compact.starts_with(&head) && compact[head.len()..].starts_with([']', '.'])
        })
}

/// `text` with every foreign `[mcp_servers.agentic-hil…]` table cut out, up to the next table.
fn without_foreign_tables(text: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            skipping = foreign_table_line(trimmed);
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

fn outside_block(text: &str) -> String {
    match CODEX_MARKERS.find(text) {
        Found::At(range) => format!("{}{}", &text[..range.start], &text[range.end..]),
        Found::Absent | Found::Damaged => text.to_owned(),
    }
}

fn install_toml(
    file: &Path,
    launcher: &str,
    force: bool,
    shown: &str,
    journal: &mut Journal,
) -> Result<Change, RegistryError> {
    let text = read_text(file, shown)?.unwrap_or_default();
    let foreign = outside_block(&text)
        .lines()
        .any(|line| foreign_table_line(line.trim_start()));
    let mut replaced_foreign = false;
    let base = if foreign {
        if !force {
            return Err(RegistryError::Conflict(shown.to_owned()));
        }
        replaced_foreign = true;
        without_foreign_tables(&text)
    } else {
        text.clone()
    };
    let updated = CODEX_MARKERS
        .upsert(&base, &codex_body(launcher))
        .ok_or_else(|| {
            RegistryError::Unparsable(
                shown.to_owned(),
                "its agentic-hil marker lines are unmatched".to_owned(),
            )
        })?;
    if updated == text {
        return Ok(Change::Unchanged);
    }
    commit(file, &text, updated.as_bytes(), shown, journal)?;
    Ok(Change::Written { replaced_foreign })
}

fn uninstall_toml(
    file: &Path,
    shown: &str,
    journal: &mut Journal,
) -> Result<Removal, RegistryError> {
    let Some(text) = read_text(file, shown)? else {
        return Ok(Removal::Absent);
    };
    match CODEX_MARKERS.find(&text) {
        Found::Damaged => Ok(Removal::Kept(
            "its agentic-hil marker lines are unmatched, so what is ours cannot be told apart."
                .to_owned(),
        )),
        Found::Absent => {
            if text
                .lines()
                .any(|line| foreign_table_line(line.trim_start()))
            {
                Ok(Removal::Kept(
                    "agentic-hil did not write this table; it is the operator's to remove."
                        .to_owned(),
                ))
            } else {
                Ok(Removal::Absent)
            }
        }
        Found::At(_) => {
            let updated = CODEX_MARKERS.remove(&text).unwrap_or_else(|| text.clone());
            commit(file, &text, updated.as_bytes(), shown, journal)?;
            Ok(Removal::Removed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_codex_table_is_recognised_in_every_spelling() {
        assert!(foreign_table_line("[mcp_servers.agentic-hil]"));
        assert!(foreign_table_line("[ mcp_servers.\"agentic-hil\" ]"));
        assert!(foreign_table_line("[mcp_servers.agentic-hil.env]"));
        assert!(!foreign_table_line("[mcp_servers.agentic-hil-old]"));
        assert!(!foreign_table_line("[mcp_servers.other]"));
    }

    #[test]
    fn forcing_over_a_foreign_codex_table_cuts_only_that_table() {
        let text = "model = \"o3\"\n[mcp_servers.agentic-hil]\ncommand = \"x\"\n[mcp_servers.agentic-hil.env]\nA = \"1\"\n[profiles.a]\nk = 1\n";
        assert_eq!(
            without_foreign_tables(text),
            "model = \"o3\"\n[profiles.a]\nk = 1\n"
        );
    }

    #[test]
    fn a_launcher_with_quotes_or_backslashes_is_escaped_for_toml() {
        assert_eq!(toml_string("/a\"b\\c"), "\"/a\\\"b\\\\c\"");
    }
}
