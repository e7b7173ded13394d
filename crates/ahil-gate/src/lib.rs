//! `ahil-gate`: the one gate every frontend calls. Validate, snapshot the config in force, authorize,
//! claim, act through a driver, settle, record, answer with one envelope.
//!
//! The deciding half (policy, envelope, ownership, audit, the declarations) is `ahil-core`, which
//! names no driver; this crate holds the tool implementations that act through the drivers.

pub mod actions;
pub mod artifacts;
pub mod bootstrap;
pub mod can;
pub mod config_edit;
pub(crate) mod debug;
pub mod doctor;
pub mod observe;
pub mod operator;
pub(crate) mod power;
pub mod provision;
pub mod reactor;
pub(crate) mod rtt;
pub(crate) mod serial;
pub(crate) mod session_lifecycle;
pub(crate) mod session_table;
pub mod sim;
mod tools;

// The core's modules under their old names, so the tools' `crate::audit::…` paths read as before.
pub use ahil_core::{
    audit, cancel, catalogue, catalogue_output, claims, envelope, fsio, incidents, ownership,
    policy, progress, snapshot, validate,
};

/// The gate over this crate's tools: every frontend's one entry point.
pub type Bench = ahil_core::Bench<actions::Held>;

#[cfg(test)]
use ahil_core::testkit;

// The pipeline's tests run the real tools, so they live with them.
#[cfg(test)]
#[path = "bench_tests.rs"]
mod bench_tests;

#[cfg(test)]
#[path = "bench/every_device_tests.rs"]
mod every_device_tests;

#[cfg(test)]
#[path = "bench/staging_tests.rs"]
mod staging_tests;

#[cfg(test)]
#[path = "bench/noting_backend_tests.rs"]
mod noting_backend_tests;

/// How the binary's own children (cargo, an upgrade candidate) are started: the pinned-program check
/// and the child environment, and nothing else of the drivers' runner.
pub mod child {
    pub use ahil_drivers::process::{CHILD_PATH, isolate, require_absolute};

    #[cfg(test)]
    mod tests {
        #[test]
        fn a_child_searches_the_same_directories_a_load_pins_from() {
            assert_eq!(super::CHILD_PATH, ahil_config::TRUSTED_SEARCH_PATH);
        }
    }
}

pub use ahil_core::{ErrorType, OPERATOR_CLI};
pub use catalogue::{ToolSpec, conclusive_success, conclusive_success_value, tools};
#[cfg(test)]
pub(crate) use doctor::doctor;
pub use envelope::{
    HardwareState, Outcome, SideEffectStatus, SuccessCheck, failed_success_check,
    failed_success_check_value, mark_side_effect, overall_success, overall_success_value,
};
pub use policy::{Action, Refusal, authorize};
