//! The test reactor: a written plan run against the bench through the same gate as an agent's calls.
//!
//! * [`preflight`]: the plan checked against the configuration in force before anything moves.
//! * [`steps`]: each step as gate calls, with waiting and matching ([`matching`]).
//! * [`run`]: one run from registration to its report — declare devices, steps, cleanup, release.
//! * [`records`]: handles, run records, liveness locks and stop requests under the state root.
//! * [`worker`]: detached runs, a worker process of this binary.
//! * [`report`], [`junit`]: the run's report and its JUnit XML.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::Bench;
use crate::envelope::Outcome;

pub mod junit;
mod matching;
pub mod preflight;
pub mod records;
pub mod report;
pub mod run;
pub mod steps;
pub mod worker;

pub use crate::progress::ProgressSink;
pub use records::{Handle, RunsDir};
pub use run::{Request, execute};
pub use worker::start_detached;

pub use ahil_core::bench::View;

/// `test_reactor_run` over MCP: attached runs answer at the end; detached ones once a worker holds
/// the devices. Over MCP a busy device is answered at once (`wait_s` 0). Boxed with a declared `Send`
/// because the run's steps call back into the gate whose future contains this one.
pub fn run_tool<'a>(
    bench: &'a Bench,
    args: &Value,
) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
    let plan_path = args
        .get("test_config_path")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let detach = args.get("detach").and_then(Value::as_bool) == Some(true);
    let progress = crate::progress::current();
    Box::pin(async move {
        if detach {
            return start_detached(bench, plan_path, std::time::Duration::ZERO).await;
        }
        execute(
            bench,
            Request {
                plan_path,
                progress,
                ..Request::default()
            },
        )
        .await
    })
}
