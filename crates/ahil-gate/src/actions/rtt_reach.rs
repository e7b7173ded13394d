//! How an RTT session reaches its target, per backend: the emulated board's memory through
//! `/proc/<qemu>/mem` (decision 0015), a probe-rs target's memory through a long-lived
//! `probe-rs-worker` (the same control-block checks, `ahil_drivers::probe_rs_memory`), or OpenOCD's
//! own RTT server on reserved loopback ports (a stream per channel). Others have none.

use std::path::PathBuf;
use std::time::Duration;

use ahil_config::{Debugger, DebuggerType, Interface, Rtt, RttDirection};
use ahil_drivers::Contact;
use ahil_drivers::openocd::OpenOcd;
use ahil_drivers::openocd::gdbserver::ServerError;
use ahil_drivers::probe_cli::CliSettings;
use ahil_drivers::probe_rs::{BUILT_IN, TargetRef};
use ahil_drivers::probe_rs_memory::ProbeRsMemory;
use ahil_drivers::qemu::BoardPaths;
use ahil_drivers::qemu::memory::QemuMemory;
use ahil_drivers::rtt::link::{Link, Locate, Options, Tap};
use ahil_drivers::rtt::stream::StreamSource;
use ahil_drivers::rtt::{ControlBlock, RttError};
use serde_json::json;

use super::debug::{openocd_exit, tail_lines};
use super::{Acted, Context};
use crate::ErrorType;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;

/// QMP steps, worker answers: each access is capped at this.
const STEP: Duration = Duration::from_secs(5);

/// A backend's way to the target's RTT, decided at plan time; its name is the backend's in results.
#[derive(strum::IntoStaticStr)]
pub(super) enum Reach {
    #[strum(serialize = "qemu")]
    Qemu(BoardPaths),
    #[strum(serialize = "probe-rs")]
    ProbeRs {
        worker: PathBuf,
        target: TargetRef,
        attach: Duration,
    },
    #[strum(serialize = "openocd")]
    OpenOcd { openocd: OpenOcd, limit: Duration },
}

fn refused(tool: ToolId, error_type: ErrorType, summary: String) -> Box<Outcome> {
    Box::new(Outcome::refused(tool, error_type, summary).not_contacted())
}

/// The reach for `debugger`, `None` for a backend without RTT, or the refusal of an entry that
/// lacks what its backend needs.
pub(super) fn reach(
    ctx: &Context<'_>,
    name: &str,
    debugger: &Debugger,
    executable: Option<PathBuf>,
) -> Result<Option<Reach>, Box<Outcome>> {
    let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    let missing = || {
        refused(
            ctx.tool,
            ErrorType::DebuggerNotFound,
            format!("No executable is pinned for debuggers.{name}, so RTT cannot start."),
        )
    };
    Ok(Some(match debugger.kind {
        DebuggerType::Qemu => {
            let Some(dir) = ctx.loaded.config.board_dir(name) else {
                return Err(refused(
                    ctx.tool,
                    ErrorType::InvalidArgument,
                    "This debugger has no board directory.".into(),
                ));
            };
            Reach::Qemu(BoardPaths::new(dir))
        }
        DebuggerType::ProbeRs if BUILT_IN => {
            let Some(chip) = debugger.target_type.clone() else {
                return Err(refused(
                    ctx.tool,
                    ErrorType::TargetTypeInvalid,
                    format!("debuggers.{name}.target_type names no chip for probe-rs."),
                ));
            };
            Reach::ProbeRs {
                worker: executable.ok_or_else(missing)?,
                target: TargetRef {
                    chip,
                    probe: debugger.probe_id.clone(),
                    protocol: match debugger.interface {
                        Interface::Swd => "swd",
                        Interface::Jtag => "jtag",
                    }
                    .to_owned(),
                },
                attach: timeout,
            }
        }
        DebuggerType::Openocd => Reach::OpenOcd {
            openocd: OpenOcd::new(
                CliSettings {
                    executable: executable.ok_or_else(missing)?,
                    probe_id: debugger.probe_id.clone(),
                    timeout,
                },
                &debugger.interface_cfg,
                &debugger.target_cfg,
            ),
            limit: timeout,
        },
        _ => return Ok(None),
    }))
}

