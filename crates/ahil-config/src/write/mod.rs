//! Field-wise writes of the authoritative configuration.
//!
//! How a write keeps the file safe:
//! 1. Writers serialise on a `flock` of the sidecar `.<name>.agentic-hil.lock` (the reference takes the
//!    same lock), held for the whole read-modify-write, so two writers never lose each other's edits.
//! 2. The current bytes are read (no links, one hard link) and checked by the loader: a write never
//!    starts from a file the loader would refuse.
//! 3. The edit runs on the parsed tree, which keeps file order. The file is then re-serialised by our
//!    own emitter (`emit.rs`) behind the leading comment header and one `# Changed by …` line.
//!
//!    Why re-serialise rather than patch the text in place: a textual patch has to understand every
//!    YAML form a person may have used (flow maps, anchors, block scalars, odd quoting) to find the one
//!    scalar to replace, and a mistake there writes a file that means something else. Re-emitting the
//!    checked tree has one form to get right, and the round trip is proven before anything is written
//!    (step 4). The cost is that comments below the header do not survive; the reference's writer makes
//!    the same trade, so files move between the two implementations unchanged in meaning.
//! 4. The new text is parsed back: it must give the edited tree exactly, and pass every check a
//!    start runs (`load::admit`: the document, the workspace binding, the pinned programs, the
//!    device identities); otherwise nothing is written and the file keeps every byte.
//! 5. It replaces the file atomically (temp file in the same directory, fsync, rename, fsync).

mod emit;
mod file;
mod header;

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::discover::Environment;
use crate::error::{ConfigError, Refusal};
use crate::load::{admit, digest_bytes, parse_document, read_config_bytes};
use crate::model::{Actor, Config};
use crate::node::parse_yaml;
use crate::time;

pub use file::lock_path;

/// Who writes, and through which route (`mcp:project_config_set`, `cli:grant`, …).
#[derive(Debug, Clone, Copy)]
pub struct Stamp<'a> {
    pub actor: Actor,
    pub via: &'a str,
}

/// What a finished write did.
#[derive(Debug, Clone)]
pub struct Written {
    /// Canonical dotted keys the edit changed, sorted; empty when nothing needed writing.
    pub changed_keys: Vec<String>,
    /// Whether the file was replaced (false for a no-op edit).
    pub written: bool,
    /// The `provenance` block now in the file.
    pub provenance: Value,
    /// `sha256:` of the bytes before and after.
    pub previous_digest: String,
    pub digest: String,
    /// The configuration the file now holds, as the loader reads it.
    pub config: Config,
}

/// Why a write did not happen. Nothing was written in any case.
#[derive(Debug, thiserror::Error)]
pub enum WriteError<E> {
    /// The file as it is cannot be read or does not load.
    #[error("the configuration on disk cannot be used: {0}")]
    Current(ConfigError),
    /// The edit itself refused.
    #[error("the edit was refused")]
    Refused(E),
    /// The edited document breaks a rule (`config_invalid`).
    #[error("the edited configuration is invalid: {0}")]
    Invalid(ConfigError),
    /// The file changed between its read and its replacement (an editor that ignores the lock);
    /// nothing was written.
    #[error("the configuration changed while it was being edited")]
    ChangedUnderneath,
    /// Locking or replacing the file failed.
    #[error("the configuration could not be written: {0}")]
    Io(std::io::Error),
}

