//! `parse_plan` is fed by whatever an agent writes: it must answer, never panic.

use ahil_config::plan::parse_plan;
use proptest::prelude::*;

const SEED: &str = include_str!("plans/valid/01-spec-example-v5.yaml");
const NESTED: &str = include_str!("plans/valid/05-nested-repeat-v5.json");

/// Tokens that make a mutation reach deeper rules than a random byte would.
const TOKENS: &[&str] = &[
    "version: 2",
    "version: 6",
    "action: repeat",
    "action: delay",
    "device:",
    "debugger:",
    "port_id:",
    "bus_id:",
    "participant:",
    "comparator:",
    "{",
    "}",
    "[",
    "]",
    ": ",
    "- ",
    "\n",
    "  ",
    ".nan",
    "-1",
    "0",
    "1e400",
    "0x",
    "&a",
    "*a",
    "<<",
    "!!binary",
    "~",
    "true",
    "\"",
    "range: {min: 1, max: 2}",
    "steps: []",
    "mask: 3",
    "signed: true",
];

fn mutate(seed: &str, edits: &[(usize, usize, u8)]) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for &(pos, tok, byte) in edits {
        let at = pos % (bytes.len() + 1);
        match byte % 4 {
            0 => {
                let t = TOKENS[tok % TOKENS.len()].as_bytes();
                bytes.splice(at..at, t.iter().copied());
            }
            1 if at < bytes.len() => {
                bytes.remove(at);
            }
            2 if at < bytes.len() => bytes[at] = byte,
            _ => {
                let end = (at + tok % 40).min(bytes.len());
                bytes.drain(at..end);
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_plan(&bytes);
    }

    #[test]
    fn mutated_valid_plans_never_panic_and_every_refusal_names_a_type(
        edits in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 1..8),
        json in any::<bool>(),
    ) {
        let bytes = mutate(if json { NESTED } else { SEED }, &edits);
        if let Err(e) = parse_plan(&bytes) {
            prop_assert!(e.error_type().starts_with("test_config_"));
            prop_assert!(!e.summary().is_empty());
            prop_assert!(e.field().is_some(), "a content refusal names a field");
        }
    }
}

#[test]
fn deep_nesting_is_refused_by_the_parser_budget_not_the_stack() {
    let mut doc = String::from("version: 5\nsteps:\n");
    let depth = 200;
    for _ in 0..depth {
        doc.push_str("- {action: repeat, count: 1, steps: [");
    }
    doc.push_str("{device: dut, action: reset}");
    for _ in 0..depth {
        doc.push_str("]}");
    }
    let e = parse_plan(doc.as_bytes()).expect_err("too deep");
    assert_eq!(e.error_type(), "test_config_invalid");
}
