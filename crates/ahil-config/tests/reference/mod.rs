//! The reference implementation (agentic-hil 0.25.0) that scripts/setup-debian.sh installs under
//! `target/`: its binary, and the JSON schemas it prints. A test comparing with it fails when it is
//! missing.

#![allow(dead_code, reason = "each test file uses part of this module")]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub fn reference() -> PathBuf {
    let path = std::env::var_os("AHIL_REFERENCE_BIN").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/reference-venv/bin/agentic-hil")
        },
        PathBuf::from,
    );
    assert!(
        path.exists(),
        "the reference agentic-hil 0.25.0 is missing at {}: run scripts/setup-debian.sh",
        path.display()
    );
    path
}

/// What `agentic-hil <command>` (`schema` or `test-schema`) of the reference prints, run in a
/// private HOME and working directory.
pub fn reference_schema(command: &str) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = Command::new(reference())
        .arg(command)
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("AGENTIC_HIL_CONFIG")
        .output()
        .expect("the reference runs");
    assert!(
        output.status.success(),
        "reference {command} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the reference prints a JSON schema")
}
