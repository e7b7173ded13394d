//! Side by side with the reference implementation (agentic-hil 0.25.0, Python): pointed at the same
//! workspace and the same configuration file, both accept it and their doctor verdicts on whether the
//! bench is bound to hardware agree.

mod support;

use std::process::Command;

use serde_json::Value;
use support::{World, reference};

fn doctor(world: &World, program: &std::path::Path) -> Value {
    let mut cmd = Command::new(program);
    world.scrub(&mut cmd);
    let out = cmd
        .args(["doctor", "--json"])
        .output()
        .expect("doctor runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} doctor printed no JSON ({e}): {}\n{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A configuration refusal means the file was not accepted; anything else is a verdict about the bench.
fn accepted(doc: &Value) -> bool {
    !doc["error_type"]
        .as_str()
        .is_some_and(|t| t.starts_with("config_") || t == "unsafe_configured_path")
}

fn bound(doc: &Value) -> bool {
    doc["bench_binding"]["ok"]
        .as_bool()
        .unwrap_or_else(|| panic!("no bench_binding.ok in {doc}"))
}

fn edit_config(world: &World, edit: impl FnOnce(String) -> String) {
    let path = world.config_path();
    let text = std::fs::read_to_string(&path).expect("read config");
    std::fs::write(&path, edit(text)).expect("write config");
}

fn compare(world: &World, reference: &std::path::Path, case: &str) {
    let ours = doctor(world, std::path::Path::new(World::binary()));
    let theirs = doctor(world, reference);
    assert!(
        accepted(&theirs),
        "{case}: the reference refused the file: {theirs}"
    );
    assert!(accepted(&ours), "{case}: we refused the file: {ours}");
    assert_eq!(
        bound(&ours),
        bound(&theirs),
        "{case}: binding verdicts differ\nours: {}\nreference: {}",
        ours["bench_binding"],
        theirs["bench_binding"]
    );
}

const FAKE_OPENOCD: &str = "#!/bin/sh\necho 'Open On-Chip Debugger 0.12.0' >&2\nexit 0\n";

#[test]
fn both_implementations_accept_our_generated_configuration_and_call_it_unbound() {
    let reference = reference();
    let world = World::new();
    world.run_json(&["init"]);
    compare(&world, &reference, "generated");
    let ours = doctor(&world, std::path::Path::new(World::binary()));
    assert!(
        !bound(&ours),
        "a generated configuration names no toolchain"
    );
}

#[test]
fn both_implementations_agree_once_the_debugger_names_a_toolchain() {
    let reference = reference();
    let world = World::new();
    world.run_json(&["init"]);
    let openocd = world.write_fake_tool("openocd", FAKE_OPENOCD);
    edit_config(&world, |t| {
        t.replace(
            "executable: null",
            &format!("executable: \"{}\"", openocd.display()),
        )
    });
    compare(&world, &reference, "executable set");
    edit_config(&world, |t| {
        t.replace("probe_id: null", "probe_id: \"066AFF495451885087171450\"")
    });
    compare(&world, &reference, "executable and probe_id set");
    edit_config(&world, |t| {
        t.replace(
            "controller: \"unknown-controller\"",
            "controller: \"stm32f446ret6\"",
        )
    });
    compare(
        &world,
        &reference,
        "executable, probe_id and controller set",
    );
}

#[test]
fn we_accept_the_configuration_the_reference_writes() {
    let reference = reference();
    let world = World::new();
    let mut cmd = Command::new(&reference);
    world.scrub(&mut cmd);
    let out = cmd
        .args(["init", "--json"])
        .output()
        .expect("reference init runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    compare(&world, &reference, "written by the reference");
}
