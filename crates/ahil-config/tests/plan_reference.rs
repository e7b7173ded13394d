//! The plan corpus side by side with the reference (agentic-hil 0.25.0): its own loader,
//! through `check-plan --json`, accepts every valid plan and refuses every invalid one with
//! the same `error_type` we give. (`check-plan` reports no `field`; the fields in the
//! corpus headers were taken from the reference's `test-reactor --json`.)

mod reference;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ahil_config::plan::parse_plan;
use serde_json::Value;

fn corpus(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plans")
        .join(kind);
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .expect("plan corpus dir")
        .map(|e| e.expect("entry").path())
        .collect();
    v.sort();
    v
}

/// Runs `check-plan --json` on copies of `plans` in a fresh workspace with no
/// configuration (so only loadability is judged) and a private HOME.
fn check_plans(bin: &Path, plans: &[PathBuf]) -> Vec<Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    let (home, ws) = (root.join("home"), root.join("ws"));
    fs::create_dir_all(&home).expect("home");
    fs::create_dir_all(ws.join("plans")).expect("ws");
    let mut names = Vec::new();
    for p in plans {
        let name = format!("plans/{}", p.file_name().expect("name").to_string_lossy());
        fs::copy(p, ws.join(&name)).expect("copy plan");
        names.push(name);
    }
    let out = Command::new(bin)
        .current_dir(&ws)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", "/usr/bin:/bin")
        .env("LANG", "C.UTF-8")
        .arg("check-plan")
        .args(&names)
        .arg("--json")
        .output()
        .expect("check-plan runs");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check-plan printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    doc["plans"]
        .as_array()
        .cloned()
        .expect("a verdict per plan")
}

#[test]
fn the_reference_loader_agrees_with_ours_on_every_corpus_plan() {
    let bin = reference::reference();
    let mut plans = corpus("valid");
    plans.extend(corpus("invalid"));
    let verdicts = check_plans(&bin, &plans);
    assert_eq!(verdicts.len(), plans.len());
    let mut disagreements = Vec::new();
    for (plan, verdict) in plans.iter().zip(&verdicts) {
        let raw = fs::read(plan).expect("read plan");
        // Refused by the reference at preflight, by us at load: check-plan accepts them.
        let later_in_reference = String::from_utf8_lossy(&raw)
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("# REFERENCE:"));
        let ours = parse_plan(&raw).err().map(|e| e.error_type().to_owned());
        let theirs = verdict["error_type"].as_str().map(str::to_owned);
        let expected = if later_in_reference {
            None
        } else {
            ours.clone()
        };
        if theirs != expected {
            disagreements.push(format!(
                "{}: ours {ours:?} reference {theirs:?}",
                plan.display()
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
