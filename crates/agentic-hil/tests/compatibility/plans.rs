//! Test plans run through `test_reactor_run`, side by side: every plan of ahil-config's corpus
//! (the invalid ones refused at load, the valid ones at preflight: the bench `init` writes binds
//! nothing), plans naming devices the bench does not have or has as another kind, and plan paths
//! that are missing, leave the workspace or are no plan. `check-plan` compares the loaders alone
//! (ahil-config's plan_reference.rs); this compares what an agent is answered. One server per
//! implementation runs every row.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::driver::{Step, compare, tool};
use crate::support::World;

/// Compared beside `isError` and `error_type`: where the plan is wrong (a refusal at load names it
/// at the top, one at preflight under `validation_error`).
const FIELDS: &[&str] = &["field|validation_error.field"];

/// Plans written by hand: (file name, text).
#[rustfmt::skip]
const HAND: &[(&str, &str)] = &[
    ("unknown-device.yaml", "version: 5\nsteps:\n  - {device: uart9, action: uart_open}\n"),
    ("unknown-debugger.yaml", "version: 5\nsteps:\n  - {device: probe9, action: reset, mode: run}\n"),
    ("debugger-as-port.yaml", "version: 5\nsteps:\n  - {device: dut, action: uart_open}\n"),
    ("debugger-as-bus.yaml", "version: 5\nsteps:\n  - {device: dut, action: can_send, frame_id: \"0x1\", data_hex: \"01\"}\n"),
    ("unbound-debugger.yaml", "version: 5\nsteps:\n  - {device: dut, action: reset, mode: run}\n"),
    ("unknown-step-kind.yaml", "version: 5\nsteps:\n  - {device: dut, action: self_destruct}\n"),
    ("step-without-action.yaml", "version: 5\nsteps:\n  - {device: dut}\n"),
    ("steps-a-string.yaml", "version: 5\nsteps: reset\n"),
    ("timeout-a-string.yaml", "version: 5\nsteps:\n  - {device: dut, action: uart_expect, text: ok, timeout_s: soon}\n"),
    ("image-outside.yaml", "version: 5\nsteps:\n  - {device: dut, action: flash, image_path: ../outside.elf}\n"),
    ("image-absolute.yaml", "version: 5\nsteps:\n  - {device: dut, action: flash, image_path: /etc/passwd}\n"),
    ("dump-outside.yaml", "version: 5\nsteps:\n  - {device: dut, action: dump_memory, symbol: buf, output_path: ../dump.hex}\n"),
    ("not-yaml.txt", "version: 5\nsteps:\n  - {device: dut, action: reset}\n"),
];

/// Paths that are not a plan in the workspace: (label, test_config_path).
const PATHS: &[(&str, &str)] = &[
    ("a missing plan", "plans/missing.yaml"),
    ("a plan outside the workspace", "../outside.yaml"),
    ("an absolute plan path", "/etc/passwd"),
    ("a directory", "plans"),
];

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn corpus() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ahil-config/tests/plans");
    let mut plans = Vec::new();
    for kind in ["invalid", "valid"] {
        let mut some: Vec<PathBuf> = std::fs::read_dir(dir.join(kind))
            .expect("the plan corpus")
            .map(|e| e.expect("entry").path())
            .collect();
        some.sort();
        plans.extend(some);
    }
    plans
}

/// The corpus under `plans/corpus/`, the hand plans under `plans/`, and one plan outside.
fn plans_bench(world: &World, _program: &Path) {
    let dir = world.workspace.join("plans/corpus");
    std::fs::create_dir_all(&dir).expect("plans dir");
    for plan in corpus() {
        std::fs::copy(&plan, dir.join(plan.file_name().expect("a name"))).expect("plan copied");
    }
    for (name, text) in HAND {
        world.write_plan(name, text);
    }
    let outside = world
        .workspace
        .parent()
        .expect("a parent")
        .join("outside.yaml");
    std::fs::write(outside, HAND[0].1).expect("the outside plan");
}

fn run(path: &str) -> serde_json::Value {
    json!({"test_config_path": path})
}

fn steps() -> Vec<Step> {
    let mut steps = Vec::new();
    for plan in corpus() {
        let name = plan
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let kind = plan
            .parent()
            .and_then(Path::file_name)
            .expect("a kind")
            .to_string_lossy()
            .into_owned();
        steps.push(tool(
            leak(format!("plans/{kind} {name}")),
            "test_reactor_run",
            run(&format!("plans/corpus/{name}")),
            FIELDS,
        ));
    }
    for (name, _) in HAND {
        steps.push(tool(
            leak(format!("plans/{name}")),
            "test_reactor_run",
            run(&format!("plans/{name}")),
            FIELDS,
        ));
    }
    for (label, path) in PATHS {
        steps.push(tool(
            leak(format!("plans/{label}")),
            "test_reactor_run",
            run(path),
            FIELDS,
        ));
    }
    steps
}

#[test]
fn malformed_test_plans_are_refused_as_the_reference_does() {
    compare("plans/", &plans_bench, &steps());
}
