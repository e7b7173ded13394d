//! The supply types this build drives, with the identities a unit of each has been verified
//! under. A unit reporting any other model or firmware is refused before a command that changes
//! it is sent: what an unverified firmware does with a command is not known.

use ahil_drivers::psu::{Capabilities, korad};

/// One supply type.
#[derive(Debug)]
pub struct Model {
    /// The `type` an entry names.
    pub kind: &'static str,
    pub capabilities: Capabilities,
    /// (model, firmware) pairs as `*IDN?` reports them.
    pub verified: &'static [(&'static str, &'static str)],
}

const MODELS: &[Model] = &[Model {
    kind: "rs3005p",
    capabilities: korad::CAPABILITIES,
    verified: &[("RS-3005P", "V6.9")],
}];

/// The model of a configured `type`; the loader refuses any other, so `None` means a stale view.
pub fn model_of(kind: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.kind == kind)
}
