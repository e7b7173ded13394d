//! Where the file is found and which files the authoritative load refuses.

mod common;

use std::fs;

use ahil_config::{
    ConfigLocation, Environment, canonical_config_path, config_candidates, load_authoritative,
    render_init_config,
};
use common::Bench;

fn starter(bench: &Bench) -> String {
    render_init_config(&bench.workspace, &bench.state())
}

#[test]
fn the_canonical_leaf_matches_the_reference_for_a_tmp_workspace() {
    // The reference wrote /tmp/x/ws's file under projects/ws-13ad34c6d6 (checked by running it).
    let env = Environment {
        home: "/home/op".into(),
        xdg_config_home: Some("/nonexistent-xdg".into()),
        xdg_state_home: None,
        config_override: None,
        path: None,
    };
    let c = config_candidates(std::path::Path::new("/tmp/x/ws"), &env);
    assert!(
        c[0].ends_with("agentic-hil/projects/ws-13ad34c6d6/config.yaml"),
        "{:?}",
        c[0]
    );
    assert!(c[0].starts_with("/nonexistent-xdg"));
    assert_eq!(
        c[1],
        std::path::PathBuf::from("/home/op/.agentic-hil/projects/ws-13ad34c6d6/config.yaml")
    );
}

#[test]
fn the_default_location_is_under_dot_config_without_xdg() {
    let bench = Bench::new();
    let p = canonical_config_path(&bench.workspace, &bench.env());
    assert!(
        p.starts_with(bench.home.join(".config/agentic-hil/projects")),
        "{p:?}"
    );
}

#[test]
fn an_existing_fallback_file_wins_over_a_missing_default() {
    let bench = Bench::new();
    let env = bench.env();
    let fallback = config_candidates(&bench.workspace, &env)[1].clone();
    fs::create_dir_all(fallback.parent().expect("parent")).expect("mkdir");
    fs::write(&fallback, starter(&bench)).expect("write");
    assert_eq!(canonical_config_path(&bench.workspace, &env), fallback);
    let loaded = load_authoritative(&bench.workspace, &env).expect("fallback loads");
    assert_eq!(loaded.path, fallback);
    assert!(loaded.display_path.starts_with("~/.agentic-hil/projects/"));
}

#[test]
fn a_missing_file_is_config_file_not_found_with_a_display_path() {
    let bench = Bench::new();
    let e = load_authoritative(&bench.workspace, &bench.env()).unwrap_err();
    assert_eq!(e.error_type(), "config_file_not_found");
    assert!(
        e.details()["path"]
            .as_str()
            .expect("path")
            .starts_with("~/")
    );
}

#[test]
fn the_generated_starter_loads_and_creates_the_state_root() {
    let bench = Bench::new();
    bench.write_canonical(starter(&bench).as_bytes());
    let loaded = load_authoritative(&bench.workspace, &bench.env()).expect("loads");
    assert!(bench.state().is_dir());
    assert!(loaded.digest.starts_with("sha256:") && loaded.digest.len() == 71);
    assert_eq!(loaded.loaded_at.len(), 20);
    assert!(!loaded.from_override);
    assert_eq!(loaded.workspace, bench.workspace);
}

#[test]
fn an_override_must_be_absolute() {
    let bench = Bench::new();
    let mut env = bench.env();
    env.config_override = Some("relative.yaml".into());
    let e = load_authoritative(&bench.workspace, &env).unwrap_err();
    assert_eq!((e.error_type(), e.field()), ("config_invalid", None));
}

#[test]
fn an_override_outside_the_workspace_loads_without_the_canonical_check() {
    let bench = Bench::new();
    let file = bench.root.join("elsewhere.yaml");
    fs::write(&file, starter(&bench)).expect("write");
    let mut env = bench.env();
    env.config_override = Some(file.clone().into_os_string());
    let loaded = load_authoritative(&bench.workspace, &env).expect("loads");
    assert!(loaded.from_override);
    assert_eq!(
        ConfigLocation::select(&bench.workspace, &env)
            .expect("select")
            .path,
        file
    );
}

#[test]
fn an_override_inside_the_workspace_is_refused() {
    let bench = Bench::new();
    let file = bench.workspace.join("config.yaml");
    fs::write(&file, starter(&bench)).expect("write");
    let mut env = bench.env();
    env.config_override = Some(file.into_os_string());
    let e = load_authoritative(&bench.workspace, &env).unwrap_err();
    assert_eq!(e.error_type(), "config_invalid");
    assert!(
        e.summary().contains("outside the workspace"),
        "{}",
        e.summary()
    );
}

#[test]
fn an_override_that_is_a_symlink_is_an_unsafe_path() {
    let bench = Bench::new();
    let real = bench.root.join("real.yaml");
    fs::write(&real, starter(&bench)).expect("write");
    let link = bench.root.join("link.yaml");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let mut env = bench.env();
    env.config_override = Some(link.into_os_string());
    assert_eq!(
        load_authoritative(&bench.workspace, &env)
            .unwrap_err()
            .error_type(),
        "unsafe_configured_path"
    );
}

