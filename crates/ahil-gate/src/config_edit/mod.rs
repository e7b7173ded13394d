//! Gate-side rules for changing the configuration: which keys exist, which grant opens each, the
//! ratchet that keeps an agent from widening a permission, description reload, generation from
//! discovery, and the operator's commands. The file mechanics live in `ahil_config::write`.

pub mod generate;
pub mod identity;
pub mod keys;
pub mod operator;
pub mod ratchet;
pub mod refusals;
pub mod reload;

pub use keys::{KeyRule, Right, Section, classify};
pub use ratchet::{
    Applied, Change, Refused, Rights, apply_agent_changes, apply_operator_changes, config_surface,
    permission_surface,
};
pub use refusals::{config_refusal, layer_refusal, replace_failed};

#[cfg(test)]
mod ratchet_props;
