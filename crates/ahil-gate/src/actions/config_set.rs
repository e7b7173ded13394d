//! `project_config_set`: field-wise edits of the bench description, and narrowing of grants, under the
//! ratchet. The file is written through `ahil_config::write` (lock, check, atomic replace).

use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::Actor;
use ahil_config::write::{Stamp, WriteError, edit_config};
use serde_json::{Value, json};

use super::{Context, Plan};
use crate::config_edit::{
    Applied, Change, Refused, Right, Rights, apply_agent_changes, classify, layer_refusal,
    replace_failed,
};
use crate::envelope::Outcome;
use crate::policy::Action;

const VIA: &str = "mcp:project_config_set";

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ProjectConfigSet])?;
    let changes = parse_changes(ctx.args);
    let version = ctx.loaded.config.version;
    // The pipeline checks the stronger grant the request needs; the work checks each kind again
    // against the file, so a grant closed on disk since startup is closed here too.
    let needs_permissions = changes
        .iter()
        .any(|c| classify(&c.key, version).is_ok_and(|r| r.right == Right::Permissions));
    let action = if needs_permissions {
        Action::ConfigSetPermission
    } else {
        Action::ConfigSetDescription
    };
    Ok(super::local_plan(action, move || set(ctx, &changes)))
}

fn parse_changes(args: &Value) -> Vec<Change> {
    args.get("changes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| Change {
            key: c
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            value: c.get("value").cloned().unwrap_or(Value::Null),
        })
        .collect()
}

/// `config_write_in_open_run` while this server holds any device (a run, a session).
pub fn open_run_refusal(ctx: &Context<'_>) -> Option<Outcome> {
    let held = ctx.ownership.locks.held();
    let run = ctx.ownership.runs.current();
    if held.is_empty() && run.is_none() {
        return None;
    }
    Some(
        Outcome::refused(
            ctx.tool,
            ErrorType::ConfigWriteInOpenRun,
            "The configuration cannot change while a run or session holds the bench.",
        )
        .with("open_holds", json!(held))
        .with_next_step("Stop the run and the sessions (bench_run_stop, com_session_stop, debug_stop_session), then call again.")
        .not_started(true),
    )
}

/// A value whose shape the configuration schema does not allow for its key, refused before any
/// grant is looked at, as the tool's schema text promises.
fn shape_refusal(tool: &str, changes: &[Change], version: u8) -> Option<Outcome> {
    let schema = ahil_config::config_json_schema();
    changes.iter().enumerate().find_map(|(index, change)| {
        classify(&change.key, version).ok()?;
        let shape = super::describe::value_schema(&schema, &change.key);
        let violation = crate::validate::first_violation(&shape, &change.value)?;
        Some(
            Outcome::refused(
                tool,
                ErrorType::InvalidArgument,
                format!(
                    "The value for `{}` does not have the shape the configuration schema declares for it ({} check failed). Nothing was written.",
                    change.key, violation.validator
                ),
            )
            .with("field", format!("changes.{index}.value"))
            .with("key", change.key.as_str())
            .with("value_schema", shape)
            .with_next_step("Read value_schema for this key in project_config_describe, then send a value of that shape.")
            .not_contacted(),
        )
    })
}

