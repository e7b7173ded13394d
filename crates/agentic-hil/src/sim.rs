//! `agentic-hil sim start | stop | status`: the emulated board of a `qemu` debugger, through the gate's
//! `ahil_gate::sim` (this crate never names a driver). `start` leaves a small supervisor running (this
//! binary, re-executed as the hidden `sim supervise`), so the board outlives the command as a real one
//! outlives a tool call.

use std::path::{Path, PathBuf};

use ahil_config::Environment;
use ahil_gate::sim::{self, BoardSpec, Status};
use serde_json::{Value, json};

use crate::cli::SimCommand;

/// Run one sim subcommand and answer its result document.
pub fn run(workspace: &Path, env: &Environment, command: &SimCommand) -> anyhow::Result<Value> {
    let loaded = match crate::logs::load_config(workspace, env) {
        Ok(loaded) => loaded,
        Err(error) => {
            return Ok(refused(
                error.error_type(),
                &format!("The configuration could not be loaded: {}", error.summary()),
            ));
        }
    };
    let debugger = match command {
        SimCommand::Start { debugger, .. }
        | SimCommand::Stop { debugger }
        | SimCommand::Status { debugger }
        | SimCommand::Supervise { debugger, .. } => debugger.as_deref(),
    };
    let spec = match sim::board_spec(&loaded, debugger) {
        Ok(spec) => spec,
        Err(error) => return Ok(refused("not_supported", &error.to_string())),
    };
    Ok(match command {
        SimCommand::Start { image, .. } => start(workspace, &spec, image.as_deref())?,
        SimCommand::Stop { .. } => match sim::stop(&spec) {
            Ok(was_running) => json!({
                "ok": true,
                "summary": if was_running { "The emulated board was stopped." } else { "No emulated board was running." },
                "debugger": spec.debugger,
                "was_running": was_running,
            }),
            Err(error) => refused("sim_stop_failed", &error.to_string()),
        },
        SimCommand::Status { .. } => status_document(&spec, &sim::status(&spec)),
        SimCommand::Supervise { image, .. } => match sim::supervise(&spec, image.as_deref()) {
            Ok(()) => json!({"ok": true, "summary": "The emulated board ended."}),
            Err(error) => refused("sim_failed", &error.to_string()),
        },
    })
}

fn refused(error_type: &str, summary: &str) -> Value {
    json!({"ok": false, "error_type": error_type, "summary": summary})
}

fn status_document(spec: &BoardSpec, status: &Status) -> Value {
    match status {
        Status::Stopped => json!({
            "ok": true,
            "summary": "No emulated board is running.",
            "debugger": spec.debugger,
            "running": false,
        }),
        Status::Running { pid, vm } => json!({
            "ok": true,
            "summary": format!("The emulated {} board is {vm}.", spec.machine),
            "debugger": spec.debugger,
            "running": true,
            "machine": spec.machine,
            "vm_status": vm,
            "pid": pid,
        }),
    }
}

/// The image a board boots: `--image` (relative to the workspace), else the committed test firmware
/// under `firmware/build` of the workspace when present.
fn boot_image(workspace: &Path, image: Option<&Path>) -> Option<PathBuf> {
    match image {
        Some(path) if path.is_absolute() => Some(path.to_path_buf()),
        Some(path) => Some(workspace.join(path)),
        None => {
            let built = workspace.join("firmware/build/ahil-fw-v1.elf");
            built.is_file().then_some(built)
        }
    }
}

fn start(workspace: &Path, spec: &BoardSpec, image: Option<&Path>) -> anyhow::Result<Value> {
    let image = boot_image(workspace, image);
    if let Some(path) = &image
        && !path.is_file()
    {
        return Ok(refused(
            "artifact_not_found",
            "The --image file does not exist.",
        ));
    }
    let program = std::env::current_exe()?;
    let mut args = vec!["sim".to_owned(), "supervise".to_owned()];
    args.extend(["--debugger".to_owned(), spec.debugger.clone()]);
    if let Some(path) = &image {
        args.extend(["--image".to_owned(), path.display().to_string()]);
    }
    match sim::start_detached(spec, &program, &args, image.is_some()) {
        Ok(status) => {
            let mut document = status_document(spec, &status);
            document["summary"] = json!(format!(
                "The emulated {} board started{}.",
                spec.machine,
                if image.is_some() {
                    " and runs its image"
                } else {
                    " blank and paused"
                }
            ));
            if let Some(path) = &image {
                let shown = path
                    .strip_prefix(workspace)
                    .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
                document["image"] = json!(shown);
            }
            Ok(document)
        }
        Err(error) => Ok(refused("sim_start_failed", &error.to_string())),
    }
}
