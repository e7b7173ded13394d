//! The probe-rs backend (`type: probe-rs`, our extension): the driver to build for an entry, the
//! `debugger_info` answer, and the hidden worker command the binary runs for it.
//!
//! The probe tools themselves go through [`super::probe_cli`]: the worker is a child process like any
//! probe CLI, and its failures arrive in the same classified vocabulary.

use crate::ErrorType;
use crate::catalogue::ToolId;
use ahil_config::{Debugger, Interface};
use ahil_drivers::Contact;
use ahil_drivers::probe_cli::{CliProbe, CliSettings};
use ahil_drivers::probe_rs::{BUILT_IN, LIBRARY_VERSION, ProbeRs};

use super::Acted;
use crate::envelope::Outcome;

/// The binary's hidden `probe-rs-worker` command (the binary reaches drivers only through the gate).
pub use ahil_drivers::probe_rs_worker::main as worker;

/// The backend for `debugger`, run through `settings.executable` (this binary).
pub fn backend(debugger: &Debugger, settings: CliSettings) -> Box<dyn CliProbe> {
    let protocol = match debugger.interface {
        Interface::Swd => "swd",
        Interface::Jtag => "jtag",
    };
    Box::new(ProbeRs::new(
        settings,
        debugger.target_type.as_deref(),
        protocol,
    ))
}

/// `debugger_info`: the library is part of this binary, so there is nothing to run.
pub fn info() -> Acted {
    const TOOL: ToolId = ToolId::DebuggerInfo;
    let outcome = if BUILT_IN {
        Outcome::ok(
            TOOL,
            "probe-rs is built into this agentic-hil; it runs in a worker child per call.",
        )
        .with("backend", "probe-rs")
        .with("version", LIBRARY_VERSION)
        .with("executable", "agentic-hil probe-rs-worker")
    } else {
        Outcome::refused(
            TOOL,
            ErrorType::NotSupported,
            "This agentic-hil was built without the probe-rs backend.",
        )
        .with("backend", "probe-rs")
        .with_remediation(["Rebuild agentic-hil with its default features (`probe-rs`)."])
        .not_contacted()
    };
    Acted::new(outcome, Contact::none("nothing was started"))
}
