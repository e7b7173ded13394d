//! Bytes to a [`TestPlan`], and a workspace path to a [`LoadedPlan`].
//!
//! The order of the checks is the reference's, because it decides which fault a plan with
//! several is refused for: text and YAML, a mapping root, finite numbers, version 1, the
//! shape of the whole document (first fault in key-path order), then features newer than
//! the plan's own `version` (first step, then the step's keys in file order), then a step
//! naming its device twice.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::catalogue::{ROUTE_KEYS, VERSIONS, check_list, check_step, key_since, step_kind};
use super::error::PlanError;
use super::model::{LoadedPlan, Reader, Step, TestPlan, int_of};
use super::shape::{Fault, Kind, Obj, Shape, Text, check};
use crate::error::{ConfigError, Refusal};
use crate::load::read_config_bytes;
use crate::node::{MAX_CONFIG_BYTES, Node, Path as KeyPath, parse_yaml};
use crate::paths::{absolute_lexical, is_within, normalize};

/// Where a workspace keeps its plan when none is named.
pub const DEFAULT_PLAN_PATH: &str = ".agentic-hil/testconfig.yaml";

/// The root of a plan document.
pub(crate) fn root_shape() -> Shape {
    Shape::new(Kind::Obj(Box::new(Obj {
        props: vec![
            (
                "version",
                Shape::new(Kind::IntChoice(&VERSIONS))
                    .describe("Plan format version: 3 adds `device:`, comparators, `uart_write`, `uart_read` and `delay`; 4 adds `repeat`; 5 adds `read_symbol`; 6 adds `participant:`."),
            ),
            (
                "name",
                Shape::new(Kind::Str(Text {
                    min_len: 1,
                    pat: None,
                    no_parent: false,
                }))
                .describe("Shown in reports; defaults to the file name without its extension."),
            ),
            (
                "steps",
                Shape::new(Kind::Steps).describe("The steps, run in order until one fails."),
            ),
        ],
        required: vec!["version", "steps"],
        ..Obj::default()
    })))
}

fn invalid(summary: impl Into<String>, field: &str) -> PlanError {
    PlanError::invalid(Refusal::new(summary).at(field))
}

