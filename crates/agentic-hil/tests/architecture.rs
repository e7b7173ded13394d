//! The security model lives in the dependency graph: the binary cannot name a driver, so no frontend
//! reaches hardware except through the gate; the gate's core (pipeline, policy, envelope, ownership,
//! audit) links no driver, so only the tool implementations reach hardware; and the simulators are
//! test equipment, linked into no crate of the product, so nothing a user runs can be pointed at a
//! fake bench.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn metadata() -> Value {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--no-deps",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn dependencies_of<'a>(meta: &'a Value, package: &str) -> Vec<&'a str> {
    let packages = meta["packages"].as_array().expect("packages list");
    let pkg = packages
        .iter()
        .find(|p| p["name"] == package)
        .unwrap_or_else(|| panic!("{package} is a workspace member"));
    pkg["dependencies"]
        .as_array()
        .expect("dependency list")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect()
}

#[test]
fn the_binary_does_not_depend_on_the_drivers() {
    let meta = metadata();
    let deps = dependencies_of(&meta, "agentic-hil");
    assert!(
        deps.contains(&"ahil-gate"),
        "the binary reaches hardware through the gate: {deps:?}"
    );
    assert!(
        !deps.contains(&"ahil-drivers"),
        "agentic-hil must not depend on ahil-drivers (any kind of dependency): {deps:?}"
    );
}

#[test]
fn the_configuration_crate_touches_no_hardware() {
    let meta = metadata();
    let deps = dependencies_of(&meta, "ahil-config");
    assert!(!deps.contains(&"ahil-drivers"), "{deps:?}");
    assert!(!deps.contains(&"ahil-gate"), "{deps:?}");
}

/// The crates linked into the product binary.
const PRODUCT: [&str; 9] = [
    "agentic-hil",
    "ahil-gate",
    "ahil-core",
    "ahil-job",
    "ahil-drivers",
    "ahil-config",
    "ahil-client",
    "ahil-labgrid",
    "ahil-wire",
];

/// The workspace packages `package` links (normal and build dependencies, transitively), itself
/// included; dev-dependencies are only linked into tests.
fn linked_closure(meta: &Value, package: &str) -> BTreeSet<String> {
    let packages = meta["packages"].as_array().expect("packages list");
    let mut seen = BTreeSet::new();
    let mut todo = vec![package.to_owned()];
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(pkg) = packages.iter().find(|p| p["name"] == name.as_str()) else {
            continue;
        };
        for dep in pkg["dependencies"].as_array().expect("dependency list") {
            if dep["kind"].as_str() != Some("dev")
                && let Some(dep) = dep["name"].as_str()
            {
                todo.push(dep.to_owned());
            }
        }
    }
    seen
}

#[test]
fn no_crate_linked_into_the_product_depends_on_the_simulators() {
    let meta = metadata();
    for package in PRODUCT {
        let linked = linked_closure(&meta, package);
        assert!(
            !linked.contains("ahil-sim"),
            "{package} links ahil-sim through a normal or build dependency: {linked:?}"
        );
    }
    assert!(
        linked_closure(&meta, "agentic-hil").contains("ahil-drivers"),
        "the closure follows the gate to the drivers, so it would see a simulator behind them"
    );
}

#[test]
fn the_gate_core_links_neither_the_drivers_nor_the_simulators() {
    let meta = metadata();
    let linked = linked_closure(&meta, "ahil-core");
    assert!(
        linked.contains("ahil-config"),
        "the closure follows the core's dependencies: {linked:?}"
    );
    for forbidden in ["ahil-drivers", "ahil-sim", "ahil-gate"] {
        assert!(
            !linked.contains(forbidden),
            "the gate core decides and records; it must not link {forbidden}: {linked:?}"
        );
    }
}

#[test]
fn the_client_links_only_the_wire_leaf_of_the_workspace_crates() {
    let meta = metadata();
    let linked = linked_closure(&meta, "ahil-client");
    let ours: BTreeSet<&str> = PRODUCT.into_iter().chain(["ahil-sim"]).collect();
    let reached: Vec<&String> = linked
        .iter()
        .filter(|name| ours.contains(name.as_str()))
        .collect();
    assert_eq!(
        reached,
        ["ahil-client", "ahil-wire"],
        "a test suite links the client; it reaches the bench through the server, and shares only \
         the continue predicate with the gate"
    );
}

