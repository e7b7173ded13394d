//! What install created, kept in `~/.config/agentic-hil/installed.json` so uninstall takes back
//! exactly that: files that did not exist before, keys added on the way to our entries, folders
//! made for them.
//!
//! Each edited file is recorded with the hash of what install left and the byte spans it inserted.
//! While the file still holds exactly those bytes, uninstall cuts the spans out and the operator's
//! file comes back byte for byte, whatever its formatting. Once someone else changed the file (the
//! operator, or a host that rewrites its own file), uninstall falls back to removing our entry from
//! the syntax tree and pruning the keys the record says we created.

use std::path::PathBuf;

use ahil_config::Environment;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::host::Agent;
use super::journal::{self, Journal};

#[derive(Serialize, Deserialize, Default)]
pub struct Record {
    #[serde(default)]
    edits: Vec<Edit>,
    /// Folders install made, for any agent; each goes once it is empty.
    #[serde(default)]
    dirs: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize, Clone)]
pub struct Edit {
    pub agent: String,
    pub path: PathBuf,
    /// The file did not exist before install.
    pub created: bool,
    /// Key paths install added on the way to its entries.
    #[serde(default)]
    pub created_keys: Vec<Vec<String>>,
    sha256: String,
    /// `(offset, length)` spans of the written bytes that install inserted; `None` when the write
    /// replaced something (an older entry), so only the structural removal can undo it.
    inserted: Option<Vec<(usize, usize)>>,
}

/// What a command knows about one of its writes that the bytes alone do not say.
pub struct Touch {
    pub path: PathBuf,
    /// Key paths the edit created on the way to its entry.
    pub created_keys: Vec<Vec<String>>,
    /// The write replaced something that was there (an older entry, a stale skill, or the
    /// operator's entry under `--force`): even when the old bytes happen to be a subsequence of the
    /// new, cutting spans out would not undo it.
    pub replaced: bool,
}

pub fn file(env: &Environment) -> PathBuf {
    env.xdg_config_home
        .clone()
        .unwrap_or_else(|| env.home.join(".config"))
        .join("agentic-hil/installed.json")
}

fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut out, b| {
            use std::fmt::Write;
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// The spans of `after` that are not in `before`, when `before` is `after` with them cut out.
/// Common prefix and suffix first, so one insertion is one span; the rest matches greedily, which
/// finds an embedding whenever one exists.
fn inserted_spans(before: &[u8], after: &[u8]) -> Option<Vec<(usize, usize)>> {
    let prefix = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let room = before.len().min(after.len()) - prefix;
    let suffix = before
        .iter()
        .rev()
        .zip(after.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (
        &before[prefix..before.len() - suffix],
        &after[prefix..after.len() - suffix],
    );
    let mut spans = Vec::new();
    let mut i = 0;
    let mut j = 0;
    while j < new.len() {
        if i < old.len() && old[i] == new[j] {
            i += 1;
            j += 1;
            continue;
        }
        let start = j;
        while j < new.len() && !(i < old.len() && old[i] == new[j]) {
            j += 1;
        }
        spans.push((prefix + start, j - start));
    }
    (i == old.len()).then_some(spans)
}

fn cut(after: &[u8], spans: &[(usize, usize)]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(after.len());
    let mut at = 0;
    for &(start, len) in spans {
        if start < at || start.checked_add(len)? > after.len() {
            return None;
        }
        out.extend_from_slice(&after[at..start]);
        at = start + len;
    }
    out.extend_from_slice(&after[at..]);
    Some(out)
}

impl Edit {
    /// The file as it was before install, if `current` is still exactly what install left.
    pub fn original(&self, current: &[u8]) -> Option<Vec<u8>> {
        if digest(current) != self.sha256 {
            return None;
        }
        cut(current, self.inserted.as_deref()?)
    }
}

impl Record {
    /// The record on disk; a missing or unreadable one is empty (uninstall then removes our
    /// entries by their shape, as it did before there was a record).
    pub fn load(env: &Environment) -> Record {
        std::fs::read(file(env))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Notes every file `journal` wrote for `agent`, with what `touches` says about each.
    pub fn note(&mut self, agent: Agent, journal: &Journal, touches: &[Touch]) {
        for (path, before) in journal.touched() {
            let Ok(after) = std::fs::read(path) else {
                continue;
            };
            let touch = touches.iter().find(|t| t.path == path);
            let new_keys = touch
                .into_iter()
                .flat_map(|t| t.created_keys.iter().cloned());
            let replaced = touch.is_some_and(|t| t.replaced);
            let previous = self.edits.iter().position(|e| e.path == path);
            let edit = match previous.map(|at| self.edits.remove(at)) {
                // A second install over our own unchanged write: undo it first, so the record
                // still leads back to the operator's original.
                Some(mut old) => {
                    let original = before.and_then(|b| old.original(b));
                    old.inserted = original.and_then(|o| inserted_spans(&o, &after));
                    old.created_keys.extend(new_keys);
                    old.created_keys.dedup();
                    old.sha256 = digest(&after);
                    old
                }
                None => Edit {
                    agent: agent.id().to_owned(),
                    path: path.to_path_buf(),
                    created: before.is_none(),
                    created_keys: new_keys.collect(),
                    sha256: digest(&after),
                    inserted: if replaced {
                        None
                    } else {
                        inserted_spans(before.unwrap_or_default(), &after)
                    },
                },
            };
            self.edits.push(edit);
        }
        for dir in journal.created_dirs() {
            if !self.dirs.contains(dir) {
                self.dirs.push(dir.clone());
            }
        }
    }

    /// Takes out the edits recorded for `agent`.
    pub fn take(&mut self, agent: Agent) -> Vec<Edit> {
        let (mine, rest) = std::mem::take(&mut self.edits)
            .into_iter()
            .partition(|e| e.agent == agent.id());
        self.edits = rest;
        mine
    }

    pub fn save(&mut self, env: &Environment, journal: &mut Journal) -> std::io::Result<()> {
        let path = file(env);
        if let Some(dir) = path.parent() {
            for missing in journal::missing_dirs(dir) {
                if !self.dirs.contains(&missing) {
                    self.dirs.push(missing);
                }
            }
        }
        let mut text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        text.push(b'\n');
        journal.write(&path, &text)
    }

    /// After uninstall: the empty folders go, and so does the record once it holds no edit.
    /// Only folders on the way to one of `files` below HOME (or the config home) are candidates: the record is a file
    /// in the operator's config folder and must not steer uninstall elsewhere.
    pub fn finish(
        mut self,
        env: &Environment,
        files: &[PathBuf],
        journal: &mut Journal,
    ) -> std::io::Result<()> {
        let path = file(env);
        if self.edits.is_empty() && path.exists() {
            journal.remove(&path)?;
        }
        let roots: Vec<&PathBuf> = std::iter::once(&env.home)
            .chain(env.xdg_config_home.as_ref())
            .collect();
        self.dirs.retain(|dir| {
            roots
                .iter()
                .any(|root| dir.starts_with(root) && dir != *root)
                && files.iter().any(|f| f.starts_with(dir) && f != dir)
        });
        self.dirs
            .sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        // A folder that still holds something is someone else's now, or still in use.
        self.dirs
            .retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
        if self.edits.is_empty() {
            return Ok(());
        }
        self.save(env, journal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_the_inserted_spans_gives_back_the_original_bytes() {
        for (before, after) in [
            ("{\"a\":1}", "{\n  \"a\":1,\n  \"m\": {}\n}"),
            ("", "{\n}\n"),
            ("x = 1", "x = 1\n\n[t]\ny = 2\n"),
            (
                "{\n    \"a\": 1,\n}",
                "{\n    \"a\": 1,\n    \"b\": [2],\n}",
            ),
        ] {
            let spans = inserted_spans(before.as_bytes(), after.as_bytes()).expect("embedded");
            assert_eq!(
                cut(after.as_bytes(), &spans).expect("cut"),
                before.as_bytes()
            );
        }
    }

    #[test]
    fn a_replacement_is_not_mistaken_for_an_insertion() {
        assert_eq!(
            inserted_spans(b"{\"c\": \"/old\"}", b"{\"c\": \"/new\"}"),
            None
        );
    }
}
