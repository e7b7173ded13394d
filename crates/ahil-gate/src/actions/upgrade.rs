//! `server_upgrade`: the agent asks for the upgrade the operator could run at their shell. The work is
//! `agentic-hil upgrade --json` run as a child of this server, so the MCP tool and the command share
//! one implementation and the server's own process never replaces anything itself.

use crate::ErrorType;
use crate::catalogue::ToolId;
use std::path::PathBuf;
use std::time::Duration;

use ahil_drivers::Contact;
use ahil_drivers::process::{self, CancelFlag};
use serde_json::{Value, json};

use super::{Acted, Context, DriverJob, Plan, Work};
use crate::envelope::Outcome;
use crate::policy::Action;

/// The command's own limits (10 min for cargo, a minute per lookup, seconds per version check)
/// with room to report.
const DEADLINE: Duration = Duration::from_mins(15);
/// The child is stopped a minute before the gate gives up on the call, so it is the child's own
/// answer that comes back.
const CHILD_DEADLINE: Duration = Duration::from_mins(14);
const SHELL_COMMAND: &str = "agentic-hil upgrade";

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ServerUpgrade])?;
    let held = ctx.ownership.locks.held();
    let open_run = ctx.ownership.runs.current().is_some();
    let tool = ctx.tool;
    Ok(Plan {
        action: Action::Upgrade,
        device: None,
        also: Vec::new(),
        resources: Vec::new(),
        work: Work::Driver(DriverJob {
            deadline: DEADLINE,
            if_abandoned: Contact::none("an upgrade touches no device"),
            run: Box::new(move |cancel| Acted {
                outcome: if open_run || !held.is_empty() {
                    in_open_run(tool.name(), &held)
                } else {
                    run(tool.name(), cancel)
                },
                contact: None,
            }),
        }),
    })
}

fn in_open_run(tool: &str, held: &[String]) -> Outcome {
    Outcome::refused(
        tool,
        ErrorType::UpgradeInOpenRun,
        "The installation is not upgraded while this server holds a run or session.",
    )
    .with("open_holds", json!(held))
    .with_next_step(
        "Stop the run (bench_run_stop) and every session, then call server_upgrade again.",
    )
    .not_started(true)
}

fn run(tool: &str, cancel: CancelFlag) -> Outcome {
    let exe = match this_binary() {
        Ok(exe) => exe,
        Err(e) => {
            return failed(
                tool,
                format!("This server cannot find its own binary ({e})."),
            );
        }
    };
    let command = process::Command::new(exe)
        .args(["upgrade", "--json"])
        .deadline(CHILD_DEADLINE)
        .cancel_on(cancel);
    let finished = match process::run(&command) {
        Ok(finished) => finished,
        Err(e) => {
            return failed(
                tool,
                format!("The upgrade command could not be started ({e})."),
            );
        }
    };
    let doc: Option<Value> = serde_json::from_slice(&finished.stdout).ok();
    let Some(doc @ Value::Object(_)) = doc else {
        return failed(
            tool,
            format!(
                "The upgrade command ended ({:?}) without a result.",
                finished.exit
            ),
        );
    };
    // The child reports the version on disk before it ran; what answers this call is this process.
    Outcome::from_doc(tool, doc).with("running_version", env!("CARGO_PKG_VERSION"))
}

/// Linux names the file of a process whose binary was replaced "… (deleted)"; the path is still the
/// installation, now holding the newer binary.
fn this_binary() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let text = exe.to_string_lossy();
    Ok(text
        .strip_suffix(" (deleted)")
        .map_or_else(|| exe.clone(), PathBuf::from))
}

fn failed(tool: &str, summary: String) -> Outcome {
    Outcome::refused(tool, ErrorType::UpgradeFailed, summary)
        .with("reinstall_command", SHELL_COMMAND)
        .with_next_step("Ask the operator to run `agentic-hil upgrade` in a shell.")
}
