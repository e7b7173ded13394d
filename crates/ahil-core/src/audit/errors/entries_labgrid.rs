//! Catalogue entries of labgrid place holds (ours alone).

use super::{Entry, NO_BYPASS, NO_CONFIG_EDIT};

pub(super) const ENTRIES: &[Entry] = &[
    entry!(
        "labgrid_place_not_found",
        "The configuration gives the device a labgrid place the coordinator does not know, so the call cannot hold it; nothing was contacted.",
        [
            "Ask the operator to create the place (`labgrid-client -p <place> create`) or correct labgrid.places.",
            "`labgrid_place` names the place and `labgrid_coordinator` the coordinator asked."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "labgrid_unavailable",
        "The labgrid coordinator did not answer (or answered nonsense), so the call could not hold the device's place; nothing was acquired or contacted.",
        [
            "Check that labgrid-coordinator runs at `labgrid_coordinator` and answers, then call the tool again.",
            "Ask the operator to correct labgrid.coordinator if it points elsewhere."
        ],
        [NO_BYPASS]
    ),
];
