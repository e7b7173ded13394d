//! `config_status` and `config_in_force` compare the loaded bytes with the file now.

mod common;

use std::fs;

use ahil_config::{FileState, load_authoritative, render_init_config};
use common::Bench;

fn loaded(bench: &Bench) -> (ahil_config::LoadedConfig, std::path::PathBuf) {
    let path =
        bench.write_canonical(render_init_config(&bench.workspace, &bench.state()).as_bytes());
    (
        load_authoritative(&bench.workspace, &bench.env()).expect("loads"),
        path,
    )
}

#[test]
fn an_untouched_file_is_unchanged() {
    let bench = Bench::new();
    let (cfg, _) = loaded(&bench);
    let s = cfg.status();
    assert_eq!(s.state, FileState::Unchanged);
    assert!(!s.reload_required);
    assert_eq!(s.current_digest.as_deref(), Some(cfg.digest.as_str()));
    assert_eq!(s.digest_algorithm, "sha256");
    assert_eq!(s.description_source, "startup");
    assert!(s.path.starts_with("~/"));
    let json = serde_json::to_value(&s).expect("serializes");
    assert_eq!(json["state"], "unchanged");
    assert!(!cfg.in_force().diverged_from_file);
}

#[test]
fn an_edited_file_is_changed_and_requires_a_reload() {
    let bench = Bench::new();
    let (cfg, path) = loaded(&bench);
    let mut text = fs::read_to_string(&path).expect("read");
    text.push_str("# edited\n");
    fs::write(&path, text).expect("write");
    let s = cfg.status();
    assert_eq!(s.state, FileState::Changed);
    assert!(s.reload_required);
    assert_ne!(s.current_digest.as_deref(), Some(cfg.digest.as_str()));
    assert_eq!(s.state.error_type(), Some("config_stale"));
    let f = cfg.in_force();
    assert!(f.diverged_from_file);
    assert_eq!(f.file_state, FileState::Changed);
}

#[test]
fn a_deleted_file_is_missing() {
    let bench = Bench::new();
    let (cfg, path) = loaded(&bench);
    fs::remove_file(&path).expect("remove");
    let s = cfg.status();
    assert_eq!(s.state, FileState::Missing);
    assert!(s.reload_required);
    assert_eq!(s.current_digest, None);
    assert_eq!(
        serde_json::to_value(cfg.in_force()).expect("json")["file_state"],
        "missing"
    );
}

#[test]
fn a_file_replaced_by_a_directory_is_unreadable() {
    let bench = Bench::new();
    let (cfg, path) = loaded(&bench);
    fs::remove_file(&path).expect("remove");
    fs::create_dir(&path).expect("mkdir");
    assert_eq!(cfg.status().state, FileState::Unreadable);
}
