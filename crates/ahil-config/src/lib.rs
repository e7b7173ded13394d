//! The authoritative configuration of agentic-hil: where it lives, what it may say, and
//! whether the copy in force still matches the file.
//!
//! Compatible with the files the reference implementation (agentic-hil 0.25) reads and
//! writes, and with its `error_type` vocabulary.

mod account;
pub use account::check_first_configuration_place;
pub mod digest;
mod discover;
mod error;
mod holds;
mod labgrid;
mod load;
pub mod lockfile;
mod model;
mod model_io;
mod node;
mod paths;
mod patterns;
mod pin;
pub mod plan;
mod precheck;
mod rtt_rules;
mod rules;
mod schema;
mod spec;
mod status;
mod template;
pub mod time;
pub mod write;

pub use discover::{
    CONFIG_ENV_VAR, ConfigLocation, Environment, TRUSTED_SEARCH_PATH, canonical_config_path,
    check_config_outside_workspace, check_workspace_not_home, config_candidates,
    default_state_root,
};
pub use error::{ConfigError, Refusal};
pub use holds::{Holds, MAX_HOLD_S};
pub use labgrid::{Labgrid, LabgridPlaces};
pub use load::{
    LoadedConfig, admit, digest_bytes, load_authoritative, load_config_file, parse_config,
};
pub use model::*;
pub use paths::absolute_lexical;
pub use pin::{ExecutableState, PinnedExecutables, autodetect_tool};
pub use schema::config_json_schema;
pub use status::{ConfigInForce, ConfigStatus, FileState};
pub use template::render_init_config;
