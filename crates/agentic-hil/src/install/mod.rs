//! The user half of an installation: register the server with an agent host and give the host our
//! skill (`agent-install`, `skill-install`), take both back (`uninstall`), and `setup` (the user half,
//! then `init` for the project). Every command writes only its own entries, refuses to replace one the
//! operator wrote unless forced, and restores every file it touched if it fails half-way.

mod codex;
mod deny;
mod host;
mod journal;
mod jsonc;
mod launcher;
mod marked;
mod record;
mod registry;
mod skill;

use crate::cli::Registration;
use std::path::Path;

use ahil_config::Environment;
use ahil_gate::ErrorType;
use serde_json::{Value, json};

use crate::files::refusal;
pub use host::Agent;
use journal::Journal;
use record::{Record, Touch};
use registry::{Change, Removal};

const AGENT_INSTALL: &str = "agentic_hil_agent_install";
const SKILL_INSTALL: &str = "agentic_hil_skill_install";
const UNINSTALL: &str = "agentic_hil_uninstall";
const SETUP: &str = "agentic_hil_setup";

/// A failed step: the refusal of the command, after every file it touched was put back.
fn failed(mut doc: Value, journal: &mut Journal, steps: Value) -> Value {
    let attempted = !journal.is_empty();
    let errors = journal.roll_back();
    doc["steps"] = steps;
    doc["rollback"] = json!({"attempted": attempted, "ok": errors.is_empty(), "errors": errors});
    doc
}

/// A skill step's outcome, or its refusal (`error_type`, summary, remediation).
fn install_skill(
    env: &Environment,
    agent: Agent,
    target: Option<&Path>,
    force: bool,
    journal: &mut Journal,
) -> Result<Value, (&'static str, String, &'static str)> {
    let explicit = target.is_some();
    let Some(path) = target
        .map(Path::to_path_buf)
        .or_else(|| agent.skill_file(&env.home))
    else {
        return Err((
            "unsupported_agent",
            format!("{} has no user-level skills directory.", agent.label()),
            "Name a file with --target, or use agent-install, which registers the MCP server alone for this host.",
        ));
    };
    let shown = env.display_path(&path);
    let (installed, updated) = match skill::state(&path) {
        skill::State::Current => (false, false),
        skill::State::Absent => (true, false),
        skill::State::Stale => (true, true),
        skill::State::Foreign if force => (true, true),
        skill::State::Foreign => {
            return Err(if explicit {
                (
                    "skill_exists",
                    format!("{shown} already exists and agentic-hil did not write it."),
                    "Pass --force to replace it, or name another --target.",
                )
            } else {
                (
                    "skill_conflict",
                    format!("{shown} holds a skill agentic-hil did not write."),
                    "Move that file away, or pass --force to replace it.",
                )
            });
        }
    };
    if installed {
        journal
            .write(&path, skill::SKILL.as_bytes())
            .map_err(|err| {
                (
                    "output_write_failed",
                    format!("{shown} could not be written: {err}"),
                    "Make the directory writable for this user, then run this again.",
                )
            })?;
    }
    let mut step = json!({
        "ok": true,
        "summary": if installed { format!("Wrote the skill to {shown}.") } else { format!("The skill at {shown} is current.") },
        "agent": agent.id(),
        "path": shown,
        "installed": installed,
        "updated": updated,
    });
    if agent == Agent::Codex && !explicit {
        let agents_md = env.home.join(".codex/AGENTS.md");
        let registered = skill::register_in_agents_md(&agents_md, &shown, journal).map_err(|err| {
            (
                "output_write_failed",
                format!("~/.codex/AGENTS.md could not be updated: {err}"),
                "Fix or remove the agentic-hil block in ~/.codex/AGENTS.md, then run this again.",
            )
        })?;
        step["registration"] = json!({"path": env.display_path(&agents_md), "changed": registered});
    }
    Ok(step)
}

