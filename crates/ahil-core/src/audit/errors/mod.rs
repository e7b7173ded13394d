//! The error catalogue: for every `error_type` the program can emit, what it means, what to do (in
//! order) and what not to do. Served as MCP resources (`agentic-hil://reference/errors` and
//! `…/errors/{error_type}`) and merged into refusals that carry no advice of their own.
//!
//! A key may carry a scope (`target_not_detected:pyocd`); lookups try the scoped entry first, then the
//! plain one. A test scans the crates for emitted error types and fails on any without an entry.

use serde_json::{Value, json};

use crate::envelope::Outcome;

/// One catalogue entry.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub key: &'static str,
    pub meaning: &'static str,
    pub remediation: &'static [&'static str],
    pub do_not: &'static [&'static str],
}

/// The URI prefix of the per-error resources.
pub const URI_PREFIX: &str = "agentic-hil://reference/errors/";

pub(super) const NO_BYPASS: &str = "Do not reach the hardware another way (a shell debugger, a serial terminal) while this stands.";
pub(super) const NO_STATE_EDIT: &str =
    "Do not edit, move or delete files under the state root to make this go away.";
pub(super) const NO_CONFIG_EDIT: &str =
    "Do not edit the configuration file by hand to get past this.";

/// One entry, written as its key, meaning, remediation and things not to do.
macro_rules! entry {
    ($key:literal, $meaning:literal, [$($fix:literal),* $(,)?], [$($dont:expr),* $(,)?]) => {
        Entry { key: $key, meaning: $meaning, remediation: &[$($fix),*], do_not: &[$($dont),*] }
    };
}

mod entries_a;
mod entries_b;
mod entries_c;
mod entries_labgrid;

/// Every entry, in key order.
pub fn catalogue() -> impl Iterator<Item = &'static Entry> {
    entries_a::ENTRIES
        .iter()
        .chain(entries_b::ENTRIES)
        .chain(entries_c::ENTRIES)
        .chain(entries_labgrid::ENTRIES)
}

/// An entry by key: `type:scope` first, then `type`.
pub fn lookup(key: &str) -> Option<&'static Entry> {
    catalogue().find(|e| e.key == key).or_else(|| {
        let (plain, _) = key.split_once(':')?;
        catalogue().find(|e| e.key == plain)
    })
}

/// One entry as the resource serves it.
pub fn entry_value(entry: &Entry) -> Value {
    let (error_type, scope) = match entry.key.split_once(':') {
        Some((t, s)) => (t, Some(s)),
        None => (entry.key, None),
    };
    let mut doc = json!({"error_type": error_type});
    if let Some(scope) = scope {
        doc["scope"] = scope.into();
    }
    doc["meaning"] = entry.meaning.into();
    doc["remediation"] = json!(entry.remediation);
    if !entry.do_not.is_empty() {
        doc["do_not"] = json!(entry.do_not);
    }
    doc
}

/// The whole catalogue, keyed by error type.
pub fn catalogue_value() -> Value {
    Value::Object(
        catalogue()
            .map(|e| (e.key.to_owned(), entry_value(e)))
            .collect(),
    )
}

/// Fills `remediation` and `do_not` of a refusal that has none, from its catalogue entry.
pub fn merge_advice(outcome: &mut Outcome) {
    let Some(entry) = outcome.error_type.as_deref().and_then(lookup) else {
        return;
    };
    if outcome.remediation.is_empty() {
        outcome.remediation = entry.remediation.iter().map(|s| (*s).to_owned()).collect();
    }
    if outcome.do_not.is_empty() {
        outcome.do_not = entry.do_not.iter().map(|s| (*s).to_owned()).collect();
    }
}

#[cfg(test)]
mod tests;
