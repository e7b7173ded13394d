//! The digest sidecar written in place (ADR 0028): the same file overwritten with one fsync, a torn
//! copy refused, and readers that never see an append half done.

use std::fs;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;

use super::{LOG, world};
use crate::ErrorType;
use crate::audit::safe;

#[test]
fn a_sidecar_is_overwritten_in_place_and_its_first_copy_is_created_by_rename() {
    use std::os::unix::fs::MetadataExt;
    let w = world();
    w.append(&json!({"event": "start"})).expect("first append");
    let inode = || fs::metadata(w.sidecar()).expect("sidecar").ino();
    let first = inode();
    w.three_events();
    assert_eq!(inode(), first, "the same file, not a replacement");
    let names: Vec<_> = fs::read_dir(w.sidecar().parent().expect("dir"))
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(names.is_empty(), "no temp file: {names:?}");
    assert_eq!(w.evidence()["canonical_chain_verified"], true);
}

#[test]
fn a_torn_sidecar_is_refused_like_one_left_behind_its_line() {
    let w = world();
    w.three_events();
    // What a device that tore the sidecar's sector on power loss would leave: part of the document.
    let whole = fs::read(w.sidecar()).expect("sidecar");
    fs::write(w.sidecar(), &whole[..whole.len() / 2]).expect("tear");
    assert_eq!(w.evidence()["canonical_log_corrupted"], true);
    let err = w
        .append(&json!({"event": "after"}))
        .expect_err("no record chains onto a torn sidecar");
    assert_eq!(err.error_type(), ErrorType::CoordinationStateInvalid);
    assert_eq!(
        fs::read(w.sidecar()).expect("sidecar"),
        &whole[..whole.len() / 2]
    );
}

#[test]
fn a_reader_of_the_evidence_waits_for_the_append_that_holds_the_log() {
    let w = world();
    w.three_events();
    let lock_path = w.sidecar().with_file_name(format!("{LOG}.lock"));
    let writer = safe::lock(&w.state, &lock_path).expect("the writer's lock");
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let evidence = w.evidence();
            tx.send(evidence).expect("send");
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the evidence was read while an append held the log"
        );
        drop(writer);
        let evidence = rx.recv().expect("read once the append is done");
        assert_eq!(evidence["canonical_chain_verified"], true);
    });
}