pub fn skill_install(env: &Environment, agent: Agent, target: Option<&Path>, force: bool) -> Value {
    let mut journal = Journal::default();
    match install_skill(env, agent, target, force, &mut journal) {
        Ok(mut step) => {
            step["tool"] = json!(SKILL_INSTALL);
            // A skill at the host's own place is uninstall's to take back, so it is recorded; a
            // file named with --target stays the operator's.
            let recorded = match agent.skill_file(&env.home) {
                Some(path) if target.is_none() && !journal.is_empty() => keep_record(
                    env,
                    agent,
                    &mut journal,
                    &[Touch {
                        path,
                        created_keys: Vec::new(),
                        replaced: step["updated"] == json!(true),
                    }],
                ),
                _ => Ok(()),
            };
            if let Err(err) = recorded {
                let doc = refusal(
                    SKILL_INSTALL,
                    "output_write_failed",
                    &err,
                    "Make ~/.config/agentic-hil writable for this user, then run this again.",
                );
                return failed(doc, &mut journal, json!({}));
            }
            step
        }
        Err((error_type, summary, remediation)) => {
            let doc = refusal(SKILL_INSTALL, error_type, &summary, remediation);
            failed(doc, &mut journal, json!({}))
        }
    }
}

pub fn agent_install(workspace: &Path, env: &Environment, registration: &Registration) -> Value {
    let Registration {
        agent,
        force,
        ref launcher,
    } = *registration;
    let launcher = match launcher::resolve(workspace, launcher.as_deref()) {
        Ok(launcher) => launcher,
        Err(refused) => {
            return refusal(
                AGENT_INSTALL,
                refused.error_type,
                &refused.summary,
                refused.remediation,
            );
        }
    };
    let mut journal = Journal::default();
    let mut steps = json!({});
    if agent.skill_file(&env.home).is_some() {
        match install_skill(env, agent, None, force, &mut journal) {
            Ok(step) => steps["skill_install"] = step,
            Err((error_type, summary, remediation)) => {
                let doc = refusal(AGENT_INSTALL, error_type, &summary, remediation);
                return failed(doc, &mut journal, steps);
            }
        }
    }
    let file = match agent.registry(&env.home) {
        host::Registry::Json { file, .. } | host::Registry::TomlBlock { file } => file,
    };
    let shown = env.display_path(&file);
    let changed = match registry::install(agent, &env.home, &launcher, force, &shown, &mut journal)
    {
        Ok(change) => change,
        Err(err) => {
            let remediation = match err {
                registry::RegistryError::Conflict(_) => {
                    "Compare that entry with `agentic-hil mcp-config`; pass --force to replace it, or keep it and skip this step."
                }
                registry::RegistryError::Unparsable(..) => {
                    "Repair the file (or add the entry by hand from `agentic-hil mcp-config`), then run this again."
                }
                registry::RegistryError::Io(..) => {
                    "Make the file and its directory writable for this user, then run this again."
                }
                registry::RegistryError::ChangedUnderneath(_) => {
                    "Close the agent host (it is rewriting that file), then run this again."
                }
            };
            let doc = refusal(
                AGENT_INSTALL,
                err.error_type(),
                &err.to_string(),
                remediation,
            );
            return failed(doc, &mut journal, steps);
        }
    };
    let (written, replaced_foreign, replaced, created_keys) = match changed {
        Change::Written {
            replaced_foreign,
            replaced,
            created_keys,
        } => (true, replaced_foreign, replaced, created_keys),
        Change::Unchanged => (false, false, false, Vec::new()),
    };
    steps["mcp_config"] = json!({
        "ok": true,
        "agent": agent.id(),
        "path": shown,
        "changed": written,
        "replaced_foreign": replaced_foreign,
        "summary": if written {
            format!("Registered the agentic-hil MCP server in {shown}.")
        } else {
            format!("{shown} already registers this agentic-hil.")
        },
    });
    let changed_anything = !journal.is_empty();
    if changed_anything
        && let Err(doc) = keep_record(
            env,
            agent,
            &mut journal,
            &touches(env, agent, &steps, &file, replaced, created_keys),
        )
    {
        return failed(
            refusal(
                AGENT_INSTALL,
                "output_write_failed",
                &doc,
                "Make ~/.config/agentic-hil writable for this user, then run this again.",
            ),
            &mut journal,
            steps,
        );
    }
    let summary = if changed_anything {
        format!(
            "Registered agentic-hil with {} for this user; restart {} to see its tools.",
            agent.label(),
            agent.label()
        )
    } else {
        format!(
            "agentic-hil was already registered with {}; nothing written.",
            agent.label()
        )
    };
    json!({
        "ok": true,
        "tool": AGENT_INSTALL,
        "scope": "user",
        "summary": summary,
        "agent": agent.id(),
        "command": launcher,
        "restart_required": changed_anything,
        "steps": steps,
        "rollback": {"attempted": false, "ok": true, "errors": []},
        "next_step": format!("In each project: agentic-hil init (or agentic-hil setup --agent {}), then agentic-hil doctor.", agent.id()),
    })
}

