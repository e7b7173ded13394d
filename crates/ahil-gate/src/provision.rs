//! `agentic-hil init`: write the workspace's authoritative configuration outside the workspace, or
//! keep the one that is there. A kept file is never touched; a written one is complete or absent.

use crate::ErrorType;
use std::path::Path;

use ahil_config::{
    Config, ConfigError, ConfigLocation, Environment, check_workspace_not_home, default_state_root,
    parse_config, render_init_config,
};
use serde_json::{Map, Value, json};

use crate::config_edit::layer_refusal;
use crate::envelope::Outcome;
use crate::fsio;

const TOOL: &str = "agentic_hil_init";

/// `check` is the doctor's verdict on the configuration as it stands after this step: the CLI runs
/// it as the operator-only tool `agentic_hil_doctor` through the pipeline.
pub fn init(
    workspace: &Path,
    env: &Environment,
    force: bool,
    check: impl FnOnce() -> Outcome,
) -> Outcome {
    if let Err(err) = check_workspace_not_home(workspace, env) {
        return refusal(&err);
    }
    let location = match ConfigLocation::select(workspace, env) {
        Ok(location) => location,
        Err(err) => return refusal(&err),
    };
    // Kept or written, a file the agent's edit tools reach is no policy.
    if let Err(err) = ahil_config::check_config_outside_workspace(&location.path, workspace, env) {
        return refusal(&err);
    }
    let shown = env.display_path(&location.path);
    let existing = std::fs::read(&location.path).ok();
    // A rewrite must not move grants under a run or session, here or in another process: holding
    // every device the current configuration names proves none is open.
    let _held = if existing.is_some() && force {
        match hold_bench(workspace, env) {
            Ok(held) => held,
            Err(outcome) => return *outcome,
        }
    } else {
        None
    };
    let mut step = match (&existing, force) {
        (Some(_), false) => json!({
            "ok": true,
            "skipped": true,
            "existing": true,
            "summary": "Kept the existing configuration; not a byte was written.",
            "path": shown,
        }),
        _ => match write_generated(workspace, env, &location, existing.as_deref()) {
            Ok(step) => step,
            Err(outcome) => return *outcome,
        },
    };
    let doctor = check();
    let written = step.get("skipped").is_none();
    let summary = if written {
        format!("Wrote the configuration to {shown}.")
    } else {
        format!("Kept the configuration at {shown}; pass --force to rewrite it.")
    };
    // The doctor's own next step already ends in running doctor again.
    let next_steps = vec![
        doctor
            .next_step
            .clone()
            .unwrap_or_else(|| "Run: agentic-hil doctor".to_owned()),
        "Run: agentic-hil mcp-config, and register the server with your MCP host.".to_owned(),
    ];
    if written {
        // The written step carries what to do with the file it wrote, as the reference's does.
        step["next_steps"] = json!(next_steps);
    }
    // The whole doctor document, as the reference's `steps.doctor`: a script reads the bench's
    // verdict off `init` without running `doctor` again.
    let doctor = doctor.to_value();
    Outcome::ok(TOOL, summary)
        .with("scope", "project")
        .with("config_path", shown)
        // Ours changes no mode on anything that exists (nor does the reference any more); the
        // lists stay because scripts read them.
        .with("state_root_changes", json!([]))
        .with("permission_changes", json!([]))
        // Every refusal comes before the one write, which is atomic: nothing to roll back.
        .with(
            "rollback",
            json!({"attempted": false, "ok": true, "errors": []}),
        )
        .with("steps", json!({"config": step, "doctor": doctor}))
        .with("next_steps", next_steps)
}