#[test]
fn only_the_tools_crate_depends_on_the_drivers() {
    let meta = metadata();
    let depending: Vec<&str> = PRODUCT
        .into_iter()
        .filter(|package| dependencies_of(&meta, package).contains(&"ahil-drivers"))
        .collect();
    assert_eq!(
        depending,
        ["ahil-gate"],
        "among the product's crates only the tool implementations (ahil-gate) reach the drivers"
    );
}

#[test]
fn the_gate_core_sources_name_no_driver() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ahil-core/src");
    let mut files = Vec::new();
    sources(&core, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("ahil-core/src/bench.rs")),
        "the scan reads the core's pipeline"
    );
    let naming: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .expect("a source file reads")
                .contains("ahil_drivers")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        naming.is_empty(),
        "the gate core's sources (unit tests included) name ahil_drivers: {naming:?}"
    );
}

#[test]
fn the_binary_has_no_simulator_commands() {
    for command in ["can-bridge-sim", "psu-sim"] {
        let out = Command::new(env!("CARGO_BIN_EXE_agentic-hil"))
            .arg(command)
            .env("HOME", std::env::temp_dir())
            .output()
            .expect("the binary runs");
        assert!(
            !out.status.success(),
            "`agentic-hil {command}` is ahil-sim's executable, not a product command"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand"),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Every source file of the crates linked into the product (their unit tests included).
fn product_sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for package in PRODUCT {
        sources(&crates.join(package).join("src"), &mut files);
    }
    files
}

#[test]
fn no_product_source_names_the_simulators() {
    let files = product_sources();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("ahil-gate/src/actions/probe.rs")),
        "the scan reads the gate's sources"
    );
    let naming: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .expect("a source file reads")
                .contains("ahil_sim::")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        naming.is_empty(),
        "product sources (unit tests included) name ahil_sim: {naming:?}"
    );
}

/// A module has one job; past 800 lines it has two. Every source file of every crate (product,
/// simulators, tests and benches) is held to it, so a file cannot grow past it unnoticed.
#[test]
fn no_source_file_is_over_800_lines() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("the crates directory") {
        let dir = entry.expect("a directory entry").path();
        for part in ["src", "tests", "benches"] {
            if dir.join(part).is_dir() {
                sources(&dir.join(part), &mut files);
            }
        }
    }
    assert!(
        files.len() > 100,
        "the scan reads every crate: {}",
        files.len()
    );
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f)
                .expect("a source file reads")
                .lines()
                .count();
            (lines > 800).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these modules: {long:?}");
}

/// Product code with the inline test module (`#[cfg(test)] mod … {`, always last) cut off; `None`
/// for a file of tests or one of the catalogue's declaration files, where tool names belong.
fn product_code(file: &Path) -> Option<String> {
    let path = file.to_string_lossy().replace('\\', "/");
    let declarations = ["setup.rs", "debugger.rs", "devices.rs"]
        .iter()
        .any(|name| path.ends_with(&format!("ahil-gate/src/catalogue/{name}")));
    if declarations || path.ends_with("_tests.rs") || path.ends_with("/tests.rs") {
        return None;
    }
    let text = std::fs::read_to_string(file).expect("a source file reads");
    let cut = text
        .match_indices("#[cfg(test)]")
        .map(|(at, _)| at)
        .find(|&at| {
            let rest = text[at + "#[cfg(test)]".len()..].trim_start();
            rest.starts_with("mod ") && rest.lines().next().is_some_and(|l| l.ends_with('{'))
        });
    Some(text[..cut.unwrap_or(text.len())].to_owned())
}

/// The ways a line can decide by a tool's name: a match arm, a comparison, a named constant.
fn decides_by_name(line: &str, name: &str) -> bool {
    let quoted = format!("\"{name}\"");
    [
        format!("{quoted} =>"),
        format!("{quoted} |"),
        format!("| {quoted}"),
        format!("== {quoted}"),
        format!("!= {quoted}"),
        format!("== Some({quoted})"),
        format!("{quoted} =="),
        format!(": &str = {quoted}"),
    ]
    .iter()
    .any(|shape| line.contains(shape.as_str()))
        || (line.contains("matches!(") && line.contains(&quoted))
}

