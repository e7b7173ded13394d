//! The one output step: every document that leaves the gate — an MCP result, the terminal, a
//! workspace report or log, com-stdio's refusal line, `watch` — passes [`Sink::scrub`].
//!
//! The step redacts ([`super::redact`]: secret-named keys, credential shapes in every string) and
//! shows the operator's private directories by placeholder: the state root as `<state_root>`, the
//! configuration directory as `<config_dir>`, the rest of HOME as `~`. Where those directories are
//! is none of an agent's business, and a workspace mirror is an agent's to read.
//!
//! Writers of a sink take a [`Scrubbed`], which only [`Sink::scrub`] makes, so a new sink that
//! forgets the step does not compile. Device output that leaves in pieces (a `com_read` of a few
//! bytes, the reader's log chunks) is first masked as a stream ([`super::StreamMask`]): one piece
//! alone cannot show that it is half a credential.

use std::path::Path;

use ahil_config::{Environment, LoadedConfig};
use serde_json::Value;

/// A document that passed the sink step; the only input an output writer accepts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct Scrubbed(Value);

impl Scrubbed {
    /// The scrubbed document.
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// The scrubbed document, owned.
    pub fn into_value(self) -> Value {
        self.0
    }
}

/// The private directories to rewrite, each with its placeholder.
#[derive(Debug, Clone, Default)]
pub struct Sink {
    /// `(absolute root without trailing slash, placeholder)`, longest root first, so the state
    /// root under HOME becomes `<state_root>` rather than `~/.local/state/…`.
    roots: Vec<(String, &'static str)>,
}

impl Sink {
    /// A sink that rewrites HOME as `~` (nothing when HOME is unset or `/`).
    pub fn new(home: Option<&Path>) -> Self {
        let mut sink = Self::default();
        if let Some(home) = home {
            sink = sink.with_root(home, "~");
        }
        sink
    }

    /// The process's HOME, as the server and CLI see it, and the account's home (the password
    /// database's), which every backend runs with and prints paths below whatever HOME the agent
    /// named: both are `~`.
    pub fn for_process() -> Self {
        let sink = Self::new(ahil_wire::home::process_home());
        match ahil_wire::home::account_home() {
            Some(account) => sink.with_root(account, "~"),
            None => sink,
        }
    }

    /// The sink of a command run in `workspace`: HOME, and the state root and configuration
    /// directory this workspace would use. A configuration that loads adds its own with
    /// [`Sink::with_config`]; before one exists these defaults are what results name.
    pub fn for_environment(workspace: &Path, env: &Environment) -> Self {
        let config = ahil_config::ConfigLocation::select(workspace, env).map_or_else(
            |_| ahil_config::canonical_config_path(workspace, env),
            |location| location.path,
        );
        let mut sink = Self::new(Some(&env.home))
            .with_root(&env.account_home(), "~")
            .with_root(&ahil_config::default_state_root(env), "<state_root>");
        if let Some(dir) = config.parent() {
            sink = sink.with_root(dir, "<config_dir>");
        }
        sink
    }

    /// Adds a loaded configuration's state root and directory.
    #[must_use]
    pub fn with_config(self, loaded: &LoadedConfig) -> Self {
        let sink = self.with_root(&loaded.config.state_root, "<state_root>");
        match loaded.path.parent() {
            Some(dir) => sink.with_root(dir, "<config_dir>"),
            None => sink,
        }
    }

    /// Adds `root` (and its resolved form, when that differs) under `placeholder`.
    #[must_use]
    pub fn with_root(mut self, root: &Path, placeholder: &'static str) -> Self {
        let resolved = std::fs::canonicalize(root).ok();
        for path in std::iter::once(root).chain(resolved.as_deref()) {
            let text = path.display().to_string();
            let text = text.trim_end_matches('/');
            if text.len() > 1 && !self.roots.iter().any(|(r, _)| r == text) {
                self.roots.push((text.to_owned(), placeholder));
            }
        }
        self.roots
            .sort_by_key(|(root, _)| std::cmp::Reverse(root.len()));
        self
    }

