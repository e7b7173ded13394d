use crate::ErrorType;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use regex_automata::meta::Regex;

use super::*;

/// A crate's Rust sources, without its `_tests.rs` files.
fn sources(dir: &Path) -> Vec<PathBuf> {
    crate::testkit::files_under(dir, &|path| {
        path.extension().is_some_and(|e| e == "rs")
            && !path.to_string_lossy().ends_with("_tests.rs")
    })
}

/// The code before the file's unit-test module: tests plant made-up error types on purpose.
fn production_part(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests")
        .map_or(text, |at| &text[..at])
}

fn captures(re: &Regex, text: &str, out: &mut BTreeSet<String>) {
    let mut caps = re.create_captures();
    let mut at = 0;
    while at < text.len() {
        re.search_captures(&regex_automata::Input::new(text).range(at..), &mut caps);
        let (Some(whole), Some(group)) = (caps.get_match(), caps.get_group(1)) else {
            break;
        };
        out.insert(text[group.range()].to_owned());
        at = whole.end().max(at + 1);
    }
}

/// Every error type a string literal in the crates' production code emits.
fn emitted_error_types() -> BTreeSet<String> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates)
        .expect("the crates directory is readable")
        .flatten()
    {
        files.extend(sources(&krate.path().join("src")));
    }
    assert!(files.len() > 20, "the scan found the sources");
    let call = Regex::new(r#"\b(?:refused|refusal|tool_error)\(\s*[^,()]*,\s*"([a-z][a-z0-9_]*)""#)
        .expect("pattern");
    let field = Regex::new(r#"\berror_type"?\s*[:=]\s*"([a-z][a-z0-9_]*)""#).expect("pattern");
    let arm = Regex::new(r#"=>\s*"([a-z][a-z0-9_]*)""#).expect("pattern");
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file is readable");
        let text = production_part(&text);
        captures(&call, text, &mut found);
        captures(&field, text, &mut found);
        // The match arms of each `fn error_type` table.
        let mut rest = text;
        while let Some(at) = rest.find("fn error_type(") {
            let body = &rest[at..];
            let end = body.find("\n    }\n").unwrap_or(body.len());
            captures(&arm, &body[..end], &mut found);
            rest = &body[end..];
        }
    }
    found
}

#[test]
fn every_emitted_error_type_has_a_catalogue_entry() {
    let emitted = emitted_error_types();
    for expected in ["config_invalid", "not_supported", "timeout"] {
        assert!(
            emitted.contains(expected),
            "the scan misses {expected}: {emitted:?}"
        );
    }
    // What is not typed yet (other crates' `fn error_type` tables, worker answers) is scanned; every
    // typed one is an `ErrorType`, which the next test holds to the catalogue.
    let missing: Vec<_> = emitted.iter().filter(|e| lookup(e).is_none()).collect();
    assert!(
        missing.is_empty(),
        "error types without a catalogue entry: {missing:?}"
    );
}

#[test]
fn the_catalogue_keys_are_unique_and_every_entry_is_complete() {
    let keys: BTreeSet<_> = catalogue().map(|e| e.key).collect();
    assert_eq!(keys.len(), catalogue().count(), "a key is listed twice");
    for entry in catalogue() {
        assert!(
            !entry.meaning.is_empty() && !entry.meaning.contains('\n'),
            "{}",
            entry.key
        );
        assert!(
            !entry.remediation.is_empty(),
            "{} has no remediation",
            entry.key
        );
    }
}

#[test]
fn a_scoped_key_falls_back_to_its_plain_entry() {
    assert_eq!(lookup("timeout:openocd").map(|e| e.key), Some("timeout"));
    assert!(lookup("no_such_error").is_none());
    let value = entry_value(lookup("report_not_found").expect("listed"));
    assert_eq!(value["error_type"], "report_not_found");
    assert!(
        value["remediation"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    );
}

#[test]
fn a_refusal_without_advice_gets_the_catalogue_advice_and_keeps_its_own() {
    let mut bare = Outcome::refused("t", ErrorType::AuditUnavailable, "x");
    merge_advice(&mut bare);
    assert!(!bare.remediation.is_empty() && !bare.do_not.is_empty());
    let mut own =
        Outcome::refused("t", ErrorType::AuditUnavailable, "x").with_remediation(["mine"]);
    merge_advice(&mut own);
    assert_eq!(own.remediation, ["mine"]);
}

#[test]
fn the_error_types_are_exactly_the_catalogues_plain_keys() {
    use crate::ErrorType;
    let plain: BTreeSet<&str> = catalogue()
        .map(|e| e.key.split_once(':').map_or(e.key, |(key, _)| key))
        .collect();
    let typed: BTreeSet<&str> = ErrorType::ALL.iter().map(|e| e.as_str()).collect();
    assert_eq!(typed, plain);
    for error in ErrorType::ALL {
        assert_eq!(error.as_str().parse::<ErrorType>(), Ok(*error));
        assert!(lookup(error.as_str()).is_some(), "{error}");
    }
}

#[test]
fn a_layer_key_outside_the_catalogue_never_leaves_the_gate() {
    use crate::ErrorType;
    assert_eq!(ErrorType::layer("timeout"), ErrorType::Timeout);
    assert_eq!(ErrorType::layer("made_up_error"), ErrorType::InternalError);
    assert_eq!(
        Outcome::refused("t", ErrorType::layer("made_up_error"), "x")
            .error_type
            .as_deref(),
        Some("internal_error")
    );
}