impl Reach {
    /// The backend's name in results.
    pub(super) fn backend(&self) -> &'static str {
        self.into()
    }

    /// Open the link (the memory and its block, or OpenOCD and its streams), or the refusal,
    /// naming the session's log.
    pub(super) fn open(
        &self,
        locate: Locate,
        rtt: &Rtt,
        options: &Options,
        tap: Tap,
        log_path: &str,
    ) -> Result<Link, Box<Acted>> {
        let refused = |refusal: Refusal<'_>| refusal.acted(log_path);
        match self {
            Self::Qemu(paths) => {
                Link::start(QemuMemory::opener(paths.clone(), STEP), options, Some(tap))
                    .map_err(|error| refused(Refusal::Link(error)))
            }
            Self::ProbeRs {
                worker,
                target,
                attach,
            } => Link::start(
                ProbeRsMemory::opener(worker.clone(), target.clone(), *attach, STEP),
                options,
                Some(tap),
            )
            .map_err(|error| refused(Refusal::Link(error))),
            Self::OpenOcd { openocd, limit } => {
                let (start, size) = match locate {
                    Locate::At(address) => (address, ControlBlock::len(0, 0)),
                    Locate::Scan { start, size } => (start, size),
                };
                let mut channels: Vec<u32> = rtt
                    .channels
                    .iter()
                    .filter(|c| matches!(c.direction, RttDirection::Up | RttDirection::Down))
                    .map(|c| c.index)
                    .collect();
                channels.sort_unstable();
                channels.dedup();
                let server = openocd
                    .start_rtt_server(start, size, &channels, *limit)
                    .map_err(|error| refused(Refusal::Server(&error, openocd)))?;
                let address = server.address.unwrap_or(start);
                let source = StreamSource::connect(&server.ports, Box::new(server.process))
                    .map_err(|error| refused(Refusal::Link(error)))?;
                Link::with_source(Box::new(source), address, options, Some(tap))
                    .map_err(|error| refused(Refusal::Link(error)))
            }
        }
    }
}

/// Why a link did not open.
enum Refusal<'a> {
    Link(RttError),
    Server(&'a ServerError, &'a OpenOcd),
}

impl Refusal<'_> {
    /// The answer, with what it proves about contact.
    fn acted(&self, log_path: &str) -> Box<Acted> {
        const TOOL: ToolId = ToolId::RttSessionStart;
        let (outcome, contact) = match self {
            Self::Link(error) => (
                Outcome::refused(
                    TOOL,
                    ErrorType::layer(error.error_type()),
                    error.to_string(),
                ),
                // Finding the block only reads the target's memory.
                Contact::none("the target's memory was only read"),
            ),
            Self::Server(error, openocd) => server_refusal(error, openocd),
        };
        // The pipeline's settle turns the contact into the effect fields (not contacted and retry
        // safe only on a proof of none).
        let mut outcome = outcome;
        outcome.log_path = Some(log_path.to_owned());
        Box::new(Acted::new(outcome, contact))
    }
}

/// OpenOCD's RTT server that did not come up, in the words its gdb server's failures use.
fn server_refusal(error: &ServerError, openocd: &OpenOcd) -> (Outcome, Contact) {
    const TOOL: ToolId = ToolId::RttSessionStart;
    let (outcome, contact) = match error {
        ServerError::Spawn(error) => (
            Outcome::refused(
                TOOL,
                ErrorType::DebuggerNotFound,
                format!("OpenOCD could not be started for RTT ({error})."),
            ),
            Contact::none("OpenOCD did not start"),
        ),
        ServerError::NotReady(_, tails) => (
            Outcome::refused(
                TOOL,
                ErrorType::Timeout,
                "OpenOCD did not open its RTT port before the timeout, so it was stopped.",
            )
            .with("backend_error_type", "rtt_server_not_ready")
            .with("server_output_tail", tail_lines(&tails.text())),
            Contact::Possible,
        ),
        ServerError::Exposed { addresses, output } => (
            Outcome::refused(
                TOOL,
                ErrorType::ProbeServerOpenFailed,
                format!(
                    "OpenOCD listened beyond this machine ({}), so it was stopped before RTT was read.",
                    addresses.join(", ")
                ),
            )
            .with("backend_error_type", "rtt_server_not_loopback")
            .with("listen_addresses", addresses.clone())
            .with("server_output_tail", tail_lines(&output.text()))
            .with_next_step(
                "Stop and ask the operator to make OpenOCD listen on 127.0.0.1 only; an RTT port open to the network hands the target's console to anyone on it.",
            ),
            Contact::Possible,
        ),
        ServerError::Exited { code, output } => {
            let text = output.text();
            let (class, error_type, causes) = openocd_exit(openocd, &text);
            // OpenOCD's own words that it opened no adapter (or found no script) prove no contact,
            // as for its one-shot runs; anything later may have driven the target's lines.
            let contact = if matches!(
                class,
                "adapter_not_found"
                    | "interface_config_not_found"
                    | "target_config_not_found"
                    | "config_file_not_found"
            ) {
                Contact::none("OpenOCD says it opened no adapter")
            } else {
                Contact::Possible
            };
            (
                Outcome::refused(
                    TOOL,
                    ErrorType::layer(error_type),
                    "OpenOCD exited before its RTT port opened.",
                )
                .with("backend_error_type", class)
                .with("returncode", json!(code))
                .with("server_output_tail", tail_lines(&text))
                .with_causes(causes.iter().copied()),
                contact,
            )
        }
    };
    (outcome.with("backend", "openocd"), contact)
}
