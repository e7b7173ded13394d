//! `sim_start`, `sim_stop`, `sim_status`: the operator's `agentic-hil sim …` commands on the emulated
//! board of a `qemu` debugger, as operator-only tools. Through the pipeline they hold the
//! debugger's device lock for the call, so an agent's session or run on the board refuses them
//! `device_busy` before the board is touched, and each call leaves a report.

use super::args::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ahil_drivers::Contact;
use serde_json::{Value, json};

use super::{Acted, Context, DriverJob, Plan, Work};
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;
use crate::policy::Action;
use crate::sim::{self, BoardSpec, Status};
use crate::snapshot::pinned_debugger_executable;

/// Above the board's own readiness wait, so its error answers first.
const GATE_DEADLINE: Duration = Duration::from_mins(1);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[ToolId::SimStart, ToolId::SimStop, ToolId::SimStatus],
    )?;
    let tool = ctx.tool;
    let refuse = |error_type: ErrorType, summary: String| {
        Box::new(Outcome::refused(tool, error_type, summary).not_contacted())
    };
    let named = ctx.args.arg_str("debugger");
    let spec = sim::board_spec(ctx.loaded, named)
        .map_err(|error| refuse(ErrorType::NotSupported, error.to_string()))?;
    let image = ctx.args.arg_str("image").map(PathBuf::from);
    if let Some(path) = &image
        && !path.is_file()
    {
        return Err(refuse(
            ErrorType::ArtifactNotFound,
            "The --image file does not exist.".into(),
        ));
    }
    let executable = pinned_debugger_executable(ctx.loaded, &spec.debugger);
    // A status is an observation, as `hardware_lease_status` is: the person at the bench may look
    // at a board an agent's session holds. Start and stop change it, so they hold its lock.
    let resources = if tool == ToolId::SimStatus {
        Vec::new()
    } else {
        ctx.loaded
            .config
            .debuggers
            .get(&spec.debugger)
            .map(|debugger| debugger.lock_key(executable.as_deref().and_then(Path::to_str)))
            .into_iter()
            .collect()
    };
    let workspace = ctx.loaded.workspace.clone();
    let run = move |_cancel| {
        let doc = match tool {
            ToolId::SimStart => start(&workspace, &spec, image.as_deref()),
            ToolId::SimStop => stop(&spec),
            _ => (
                status_document(&spec, &sim::status(&spec)),
                Contact::none("a status query reads the emulator's own state"),
            ),
        };
        Acted::new(Outcome::from_doc(tool.name(), doc.0), doc.1)
    };
    Ok(Plan {
        // The operator's own command: no agent grant applies; the device lock is what protects it.
        action: Action::ReadState,
        device: None,
        also: Vec::new(),
        resources,
        work: Work::Driver(DriverJob {
            deadline: GATE_DEADLINE,
            if_abandoned: Contact::Possible,
            run: Box::new(run),
        }),
    })
}

/// A failed command's document; only a catalogued [`ErrorType`] can be named.
fn refused(error_type: ErrorType, summary: &str) -> Value {
    json!({"ok": false, "error_type": error_type, "summary": summary})
}

fn stop(spec: &BoardSpec) -> (Value, Contact) {
    match sim::stop(spec) {
        Ok(true) => (
            json!({"ok": true, "summary": "The emulated board was stopped.", "debugger": spec.debugger, "was_running": true}),
            Contact::Made,
        ),
        Ok(false) => (
            json!({"ok": true, "summary": "No emulated board was running.", "debugger": spec.debugger, "was_running": false}),
            Contact::none("no emulated board was running"),
        ),
        Err(error) => (
            refused(ErrorType::SimStopFailed, &error.to_string()),
            Contact::Possible,
        ),
    }
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

/// Start the board: this binary, re-executed as the hidden `sim supervise`, keeps it running after
/// the command ends, as a real board outlives a tool call.
fn start(workspace: &Path, spec: &BoardSpec, image: Option<&Path>) -> (Value, Contact) {
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(error) => {
            return (
                refused(ErrorType::SimStartFailed, &error.to_string()),
                Contact::none("the supervisor was not started"),
            );
        }
    };
    let mut args = vec!["sim".to_owned(), "supervise".to_owned()];
    args.extend(["--debugger".to_owned(), spec.debugger.clone()]);
    if let Some(path) = image {
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
            if let Some(path) = image {
                let shown = path
                    .strip_prefix(workspace)
                    .map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
                document["image"] = json!(shown);
            }
            (document, Contact::Made)
        }
        Err(error) => (
            refused(ErrorType::SimStartFailed, &error.to_string()),
            Contact::Possible,
        ),
    }
}