fn write_generated(
    workspace: &Path,
    env: &Environment,
    location: &ConfigLocation,
    previous: Option<&[u8]>,
) -> Result<Value, Box<Outcome>> {
    let state_root = default_state_root(env);
    let text = render_init_config(workspace, &state_root);
    // The start's own check, before anything is replaced: what the next start would refuse is
    // never written, and the operator's working file keeps every byte.
    let generated = ahil_config::admit(text.as_bytes(), workspace, &location.path, env)
        .map_err(|err| Box::new(refusal(&err)))?
        .config;
    let parent = location.path.parent().unwrap_or(Path::new("/"));
    fsio::create_dir_all_private(parent, 0o700).map_err(|err| Box::new(io_refusal(&err)))?;
    fsio::write_atomic(&location.path, text.as_bytes(), 0o600)
        .map_err(|err| Box::new(io_refusal(&err)))?;
    // The reference's `permissions` (every grant the written file holds) and
    // `narrowed_permissions` (those it withholds beyond the two the generation itself writes
    // false): a generated file withholds none, so the list is empty.
    let mut step = json!({
        "ok": true,
        "summary": "Wrote a version 3 configuration: every permission granted except raw debugger commands and mass erase.",
        "path": env.display_path(&location.path),
        "permissions": crate::doctor::permission_summary(&generated),
        "narrowed_permissions": narrowed(&generated),
    });
    if let Some(old) = previous {
        step["discarded_narrowings"] = match parse_config(old) {
            Ok(old) => {
                let opened = discarded_narrowings(&old, &generated);
                if !opened.is_empty() {
                    step["summary"] = json!(format!(
                        "{} The file it replaced had {} permission(s) set to false that this one grants, so they are open again: {}.",
                        step["summary"].as_str().unwrap_or_default(),
                        opened.len(),
                        opened.join(", ")
                    ));
                }
                json!(opened)
            }
            Err(_) => json!("the previous file did not parse"),
        };
    }
    Ok(step)
}

/// The grants `config` withholds beyond raw debugger commands and mass erase (which every
/// generated file withholds), sorted.
fn narrowed(config: &Config) -> Vec<String> {
    let mut keys: Vec<String> = permission_surface(config)
        .into_iter()
        .filter(|(key, granted)| {
            *granted == Value::Bool(false)
                && !key.ends_with(".allow_raw_debugger_commands")
                && !key.ends_with(".allow_mass_erase")
                && !key.ends_with(".allow_probe")
                && !key.ends_with(".allow_read")
                && !key.ends_with(".allow_rtt_write")
        })
        .map(|(key, _)| key)
        .collect();
    keys.sort();
    keys
}

/// Permission keys that were false in the file `--force` replaced and are true now: what the
/// operator had narrowed and the rewrite opened again, sorted as the reference lists them.
fn discarded_narrowings(old: &Config, new: &Config) -> Vec<String> {
    let old = permission_surface(old);
    let new = permission_surface(new);
    let mut opened: Vec<String> = new
        .iter()
        .filter(|(key, granted)| {
            **granted == Value::Bool(true) && old.get(*key) == Some(&Value::Bool(false))
        })
        .map(|(key, _)| key.clone())
        .collect();
    opened.sort();
    opened
}

fn permission_surface(config: &Config) -> Map<String, Value> {
    let mut out = Map::new();
    if let Ok(value) = serde_json::to_value(config) {
        collect_grants("", &value, &mut out);
    }
    out
}

fn collect_grants(prefix: &str, value: &Value, out: &mut Map<String, Value>) {
    let Value::Object(map) = value else { return };
    for (key, child) in map {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match child {
            Value::Bool(granted) if key.starts_with("allow_") => {
                out.insert(path, Value::Bool(*granted));
            }
            Value::Object(_) => collect_grants(&path, child, out),
            _ => {}
        }
    }
}

fn refusal(err: &ConfigError) -> Outcome {
    layer_refusal(TOOL, err.error_type(), err.summary(), err.details())
        .with_remediation(err.remediation())
}

fn io_refusal(err: &std::io::Error) -> Outcome {
    // The OS message may carry the absolute path of the config directory; keep only its class.
    Outcome::refused(
        TOOL,
        ErrorType::UnsafeConfiguredPath,
        "The configuration directory could not be written.",
    )
    .with("error_class", format!("{:?}", err.kind()))
    .with_remediation(["Check that the configuration directory under your home is writable by you, then run init again."])
}

