//! A backend program for the pipeline's table tests (every device, staging) that notes each
//! invocation and never reaches a target, and a call of one tool on a fresh gate.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::Bench;
use crate::testkit::Fixture;

/// A fake backend in a fixture's tools: it appends its arguments to `calls`, answers with OpenOCD's
/// banner and fails, so a call that reaches it is seen and goes no further.
pub(crate) struct NotingBackend {
    pub exe: PathBuf,
    calls: PathBuf,
}

impl NotingBackend {
    pub fn new(fixture: &Fixture, name: &str) -> Self {
        let calls = fixture.tools.join("calls");
        let exe = fixture.tool(
            name,
            &format!(
                "echo \"$*\" >> '{}'\necho 'Open On-Chip Debugger 0.12.0' >&2\nexit 1",
                calls.display()
            ),
        );
        Self { exe, calls }
    }

    /// Calls `tool` on a fresh gate over `loaded`; the notes start empty (loading may ask the
    /// backend's version).
    pub fn call(
        &self,
        fixture: &Fixture,
        loaded: ahil_config::LoadedConfig,
        tool: &str,
        args: Value,
    ) -> Value {
        let bench = Bench::provisioned(loaded, fixture.env.clone());
        let _ = std::fs::remove_file(&self.calls);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(bench.call(tool, args)).to_value()
    }

    /// The invocations noted since the last call, one a line.
    pub fn invoked(&self) -> String {
        std::fs::read_to_string(&self.calls).unwrap_or_default()
    }

    /// Asserts that the call `what` answered `doc` before anything started: no target contacted,
    /// no side effect, and this backend never ran.
    pub fn assert_not_started(&self, doc: &Value, what: &str) {
        assert_eq!(doc["target_contacted"], json!(false), "{what}: {doc}");
        assert_eq!(doc["side_effect_status"], json!("not_started"), "{what}");
        let invoked = self.invoked();
        assert!(invoked.is_empty(), "{what}: the backend ran: {invoked}");
    }
}
