//! Codex's `~/.codex/config.toml`, edited with `toml_edit` so every other table, comment and blank
//! line stays as the operator wrote it. Our entry is the `mcp_servers.agentic-hil` table (or inline
//! table, when the operator keeps `mcp_servers` inline); earlier versions wrote it between marker
//! lines, and such a block is still recognised as ours.

use toml_edit::{Array, DocumentMut, Item, Table, TableLike, Value, value};

use super::host::{SERVER_NAME, looks_like_our_launcher};
use super::marked::{Found, Markers};

const SERVERS: &str = "mcp_servers";

/// The block earlier versions wrote.
const LEGACY_MARKERS: Markers = Markers {
    start: "# >>> agentic-hil mcp (managed) >>>",
    end: "# <<< agentic-hil mcp (managed) <<<",
};

/// Why the file cannot be edited, or what was found there.
pub enum Refused {
    Unparsable(String),
    Foreign,
}

/// What `install` made of the file.
pub struct Installed {
    pub text: String,
    pub replaced_foreign: bool,
    /// An entry (ours from another binary, or the operator's under `--force`) was replaced.
    pub replaced: bool,
    pub created_keys: Vec<Vec<String>>,
}

fn parse(text: &str) -> Result<DocumentMut, String> {
    text.parse::<DocumentMut>()
        .map_err(|err| format!("not TOML: {}", err.message().trim()))
}

fn entry_table(launcher: &str) -> Table {
    let mut table = Table::new();
    table.insert("command", value(launcher));
    table.insert("args", value(Array::from_iter(["mcp-stdio"])));
    table.insert("enabled", value(true));
    table
}

/// The launcher of an entry we wrote: exactly `command`, `args = ["mcp-stdio"]`, `enabled = true`.
fn our_launcher(entry: &dyn TableLike) -> Option<String> {
    let command = entry.get("command")?.as_str()?;
    let args = entry.get("args")?.as_array()?;
    let plain = entry.len() == 3
        && args.len() == 1
        && args.get(0).and_then(Value::as_str) == Some("mcp-stdio")
        && entry.get("enabled")?.as_bool() == Some(true);
    (plain && looks_like_our_launcher(command)).then(|| command.to_owned())
}

fn servers_item<'a>(
    doc: &'a mut DocumentMut,
    created: &mut Vec<Vec<String>>,
) -> Result<&'a mut Item, Refused> {
    if !doc.contains_key(SERVERS) {
        let mut table = Table::new();
        // `[mcp_servers.agentic-hil]` alone, without an empty `[mcp_servers]` header above it.
        table.set_implicit(true);
        doc.insert(SERVERS, Item::Table(table));
        created.push(vec![SERVERS.to_owned()]);
    }
    match doc.get_mut(SERVERS) {
        Some(item) if item.is_table() || item.is_inline_table() => Ok(item),
        _ => Err(Refused::Unparsable(format!("`{SERVERS}` is not a table"))),
    }
}

/// `text` with our entry for `launcher`; `Ok(None)` when it is already there.
pub fn install(text: &str, launcher: &str, force: bool) -> Result<Option<Installed>, Refused> {
    let base = match LEGACY_MARKERS.find(text) {
        Found::Absent => text.to_owned(),
        Found::At(_) => LEGACY_MARKERS
            .remove(text)
            .unwrap_or_else(|| text.to_owned()),
        Found::Damaged => {
            return Err(Refused::Unparsable(
                "its agentic-hil marker lines are unmatched".to_owned(),
            ));
        }
    };
    let mut doc = parse(&base).map_err(Refused::Unparsable)?;
    let mut created_keys = Vec::new();
    let servers = servers_item(&mut doc, &mut created_keys)?;
    let mut replaced_foreign = false;
    let replaced = servers.get(SERVER_NAME).is_some();
    if let Some(existing) = servers.get(SERVER_NAME) {
        match existing.as_table_like().and_then(our_launcher) {
            Some(current) if current == launcher => return Ok(None),
            Some(_) => {}
            None if force => replaced_foreign = true,
            None => return Err(Refused::Foreign),
        }
    }
    let entry = entry_table(launcher);
    match servers {
        Item::Value(Value::InlineTable(inline)) => {
            inline.remove(SERVER_NAME);
            inline.insert(SERVER_NAME, Value::InlineTable(entry.into_inline_table()));
        }
        Item::Table(table) => {
            table.remove(SERVER_NAME);
            table.insert(SERVER_NAME, Item::Table(entry));
        }
        _ => return Err(Refused::Unparsable(format!("`{SERVERS}` is not a table"))),
    }
    Ok(Some(Installed {
        text: doc.to_string(),
        replaced_foreign,
        replaced,
        created_keys,
    }))
}

