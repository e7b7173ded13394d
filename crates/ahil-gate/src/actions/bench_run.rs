//! `bench_run_start`, `bench_run_stop`, `bench_run_status`: declare the devices a sequence of calls
//! will use and hold them machine-wide until the run ends. No device is contacted; these only lock.

use super::args::Args;
use crate::catalogue::ToolId;
use std::sync::Arc;
use std::time::Duration;

use ahil_drivers::Contact;

use super::{Acted, Context, DriverJob, Plan, Work};
use crate::envelope::Outcome;
use crate::ownership::runs;

/// Slack on top of `wait_s` before the gate gives up on a lock wait.
const WAIT_SLACK: Duration = Duration::from_secs(5);

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[
            ToolId::BenchRunStart,
            ToolId::BenchRunStop,
            ToolId::BenchRunStatus,
        ],
    )?;
    let ownership = Arc::clone(ctx.ownership);
    let places = ctx.places.cloned();
    let tool = ctx.tool;
    let work = match ctx.tool {
        ToolId::BenchRunStart => {
            let selectors = ctx.args.arg_array("devices");
            let devices = runs::resolve(ctx.loaded, ctx.tool.name(), selectors)?;
            let label = ctx.args.arg_str("label").map(str::to_owned);
            let wait = ctx
                .args
                .arg_f64("wait_s")
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .unwrap_or(Duration::ZERO);
            // Waiting for a device blocks, so it runs on a blocking thread like driver work.
            Work::Driver(DriverJob {
                deadline: wait + WAIT_SLACK,
                if_abandoned: Contact::None {
                    proof: "bench_run_start only waits for device locks".to_owned(),
                },
                run: Box::new(move |cancel| {
                    // The run's labgrid places first, as a call's claim takes them, and kept
                    // until the run stops; a refused start gives them back as the hold drops.
                    let hold = match places
                        .as_ref()
                        .map(|p| p.hold(tool.name(), p.of_declared(&devices)))
                    {
                        Some(Err(refusal)) => return local(*refusal),
                        Some(Ok(hold)) => Some(hold),
                        None => None,
                    };
                    let mut outcome = ownership.runs.start(
                        &ownership.locks,
                        tool.name(),
                        devices,
                        label.as_deref(),
                        wait,
                        &cancel,
                    );
                    if outcome.ok
                        && let (Some(places), Some(hold)) = (&places, hold)
                    {
                        hold.note(&mut outcome);
                        places.keep_for_run(hold);
                    }
                    local(outcome)
                }),
            })
        }
        ToolId::BenchRunStop => {
            let coordinator = Arc::clone(ctx.coordinator);
            Work::Local(Box::new(move || {
                let outcome = ownership.runs.stop(&ownership.locks, tool.name(), |held| {
                    coordinator.leases_holding(held)
                });
                if let Some(places) = &places {
                    places.end_run();
                }
                local(outcome)
            }))
        }
        _ => Work::Local(Box::new(move || {
            local(ownership.runs.status(&ownership.locks, tool.name()))
        })),
    };
    // Holding a device is exclusivity, not an action on it: no permission opens or closes it.
    Ok(Plan::read_state(work))
}

fn local(outcome: Outcome) -> Acted {
    Acted::local(outcome)
}