/// Locks, reads, edits, checks and replaces the configuration at `path`, the file a start in
/// `workspace` reads.
///
/// `edit` gets the document tree and the configuration the file holds now, and answers the canonical
/// keys it changed (none: nothing is written) or a refusal.
pub fn edit_config<E>(
    workspace: &Path,
    path: &Path,
    env: &Environment,
    stamp: Stamp<'_>,
    edit: impl FnOnce(&mut Value, &Config) -> Result<Vec<String>, E>,
) -> Result<Written, WriteError<E>> {
    let _lock = file::WriteLock::take(path).map_err(WriteError::Io)?;
    let shown = env.display_path(path);
    let bytes = read_config_bytes(path, &shown).map_err(WriteError::Current)?;
    let (current, _) = parse_document(&bytes, &env.account_home()).map_err(WriteError::Current)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut document = parse_yaml(&text).map_err(WriteError::Current)?.to_json();
    let previous_digest = digest_bytes(&bytes);

    let mut keys = edit(&mut document, &current).map_err(WriteError::Refused)?;
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        return Ok(Written {
            changed_keys: keys,
            written: false,
            provenance: document.get("provenance").cloned().unwrap_or(Value::Null),
            digest: previous_digest.clone(),
            previous_digest,
            config: current,
        });
    }
    let at = time::utc_now();
    let provenance = stamp_provenance(&mut document, stamp, &at, &keys);

    let mut out = String::new();
    for line in header::leading_comments(&text) {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&header::change_line(stamp.actor, stamp.via, &at));
    out.push('\n');
    out.push_str(&emit::to_yaml(&document));

    let reread = parse_yaml(&out).map_err(WriteError::Invalid)?.to_json();
    if reread != document {
        return Err(WriteError::Invalid(ConfigError::invalid(Refusal::new(
            "The edited configuration would not read back as written; nothing was written.",
        ))));
    }
    let config = admit(out.as_bytes(), workspace, path, env)
        .map_err(WriteError::Invalid)?
        .config;
    // Writers that take the lock cannot interleave; a person's editor does not take it, so the
    // file must still be the one this edit started from.
    let now = read_config_bytes(path, &shown).map_err(WriteError::Current)?;
    if digest_bytes(&now) != previous_digest {
        return Err(WriteError::ChangedUnderneath);
    }
    file::replace(path, out.as_bytes()).map_err(WriteError::Io)?;
    Ok(Written {
        changed_keys: keys,
        written: true,
        provenance,
        previous_digest,
        digest: digest_bytes(out.as_bytes()),
        config,
    })
}

/// Writes a whole generated document at `path` (creating its directory, 0700), under the same lock
/// and checks as a field-wise edit; `document` carries its own `provenance`. Nothing is written if
/// a start in `workspace` would refuse the document.
pub fn write_generated(
    workspace: &Path,
    path: &Path,
    env: &Environment,
    stamp: Stamp<'_>,
    document: &Value,
) -> Result<Written, WriteError<std::convert::Infallible>> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(WriteError::Io)?;
    let _lock = file::WriteLock::take(path).map_err(WriteError::Io)?;
    let previous_digest = std::fs::read(path).map_or_else(|_| String::new(), |b| digest_bytes(&b));
    let at = time::utc_now();
    let mut out = header::change_line(stamp.actor, stamp.via, &at);
    out.push('\n');
    out.push_str(&emit::to_yaml(document));
    let reread = parse_yaml(&out).map_err(WriteError::Invalid)?.to_json();
    if reread != *document {
        return Err(WriteError::Invalid(ConfigError::invalid(Refusal::new(
            "The generated configuration would not read back as written; nothing was written.",
        ))));
    }
    let config = admit(out.as_bytes(), workspace, path, env)
        .map_err(WriteError::Invalid)?
        .config;
    file::replace(path, out.as_bytes()).map_err(WriteError::Io)?;
    Ok(Written {
        changed_keys: Vec::new(),
        written: true,
        provenance: document.get("provenance").cloned().unwrap_or(Value::Null),
        previous_digest,
        digest: digest_bytes(out.as_bytes()),
        config,
    })
}

/// Sets the `last_modified_*` keys (never the `created_*` ones) and answers the block.
fn stamp_provenance(document: &mut Value, stamp: Stamp<'_>, at: &str, keys: &[String]) -> Value {
    let Value::Object(root) = document else {
        return Value::Null;
    };
    let block = root
        .entry("provenance")
        .or_insert_with(|| Value::Object(Map::new()));
    if !block.is_object() {
        *block = Value::Object(Map::new());
    }
    let count = block
        .get("modification_count")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    let actor = serde_json::to_value(stamp.actor).unwrap_or(Value::Null);
    if let Value::Object(members) = block {
        members.insert("last_modified_by".into(), actor);
        members.insert("last_modified_via".into(), json!(stamp.via));
        members.insert("last_modified_at".into(), json!(at));
        members.insert("last_modified_keys".into(), json!(keys));
        members.insert("modification_count".into(), json!(count));
    }
    block.clone()
}

#[cfg(test)]
mod tests;