/// What uninstall does with the file.
pub enum Taken {
    Absent,
    Removed(String),
    Kept(String),
}

pub fn uninstall(text: &str) -> Taken {
    match LEGACY_MARKERS.find(text) {
        Found::At(_) => {
            return Taken::Removed(
                LEGACY_MARKERS
                    .remove(text)
                    .unwrap_or_else(|| text.to_owned()),
            );
        }
        Found::Damaged => {
            return Taken::Kept(
                "its agentic-hil marker lines are unmatched, so what is ours cannot be told apart."
                    .to_owned(),
            );
        }
        Found::Absent => {}
    }
    let mut doc = match parse(text) {
        Ok(doc) => doc,
        Err(why) => {
            return Taken::Kept(format!(
                "it is not a file agentic-hil can edit safely ({why})."
            ));
        }
    };
    let Some(servers) = doc.get_mut(SERVERS).and_then(Item::as_table_like_mut) else {
        return Taken::Absent;
    };
    match servers.get(SERVER_NAME) {
        None => return Taken::Absent,
        Some(entry) if entry.as_table_like().and_then(our_launcher).is_none() => {
            return Taken::Kept(
                "agentic-hil did not write this table; it is the operator's to remove.".to_owned(),
            );
        }
        Some(_) => {}
    }
    servers.remove(SERVER_NAME);
    Taken::Removed(doc.to_string())
}

/// `text` without the keys install created that are now empty; `None` if it is not TOML.
pub fn prune(text: &str, created: &[Vec<String>]) -> Option<String> {
    let mut doc = parse(text).ok()?;
    for path in created {
        if let [key] = path.as_slice()
            && doc
                .get(key)
                .and_then(Item::as_table_like)
                .is_some_and(TableLike::is_empty)
        {
            doc.remove(key);
        }
    }
    Some(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(text: &str) -> String {
        install(text, "/usr/bin/agentic-hil", false)
            .ok()
            .flatten()
            .expect("written")
            .text
    }

    #[test]
    fn an_entry_goes_into_an_inline_servers_table_and_comes_out_again() {
        let original = "model = \"o3\" # mine\nmcp_servers = { other = { command = \"x\" } }\n";
        let text = installed(original);
        assert!(text.starts_with("model = \"o3\" # mine\nmcp_servers = { other = { command = \"x\" } , agentic-hil = {"), "{text}");
        let Taken::Removed(back) = uninstall(&text) else {
            panic!("ours")
        };
        assert_eq!(back, original);
    }

    #[test]
    fn a_block_an_earlier_version_wrote_is_still_ours_to_replace_and_remove() {
        let original = "model = \"o3\"\n";
        let legacy = format!(
            "{original}\n# >>> agentic-hil mcp (managed) >>>\n[mcp_servers.agentic-hil]\ncommand = \"/old/agentic-hil\"\nargs = [\"mcp-stdio\"]\nenabled = true\n# <<< agentic-hil mcp (managed) <<<\n"
        );
        let Taken::Removed(back) = uninstall(&legacy) else {
            panic!("ours")
        };
        assert_eq!(back, original);
        let text = installed(&legacy);
        assert!(
            !text.contains(">>>") && text.contains("/usr/bin/agentic-hil"),
            "{text}"
        );
        assert_eq!(
            text.matches("[mcp_servers.agentic-hil]").count(),
            1,
            "{text}"
        );
    }

    #[test]
    fn a_table_with_anything_added_is_the_operators() {
        let text = "[mcp_servers.agentic-hil]\ncommand = \"/usr/bin/agentic-hil\"\nargs = [\"mcp-stdio\"]\nenabled = true\nenv = { A = \"1\" }\n";
        assert!(matches!(uninstall(text), Taken::Kept(_)));
        assert!(matches!(
            install(text, "/usr/bin/agentic-hil", false),
            Err(Refused::Foreign)
        ));
    }
}