fn set(ctx: &Context<'_>, changes: &[Change]) -> Outcome {
    if let Some(refusal) = open_run_refusal(ctx) {
        return refusal;
    }
    if let Some(refusal) = shape_refusal(ctx.tool.name(), changes, ctx.loaded.config.version) {
        return refusal;
    }
    let loaded = ctx.loaded;
    let held = loaded.config.permissions;
    let mut previous = Vec::new();
    let mut applied = None;
    let stamp = Stamp {
        actor: Actor::Agent,
        via: VIA,
    };
    let result = edit_config(
        &loaded.workspace,
        &loaded.path,
        ctx.env,
        stamp,
        |document, current| {
            let rights = Rights {
                description: held.allow_config_description_write
                    && current.permissions.allow_config_description_write,
                permissions: held.allow_config_permissions_write
                    && current.permissions.allow_config_permissions_write,
                programs: false,
            };
            previous = changes
                .iter()
                .map(|c| lookup(document, &c.key).cloned().unwrap_or(Value::Null))
                .collect();
            let done = apply_agent_changes(document, current.version, rights, changes)?;
            let keys = done.changed.clone();
            applied = Some(done);
            Ok(keys)
        },
    );
    let written = match result {
        Ok(written) => written,
        Err(err) => {
            let key_refused = matches!(&err, WriteError::Refused(Refused::Invalid { .. }));
            let mut refused = refusal(ctx.tool.name(), err);
            // Name the argument, as a wrong value's refusal does: the key of the change at fault.
            let at = refused
                .detail("key")
                .and_then(Value::as_str)
                .and_then(|key| changes.iter().position(|c| c.key == key));
            if let (true, Some(index)) = (key_refused, at) {
                refused.set("field", format!("changes.{index}.key"));
            }
            return refused;
        }
    };
    let applied = applied.unwrap_or_default();
    let frozen = applied
        .permissions_changed
        .iter()
        .any(|(k, _, now)| k == "permissions.allow_config_permissions_write" && !now);
    let change_list: Vec<Value> = changes
        .iter()
        .zip(&previous)
        .map(|(c, before)| {
            json!({"key": c.key, "previous_value": before, "value": c.value, "changed": applied.changed.contains(&c.key)})
        })
        .collect();
    let summary = if written.written {
        format!(
            "Wrote {} key(s) to the configuration; the server enforces them after a reload or restart.",
            written.changed_keys.len()
        )
    } else {
        "Every key already held the requested value; nothing was written.".to_owned()
    };
    let next_steps = super::next_steps(&[
        (
            true,
            "Call project_config_reload_description to put target, debuggers, com_ports and can_buses changes in force now.",
        ),
        (
            !applied.redirected_entries.is_empty(),
            "redirected_entries now name another device, so their grants are false; only the operator can grant them again (agentic-hil grant).",
        ),
        (
            !applied.permissions_changed.is_empty(),
            "Narrowed grants hold in the file at once; the running server enforces them after a restart.",
        ),
    ]);
    let outcome = Outcome::ok(ctx.tool, summary)
        .with("path", loaded.display_path.as_str())
        .with("workspace_root", loaded.workspace.display().to_string())
        .with("changes", Value::Array(change_list));
    // The file now differs from what this server enforces (after this write or an earlier one);
    // say so with the status after the write, and `reload_required` read off that same status, so
    // a call that changed nothing does not answer "no reload" while the file is stale.
    let status = loaded.status();
    let mut outcome = with_applied(outcome, &applied)
        .with("written", written.written)
        .with("provenance", written.provenance)
        .with("reload_required", status.reload_required)
        .with("next_steps", next_steps);
    if frozen {
        outcome.set("permissions_frozen", true);
    }
    outcome.config_status = serde_json::to_value(status).ok();
    outcome.not_contacted()
}

/// What an accepted change set did, as `project_config_set` and an applied adoption report it.
pub(super) fn with_applied(outcome: Outcome, applied: &Applied) -> Outcome {
    outcome
        .with("created_entries", json!(applied.created_entries))
        .with("redirected_entries", json!(applied.redirected_entries))
        // The keys, as the reference lists them; the values before and after beside them.
        .with(
            "permissions_changed",
            json!(
                applied
                    .permissions_changed
                    .iter()
                    .map(|(k, _, _)| k)
                    .collect::<Vec<_>>()
            ),
        )
        .with(
            "permission_changes",
            json!(
                applied
                    .permissions_changed
                    .iter()
                    .map(|(k, was, now)| json!({"key": k, "previous_value": was, "value": now}))
                    .collect::<Vec<_>>()
            ),
        )
}

