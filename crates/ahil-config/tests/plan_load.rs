//! Loading a plan from a workspace: where it may be, what may stand on its path.
//!
//! Each refusal here was compared with the reference's `check-plan --json` for the same
//! layout: outside the workspace is `test_config_invalid` (field `workspace_root`), a
//! missing file `test_config_not_found`, and a link, a directory or a hard-linked file on
//! the way `unsafe_configured_path`.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use ahil_config::plan::{DEFAULT_PLAN_PATH, PlanError, default_plan_path, load_plan};

const PLAN: &str = "version: 5\nsteps:\n  - {device: dut, action: reset}\n";

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical temp dir");
    let ws = root.join("ws");
    fs::create_dir_all(ws.join("sub")).expect("mkdir");
    World {
        _dir: dir,
        root,
        ws,
    }
}

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::write(p, text).expect("write plan");
}

fn refused(ws: &Path, plan: &Path) -> PlanError {
    load_plan(ws, plan).expect_err("the plan must be refused")
}

#[test]
fn a_plan_inside_the_workspace_loads_with_its_stem_as_name_and_its_digest() {
    let w = world();
    write(&w.ws.join("sub/smoke.yaml"), PLAN);
    let loaded = load_plan(&w.ws, Path::new("sub/smoke.yaml")).expect("loads");
    assert_eq!(loaded.name, "smoke");
    assert_eq!(loaded.display_path, "sub/smoke.yaml");
    assert_eq!(loaded.path, w.ws.join("sub/smoke.yaml"));
    assert_eq!(loaded.sha256.len(), 64);
    assert!(
        loaded
            .sha256
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(loaded.plan.steps.len(), 1);
}

#[test]
fn a_written_name_wins_over_the_file_stem() {
    let w = world();
    write(&w.ws.join("p.yaml"), &format!("name: nightly\n{PLAN}"));
    assert_eq!(
        load_plan(&w.ws, Path::new("p.yaml")).expect("loads").name,
        "nightly"
    );
}

#[test]
fn dot_dot_that_folds_back_inside_the_workspace_is_accepted_as_the_reference_does() {
    let w = world();
    write(&w.ws.join("p.yaml"), PLAN);
    assert!(load_plan(&w.ws, Path::new("sub/../p.yaml")).is_ok());
    assert!(load_plan(&w.ws, Path::new("../ws/p.yaml")).is_ok());
    assert!(load_plan(&w.ws, &w.ws.join("p.yaml")).is_ok());
}

#[test]
fn a_plan_outside_the_workspace_is_refused_naming_workspace_root() {
    let w = world();
    write(&w.root.join("outside.yaml"), PLAN);
    for p in [
        PathBuf::from("../outside.yaml"),
        w.root.join("outside.yaml"),
    ] {
        let e = refused(&w.ws, &p);
        assert_eq!(e.error_type(), "test_config_invalid");
        assert_eq!(e.field(), Some("workspace_root"));
    }
}

#[test]
fn the_workspace_itself_is_not_a_plan() {
    let w = world();
    assert_eq!(
        refused(&w.ws, Path::new(".")).error_type(),
        "test_config_invalid"
    );
}

#[test]
fn a_missing_plan_is_test_config_not_found() {
    let w = world();
    let e = refused(&w.ws, Path::new("nope.yaml"));
    assert_eq!(e.error_type(), "test_config_not_found");
    assert_eq!(e.details()["path"], "nope.yaml");
}

#[test]
fn a_symlinked_plan_is_refused_even_when_it_points_inside() {
    let w = world();
    write(&w.ws.join("real.yaml"), PLAN);
    symlink(w.ws.join("real.yaml"), w.ws.join("link.yaml")).expect("symlink");
    assert_eq!(
        refused(&w.ws, Path::new("link.yaml")).error_type(),
        "unsafe_configured_path"
    );
}

#[test]
fn a_symlinked_directory_on_the_way_is_refused() {
    let w = world();
    write(&w.ws.join("sub/p.yaml"), PLAN);
    symlink(w.ws.join("sub"), w.ws.join("alias")).expect("symlink");
    assert_eq!(
        refused(&w.ws, Path::new("alias/p.yaml")).error_type(),
        "unsafe_configured_path"
    );
}

#[test]
fn a_directory_or_a_hard_linked_file_is_not_a_plan() {
    let w = world();
    assert_eq!(
        refused(&w.ws, Path::new("sub")).error_type(),
        "unsafe_configured_path"
    );
    write(&w.ws.join("a.yaml"), PLAN);
    fs::hard_link(w.ws.join("a.yaml"), w.ws.join("b.yaml")).expect("hard link");
    assert_eq!(
        refused(&w.ws, Path::new("a.yaml")).error_type(),
        "unsafe_configured_path"
    );
}

#[test]
fn a_content_fault_keeps_its_field_when_loaded_from_a_file() {
    let w = world();
    write(
        &w.ws.join("p.yaml"),
        "version: 5\nsteps:\n  - {device: dut, action: reset, mode: x}\n",
    );
    let e = refused(&w.ws, Path::new("p.yaml"));
    assert_eq!(e.error_type(), "test_config_invalid");
    assert_eq!(e.field(), Some("steps[0].mode"));
    assert_eq!(
        e.details()["allowed_values"],
        serde_json::json!(["run", "halt", "init"])
    );
}

#[test]
fn the_default_plan_lives_under_dot_agentic_hil() {
    let w = world();
    assert_eq!(DEFAULT_PLAN_PATH, ".agentic-hil/testconfig.yaml");
    write(&default_plan_path(&w.ws), PLAN);
    let loaded = load_plan(&w.ws, Path::new(DEFAULT_PLAN_PATH)).expect("loads");
    assert_eq!(loaded.name, "testconfig");
}