/// A tool's identity is its declaration (`ToolId`, decision 0009): product code decides by the
/// variant, never by the name's spelling, so a renamed tool cannot keep half its behaviour.
#[test]
fn no_product_code_decides_by_a_tool_names_string() {
    // A plan step's `action` words are the plan format's own vocabulary; two equal tool names.
    const PLAN_WORDS: &str = "ahil-config/src/plan/model.rs";
    let files = product_sources();
    let names: Vec<String> = ahil_gate::tools(true).into_iter().map(|t| t.name).collect();
    assert!(
        names.len() > 40,
        "the scan knows every tool: {}",
        names.len()
    );
    let mut deciding = Vec::new();
    for file in &files {
        let Some(code) = product_code(file) else {
            continue;
        };
        let shown = file.display().to_string().replace('\\', "/");
        for (number, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in &names {
                let plan_word = shown.ends_with(PLAN_WORDS) && name.starts_with("can_");
                if decides_by_name(line, name) && !plan_word {
                    deciding.push(format!("{shown}:{}: {}", number + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        deciding.is_empty(),
        "decide by ToolId, not by the name's string:\n{}",
        deciding.join("\n")
    );
}

/// The log writer starts before a configuration loads; it learns the configuration's private
/// directories only where the binary loads one through `logs::load_config`. A second way to load
/// would leave a custom state root unmasked in the log.
#[test]
fn the_binary_loads_its_configuration_only_through_the_log_sinks_loader() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 10, "the scan reads the binary's sources");
    let elsewhere: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("src/logs.rs"))
        .filter(|f| {
            std::fs::read_to_string(f)
                .expect("a source file reads")
                .contains("load_authoritative")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        elsewhere.is_empty(),
        "these load the configuration without logs::load_config: {elsewhere:?}"
    );
}

/// The gate's facade as the binary sees it. The core's modules (re-exported by the gate) name no
/// driver (`the_gate_core_sources_name_no_driver`), so any of their items is harmless; of the
/// gate's own items only these, none of which contacts hardware except through [`Bench`] or as a
/// child process the gate itself starts.
const FACADE: &[&str] = &[
    // The pipeline and its answer.
    "Bench",
    "Outcome",
    "ErrorType",
    "ToolSpec",
    "OPERATOR_CLI",
    "overall_success",
    "overall_success_value",
    "conclusive_success",
    "conclusive_success_value",
    // Configuration and coordination records only: no device is opened.
    "provision::init",
    "doctor::config_error",
    "bootstrap::bench_before_init",
    "config_edit::operator::set_permissions",
    "config_edit::operator::preview_reload",
    "config_edit::operator::config_error",
    "operator::recover",
    "operator::lease_status",
    "operator::RecoverOptions",
    "observe",
    "reactor",
    "child",
    "artifacts::Stager::release_process",
    // The host's serial port inventory (sysfs and udev); no port is opened.
    "actions::com_ports::available_ports",
    // Children the gate starts and keeps: the emulated board's keeper (`sim supervise`, started
    // by `sim_start` under the board's lock), the probe-rs worker and the CAN broker. Each is the
    // binary re-executed, so its entry point must be reachable from `main`.
    "sim::board_spec",
    "sim::supervise",
    "actions::probe_rs::worker",
    "can::broker::server::main",
];

/// The core's modules as the gate re-exports them (`ahil-gate/src/lib.rs`).
const CORE_MODULES: &[&str] = &[
    "audit",
    "cancel",
    "catalogue",
    "catalogue_output",
    "claims",
    "envelope",
    "fsio",
    "incidents",
    "ownership",
    "policy",
    "progress",
    "snapshot",
    "validate",
];

/// Every `ahil_gate::…` path `text` names, `use` groups (`ahil_gate::{a, b::{c}}`) expanded.
fn gate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("ahil_gate::") {
        rest = &rest[at + "ahil_gate::".len()..];
        expand("", rest, &mut found);
    }
    found
}

/// The path at the start of `text` under `prefix`, with any group it opens.
fn expand(prefix: &str, text: &str, found: &mut Vec<String>) {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    let path = format!("{prefix}{}", &text[..end]);
    if !text[end..].starts_with('{') {
        found.push(path.trim_end_matches(':').to_owned());
        return;
    }
    let group = &text[end + 1..];
    let mut depth = 0usize;
    let mut start = 0;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                item(&path, &group[start..at], found);
                return;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                item(&path, &group[start..at], found);
                start = at + 1;
            }
            _ => {}
        }
    }
}

