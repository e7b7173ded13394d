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