/// Parses and checks a plan document (YAML or JSON). `name` stays as written.
pub fn parse_plan(bytes: &[u8]) -> Result<TestPlan, PlanError> {
    if bytes.len() > MAX_CONFIG_BYTES {
        return Err(PlanError::invalid(
            Refusal::new("The test plan is larger than any real plan (4 MiB).")
                .at("$")
                .with("bytes", bytes.len()),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        PlanError::invalid(
            Refusal::new("The test plan is not UTF-8 text.")
                .at("$")
                .with(
                    "backend_error",
                    format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                ),
        )
    })?;
    let root = parse_yaml(text).map_err(|e| yaml_error(&e))?;
    let Node::Map(_) = root else {
        return Err(invalid("The test plan's top level must be a mapping.", "$"));
    };
    if let Some(at) = first_non_finite(&root, &KeyPath::root()) {
        return Err(PlanError::invalid(
            Refusal::new("Numbers in a test plan must be finite.")
                .at(at.to_string())
                .with("value", "non-finite"),
        ));
    }
    if is_version_one(root.get("version")) {
        return Err(PlanError::invalid(
            Refusal::new("Version 1 plans are no longer read: their `device:` named a unit that no longer exists.")
                .at("version")
                .with("migration", version_one_migration())
                .fix("Set `version: 2` and route each step by `debugger:`, `port_id:` or `bus_id:`, or `version: 3` and `device:`."),
        ));
    }
    // The top level first (its keys, and `steps` as a list), then each step in turn:
    // a fault in the version outranks one deep in a step, as in the reference.
    let mut faults = Vec::new();
    check(
        &root,
        &root_shape(),
        &KeyPath::root(),
        check_list,
        &mut faults,
    );
    first_fault(faults)?;
    if let Some(Node::Seq(items)) = root.get("steps") {
        for (i, item) in items.iter().enumerate() {
            let mut faults = Vec::new();
            check_step(item, &KeyPath::root().key("steps").index(i), &mut faults);
            first_fault(faults)?;
        }
    }
    let version = root.get("version").and_then(plan_version).unwrap_or(2);
    let steps_node = root.get("steps").unwrap_or(&Node::Null);
    let steps_at = KeyPath::root().key("steps");
    check_versions(steps_node, &steps_at, version)?;
    check_routes(steps_node, &steps_at)?;
    let steps = build_steps(steps_node, &steps_at);
    Ok(TestPlan {
        version,
        name: match root.get("name") {
            Some(Node::Str(s)) => Some(s.clone()),
            _ => None,
        },
        steps,
    })
}

/// Reports the first fault by its schema error path; the sort is stable, so ties keep
/// the order the checks ran in (the reference's keyword order).
fn first_fault(mut faults: Vec<Fault>) -> Result<(), PlanError> {
    faults.sort_by(|a, b| a.rank.cmp(&b.rank));
    match faults.into_iter().next() {
        Some(f) => Err(fault_error(f)),
        None => Ok(()),
    }
}

fn plan_version(n: &Node) -> Option<u8> {
    // `5.0` equals 5 in the reference's enum check; a boolean is refused by the shape.
    let v = int_of(n)?;
    if VERSIONS.contains(&v) {
        u8::try_from(v).ok()
    } else {
        None
    }
}

fn is_version_one(n: Option<&Node>) -> bool {
    // The reference compares with Python's `==`, where `true` and `1.0` are 1.
    matches!(n, Some(Node::Int(1) | Node::Bool(true)))
        || matches!(n, Some(Node::Float(f)) if (*f - 1.0).abs() < f64::EPSILON)
}

fn version_one_migration() -> Value {
    json!({
        "device (flash, reset, debug_start, run_until_breakpoint, dump_memory, debug_stop)": "debugger: <debuggers entry>, or nothing while exactly one debugger is configured",
        "device (uart_open, uart_expect, uart_close)": "port_id: <com_ports entry>",
        "can_open, can_close, can_send, can_read": "bus_id: <can_buses entry>",
    })
}

fn yaml_error(e: &ConfigError) -> PlanError {
    let mut r = Refusal::new("The test plan is not valid YAML or JSON.").at("$");
    for (k, v) in e.details() {
        if k != "field" {
            r = r.with(&k, v);
        }
    }
    PlanError::invalid(r.fix(
        "Fix the YAML at `line`/`column`: keys must be unique plain strings, one document, no merge keys.",
    ))
}

fn first_non_finite(n: &Node, at: &KeyPath) -> Option<KeyPath> {
    match n {
        Node::Float(f) if !f.is_finite() => Some(at.clone()),
        Node::Seq(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, c)| first_non_finite(c, &at.index(i))),
        Node::Map(entries) => {
            let mut found: Vec<KeyPath> = entries
                .iter()
                .filter_map(|(k, c)| first_non_finite(c, &at.key(k)))
                .collect();
            found.sort();
            found.into_iter().next()
        }
        _ => None,
    }
}

fn fault_error(f: Fault) -> PlanError {
    let field = f.at.to_string();
    let detail = |k: &str| {
        f.details
            .iter()
            .find(|(n, _)| *n == k)
            .map_or(String::new(), |(_, v)| v.to_string())
    };
    let summary = match f.validator {
        "action" => format!("`{field}` names no action of the step catalogue."),
        "step_type" => format!("`{field}` must be a mapping with an `action`."),
        "additionalProperties" => format!("`{field}` holds a key the plan format does not define."),
        "required" => format!("`{field}` is required here."),
        "oneOf" if f.details.iter().any(|(k, _)| *k == "exactly_one_of") => {
            format!(
                "`{field}` needs exactly one of {}.",
                detail("exactly_one_of")
            )
        }
        "oneOf" => format!("`{field}` has none of the forms it may take."),
        "anyOf" => format!(
            "`{field}` needs at least one of {}.",
            detail("at_least_one_of")
        ),
        "dependentRequired" => format!(
            "`{field}` uses {} without {}.",
            detail("key"),
            detail("requires")
        ),
        "not" => format!("`{field}` holds keys or a value that the format excludes."),
        "enum" => format!("`{field}` has an unsupported value."),
        "pattern" => format!("`{field}` does not have the allowed form."),
        "minLength" => format!("`{field}` must not be empty."),
        "minItems" => format!("`{field}` must hold at least one step."),
        "maxItems" => format!("`{field}` holds more steps than one list may (128)."),
        "minimum" => format!("`{field}` must be at least {}.", detail("limit")),
        "maximum" => format!("`{field}` must be at most {}.", detail("limit")),
        "exclusiveMinimum" => format!("`{field}` must be greater than {}.", detail("limit")),
        "type" => format!("`{field}` must be of type {}.", detail("expected_type")),
        _ => format!("`{field}` does not fit the test plan format."),
    };
    let mut r = Refusal::new(summary)
        .at(field)
        .with("validator", f.validator);
    for (k, v) in f.details {
        r = r.with(k, v);
    }
    PlanError::invalid(r)
}

