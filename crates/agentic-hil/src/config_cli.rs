//! The operator's configuration commands: `grant`, `revoke`, `config-reload`, `adopt-hardware`,
//! `debugger-probes` and `com-ports`. The work is in the gate (`ahil_gate::config_edit::operator`),
//! so the CLI and MCP share one ratchet; `grant` exists only here, never as a tool.

use std::path::Path;

use ahil_config::Environment;
use serde_json::{Value, json};

/// `agentic-hil grant KEY…` (`value` true) or `revoke KEY…` (false).
pub fn set_permissions(workspace: &Path, env: &Environment, keys: &[String], value: bool) -> Value {
    ahil_gate::config_edit::operator::set_permissions(workspace, env, keys, value).to_value()
}

/// `agentic-hil config-reload`: the preview of a running server's description reload.
pub fn preview_reload(workspace: &Path, env: &Environment) -> Value {
    ahil_gate::config_edit::operator::preview_reload(workspace, env).to_value()
}

/// `agentic-hil com-ports`: the host's serial ports; needs no configuration.
pub fn com_ports() -> Value {
    ahil_gate::actions::com_ports::available_ports()
}

/// `agentic-hil adopt-hardware`: fill the configuration from the attached board, as the
/// operator-only tool `adopt_hardware` (it holds every device of the bench while it works).
pub fn adopt_hardware(
    workspace: &Path,
    env: &Environment,
    debugger: Option<&str>,
    com_port: Option<&str>,
    probe_id: Option<&str>,
    dry_run: bool,
) -> anyhow::Result<Value> {
    let tool = "adopt_hardware";
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        Err(err) => return Ok(ahil_gate::config_edit::operator::config_error(tool, &err)),
    };
    let mut args = json!({"dry_run": dry_run});
    for (key, value) in [
        ("debugger_id", debugger),
        ("com_port_id", com_port),
        ("probe_id", probe_id),
    ] {
        if let Some(value) = value {
            args[key] = json!(value);
        }
    }
    Ok(crate::operator_cli::call(loaded, env, tool, args)?.to_value())
}

/// `agentic-hil debugger-probes`: the probes the configured debugger sees, through the gate as the
/// operator's CLI (its device locks name `operator-cli`). Before `init` the operator-only
/// `debugger_probes_bootstrap` asks the host instead, on a gate over the configuration `init`
/// would write (never written), so its report lands where the project's own will.
pub fn debugger_probes(workspace: &Path, env: &Environment) -> anyhow::Result<Value> {
    let (loaded, tool) = match crate::logs::load_config(workspace, env) {
        // The debuggers as `init` wrote them name no toolchain to ask, and the operator lists
        // probes now to bind one (`adopt-hardware --probe-id`): the host's own listing answers,
        // as the reference's serial inventory does, instead of a refusal.
        Ok(loaded)
            if !loaded.config.debuggers.is_empty()
                && loaded
                    .config
                    .debuggers
                    .values()
                    .all(ahil_config::Debugger::is_placeholder_starter) =>
        {
            (loaded, "debugger_probes_bootstrap")
        }
        Ok(loaded) => (loaded, "debugger_probes_list"),
        // Before `init` there is no backend to ask, but the operator needs a probe id to write one.
        Err(err) if err.error_type() == "config_file_not_found" => {
            match ahil_gate::bootstrap::bench_before_init(workspace, env) {
                Ok(loaded) => (loaded, "debugger_probes_bootstrap"),
                Err(err) => {
                    return Ok(ahil_gate::config_edit::operator::config_error(
                        "debugger_probes_bootstrap",
                        &err,
                    ));
                }
            }
        }
        Err(err) => {
            return Ok(ahil_gate::config_edit::operator::config_error(
                "debugger_probes_list",
                &err,
            ));
        }
    };
    Ok(crate::operator_cli::call(loaded, env, tool, json!({}))?.to_value())
}
