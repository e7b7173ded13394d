//! The optional `holds:` section (ours alone; the reference does not load a file using it): how
//! long a run or a session may hold the bench before the gate closes it by itself, so a forgotten
//! `bench_run_stop` frees the board for others. The operator's alone: no field-wise write reaches
//! it and a description reload keeps the loaded one.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The longest any maximum may be: a week. Past it a forgotten hold is not bounded in any useful way.
pub const MAX_HOLD_S: u64 = 7 * 24 * 3600;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Holds {
    /// Seconds a `bench_run_start` run may stay open; unlimited when absent.
    pub max_run_s: Option<u64>,
    /// Seconds a COM, CAN, debug or RTT session may stay open; unlimited when absent.
    pub max_session_s: Option<u64>,
}

impl Holds {
    /// The run's maximum, when the operator set one.
    pub fn max_run(&self) -> Option<Duration> {
        self.max_run_s.map(Duration::from_secs)
    }

    /// A session's maximum, when the operator set one.
    pub fn max_session(&self) -> Option<Duration> {
        self.max_session_s.map(Duration::from_secs)
    }

    /// Whether any hold ends by itself.
    pub fn any(&self) -> bool {
        self.max_run_s.is_some() || self.max_session_s.is_some()
    }
}