#[test]
fn an_override_with_a_second_hard_link_is_refused() {
    let bench = Bench::new();
    let file = bench.root.join("c.yaml");
    fs::write(&file, starter(&bench)).expect("write");
    fs::hard_link(&file, bench.root.join("c2.yaml")).expect("link");
    let mut env = bench.env();
    env.config_override = Some(file.into_os_string());
    let e = load_authoritative(&bench.workspace, &env).unwrap_err();
    assert_eq!(e.error_type(), "config_invalid");
    assert!(e.summary().contains("single-link"));
}

#[test]
fn an_override_naming_a_directory_is_unreadable() {
    let bench = Bench::new();
    let mut env = bench.env();
    env.config_override = Some(bench.root.clone().into_os_string());
    assert_eq!(
        load_authoritative(&bench.workspace, &env)
            .unwrap_err()
            .error_type(),
        "config_unreadable"
    );
}

#[test]
fn a_file_for_a_different_workspace_is_refused_with_the_expected_workspace() {
    let bench = Bench::new();
    let other = bench.root.join("other");
    fs::create_dir(&other).expect("mkdir");
    bench.write_canonical(render_init_config(&other, &bench.state()).as_bytes());
    let e = load_authoritative(&bench.workspace, &bench.env()).unwrap_err();
    assert_eq!(e.error_type(), "config_invalid");
    assert_eq!(
        e.details()["expected_workspace"],
        bench.workspace.display().to_string()
    );
}

#[test]
fn the_home_directory_is_not_a_workspace() {
    let bench = Bench::new();
    let e = load_authoritative(&bench.home, &bench.env()).unwrap_err();
    assert_eq!(e.error_type(), "workspace_is_home");
    let e = load_authoritative(&bench.root, &bench.env()).unwrap_err();
    assert_eq!(e.error_type(), "workspace_is_home");
}

#[test]
fn a_symlinked_state_root_is_an_unsafe_path() {
    let bench = Bench::new();
    let real = bench.root.join("real-state");
    fs::create_dir(&real).expect("mkdir");
    let link = bench.root.join("state-link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    bench.write_canonical(render_init_config(&bench.workspace, &link.join("st")).as_bytes());
    let e = load_authoritative(&bench.workspace, &bench.env()).unwrap_err();
    assert_eq!(
        (e.error_type(), e.field()),
        ("unsafe_configured_path", Some("state_root"))
    );
}

#[test]
fn an_executable_inside_the_workspace_is_refused() {
    let bench = Bench::new();
    let tool = bench.workspace.join("openocd");
    fs::write(&tool, "#!/bin/sh\n").expect("write");
    let text = starter(&bench).replace(
        "executable: null",
        &format!("executable: \"{}\"", tool.display()),
    );
    bench.write_canonical(text.as_bytes());
    let e = load_authoritative(&bench.workspace, &bench.env()).unwrap_err();
    assert_eq!(e.field(), Some("debuggers.dut.executable"));
    assert!(e.summary().contains("outside the workspace"));
}

#[test]
fn a_linked_executable_is_pinned_by_the_operators_spelling_once_its_target_is_vetted() {
    let bench = Bench::new();
    let tool = bench.tool("openocd");
    let links = bench.root.join("links");
    fs::create_dir_all(&links).expect("links dir");
    let link = links.join("my-openocd");
    std::os::unix::fs::symlink(&tool, &link).expect("link");
    let text = starter(&bench).replace(
        "executable: null",
        &format!("executable: \"{}\"", link.display()),
    );
    bench.write_canonical(text.as_bytes());
    let loaded = load_authoritative(&bench.workspace, &bench.env()).expect("loads");
    assert_eq!(loaded.executables.debugger("dut"), Some(link.as_path()));
}

#[test]
fn a_link_outside_the_workspace_to_a_program_inside_it_is_refused() {
    let bench = Bench::new();
    let tool = bench.workspace.join("openocd");
    fs::write(&tool, "#!/bin/sh\n").expect("write");
    let link = bench.root.join("openocd-link");
    std::os::unix::fs::symlink(&tool, &link).expect("link");
    let text = starter(&bench).replace(
        "executable: null",
        &format!("executable: \"{}\"", link.display()),
    );
    bench.write_canonical(text.as_bytes());
    let e = load_authoritative(&bench.workspace, &bench.env()).unwrap_err();
    assert_eq!(e.field(), Some("debuggers.dut.executable"));
    assert!(e.summary().contains("outside the workspace"), "{e:?}");
}

#[test]
fn a_named_entry_autodetects_its_tool_on_path() {
    let bench = Bench::new();
    let tool = bench.tool("openocd");
    let text = starter(&bench).replace("probe_id: null", "probe_id: \"ABC\"");
    bench.write_canonical(text.as_bytes());
    let loaded = load_authoritative(&bench.workspace, &bench.env()).expect("loads");
    assert_eq!(loaded.executables.debugger("dut"), Some(tool.as_path()));
}

#[test]
fn a_named_entry_without_a_tool_is_disabled_not_refused() {
    let bench = Bench::new();
    let text = starter(&bench).replace("probe_id: null", "probe_id: \"ABC\"");
    bench.write_canonical(text.as_bytes());
    let loaded = load_authoritative(&bench.workspace, &bench.env()).expect("loads");
    assert!(matches!(
        loaded.executables.debuggers["dut"],
        ahil_config::ExecutableState::Disabled { .. }
    ));
}
