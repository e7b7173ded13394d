//! The operator's commands that touch hardware (`sim`, `adopt-hardware`, `debugger-probes`,
//! `doctor`, `init`'s check) run as operator-only tools through the gate's pipeline (decision 0013):
//! one gate made for the `operator-cli` frontend, one call, so each holds the device locks its
//! declaration names and leaves a report. The binary calls no hardware-touching gate function
//! itself (`tests/architecture.rs` holds it to the gate's facade).

use std::path::Path;

use ahil_config::{Environment, LoadedConfig};
use ahil_gate::{Bench, ErrorType, Outcome};
use serde_json::{Value, json};

/// One call of `tool` through a gate over `loaded`, as the operator's CLI.
pub fn call(
    loaded: LoadedConfig,
    env: &Environment,
    tool: &str,
    args: Value,
) -> anyhow::Result<Outcome> {
    let bench = Bench::provisioned_as(loaded, env.clone(), ahil_gate::OPERATOR_CLI);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(bench.call(tool, args)))
}

/// `agentic-hil doctor`: the configuration's check through the pipeline, or why it does not load.
pub fn doctor(workspace: &Path, env: &Environment) -> Outcome {
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        Err(error) => return ahil_gate::doctor::config_error(&error),
    };
    let checked = call(loaded, env, "agentic_hil_doctor", json!({})).unwrap_or_else(|error| {
        Outcome::refused(
            "agentic_hil_doctor",
            ErrorType::InternalError,
            format!("The check could not be started: {error}."),
        )
        .not_contacted()
    });
    if checked.error_type.is_some() {
        return checked;
    }
    checked
        .with("installation", installation())
        .with("mcp", mcp_registration(workspace))
}

/// Which program answers: this binary's version and where it is (printed home-relative).
fn installation() -> Value {
    let path = std::env::current_exe()
        .ok()
        .and_then(|exe| std::fs::canonicalize(exe).ok());
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "package_path": path,
        "editable": false,
    })
}

/// What to register as the MCP server (`mcp-config`'s command), or why nothing may be yet.
fn mcp_registration(workspace: &Path) -> Value {
    let report = json!({"transport": "stdio", "args": ["mcp-stdio"]});
    let mut report = report;
    match crate::install::launcher_command(workspace) {
        Ok(command) => {
            report["command"] = json!(command);
            report["persistent"] = json!(true);
            report["summary"] = json!(
                "Register this exact path with 'agentic-hil setup --agent <agent>'; a transient runner or a bare PATH name is not a registration."
            );
        }
        Err(summary) => {
            report["command"] = Value::Null;
            report["persistent"] = json!(false);
            report["summary"] = json!(format!(
                "No trusted persistent executable to register yet: {summary}"
            ));
        }
    }
    report
}
