//! `project_config_create`: read the bench and write the whole configuration from what was found.
//! Over an existing configuration it needs `permissions.allow_config_write` and carries the grants this
//! server loaded over to every entry it still names; in a workspace without one it writes the first.

use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::Path;

use ahil_config::write::{Stamp, WriteError, write_generated};
use ahil_config::{
    Actor, Config, ConfigLocation, Environment, check_first_configuration_place,
    check_workspace_not_home, config_candidates, default_state_root, load_authoritative,
    load_config_file,
};
use serde_json::json;

use super::{Context, Plan};
use crate::config_edit::generate::{Generated, discover, generate};
use crate::config_edit::{config_refusal, permission_surface};
use crate::envelope::Outcome;
use crate::policy::Action;

const TOOL: ToolId = ToolId::ProjectConfigCreate;
const STAMP: Stamp<'static> = Stamp {
    actor: Actor::Agent,
    via: "mcp:project_config_create",
};

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ProjectConfigCreate])?;
    Ok(super::local_plan(Action::ConfigCreate, move || {
        regenerate(ctx)
    }))
}

fn regenerate(ctx: &Context<'_>) -> Outcome {
    if let Some(refusal) = super::config_set::open_run_refusal(ctx) {
        return refusal;
    }
    let loaded = ctx.loaded;
    let disk = load_config_file(&loaded.path).ok();
    create(
        &loaded.workspace,
        ctx.env,
        &loaded.path,
        &loaded.config.state_root,
        Some(&loaded.config),
        disk.as_ref(),
    )
}

/// The first configuration of a workspace, written by an unprovisioned server.
pub fn first_creation(workspace: &Path, env: &Environment) -> Outcome {
    if let Err(e) = check_workspace_not_home(workspace, env) {
        return config_refusal(TOOL, &e);
    }
    let location = match ConfigLocation::select(workspace, env) {
        Ok(location) => location,
        Err(e) => return config_refusal(TOOL, &e),
    };
    if let Some(refusal) = shadow_refusal(workspace, env, &location.path) {
        return refusal;
    }
    if location.path.exists() {
        return Outcome::refused(
            TOOL,
            ErrorType::ConfigExists,
            "A configuration appeared for this workspace meanwhile; it was left alone.",
        )
        .with_next_step("Call project_config_describe: the server binds the file on disk.")
        .not_started(true);
    }
    let outcome = create(
        workspace,
        env,
        &location.path,
        &default_state_root(env),
        None,
        None,
    );
    if outcome.ok
        && let Err(e) = load_authoritative(workspace, env)
    {
        // The file does not load in this environment: take it back rather than leave a broken one.
        let _ = std::fs::remove_file(&location.path);
        return config_refusal(TOOL, &e).with("rollback", json!({"attempted": true}));
    }
    outcome
}

/// A first configuration never shadows the account's own: when the account keeps one for this
/// workspace where this server does not look (its environment, the agent's to set, moved the search),
/// or when this server would write where the account does not keep one, nothing is written.
fn shadow_refusal(workspace: &Path, env: &Environment, path: &Path) -> Option<Outcome> {
    let kept = config_candidates(workspace, &env.of_account())
        .into_iter()
        .find(|p| p.symlink_metadata().is_ok());
    if let Some(kept) = kept {
        return Some(
            Outcome::refused(
                TOOL,
                ErrorType::ConfigExists,
                "A configuration for this workspace exists where the account keeps it, but this server's environment looks elsewhere; no other is written.",
            )
            .with("path", env.display_path(&kept))
            .with_next_step("Start the server without overriding HOME, XDG_CONFIG_HOME or AGENTIC_HIL_CONFIG, so it loads that file.")
            .not_started(true),
        );
    }
    check_first_configuration_place(workspace, env, path, &default_state_root(env))
        .err()
        .map(|e| config_refusal(TOOL, &e).not_started(true))
}

fn create(
    workspace: &Path,
    env: &Environment,
    path: &Path,
    state_root: &Path,
    known: Option<&Config>,
    disk: Option<&Config>,
) -> Outcome {
    let found = discover(state_root);
    // An empty reading is not proof of an empty bench (a probe with no serial port shows in
    // neither source), so no configuration is written off one: the reference refuses the same way,
    // and the operator's `init` writes the starter file.
    if found.is_empty() {
        return Outcome::refused(
            TOOL,
            ErrorType::ProbeInventoryIncomplete,
            "Discovery saw no emulated board and no USB serial adapter, and that reading is not an authoritative count: a probe with no serial port does not show in it. Nothing was written.",
        )
        .with("hardware_discovery", json!({"ran": found.ran}))
        .with_next_step("Start the bench (`agentic-hil sim start` for the emulated board, or plug the probe in) and call project_config_create again; or ask the operator to run `agentic-hil init`.")
        .not_started(true);
    }
    let generated = match generate(
        workspace,
        state_root,
        &found,
        known,
        disk,
        &ahil_config::time::utc_now(),
    ) {
        Ok(g) => g,
        Err(e) => return config_refusal(TOOL, &e),
    };
    let Generated {
        document,
        dropped_entries,
        skeleton,
        closed_entries,
    } = generated;
    let written = match write_generated(workspace, path, env, STAMP, &document) {
        Ok(w) => w,
        Err(WriteError::Invalid(e) | WriteError::Current(e)) => return config_refusal(TOOL, &e),
        Err(WriteError::Io(e)) => {
            return Outcome::refused(
                TOOL,
                ErrorType::ConfigWriteFailed,
                "The configuration file could not be written; nothing changed.",
            )
            .with("error_class", format!("{:?}", e.kind()))
            .not_started(false);
        }
        Err(WriteError::Refused(never)) => match never {},
        Err(WriteError::ChangedUnderneath) => {
            return Outcome::refused(
                TOOL,
                ErrorType::ConfigChangedUnderneath,
                "The configuration file changed while it was being regenerated; nothing was written.",
            )
            .not_started(true);
        }
    };
    let surface = permission_surface(&document);
    let narrowed: Vec<&String> = surface
        .iter()
        .filter(|(_, v)| !**v)
        .map(|(k, _)| k)
        .collect();
    let shown = env.display_path(path);
    let config = &written.config;
    let summary = format!(
        "Wrote the configuration to {shown}: {} probe(s) and {} serial port(s) from discovery.",
        config.debuggers.len(),
        config.com_ports.len()
    );
    let next_steps = super::next_steps(&[
        (
            known.is_some(),
            "Call project_config_reload_description to take the new description now; grants take effect after a restart.",
        ),
        (
            known.is_none(),
            "Call project_config_describe: this server now enforces the new file.",
        ),
    ]);
    Outcome::ok(TOOL, summary)
        .with("created", true)
        .with("path", shown.as_str())
        .with("workspace_root", workspace.display().to_string())
        .with("state_root", env.display_path(state_root))
        .with("optional_override", format!("AGENTIC_HIL_CONFIG={shown}"))
        .with("permissions", json!(surface))
        .with("narrowed_permissions", json!(narrowed))
        .with("dropped_entries", json!(dropped_entries))
        .with("closed_entries", json!(closed_entries))
        .with("reload_required", known.is_some())
        .with(
            "hardware_discovery",
            json!({
                "ran": found.ran,
                "debuggers": config.debuggers.keys().collect::<Vec<_>>(),
                "com_ports": config.com_ports.keys().collect::<Vec<_>>(),
                "skeleton": skeleton,
            }),
        )
        .with("provenance", written.provenance)
        .with("next_steps", next_steps)
        .not_contacted()
}