/// Adds what `journal` wrote to the install record, so uninstall can take exactly that back.
fn keep_record(
    env: &Environment,
    agent: Agent,
    journal: &mut Journal,
    touches: &[Touch],
) -> Result<(), String> {
    let mut record = Record::load(env);
    record.note(agent, journal, touches);
    record.save(env, journal).map_err(|err| {
        format!(
            "The install record {} could not be written: {err}",
            env.display_path(&record::file(env))
        )
    })
}

/// What agent-install's writes replaced, and the keys its registration created.
fn touches(
    env: &Environment,
    agent: Agent,
    steps: &Value,
    registry_file: &Path,
    replaced: bool,
    created_keys: Vec<Vec<String>>,
) -> Vec<Touch> {
    let mut touches = vec![Touch {
        path: registry::real_file(registry_file),
        created_keys,
        replaced,
    }];
    if let Some(skill) = agent.skill_file(&env.home) {
        touches.push(Touch {
            path: skill,
            created_keys: Vec::new(),
            replaced: steps["skill_install"]["updated"] == json!(true),
        });
    }
    touches
}

/// What a recorded file is, for uninstall's answer.
fn what_for(env: &Environment, agent: Agent, path: &Path) -> &'static str {
    let file = match agent.registry(&env.home) {
        host::Registry::Json { file, .. } | host::Registry::TomlBlock { file } => file,
    };
    if registry::real_file(&file) == path {
        "MCP registration"
    } else if path.file_name().is_some_and(|n| n == "SKILL.md") {
        "skill"
    } else if path.file_name().is_some_and(|n| n == "AGENTS.md") {
        "skill pointer"
    } else if path.file_name().is_some_and(|n| n == "settings.json") {
        "write-refusal rules"
    } else {
        "write-refusal ledger"
    }
}

/// The files install may write for `agent`: the only ones uninstall acts on, whatever the record
/// says (it sits in the operator's config folder, and a record naming `~/.bashrc` must change nothing).
fn our_files(env: &Environment, agent: Agent) -> Vec<std::path::PathBuf> {
    let registry = match agent.registry(&env.home) {
        host::Registry::Json { file, .. } | host::Registry::TomlBlock { file } => file,
    };
    let mut files = vec![registry::real_file(&registry)];
    files.extend(agent.skill_file(&env.home));
    match agent {
        Agent::Codex => files.push(env.home.join(".codex/AGENTS.md")),
        Agent::ClaudeCode => {
            files.push(env.home.join(".claude/settings.json"));
            files.push(deny::ledger_file(env));
        }
        _ => {}
    }
    files
}

