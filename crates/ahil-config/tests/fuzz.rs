//! parse_config never panics, whatever the bytes.

use std::fmt::Write as _;

use ahil_config::{parse_config, render_init_config};
use proptest::prelude::*;

fn seed() -> String {
    render_init_config(
        std::path::Path::new("/w/p"),
        std::path::Path::new("/s/agentic-hil"),
    ) + "com_ports:\n  u:\n    device: /dev/ttyUSB0\n    vid: '0483'\n"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_config(&bytes);
    }

    #[test]
    fn arbitrary_yaml_like_text_never_panics(text in "[a-z_:{}\\[\\],\\- \n\"'0-9.~&*!|>#]{0,400}") {
        let _ = parse_config(text.as_bytes());
    }

    #[test]
    fn a_mutated_valid_file_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..12)
    ) {
        let mut bytes = seed().into_bytes();
        for (at, byte, op) in edits {
            if bytes.is_empty() { break; }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => { bytes.remove(i); }
            }
        }
        let _ = parse_config(&bytes);
    }

    #[test]
    fn mutated_values_never_panic(value in prop_oneof![
        Just(".nan".to_owned()), Just("-.inf".to_owned()), Just("1e400".to_owned()),
        Just("99999999999999999999999999999999999999999".to_owned()), Just("0x".to_owned()),
        Just("[]".to_owned()), Just("{}".to_owned()), Just("~".to_owned()), "[ -~]{0,20}",
    ], key in prop::sample::select(vec!["timeout_s", "max_attempts", "version", "baudrate", "vid", "max_dump_size_bytes"])) {
        let text = seed().replace("timeout_s: 60", &format!("{key}: {value}"));
        let _ = parse_config(text.as_bytes());
    }
}

#[test]
fn deeply_nested_input_is_refused_not_overflowed() {
    let deep = "a: ".to_owned() + &"[".repeat(10_000) + &"]".repeat(10_000) + "\n";
    assert!(parse_config(deep.as_bytes()).is_err());
    let mut deep_block = String::new();
    for i in 0..200 {
        deep_block.push_str(&" ".repeat(i));
        deep_block.push_str("k:\n");
    }
    assert!(parse_config(deep_block.as_bytes()).is_err());
}

#[test]
fn an_alias_bomb_is_refused() {
    let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        let _ = writeln!(
            doc,
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]"
        );
    }
    // The refusal must come from the parser's budget, not from the unknown keys that would
    // refuse the file anyway after a full expansion.
    let refusal = format!(
        "{:?}",
        parse_config(doc.as_bytes()).expect_err("bomb accepted")
    );
    assert!(refusal.contains("budget breached"), "{refusal}");
}

/// Asserts that our loader refuses `doc` on the named parser budget while the YAML library,
/// left to its own defaults, parses it: the refusal then proves our setting, not the library's.
fn refused_by_our_budget_alone(doc: &str, breach: &str) {
    let defaults = serde_saphyr::from_str::<serde_json::Value>(doc);
    assert!(
        defaults.is_ok(),
        "{breach}: the library's defaults refuse this input too: {defaults:?}"
    );
    let refusal = format!(
        "{:?}",
        parse_config(doc.as_bytes()).expect_err("accepted by our loader")
    );
    assert!(
        refusal.contains(&format!("budget breached: {breach} ")),
        "{breach}: {refusal}"
    );
}

#[test]
fn an_alias_bomb_within_the_library_defaults_is_refused_by_our_node_budget() {
    // Five levels of ten: a hundred thousand scalars, under the library's own node and
    // replay limits but over ours.
    let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..5 {
        let p = i - 1;
        let _ = writeln!(
            doc,
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]"
        );
    }
    refused_by_our_budget_alone(&doc, "Nodes");
}

#[test]
fn each_parser_budget_refuses_a_file_the_library_defaults_accept() {
    let mut aliases = String::new();
    for i in 0..101 {
        let _ = writeln!(aliases, "k{i}: &a{i} v");
    }
    aliases.push_str("l: [");
    for i in 0..1_001 {
        let _ = write!(aliases, "*a{}, ", i % 101);
    }
    aliases.push_str("]\n");
    refused_by_our_budget_alone(&aliases, "Aliases");

    let mut anchors = String::new();
    for i in 0..1_001 {
        let _ = writeln!(anchors, "k{i}: &a{i} v");
    }
    refused_by_our_budget_alone(&anchors, "Anchors");

    let depth = format!("a: {}{}\n", "[".repeat(49), "]".repeat(49));
    refused_by_our_budget_alone(&depth, "Depth");

    let nodes = format!("a: [{}]\n", "0,".repeat(100_001));
    refused_by_our_budget_alone(&nodes, "Nodes");

    // Empty sequences cost two events per node, so the event budget trips first.
    let events = format!("[{}]\n", "[],".repeat(99_999));
    refused_by_our_budget_alone(&events, "Events");

    // A tag handle expands on every use, so the scalar bytes can outgrow the file.
    let mut tags = format!("%TAG !e! tag:{}:\n---\nl: [", "x".repeat(1_000));
    for _ in 0..5_000 {
        tags.push_str("!e!a 1, ");
    }
    tags.push_str("]\n");
    refused_by_our_budget_alone(&tags, "ScalarBytes");
}
