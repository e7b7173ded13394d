//! `ahil-core`: the gate's core, which decides and records but never acts. Policy, the envelope,
//! ownership (device locks, runs, leases and incidents), audit, the tool declarations and their
//! output shapes, argument validation, the configuration snapshot, the per-resource claims, and
//! the pipeline (`bench`) that runs every call through them.
//!
//! It depends on no driver: the tool implementations (`ahil-gate`) are the only crate that reaches
//! hardware, and they reach it through these types (decision 0010).

pub mod audit;
pub mod bench;
pub mod cancel;
pub mod catalogue;
pub mod catalogue_output;
pub mod claims;
pub mod envelope;
pub mod fsio;
pub mod incidents;
pub mod ownership;
pub mod policy;
pub mod progress;
pub mod snapshot;
pub mod text;
pub mod validate;

#[cfg(any(test, feature = "testkit"))]
pub mod testkit;

pub use audit::error_type::ErrorType;
pub use bench::{Bench, OPERATOR_CLI, Tools};
pub use catalogue::{ToolSpec, conclusive_success, conclusive_success_value, tools};
pub use envelope::{
    HardwareState, Outcome, SideEffectStatus, SuccessCheck, failed_success_check,
    failed_success_check_value, mark_side_effect, overall_success, overall_success_value,
};
pub use policy::{Action, Refusal, authorize};