fn lookup<'v>(document: &'v Value, key: &str) -> Option<&'v Value> {
    // Entry names may hold dots: try the longest entry name first.
    if let Some(found) = key
        .split('.')
        .try_fold(document, |node, part| node.get(part))
    {
        return Some(found);
    }
    let (section, rest) = key.split_once('.')?;
    let entries = document.get(section)?.as_object()?;
    entries.iter().find_map(|(name, entry)| {
        let field = rest.strip_prefix(name.as_str())?.strip_prefix('.')?;
        field
            .split('.')
            .try_fold(entry, |node, part| node.get(part))
    })
}

/// Keys that name a program, refused over MCP whatever the grants.
pub fn operator_only(tool: &str, keys: &[String]) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::OperatorOnlyKey,
        format!(
            "`{}` names a program the bench runs, so only the operator sets it; nothing was written.",
            keys.join("`, `")
        ),
    )
    .with("keys", json!(keys))
    .with("operator_command", crate::config_edit::keys::OPERATOR_ONLY_COMMAND)
    .with_next_step("Report which program the task needs and stop; the operator sets it in the file at their own shell.")
    .not_started(true)
}

/// A refused write as an envelope; every grant refusal names the grant that would open it.
pub fn refusal(tool: &str, err: WriteError<Refused>) -> Outcome {
    let outcome = match err {
        WriteError::Refused(Refused::Denied { right, keys }) => Outcome::refused(
            tool,
            ErrorType::PermissionDenied,
            format!(
                "`{}` is false, so {} cannot be changed over MCP.",
                right.key(),
                if right == Right::Permissions { "permissions" } else { "the bench description" }
            ),
        )
        .with("permission", right.key())
        .with("keys", json!(keys))
        .with_next_step(format!(
            "This refusal is the answer: report that `{}` is false and stop; only the operator can open it (`agentic-hil grant {}`).",
            right.key(),
            right.key()
        )),
        WriteError::Refused(Refused::Widening { keys }) => Outcome::refused(
            tool,
            ErrorType::PermissionWideningDenied,
            "Over MCP a permission can only be closed (false); opening one is the operator's decision.",
        )
        .with("permission", keys.first().cloned().unwrap_or_default())
        .with("keys", json!(keys))
        .with("operator_command", format!("agentic-hil grant {}", keys.join(" ")))
        .with_next_step("Report which permission the task needs and stop; the operator decides whether to run the grant."),
        WriteError::Refused(Refused::OperatorOnly { keys }) => operator_only(tool, &keys),
        WriteError::Refused(Refused::UnknownEntry { key, entry }) => Outcome::refused(
            tool,
            ErrorType::InvalidArgument,
            format!(
                "`{entry}` is not in this configuration, and a permission does not create a device; nothing was written."
            ),
        )
        .with("field", entry.as_str())
        .with("unknown_entry", entry.as_str())
        .with("key", key)
        .with_next_step("Check the entry's name against project_config_describe; a device is described first, and its new entry starts with every permission false."),
        WriteError::Refused(Refused::Invalid { key, reason }) => Outcome::refused(
            tool,
            ErrorType::InvalidArgument,
            format!("`{key}` {reason}; nothing was written."),
        )
        .with("key", key)
        .with_next_step("Take keys and value shapes from project_config_describe (writable_keys, new_entry_patterns)."),
        WriteError::Invalid(e) | WriteError::Current(e) => layer_refusal(
            tool,
            e.error_type(),
            format!("{} Nothing was written.", e.summary()),
            e.details(),
        ),
        WriteError::ChangedUnderneath => Outcome::refused(
            tool,
            ErrorType::ConfigChangedUnderneath,
            "The configuration file changed while this edit was being made; nothing was written.",
        )
        .with_next_step("Call project_config_describe to see the file as it is now, then send the change again."),
        WriteError::Io(e) => replace_failed(tool, &e),
    };
    outcome.not_started(false)
}
