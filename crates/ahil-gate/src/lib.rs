//! `ahil-gate`: the one gate every frontend calls. Validate, snapshot the config in force, authorize,
//! claim, act through a driver, settle, record, answer with one envelope.

pub mod actions;
pub mod artifacts;
pub mod audit;
pub mod bench;
pub mod bootstrap;
pub mod can;
pub mod cancel;
pub mod catalogue;
pub mod catalogue_output;
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
pub mod session_lifecycle;
pub mod session_table;
pub mod sim;
pub mod snapshot;
pub mod validate;

#[cfg(test)]
mod testkit;

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

pub use audit::error_type::ErrorType;
pub use bench::Bench;
pub use catalogue::{ToolSpec, conclusive_success, conclusive_success_value, tools};
pub use doctor::doctor;
pub use envelope::{
    HardwareState, Outcome, SideEffectStatus, SuccessCheck, failed_success_check,
    failed_success_check_value, mark_side_effect, overall_success, overall_success_value,
};
pub use policy::{Action, Refusal, authorize};