/// Puts back each file recorded for `agent` that nobody changed since install, byte for byte;
/// returns the edits that need the structural removal instead.
fn restore_recorded(
    env: &Environment,
    agent: Agent,
    record: &mut Record,
    journal: &mut Journal,
    removed: &mut Vec<Value>,
) -> Result<Vec<record::Edit>, String> {
    let mut changed = Vec::new();
    let ours = our_files(env, agent);
    let ledger = deny::ledger_file(env);
    let mut edits = record.take(agent);
    // The rules' ledger goes back only with the settings file it describes: when that file was
    // changed since install, `deny::remove` reads the ledger to take the rules out (or keeps both
    // while the file cannot be read), so the ledger is not put back here on its own.
    edits.sort_by_key(|edit| edit.path == ledger);
    for edit in edits {
        if !ours.contains(&edit.path) {
            continue;
        }
        if edit.path == ledger
            && changed
                .iter()
                .any(|e: &record::Edit| e.path.file_name().is_some_and(|n| n == "settings.json"))
        {
            continue;
        }
        let shown = env.display_path(&edit.path);
        // A file that is gone holds nothing of ours any more.
        let Ok(current) = std::fs::read(&edit.path) else {
            continue;
        };
        let Some(original) = edit.original(&current) else {
            changed.push(edit);
            continue;
        };
        let result = if edit.created && original.is_empty() {
            journal.remove(&edit.path)
        } else {
            journal.write(&edit.path, &original)
        };
        result.map_err(|err| format!("{shown}: {err}"))?;
        removed.push(item(what_for(env, agent, &edit.path), &shown));
    }
    Ok(changed)
}

fn item(what: &str, path: &str) -> Value {
    json!({"what": what, "path": path})
}

fn uninstall_one(
    env: &Environment,
    agent: Agent,
    journal: &mut Journal,
    record: &mut Record,
) -> Result<Value, String> {
    let mut removed = Vec::new();
    let mut left_alone = Vec::new();
    let changed = restore_recorded(env, agent, record, journal, &mut removed)?;
    let file = match agent.registry(&env.home) {
        host::Registry::Json { file, .. } | host::Registry::TomlBlock { file } => file,
    };
    let shown = env.display_path(&file);
    match registry::uninstall(agent, &env.home, &shown, journal).map_err(|err| err.to_string())? {
        Removal::Removed => removed.push(item("MCP registration", &shown)),
        Removal::Absent => {}
        Removal::Kept(reason) => {
            let mut kept = item("MCP registration", &shown);
            kept["reason"] = json!(reason);
            left_alone.push(kept);
        }
    }
    if let Some(path) = agent.skill_file(&env.home) {
        let shown = env.display_path(&path);
        match skill::state(&path) {
            skill::State::Absent => {}
            skill::State::Current | skill::State::Stale => {
                journal
                    .remove(&path)
                    .map_err(|err| format!("{shown}: {err}"))?;
                removed.push(item("skill", &shown));
            }
            skill::State::Foreign => {
                let mut kept = item("skill", &shown);
                kept["reason"] =
                    json!("agentic-hil did not write this file; it is the operator's to remove.");
                left_alone.push(kept);
            }
        }
    }
    if agent == Agent::ClaudeCode {
        let settings = env.display_path(&env.home.join(".claude/settings.json"));
        let mut rules = item("write-refusal rules", &settings);
        match deny::remove(env, journal)? {
            deny::Removed::Rules(0) => {}
            deny::Removed::Rules(count) => {
                rules["count"] = json!(count);
                removed.push(rules);
            }
            deny::Removed::Kept(reason) => {
                rules["reason"] = json!(format!(
                    "{reason}; the rules agentic-hil added stay until the operator repairs the file and runs uninstall again."
                ));
                left_alone.push(rules);
            }
        }
    }
    if agent == Agent::Codex {
        let agents_md = env.home.join(".codex/AGENTS.md");
        let shown = env.display_path(&agents_md);
        match skill::unregister_in_agents_md(&agents_md, journal) {
            Ok(true) => removed.push(item("skill pointer", &shown)),
            Ok(false) => {}
            Err(reason) => {
                let mut kept = item("skill pointer", &shown);
                kept["reason"] = json!(reason);
                left_alone.push(kept);
            }
        }
    }
    for edit in &changed {
        let toml_or_json = edit
            .path
            .extension()
            .is_some_and(|e| e == "json" || e == "toml");
        if toml_or_json {
            registry::prune(edit, &env.display_path(&edit.path), journal)
                .map_err(|err| err.to_string())?;
        }
    }
    Ok(json!({
        "agent": agent.id(),
        "ok": true,
        "removed": removed,
        "left_alone": left_alone,
    }))
}

