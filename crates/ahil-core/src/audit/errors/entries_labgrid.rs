//! Catalogue entries of holds on a shared bench (ours alone): labgrid places, and holds that end
//! by themselves.

use super::{Entry, NO_BYPASS, NO_CONFIG_EDIT};

pub(super) const ENTRIES: &[Entry] = &[
    entry!(
        "hold_expired",
        "A run or session of this server stayed open past the operator's maximum hold (`holds.max_run_s`, `holds.max_session_s`), so the gate stopped it by itself, as bench_run_stop or the session's stop would, and freed the bench for others.",
        [
            "Read `holds_expired`: it names the stop the gate ran, when the hold began and whether the stop succeeded (its report is `report_path`).",
            "Start the run or session again if the work is not done, and stop it as soon as the work is done."
        ],
        [NO_CONFIG_EDIT]
    ),
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
