//! This crate's tools as the core's pipeline sees them ([`Tools`]): the plan of each declared tool,
//! the test reactor as a frontend, the first configuration, the reloaded description and the
//! sessions to close at shutdown.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use ahil_config::{Environment, LoadedConfig};
use ahil_core::Tools;
use ahil_core::catalogue::ToolId;
use serde_json::{Value, json};

use crate::Bench;
use crate::actions::{self, Context, Dispatch, Held, Plan};
use crate::envelope::Outcome;

impl Tools for Held {
    fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
        actions::plan(ctx)
    }

    fn is_frontend(tool: ToolId) -> bool {
        matches!(actions::dispatch(tool), Dispatch::Reactor)
    }

    fn run_frontend<'a>(
        bench: &'a Bench,
        args: &Value,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        crate::reactor::run_tool(bench, args)
    }

    fn first_creation(workspace: &Path, env: &Environment) -> Outcome {
        actions::config_create::first_creation(workspace, env)
    }

    fn reloaded(&self) -> Option<Arc<LoadedConfig>> {
        self.description.current()
    }

    /// The debug session first (its stop reconfirms the halt before detaching), then COM, CAN and
    /// RTT.
    fn closing_calls(&self) -> Vec<(ToolId, Value)> {
        let debug = self
            .debug
            .is_active()
            .then(|| (ToolId::DebugStopSession, json!({})));
        let ports = self
            .serial
            .ids()
            .into_iter()
            .map(|port_id| (ToolId::ComSessionStop, json!({"port_id": port_id})));
        // Sessions are keyed by bus and participant: each participant's session is stopped by name.
        let buses = self.can.ids().into_iter().filter_map(|key| {
            let session = self.can.get(&key)?;
            let mut args = json!({"bus_id": session.bus_id});
            if let Some(participant) = &session.participant {
                args["participant"] = participant.as_str().into();
            }
            Some((ToolId::CanSessionStop, args))
        });
        // One RTT session per debugger, and the MCP surface binds one debugger: its stop takes no id.
        let rtt = (!self.rtt.ids().is_empty()).then(|| (ToolId::RttSessionStop, json!({})));
        debug
            .into_iter()
            .chain(ports)
            .chain(buses)
            .chain(rtt)
            .collect()
    }
}