/// Refuses a feature newer than the plan's `version`, naming the first one met.
fn check_versions(steps: &Node, at: &KeyPath, version: u8) -> Result<(), PlanError> {
    let Node::Seq(items) = steps else {
        return Ok(());
    };
    for (i, step) in items.iter().enumerate() {
        let here = at.index(i);
        let Some(Node::Str(action)) = step.get("action") else {
            continue;
        };
        let Some(kind) = step_kind(action) else {
            continue;
        };
        let gates = std::iter::once(("action", action.as_str()))
            .chain(step.entries().iter().map(|(k, _)| (k.as_str(), k.as_str())));
        for (key, named) in gates {
            if let Some(since) = key_since(kind, key)
                && since > version
            {
                return Err(PlanError::invalid(
                    Refusal::new(format!(
                        "This plan says `version: {version}`, but uses `{named}`, which plan version {since} introduced."
                    ))
                    .at(here.key(key).to_string())
                    .with("value", named)
                    .with("plan_version", version)
                    .with("requires_plan_version", since)
                    .fix(format!(
                        "Set `version: {since}` on this plan, or write the step the way version {version} spells it."
                    )),
                ));
            }
        }
        if let Some(nested) = step.get("steps") {
            check_versions(nested, &here.key("steps"), version)?;
        }
    }
    Ok(())
}

/// A step names its device once: `device:` or one alias, never both.
fn check_routes(steps: &Node, at: &KeyPath) -> Result<(), PlanError> {
    let Node::Seq(items) = steps else {
        return Ok(());
    };
    for (i, step) in items.iter().enumerate() {
        let here = at.index(i);
        let named: Vec<&str> = ROUTE_KEYS
            .iter()
            .copied()
            .filter(|k| step.get(k).is_some())
            .collect();
        if let [_, second, ..] = named.as_slice() {
            return Err(PlanError::invalid(
                Refusal::new("A step names the device it drives once.")
                    .at(here.key(second).to_string())
                    .with("route_keys", json!(named))
                    .fix("Keep `device:` (version 3 and later) or the one alias, not both."),
            ));
        }
        if let Some(nested) = step.get("steps") {
            check_routes(nested, &here.key("steps"))?;
        }
    }
    Ok(())
}

fn build_steps(steps: &Node, at: &KeyPath) -> Vec<Step> {
    let Node::Seq(items) = steps else {
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .map(|(i, n)| Reader::new(n, &at.index(i)).step(&build_steps))
        .collect()
}

/// Reads the plan at `plan_path` (relative to `workspace`, or absolute) and checks it.
///
/// The path must stay inside the workspace after folding `.` and `..`; no symbolic link
/// may stand anywhere on it and the file must be a single-link regular file, because an
/// agent that can write the workspace could otherwise point the reactor at any file.
/// `workspace` is taken as given (the caller resolved it).
pub fn load_plan(workspace: &Path, plan_path: &Path) -> Result<LoadedPlan, PlanError> {
    let workspace = normalize(workspace);
    let path = absolute_lexical(plan_path, &workspace);
    let shown = display(&path, &workspace);
    if !is_within(&path, &workspace) || path == workspace {
        return Err(PlanError::invalid(
            Refusal::new("A test plan must stay inside the workspace.")
                .at("workspace_root")
                .with("path", plan_path.display().to_string())
                .fix("Move the plan under the workspace and name it by a path inside it."),
        ));
    }
    let bytes = read_config_bytes(&path, &shown).map_err(|e| read_refusal(&e, &path, &shown))?;
    let plan = parse_plan(&bytes)?;
    let name = plan.name.clone().unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    Ok(LoadedPlan {
        plan,
        name,
        path,
        display_path: shown,
        sha256: crate::digest::sha256_hex(&bytes),
    })
}

/// Names the shared reader's refusals the way the reference names them for plans: a
/// directory or a hard-linked file is an unsafe path, not an unreadable or invalid one.
fn read_refusal(e: &ConfigError, path: &Path, shown: &str) -> PlanError {
    let unsafe_file = || {
        PlanError::unsafe_path(
            Refusal::new("A test plan must be a single-link regular file.")
                .with("path", shown.to_owned()),
        )
    };
    match e {
        ConfigError::NotFound(_) => {
            PlanError::from_config(e, "No test plan exists at the named path.")
        }
        ConfigError::UnsafePath(_) => PlanError::from_config(
            e,
            "The test plan's path holds a symbolic link or a non-directory component.",
        ),
        ConfigError::Invalid(_) => unsafe_file(),
        ConfigError::Unreadable(_) if !is_regular_file(path) => unsafe_file(),
        ConfigError::Unreadable(_) | ConfigError::WorkspaceIsHome(_) => {
            PlanError::from_config(e, "The test plan could not be read.")
        }
    }
}

fn is_regular_file(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file())
}

