//! `ahil-gate`: the one gate every frontend calls. Validate, snapshot the config in force, authorize,
//! claim, act through a driver, settle, record, answer with one envelope.

pub mod actions;
pub mod artifacts;
pub mod audit;
pub mod bench;
pub mod bootstrap;
pub mod can;
pub mod catalogue;
pub mod claims;
pub mod config_edit;
pub mod debug;
pub mod doctor;
pub mod envelope;
pub mod fsio;
pub mod incidents;
pub mod observe;
pub mod operator;
pub mod ownership;
pub mod policy;
pub mod power;
pub mod progress;
pub mod provision;
pub mod reactor;
pub mod serial;
pub mod session_table;
pub mod sim;
pub mod snapshot;
pub mod validate;

#[cfg(test)]
mod testkit;

/// How every child is started: pinned absolute programs and the child environment.
pub use ahil_drivers::process as child;
pub use bench::Bench;
pub use catalogue::{ToolSpec, tools};
pub use doctor::doctor;
pub use envelope::{
    HardwareState, Outcome, SideEffectStatus, SuccessCheck, conclusive_success,
    conclusive_success_value, failed_success_check, failed_success_check_value, mark_side_effect,
    overall_success, overall_success_value,
};
pub use policy::{Action, Refusal, authorize};
