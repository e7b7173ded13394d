//! `adopt_hardware`, `debugger_probes_bootstrap`, `agentic_hil_doctor`: the operator's
//! `agentic-hil adopt-hardware`, `debugger-probes` before `init`, and `doctor` as operator-only tools
//! (decision 0013). Through the pipeline each call leaves a report; the adoption holds every device
//! of the bench, so an agent's run or session refuses it `device_busy` before the board is read.

use super::args::Args;
use std::time::Duration;

use ahil_drivers::Contact;
use serde_json::Value;

use super::config_adopt::Target;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::catalogue::ToolId;
use crate::envelope::Outcome;
use crate::policy::Action;

/// Above a probe listing's own budget (a debugger's `timeout_s`, a minute by default), so the
/// listing's error answers first.
const ADOPT_DEADLINE: Duration = Duration::from_mins(2);
/// Above bootstrap's own listing limit.
const BOOTSTRAP_DEADLINE: Duration = Duration::from_mins(1);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    // Every tool this plan serves is named; any other is refused, never run as one of these.
    match ctx.tool {
        ToolId::AdoptHardware => Ok(adopt(ctx)),
        ToolId::DebuggerProbesBootstrap => Ok(bootstrap_listing(ctx)),
        ToolId::Doctor => Ok(doctor(ctx)),
        other => Err(super::misrouted(other)),
    }
}

/// The adoption reads and writes the whole bench's description, so it holds every device the
/// configuration names, as `grant` does.
fn adopt<'a>(ctx: &'a Context<'a>) -> Plan<'a> {
    let arg = |key: &str| ctx.args.get(key).and_then(Value::as_str).map(str::to_owned);
    let target = Target {
        debugger_id: arg("debugger_id"),
        probe_id: arg("probe_id"),
        com_port_id: arg("com_port_id"),
    };
    let dry_run = ctx.args.arg_bool("dry_run").unwrap_or(false);
    let tool = ctx.tool;
    let loaded = ctx.loaded.clone();
    let env = ctx.env.clone();
    let run = move |_cancel| {
        Acted::local(crate::config_edit::operator::adopt_held(
            tool, &loaded, &env, &target, dry_run,
        ))
    };
    Plan {
        // The operator's own command: no agent grant applies; the device locks are what protect it.
        action: Action::ReadState,
        device: None,
        also: Vec::new(),
        resources: crate::config_edit::operator::device_keys(ctx.loaded),
        work: Work::Driver(DriverJob {
            deadline: ADOPT_DEADLINE,
            if_abandoned: Contact::none("listing probes opens no target"),
            run: Box::new(run),
        }),
    }
}

/// Before `init` there is no configured device to lock but the lister's own program: a bench that
/// names the same STM32CubeProgrammer without a probe id holds that key while it works.
fn bootstrap_listing<'a>(ctx: &'a Context<'a>) -> Plan<'a> {
    let workspace = ctx.loaded.workspace.clone();
    let env = ctx.env.clone();
    let resources = crate::bootstrap::lister_key(&workspace, &env)
        .into_iter()
        .collect();
    let run =
        move |_cancel| Acted::local(crate::bootstrap::probes_without_config(&workspace, &env));
    Plan {
        resources,
        ..Plan::read_state(Work::Driver(DriverJob {
            deadline: BOOTSTRAP_DEADLINE,
            if_abandoned: Contact::none("listing probes opens no target"),
            run: Box::new(run),
        }))
    }
}

/// The doctor opens no device (it runs the toolchains' `--version` only, each under its own
/// timeout), so it claims no lock, as `sim status` does not.
fn doctor<'a>(ctx: &'a Context<'a>) -> Plan<'a> {
    let loaded = ctx.loaded;
    Plan::read_state(Work::Local(Box::new(move || {
        Acted::local(crate::doctor::check(loaded))
    })))
}