/// Every device of the configuration in force, held for the rewrite; `None` when the current file
/// does not load (nothing can be driven under it, so there is nothing to protect).
fn hold_bench(
    workspace: &Path,
    env: &Environment,
) -> Result<Option<crate::ownership::Ownership>, Box<Outcome>> {
    let Ok(loaded) = ahil_config::load_authoritative(workspace, env) else {
        return Ok(None);
    };
    let mut keys = crate::actions::lease::configured_keys(&loaded);
    keys.retain(|k| crate::ownership::device_lock::is_physical(k));
    let ownership = crate::ownership::Ownership::for_process(env, "operator-cli");
    match ownership
        .locks
        .acquire(&keys, std::time::Duration::ZERO)
    {
        Ok(_) => Ok(Some(ownership)),
        Err(busy) => Err(Box::new(
            Outcome::refused(
                TOOL,
                ErrorType::ConfigWriteInOpenRun,
                "A run or session holds a device of this bench; the configuration is not rewritten under it.",
            )
            .with("resource", busy.resource.clone())
            .with_next_step("End the run or session (or wait for it), then run `agentic-hil init --force` again.")
            .not_started(true),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ahil_config::load_authoritative;

    fn world() -> (tempfile::TempDir, std::path::PathBuf, Environment) {
        let root = tempfile::tempdir().expect("temp dir");
        let base = std::fs::canonicalize(root.path()).expect("resolve");
        let home = base.join("home");
        let ws = base.join("src").join("fw");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&ws).expect("ws");
        let env = Environment {
            home: home.clone(),
            xdg_config_home: Some(home.join(".config")),
            xdg_state_home: Some(home.join(".local/state")),
            config_override: None,
            path: None,
        };
        (root, ws, env)
    }

    #[test]
    fn init_writes_a_configuration_that_loads() {
        let (_root, ws, env) = world();
        let outcome = init(&ws, &env, false, || crate::doctor(&ws, &env));
        assert!(outcome.ok, "{}", outcome.to_value());
        let loaded = load_authoritative(&ws, &env).expect("the written file loads");
        assert_eq!(loaded.config.version, 3);
        assert!(!loaded.config.debuggers["dut"].permissions.allow_mass_erase);
    }

    #[test]
    fn init_keeps_an_existing_file_byte_for_byte() {
        let (_root, ws, env) = world();
        init(&ws, &env, false, || crate::doctor(&ws, &env));
        let path = ahil_config::canonical_config_path(&ws, &env);
        let mut text = std::fs::read_to_string(&path).expect("read");
        text.push_str("# operator note\n");
        std::fs::write(&path, &text).expect("write");
        let outcome = init(&ws, &env, false, || crate::doctor(&ws, &env));
        assert!(outcome.ok);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        assert_eq!(
            outcome.to_value()["steps"]["config"]["skipped"],
            json!(true)
        );
    }

    #[test]
    fn init_force_names_the_narrowings_it_discards() {
        let (_root, ws, env) = world();
        init(&ws, &env, false, || crate::doctor(&ws, &env));
        let path = ahil_config::canonical_config_path(&ws, &env);
        let text = std::fs::read_to_string(&path)
            .expect("read")
            .replace("allow_recover: true", "allow_recover: false")
            .replacen("allow_flash: true", "allow_flash: false", 1)
            .replace("  allow_upload: true", "  allow_upload: false");
        std::fs::write(&path, text).expect("write");
        let outcome = init(&ws, &env, true, || crate::doctor(&ws, &env));
        assert!(outcome.ok);
        let step = &outcome.to_value()["steps"]["config"];
        let opened = [
            "artifacts.allow_upload",
            "debuggers.dut.permissions.allow_flash",
            "permissions.allow_recover",
        ];
        assert_eq!(step["discarded_narrowings"], json!(opened), "sorted");
        let summary = step["summary"].as_str().unwrap_or_default();
        assert!(
            summary.ends_with(&format!("so they are open again: {}.", opened.join(", "))),
            "{summary}"
        );
    }

    #[test]
    fn init_refuses_a_workspace_that_is_home() {
        let (_root, _ws, env) = world();
        let outcome = init(&env.home.clone(), &env, false, || {
            crate::doctor(&env.home, &env)
        });
        assert_eq!(outcome.error_type.as_deref(), Some("workspace_is_home"));
    }

    #[test]
    fn init_refuses_to_keep_a_configuration_inside_the_workspace() {
        let (_root, ws, mut env) = world();
        init(&ws, &env, false, || crate::doctor(&ws, &env));
        let inside = ws.join("config.yaml");
        std::fs::copy(ahil_config::canonical_config_path(&ws, &env), &inside).expect("copy");
        env.config_override = Some(inside.clone().into_os_string());
        for force in [false, true] {
            let outcome = init(&ws, &env, force, || crate::doctor(&ws, &env));
            assert!(!outcome.ok, "force {force}: {}", outcome.to_value());
            assert_eq!(outcome.error_type.as_deref(), Some("config_invalid"));
        }
    }

    #[test]
    fn no_absolute_home_path_appears_in_the_result() {
        let (_root, ws, env) = world();
        let text = init(&ws, &env, false, || crate::doctor(&ws, &env))
            .to_value()
            .to_string();
        assert!(!text.contains(&env.home.display().to_string()), "{text}");
    }
}