pub fn uninstall(env: &Environment, agents: &[Agent]) -> Value {
    let agents: Vec<Agent> = if agents.is_empty() {
        Agent::ALL.to_vec()
    } else {
        agents.to_vec()
    };
    let mut journal = Journal::default();
    let mut record = Record::load(env);
    let mut results = Vec::new();
    for agent in agents {
        match uninstall_one(env, agent, &mut journal, &mut record) {
            Ok(result) => results.push(result),
            Err(err) => {
                let doc = refusal(
                    UNINSTALL,
                    "output_write_failed",
                    &format!("Could not take back {}'s half: {err}", agent.label()),
                    "Make the named file writable for this user, then run this again; nothing was removed.",
                );
                return failed(doc, &mut journal, json!({"agents": results}));
            }
        }
    }
    let mut allowed: Vec<std::path::PathBuf> = Agent::ALL
        .iter()
        .flat_map(|agent| our_files(env, *agent))
        .collect();
    allowed.push(record::file(env));
    if let Err(err) = record.finish(env, &allowed, &mut journal) {
        let doc = refusal(
            UNINSTALL,
            "output_write_failed",
            &format!("Could not update the install record: {err}"),
            "Make ~/.config/agentic-hil writable for this user, then run this again; nothing was removed.",
        );
        return failed(doc, &mut journal, json!({"agents": results}));
    }
    let count = |key: &str| {
        results
            .iter()
            .map(|r| r[key].as_array().map_or(0, Vec::len))
            .sum::<usize>()
    };
    let (removed, kept) = (count("removed"), count("left_alone"));
    let mut summary = format!("Removed {removed} item(s) agentic-hil wrote.");
    if kept > 0 {
        summary.push_str(" Left ");
        summary.push_str(&kept.to_string());
        summary.push_str(" item(s) it did not write; `left_alone` names them.");
    }
    json!({
        "ok": true,
        "tool": UNINSTALL,
        "scope": "user",
        "summary": summary,
        "agents": results,
        "kept_trees": [
            {"what": "project configurations", "path": env.display_path(&ahil_config_root(env))},
            {"what": "state roots (audit evidence and incidents)", "path": "each configuration's state_root"},
        ],
        "next_steps": [
            "Project configurations and state roots stay: they are the operator's policy and the bench's evidence. Remove them by hand after reading them.",
            "Remove the binary last: cargo uninstall agentic-hil (or delete the copied file).",
        ],
    })
}

/// The program a host would launch as the gate from `workspace`, or why none may be registered.
pub fn launcher_command(workspace: &Path) -> Result<String, String> {
    launcher::resolve(workspace, None).map_err(|refused| refused.summary)
}

/// `init [--agent A]`: the project's configuration, then (for Claude Code) the write refusals on it.
pub fn init(workspace: &Path, env: &Environment, force: bool, agent: Option<Agent>) -> Value {
    let check = || crate::operator_cli::doctor(workspace, env);
    let mut doc = serde_json::to_value(ahil_gate::provision::init(workspace, env, force, check))
        .unwrap_or_else(|err| json!({"ok": false, "summary": err.to_string()}));
    if doc["ok"] != json!(true) {
        return doc;
    }
    doc["agent"] = json!(agent.map(Agent::id));
    doc["steps"]["agent_write_restriction"] = json!({
        "ok": true,
        "skipped": true,
        "summary": match agent {
            None => "No agent was named, so no agent write restriction was applied. Pass --agent to have that agent refuse its own write tools on the policy files.".to_owned(),
            Some(agent) => format!("{} needs or takes no write refusals on the policy files.", agent.label()),
        },
    });
    if agent == Some(Agent::ClaudeCode) {
        let step = restrict_claude_writes(workspace, env);
        if step["ok"] == json!(false) {
            doc["ok"] = json!(false);
            doc["error_type"] = step
                .get("error_type")
                .cloned()
                .unwrap_or_else(|| json!("output_write_failed"));
            doc["summary"] = step["summary"].clone();
        }
        doc["steps"]["agent_write_restriction"] = step;
    }
    doc
}

