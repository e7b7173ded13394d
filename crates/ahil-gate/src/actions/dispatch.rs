//! Where each declared tool's call goes: the one binding of a [`ToolId`] to its plan. The
//! declarations (name, schema, gate classes) live in the core, which names no tool implementation;
//! this match is exhaustive, so a tool added to the core does not build until it has a plan here
//! (decision 0010).

use ahil_core::catalogue::ToolId;

use super::{Context, Plan};
use crate::envelope::Outcome;

/// A tool's plan: its arguments turned into what policy is asked, the devices it claims and the work.
pub type PlanFn = for<'a> fn(&'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>>;

/// Where a call of the tool goes after validation.
#[derive(Clone, Copy)]
pub enum Dispatch {
    /// Through the pipeline with this plan.
    Plan(PlanFn),
    /// A test plan: the reactor is a frontend of the gate and sends each step back through it.
    Reactor,
}

/// The dispatch of `tool`.
pub fn dispatch(tool: ToolId) -> Dispatch {
    use super::{
        artifact_upload, bench_run, can_buses, can_io, can_session, com_io, com_ports, com_session,
        config_adopt, config_create, config_reload, config_set, debug, debugger_info, describe,
        lease, operator_bench, power, probe, reports, rtt_io, rtt_session, sim_board, test_reactor,
        upgrade,
    };
    use ToolId as T;
    Dispatch::Plan(match tool {
        T::TestReactorRun => return Dispatch::Reactor,
        T::DebuggerInfo => debugger_info::plan,
        T::ProjectConfigDescribe => describe::plan,
        T::ProjectConfigCreate => config_create::plan,
        T::ProjectConfigSet => config_set::plan,
        T::ProjectConfigAdoptHardware => config_adopt::plan,
        T::ProjectConfigReloadDescription => config_reload::plan,
        T::ArtifactUpload => artifact_upload::plan,
        T::BenchRunStart | T::BenchRunStop | T::BenchRunStatus => bench_run::plan,
        T::DebuggerProbesList | T::ProbeTarget | T::FlashFirmware | T::ResetTarget => probe::plan,
        T::DebugStartSession
        | T::DebugStopSession
        | T::DebugGetSessionStatus
        | T::DebugSetBreakpoint
        | T::DebugListBreakpoints
        | T::DebugClearBreakpoints
        | T::DebugContinue
        | T::DebugHalt
        | T::DebugGetStopReason
        | T::DebugSymbolInfo
        | T::DebugSymbolValue
        | T::DebugDumpSymbolIhex => debug::plan,
        T::GetLastReport | T::ClassifyLastError => reports::plan,
        T::HardwareLeaseStatus | T::HardwareRecover => lease::plan,
        T::ServerUpgrade => upgrade::plan,
        T::ComPortsList => com_ports::plan,
        T::ComSessionStart | T::ComSessionStop => com_session::plan,
        T::ComWrite | T::ComRead => com_io::plan,
        T::CanBusesList => can_buses::plan,
        T::CanSessionStart | T::CanSessionStop => can_session::plan,
        T::CanSend | T::CanRead => can_io::plan,
        T::PowerSupplyStatus | T::PowerSupplySet | T::PowerSupplyOutput | T::PowerSupplyCycle => {
            power::plan
        }
        T::TestReactorStatus | T::TestReactorStop => test_reactor::plan,
        T::RttChannelsList | T::RttSessionStart | T::RttSessionStop => rtt_session::plan,
        T::RttRead | T::RttWrite => rtt_io::plan,
        T::SimStart | T::SimStop | T::SimStatus => sim_board::plan,
        T::AdoptHardware | T::DebuggerProbesBootstrap | T::Doctor => operator_bench::plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ahil_core::catalogue::declarations;

    #[test]
    fn only_the_test_plan_tool_bypasses_the_plan_dispatch() {
        let reactor: Vec<_> = declarations()
            .filter(|d| matches!(dispatch(d.id), Dispatch::Reactor))
            .map(|d| d.name)
            .collect();
        assert_eq!(reactor, ["test_reactor_run"]);
    }
}
