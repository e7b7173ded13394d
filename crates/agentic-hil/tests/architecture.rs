//! The security model lives in the dependency graph: the binary cannot name a driver, so no frontend
//! reaches hardware except through the gate.

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
