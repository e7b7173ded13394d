//! The operator's configuration commands: `grant`, `revoke`, `config-reload`, `adopt-hardware`,
//! `debugger-probes` and `com-ports`. The work is in the gate (`ahil_gate::config_edit::operator`),
//! so the CLI and MCP share one ratchet; `grant` exists only here, never as a tool.

use std::path::Path;

use ahil_config::Environment;
use serde_json::Value;

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

/// `agentic-hil adopt-hardware`: fill the configuration from the attached board.
pub fn adopt_hardware(
    workspace: &Path,
    env: &Environment,
    debugger: Option<&str>,
    com_port: Option<&str>,
    probe_id: Option<&str>,
    dry_run: bool,
) -> Value {
    let target = ahil_gate::actions::config_adopt::Target {
        debugger_id: debugger.map(str::to_owned),
        probe_id: probe_id.map(str::to_owned),
        com_port_id: com_port.map(str::to_owned),
    };
    ahil_gate::config_edit::operator::adopt_hardware(workspace, env, &target, dry_run).to_value()
}

/// `agentic-hil debugger-probes`: the probes the configured debugger sees, through the gate as the
/// operator's CLI (its device locks name `operator-cli`).
pub fn debugger_probes(workspace: &Path, env: &Environment) -> anyhow::Result<Value> {
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        // Before `init` there is no backend to ask, but the operator needs a probe id to write one.
        Err(err) if err.error_type() == "config_file_not_found" => {
            return Ok(ahil_gate::bootstrap::probes_without_config(workspace, env).to_value());
        }
        Err(err) => {
            return Ok(ahil_gate::config_edit::operator::config_error(
                "debugger_probes_list",
                &err,
            ));
        }
    };
    let bench = ahil_gate::Bench::provisioned_as(loaded, env.clone(), "operator-cli");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime
        .block_on(bench.call("debugger_probes_list", serde_json::json!({})))
        .to_value())
}