/// The project half's Claude Code rules: its edit tools may not write the configuration directory or
/// the state root. Paths stay out of the answer (the state root's is never printed).
fn restrict_claude_writes(workspace: &Path, env: &Environment) -> Value {
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        Err(err) => {
            return json!({"ok": false, "summary": format!("The configuration did not load: {}", err.summary())});
        }
    };
    let config_dir = loaded.path.parent().unwrap_or(&loaded.path);
    let mut journal = Journal::default();
    let settings = env.display_path(&env.home.join(".claude/settings.json"));
    if let Some(why) = deny::unreadable(env) {
        return json!({
            "ok": false,
            "error_type": ErrorType::AgentPermissionsUnreadable.as_str(),
            "path": settings,
            "summary": format!("{why}; left untouched, so no write refusal was added."),
        });
    }
    let added = deny::add(env, &[config_dir, &loaded.config.state_root], &mut journal).and_then(
        |(added, created)| {
            if added > 0 {
                keep_record(
                    env,
                    Agent::ClaudeCode,
                    &mut journal,
                    &[Touch {
                        path: env.home.join(".claude/settings.json"),
                        created_keys: created,
                        replaced: false,
                    }],
                )?;
            }
            Ok(added)
        },
    );
    match added {
        Ok(added) => json!({
            "ok": true,
            "path": settings,
            "rules_added": added,
            "summary": if added == 0 {
                format!("{settings} already refuses Claude Code's edits to the configuration and the state root.")
            } else {
                format!("{settings} now refuses Claude Code's edits to the configuration and the state root.")
            },
        }),
        Err(err) => {
            let errors = journal.roll_back();
            json!({"ok": false, "path": settings, "summary": format!("Could not add the write refusals: {err}"), "rollback_errors": errors})
        }
    }
}

fn ahil_config_root(env: &Environment) -> std::path::PathBuf {
    env.xdg_config_home
        .clone()
        .unwrap_or_else(|| env.home.join(".config"))
        .join("agentic-hil")
}

pub fn setup(workspace: &Path, env: &Environment, registration: &Registration) -> Value {
    let agent = registration.agent;
    let user = agent_install(workspace, env, registration);
    let user_ok = user["ok"].as_bool().unwrap_or(false);
    if !user_ok {
        let mut doc = user.clone();
        doc["tool"] = json!(SETUP);
        doc["scopes"] = json!({"user": user});
        return doc;
    }
    // `--force` is for the operator's host files only: it never regenerates a project's policy.
    let project = init(workspace, env, false, Some(agent));
    let project_ok = project["ok"].as_bool().unwrap_or(false);
    let mut doc = json!({
        "ok": project_ok,
        "tool": SETUP,
        "summary": if project_ok {
            format!("{} Then: {}", user["summary"].as_str().unwrap_or(""), project["summary"].as_str().unwrap_or(""))
        } else {
            format!("Registered with {}, but this project could not be set up: {}", agent.label(), project["summary"].as_str().unwrap_or(""))
        },
        "agent": agent.id(),
        "command": user["command"],
        "restart_required": user["restart_required"],
        "scopes": {"user": user, "project": project},
    });
    if project_ok {
        // The server is registered by now, so init's "register the server" advice is dropped: what
        // is left is the host picking the registration up and the bench check.
        let doctor = project["next_steps"][0]
            .as_str()
            .unwrap_or("Run: agentic-hil doctor")
            .to_owned();
        let restart = if user["restart_required"] == json!(true) {
            format!(
                "Restart {} (or open a new session) in this project so it starts agentic-hil.",
                agent.label()
            )
        } else {
            format!(
                "Open a {} session in this project; it already starts agentic-hil.",
                agent.label()
            )
        };
        doc["next_steps"] = json!([restart, doctor]);
    } else {
        doc["error_type"] = project["error_type"].clone();
        doc["next_step"] = json!("Fix what the project half names, then run: agentic-hil init");
    }
    doc
}
