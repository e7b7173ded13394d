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
    // Detached, a plan is still judged before the answer: the refusal is the call's. A plan that
    // loads but fails preflight is not compared detached: the reference answers it as a race
    // between its worker's preflight and its wait for `running` (either `running` or the
    // terminal `test_config_invalid`); ours is refused by the call, in test_reactor's
    // `a_detached_plan_naming_an_unknown_device_is_refused_by_the_call_and_starts_no_worker`.
    for (label, path) in [
        (
            "detached, an unknown action",
            "plans/corpus/17-action-unknown.yaml",
        ),
        ("detached, a missing plan", "plans/missing.yaml"),
    ] {
        steps.push(tool(
            leak(format!("plans/{label}")),
            "test_reactor_run",
            json!({"test_config_path": path, "detach": true}),
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

/// Plans on the permission matrix's bench (permissions.rs): each refused at preflight by a grant
/// the variant closes, or by the plan's own order (`nothing`): (name, steps, grant, versions).
#[rustfmt::skip]
const ON_THE_BENCH: &[(&str, &str, &str, &[u8])] = &[
    ("flash", "- {device: dut, action: flash, image_path: fw/fw.elf}", "allow_flash", &[1, 3]),
    ("flash and reset", "- {device: dut, action: flash, image_path: fw/fw.elf, reset_after_flash: true}", "allow_reset", &[1, 3]),
    ("reset", "- {device: dut, action: reset, mode: run}", "allow_reset", &[1, 3]),
    ("debug attach", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: attach}", "allow_probe", &[1]),
    ("debug load", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: load}", "allow_flash", &[1, 3]),
    ("run to a breakpoint", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: attach}\n- {device: dut, action: run_until_breakpoint, location: main, timeout_s: 1}", "allow_debug_execution", &[1, 3]),
    ("open a port without read", "- {device: closed, action: uart_open}", "allow_read", &[1]),
    ("write a port without write", "- {device: nowrite, action: uart_open}\n- {device: nowrite, action: uart_write, text: x}", "allow_write", &[1, 3]),
    ("open a bus without read", "- {device: closed, action: can_open}", "allow_read", &[1]),
    ("send on a bus without write", "- {device: nowrite, action: can_open}\n- {device: nowrite, action: can_send, frame_id: \"0x1\", data_hex: \"01\"}", "allow_write", &[1, 3]),
    ("write a port never opened", "- {device: nowrite, action: uart_write, text: x}", "nothing", &[1, 3]),
    ("read a bus never opened", "- {device: nowrite, action: can_read, max_frames: 1}", "nothing", &[1, 3]),
    ("run to a breakpoint without a session", "- {device: dut, action: run_until_breakpoint, location: main, timeout_s: 1}", "nothing", &[1, 3]),
    ("a participant on a bus without shares", "- {device: nowrite, action: can_open, participant: tester}", "nothing", &[1, 3]),
    ("a port as a debugger", "- {device: nowrite, action: reset, mode: run}", "nothing", &[1, 3]),
    ("a debug image that is no elf", "- {device: dut, action: debug_start, image_path: fw/fw.hex, mode: attach}", "allow_flash", &[3]),
    ("a dump outside the workspace", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: attach}\n- {device: dut, action: dump_memory, symbol: main, output_path: ../dump.hex}", "allow_flash", &[3]),
    ("a dump of a symbol not allowed", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: attach}\n- {device: dut, action: dump_memory, symbol: counter, output_path: counter.hex}", "allow_flash", &[3]),
    ("a breakpoint on a symbol not allowed", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: attach}\n- {device: dut, action: run_until_breakpoint, location: counter, timeout_s: 1}", "allow_flash", &[3]),
    ("a debug session on reset without reset", "- {device: dut, action: debug_start, image_path: fw/fw.elf, mode: reset_halt}", "allow_reset", &[1, 3]),
];

#[test]
fn plans_a_closed_grant_refuses_are_refused_as_the_reference_does() {
    use crate::permissions::{VARIANTS, write_bench};
    let mut failed = Vec::new();
    for version in [1_u8, 3] {
        for (versions, closed) in VARIANTS {
            let rows: Vec<_> = ON_THE_BENCH
                .iter()
                .filter(|(_, _, grant, v)| closed.contains(grant) && v.contains(&version))
                .collect();
            if !versions.contains(&version) || rows.is_empty() {
                continue;
            }
            let scope = leak(format!("plan-bench/v{version}/{}/", closed[0]));
            let bench = |world: &World, _: &Path| {
                write_bench(world, version, closed);
                for (name, steps, _, _) in ON_THE_BENCH {
                    let text = format!("version: 5\nsteps:\n{}\n", steps.replace("- ", "  - "));
                    world.write_plan(&format!("{}.yaml", name.replace(' ', "-")), &text);
                }
            };
            let steps: Vec<Step> = rows
                .iter()
                .map(|(name, _, _, _)| {
                    let path = format!("plans/{}.yaml", name.replace(' ', "-"));
                    tool(
                        leak(format!("{scope}{name}")),
                        "test_reactor_run",
                        run(&path),
                        FIELDS,
                    )
                })
                .collect();
            // Every variant runs, so one answer shows every difference.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                compare(scope, &bench, &steps);
            }));
            if ran.is_err() {
                failed.push(scope);
            }
        }
    }
    assert!(failed.is_empty(), "variants that differ: {failed:?}");
}