fn display(path: &Path, workspace: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) => rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// The default plan path of a workspace.
pub fn default_plan_path(workspace: &Path) -> PathBuf {
    workspace.join(DEFAULT_PLAN_PATH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refuse(doc: &str) -> PlanError {
        parse_plan(doc.as_bytes()).expect_err("the plan must be refused")
    }

    #[test]
    fn a_version_gate_names_both_versions_and_the_fix() {
        let e = refuse("version: 2\nsteps:\n  - {debugger: dut, action: delay, duration_ms: 5}\n");
        let d = e.details();
        assert_eq!(d["plan_version"], 2);
        assert_eq!(d["requires_plan_version"], 3);
        assert_eq!(d["value"], "delay");
        assert!(e.remediation()[0].contains("version: 3"));
    }

    #[test]
    fn an_integral_float_version_is_read_as_that_version() {
        let plan = parse_plan(b"version: 6.0\nsteps:\n  - {device: d, action: reset}\n")
            .expect("6.0 is version 6");
        assert_eq!(plan.version, 6);
    }

    #[test]
    fn version_one_comes_with_a_migration_map() {
        let e = refuse("version: 1\nsteps: 3\n");
        assert_eq!(e.field(), Some("version"));
        assert!(e.details()["migration"].is_object());
    }

    #[test]
    fn summaries_say_what_the_value_must_be() {
        let e = refuse("version: 5\nsteps:\n  - {device: d, action: delay, duration_ms: 0}\n");
        assert_eq!(e.summary(), "`steps[0].duration_ms` must be at least 1.");
        let e = refuse("version: 5\nsteps:\n  - {device: d, action: uart_write}\n");
        assert_eq!(
            e.summary(),
            "`steps[0]` needs exactly one of [\"text\",\"hex\"]."
        );
        assert_eq!(e.details()["validator"], "oneOf");
    }

    #[test]
    fn a_doubly_named_step_lists_the_keys_it_used() {
        let e = refuse("version: 5\nsteps:\n  - {device: d, port_id: d, action: uart_open}\n");
        assert_eq!(e.field(), Some("steps[0].port_id"));
        assert_eq!(e.details()["route_keys"], json!(["device", "port_id"]));
    }

    #[test]
    fn integers_beyond_64_bits_saturate_instead_of_failing_the_load() {
        // The reference keeps Python integers and accepts these; preflight judges them.
        let plan = parse_plan(
            b"version: 5\nsteps:\n  - {device: c, action: can_send, frame_id: \"0x1FFFFFFFFFFFFFFFFFFFF\"}\n  - {action: repeat, count: 100000000000000000000000, steps: [{device: d, action: reset}]}\n",
        )
        .expect("loads");
        assert!(matches!(
            plan.steps[0],
            Step::CanSend {
                frame_id: u64::MAX,
                ..
            }
        ));
        assert!(matches!(
            plan.steps[1],
            Step::Repeat {
                count: Some(u64::MAX),
                ..
            }
        ));
    }

    #[test]
    fn a_merge_key_is_refused_though_the_reference_would_merge_it() {
        // Known difference: the shared YAML layer refuses `<<` outright (see node.rs).
        let e = refuse("version: 5\nsteps:\n  - &s {device: d, action: uart_open}\n  - {<<: *s}\n");
        assert_eq!(
            (e.error_type(), e.field()),
            ("test_config_invalid", Some("$"))
        );
    }

    #[test]
    fn an_oversized_plan_is_refused_before_parsing() {
        let big = vec![b' '; MAX_CONFIG_BYTES + 1];
        assert_eq!(parse_plan(&big).expect_err("too big").field(), Some("$"));
    }
}
