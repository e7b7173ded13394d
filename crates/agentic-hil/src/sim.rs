//! `agentic-hil sim start | stop | status`: the emulated board of a `qemu` debugger. Each runs through
//! the gate's pipeline as an operator-only tool (`sim_start`, `sim_stop`, `sim_status`), so it holds
//! the board's device lock (an agent's session refuses it `device_busy`) and leaves a report. Only
//! the hidden `sim supervise` (the child `start` leaves running, so the board outlives the command
//! as a real one outlives a tool call) drives the board itself.

use std::path::Path;

use ahil_config::Environment;
use ahil_gate::ErrorType;
use serde_json::{Value, json};

use crate::cli::SimCommand;

/// Run one sim subcommand and answer its result document.
pub fn run(workspace: &Path, env: &Environment, command: &SimCommand) -> anyhow::Result<Value> {
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        Err(error) => {
            return Ok(refused(
                ErrorType::layer(error.error_type()),
                &format!("The configuration could not be loaded: {}", error.summary()),
            ));
        }
    };
    let (tool, debugger, image) = match command {
        SimCommand::Start { debugger, image } => ("sim_start", debugger, image.as_deref()),
        SimCommand::Stop { debugger } => ("sim_stop", debugger, None),
        SimCommand::Status { debugger } => ("sim_status", debugger, None),
        SimCommand::Supervise { debugger, image } => {
            return Ok(supervise(&loaded, debugger.as_deref(), image.as_deref()));
        }
    };
    let mut args = json!({});
    if let Some(name) = debugger {
        args["debugger"] = json!(name);
    }
    if let Some(path) = image {
        // Relative to the workspace, as the operator typed it.
        args["image"] = json!(workspace.join(path).display().to_string());
    } else if tool == "sim_start" {
        // The committed test firmware, when the workspace has it.
        let built = workspace.join("firmware/build/ahil-fw-v1.elf");
        if built.is_file() {
            args["image"] = json!(built.display().to_string());
        }
    }
    Ok(crate::operator_cli::call(loaded, env, tool, args)?.to_value())
}

/// The hidden supervisor `sim start` leaves behind: it runs the board until QEMU exits.
fn supervise(
    loaded: &ahil_config::LoadedConfig,
    debugger: Option<&str>,
    image: Option<&Path>,
) -> Value {
    let spec = match ahil_gate::sim::board_spec(loaded, debugger) {
        Ok(spec) => spec,
        Err(error) => return refused(ErrorType::NotSupported, &error.to_string()),
    };
    match ahil_gate::sim::supervise(&spec, image) {
        Ok(()) => json!({"ok": true, "summary": "The emulated board ended."}),
        Err(error) => refused(ErrorType::SimFailed, &error.to_string()),
    }
}

/// A refusal names only a catalogued [`ErrorType`].
fn refused(error_type: ErrorType, summary: &str) -> Value {
    json!({"ok": false, "error_type": error_type, "summary": summary})
}