fn item(prefix: &str, text: &str, found: &mut Vec<String>) {
    let text = text.trim();
    let name = if text.contains('{') {
        text
    } else {
        text.split(" as ").next().unwrap_or(text).trim()
    };
    if name.is_empty() {
        return;
    }
    if name == "self" {
        found.push(prefix.trim_end_matches(':').to_owned());
    } else {
        expand(prefix, name, found);
    }
}

/// `path` is the facade item `allowed` or something under it.
fn under(path: &str, allowed: &str) -> bool {
    path == allowed || path.starts_with(&format!("{allowed}::"))
}

/// Issue #24 item 7: every operator command that touches hardware goes through the pipeline, so the
/// binary reaches the gate through a small facade. A hardware-touching function the binary called
/// directly (`doctor`, bootstrap's listing, the adoption, `sim::stop`) would bypass the device
/// locks and the report.
#[test]
fn the_binary_uses_only_the_gates_facade() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut used = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a source file reads");
        // Comments may name any path; only code reaches one.
        let code = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for path in gate_paths(&code) {
            used.insert(path);
        }
    }
    assert!(
        used.contains("Bench") && used.contains("sim::supervise"),
        "the scan reads the binary's uses of the gate: {used:?}"
    );
    let outside: Vec<&String> = used
        .iter()
        .filter(|path| {
            !CORE_MODULES.iter().any(|module| under(path, module))
                && !FACADE.iter().any(|allowed| under(path, allowed))
        })
        .collect();
    assert!(
        outside.is_empty(),
        "the binary reaches past the gate's facade (run hardware through `Bench::call`): {outside:?}"
    );
}

#[test]
fn the_facade_scan_expands_use_groups() {
    assert_eq!(
        gate_paths(
            "use ahil_gate::{Bench, audit::{self, Sink as S}};\nahil_gate::sim::stop(&spec)"
        ),
        ["Bench", "audit", "audit::Sink", "sim::stop"]
    );
}

/// The `AHIL_TEST_*` seams stand in for what a test machine lacks (an account home per test, a fake
/// probe, a pty with a USB identity), and the server's environment is the agent's to set: only a
/// build made for tests may read them. The `test-seams` feature is turned on by dev-dependencies
/// alone, so `cargo build`, debug or release, makes a binary that reads none.
#[test]
fn only_dev_dependencies_turn_the_test_seams_on() {
    let meta = metadata();
    for package in meta["packages"].as_array().expect("packages list") {
        let name = package["name"].as_str().unwrap_or_default();
        if name == "ahil-wire" {
            let default = &package["features"]["default"];
            assert!(
                !default.to_string().contains("test-seams"),
                "ahil-wire's default features include the test seams"
            );
        }
        for dep in package["dependencies"].as_array().expect("dependency list") {
            let seams = dep["features"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f == "test-seams"));
            assert!(
                !seams || dep["kind"] == "dev",
                "{name} turns the test seams on through a {} dependency on {}",
                dep["kind"].as_str().unwrap_or("normal"),
                dep["name"]
            );
        }
        let features = package["features"].as_object().expect("features map");
        for (feature, enables) in features {
            assert!(
                !enables.to_string().contains("test-seams"),
                "{name}'s feature {feature} turns the test seams on"
            );
        }
    }
}

#[test]
fn every_test_seam_is_read_behind_the_one_switch() {
    let files = product_sources();
    let mut readers = 0;
    for file in files {
        let Some(code) = product_code(&file) else {
            continue;
        };
        if !code.contains("\"AHIL_TEST_") {
            continue;
        }
        readers += 1;
        assert!(
            code.contains("TEST_SEAMS"),
            "{} reads an AHIL_TEST_ variable without asking ahil_wire::TEST_SEAMS",
            file.display()
        );
        assert!(
            !code.contains("debug_assertions"),
            "{} gates something on debug_assertions: a debug build is not a test build",
            file.display()
        );
    }
    assert!(readers >= 3, "the seam readers were found ({readers})");
}
