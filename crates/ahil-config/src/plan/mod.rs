//! Test plans (`.agentic-hil/testconfig.yaml`): the loading half of the test reactor.
//!
//! A plan names configuration entries and the steps to drive them; it holds no hardware
//! identity and no permission. Loading checks the document against the step catalogue,
//! refuses features newer than the plan's own `version`, and builds a typed [`TestPlan`].
//! Whether the names exist and the steps are permitted is the reactor's preflight, which
//! needs the configuration in force.

mod catalogue;
mod error;
mod load;
mod model;
mod schema;
mod shape;

pub use error::PlanError;
pub use load::{DEFAULT_PLAN_PATH, default_plan_path, load_plan, parse_plan};
pub use model::{
    CanComparator, DebugStartMode, LoadedPlan, Location, Matcher, Range, ResetMode, Route,
    RouteKey, Step, SymbolComparator, TestPlan, TextComparator, UartMatch, UartPayload,
};
pub use schema::plan_json_schema;

/// Plan format versions this loader reads, oldest first.
pub const PLAN_VERSIONS: [u8; 5] = [2, 3, 4, 5, 6];
