//! Property tests: the verifier accepts every log the writer produces, and nothing else.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// A log and its sidecar, built the way the writer builds them.
fn build(events: &[(String, i64)]) -> (Vec<u8>, Sidecar) {
    let mut log = Vec::new();
    let mut sidecar = Sidecar::genesis();
    for (text, n) in events {
        let mut line = pyjson::line(&json!({"event": text, "n": n}));
        line.push('\n');
        sidecar.chain_sha256 = chain_next(&sidecar.chain_sha256, line.as_bytes());
        sidecar.sequence += 1;
        sidecar.bytes += line.len() as u64;
        log.extend_from_slice(line.as_bytes());
    }
    (log, sidecar)
}

fn events() -> impl Strategy<Value = Vec<(String, i64)>> {
    prop::collection::vec((any::<String>(), any::<i64>()), 0..12)
}

proptest! {
    #[test]
    fn every_log_the_writer_produces_verifies(events in events()) {
        let (log, sidecar) = build(&events);
        prop_assert_eq!(verify_chain(&log, &sidecar), Ok(()));
        prop_assert_eq!(verify_mirror(&log, &log), MirrorVerdict::Verified);
    }

    #[test]
    fn no_single_byte_corruption_is_accepted(
        events in events().prop_filter("a log to corrupt", |e| !e.is_empty()),
        at in any::<prop::sample::Index>(),
        replacement in any::<u8>(),
    ) {
        let (mut log, sidecar) = build(&events);
        let i = at.index(log.len());
        prop_assume!(log[i] != replacement);
        log[i] = replacement;
        prop_assert!(verify_chain(&log, &sidecar).is_err());
    }

    #[test]
    fn removing_or_inserting_a_byte_is_never_accepted(
        events in events().prop_filter("a log to corrupt", |e| !e.is_empty()),
        at in any::<prop::sample::Index>(),
        extra in any::<u8>(),
        insert in any::<bool>(),
    ) {
        let (mut log, sidecar) = build(&events);
        if insert {
            log.insert(at.index(log.len() + 1), extra);
        } else {
            log.remove(at.index(log.len()));
        }
        prop_assert!(verify_chain(&log, &sidecar).is_err());
    }

    #[test]
    fn arbitrary_bytes_and_sidecars_never_panic(
        log in prop::collection::vec(any::<u8>(), 0..512),
        sequence in any::<u64>(),
        bytes in any::<u64>(),
        raw_sidecar in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let sidecar = Sidecar { sequence, chain_sha256: GENESIS.to_owned(), bytes };
        let _ = verify_chain(&log, &sidecar);
        let _ = Sidecar::parse(&raw_sidecar);
        let _ = verify_mirror(&log, &raw_sidecar);
    }

    #[test]
    fn a_mirror_missing_any_canonical_line_is_never_verified(
        events in events().prop_filter("two lines or more", |e| e.len() > 1),
        drop in any::<prop::sample::Index>(),
    ) {
        let (log, _) = build(&events);
        let text = String::from_utf8(log.clone()).expect("ascii lines");
        let mut lines: Vec<&str> = text.lines().collect();
        let removed = lines.remove(drop.index(lines.len()));
        // A duplicate of the removed line elsewhere keeps the subsequence intact; that is no loss.
        prop_assume!(!lines.contains(&removed));
        let mirror: String = lines.iter().flat_map(|l| [*l, "\n"]).collect();
        prop_assert_ne!(verify_mirror(&log, mirror.as_bytes()), MirrorVerdict::Verified);
    }
}

#[test]
fn a_sidecar_with_wrong_types_is_refused() {
    assert!(Sidecar::parse(br#"{"sequence": "1", "chain_sha256": "00", "bytes": 0}"#).is_none());
    let good = format!(r#"{{"sequence": 1, "chain_sha256": "{GENESIS}", "bytes": 0}}"#);
    assert!(Sidecar::parse(good.as_bytes()).is_some());
    let _: Value = json!(null);
}