    /// The one output step: redaction, then the private directories by placeholder.
    pub fn scrub(&self, value: &Value) -> Scrubbed {
        Scrubbed(self.scrub_strings(&super::redact(value)))
    }

    /// The same step for one line of text (a rendered screen, a message).
    pub fn scrub_text(&self, text: &str) -> String {
        self.paths(&super::redact_text(text))
    }

    fn scrub_strings(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.paths(k), self.scrub_strings(v)))
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.scrub_strings(v)).collect())
            }
            Value::String(text) => Value::String(self.paths(text)),
            other => other.clone(),
        }
    }

    fn paths(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (root, placeholder) in &self.roots {
            if text.contains(root.as_str()) {
                text = replace_root(&text, root, placeholder);
            }
        }
        text
    }
}

/// Whether `c` continues a path component, so a root followed (or preceded) by it is only the
/// prefix of a longer name (`/home/u` in `/home/user`) and is left alone.
fn continues_name(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '~' | '+' | '@')
}

/// Replaces every occurrence of `root` that is a whole path (or a path's leading directories) by
/// `placeholder`: `/r/x` → `<p>/x`, `"/r"` → `"<p>"`, `/r2` and `/a/r/x` unchanged.
fn replace_root(text: &str, root: &str, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(root) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + root.len()..].chars().next();
        // A `file://` URL's path starts after the scheme's slashes.
        let starts =
            before.is_none_or(|c| !continues_name(c) && c != '/') || rest[..at].ends_with("://");
        let ends = after.is_none_or(|c| !continues_name(c));
        out.push_str(&rest[..at]);
        if starts && ends {
            out.push_str(placeholder);
        } else {
            out.push_str(root);
        }
        rest = &rest[at + root.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sink() -> Sink {
        Sink::new(Some(Path::new("/home/u")))
            .with_root(
                Path::new("/home/u/.local/state/agentic-hil"),
                "<state_root>",
            )
            .with_root(Path::new("/home/u/.config/agentic-hil/p-1"), "<config_dir>")
    }

    #[test]
    fn private_directories_become_their_placeholders_most_specific_first() {
        let doc = json!({
            "a": ["see /home/u/.local/state/agentic-hil/projects/x/r.json"],
            "b": "/home/u/.local/state/agentic-hil",
            "c": "edit /home/u/.config/agentic-hil/p-1/config.yaml, then /home/u/tools/fake",
            "d": "/home/u",
            "e": "file:///home/u/.config/agentic-hil/p-1/board.cfg",
        });
        assert_eq!(
            sink().scrub(&doc).into_value(),
            json!({
                "a": ["see <state_root>/projects/x/r.json"],
                "b": "<state_root>",
                "c": "edit <config_dir>/config.yaml, then ~/tools/fake",
                "d": "~",
                "e": "file://<config_dir>/board.cfg",
            })
        );
    }

    #[test]
    fn a_longer_name_that_starts_like_a_root_is_left_alone() {
        let text = "/home/user/x /srv/home/u/y /home/u2 /home/u.bak";
        assert_eq!(sink().scrub_text(text), text);
    }

    #[test]
    fn credentials_are_masked_in_every_string_and_in_text() {
        let doc = json!({"backend_message": "login password=hunter2 ok",
                         "url": "https://bob:pw@h/x", "token": "abc"});
        assert_eq!(
            sink().scrub(&doc).into_value(),
            json!({"backend_message": "login password=[redacted] ok",
                   "url": "https://bob:[redacted]@h/x", "token": "[redacted]"})
        );
        assert_eq!(
            sink().scrub_text("Authorization: Bearer abc /home/u/x"),
            "Authorization: Bearer [redacted] ~/x"
        );
    }

    #[test]
    fn the_step_is_idempotent_so_a_mirror_can_be_checked_against_its_canonical_copy() {
        let doc = json!({"a": "/home/u/.local/state/agentic-hil/x token=1 https://a:b@c"});
        let once = sink().scrub(&doc).into_value();
        assert_eq!(sink().scrub(&once).into_value(), once);
    }
}
