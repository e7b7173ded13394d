//! `project_config_reload_description`: the server takes the bench description from the file as it is
//! now, without a restart; grants and every other section stay as loaded.

use crate::ErrorType;
use crate::catalogue::ToolId;
use serde_json::{Value, json};

use super::{Acted, Context, Plan, Work};
use crate::config_edit::layer_refusal;
use crate::config_edit::reload::{NOT_RELOADED, RELOADED_SECTIONS, reload};
use crate::envelope::Outcome;

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ProjectConfigReloadDescription])?;
    Ok(Plan::read_state(Work::Local(Box::new(move || {
        Acted::local(run(ctx))
    }))))
}

fn run(ctx: &Context<'_>) -> Outcome {
    let held = ctx.ownership.locks.held();
    if !held.is_empty() || ctx.ownership.runs.current().is_some() {
        return Outcome::refused(
            ctx.tool,
            ErrorType::ConfigReloadInOpenRun,
            "The bench description cannot change under an open run or session.",
        )
        .with("open_holds", json!(held))
        .with_next_step("Stop the run and the sessions, then reload.")
        .not_started(true);
    }
    let reloaded = match reload(ctx.loaded, ctx.env, &ctx.description) {
        Ok(r) => r,
        Err(e) => {
            return layer_refusal(
                ctx.tool,
                e.error_type(),
                format!("{} The description in force is unchanged.", e.summary()),
                e.details(),
            )
            .not_started(false);
        }
    };
    let loaded = &reloaded.loaded;
    let changed = !reloaded.description_changes.is_empty();
    let summary = if changed {
        format!(
            "Reloaded the bench description: {} section entr(ies) changed; grants are as loaded at startup.",
            reloaded.description_changes.len()
        )
    } else {
        "Reloaded the bench description; it matches what was in force.".to_owned()
    };
    let not_reloaded: Vec<Value> = NOT_RELOADED
        .iter()
        .map(|(section, why)| json!({"section": section, "why": why}))
        .collect();
    let next_steps = super::next_steps(&[
        (true, "Calls from now on use the reloaded description."),
        (
            !reloaded.redirected_entries.is_empty(),
            "redirected_entries now name another device, so every grant on them is false; the operator grants them at the shell (agentic-hil grant) and restarts the server.",
        ),
        (
            !reloaded.restart_required_for.is_empty(),
            "The file also differs outside the description (restart_required_for); those parts take effect only after the operator restarts the server.",
        ),
    ]);
    let mut outcome = Outcome::ok(ctx.tool, summary)
        .with("reloaded", true)
        .with("description_changed", changed)
        .with("path", loaded.display_path.as_str())
        .with("workspace_root", loaded.workspace.display().to_string())
        .with("description_changes", json!(reloaded.description_changes))
        .with("reloaded_sections", json!(RELOADED_SECTIONS))
        .with("not_reloaded_sections", Value::Array(not_reloaded))
        .with("permissions_reloaded", false)
        .with(
            "permissions_in_force",
            super::describe::permissions_in_force(&loaded.config),
        )
        .with(
            "permission_differences",
            json!(reloaded.permission_differences),
        )
        .with("restart_required_for", json!(reloaded.restart_required_for))
        .with("redirected_entries", json!(reloaded.redirected_entries))
        .with("reference", "agentic-hil://reference/config-shape")
        .with("next_steps", next_steps)
        .not_contacted();
    let mut status = serde_json::to_value(loaded.status()).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut status {
        fields.insert("description_source".into(), json!("description_reload"));
    }
    outcome.config_status = Some(status);
    outcome
}
