//! `rtt_channels_list`, `rtt_session_start` and `rtt_session_stop`: find the target's SEGGER RTT
//! control block and poll it across calls (holding the debugger's device lock, as a debug session
//! does), then give the lock back. The emulated board's memory is reached without halting it
//! (decision 0015), a probe-rs target's through its worker, OpenOCD's RTT through its own server
//! (`rtt_reach.rs`); other backends answer `not_supported`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ahil_config::{Debugger, DebuggerType, Rtt, RttDirection, RttFormat, parse_address};
use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use ahil_drivers::rtt::link::{Link, Locate, Options, Tap};
use serde_json::{Value, json};

use super::com_session::WithLog;
use super::debugger_info::{bound_debugger, device};
use super::rtt_reach::{Reach, reach};
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::ErrorType;
use crate::artifacts::{ArtifactPolicy, ArtifactUse, Purpose, StagedArtifact};
use crate::audit::{Audit, StreamMask};
use crate::catalogue::ToolId;
use crate::debug::offline::Record;
use crate::envelope::Outcome;
use crate::ownership::runs::debugger_keys;
use crate::policy::Action;
use crate::rtt::defmt::Decoding;
use crate::rtt::{Session, Sessions, channel_doc};
use crate::serial::{Encoding, text::to_hex};
use crate::session_lifecycle::{
    self, Begun, Host, Registry, SessionClass, SessionKind, SessionLog, Stopping,
};
use crate::snapshot::pinned_debugger_executable;

const START_DEADLINE: Duration = Duration::from_secs(30);
const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// The bound debugger, its rtt section, and its device as policy sees it; `rtt_not_configured`
/// when the entry has no rtt section.
pub(super) fn rtt_entry<'a>(
    ctx: &Context<'a>,
) -> Result<(&'a str, &'a Debugger, &'a Rtt), Box<Outcome>> {
    let (name, debugger) = bound_debugger(ctx)?;
    let Some(rtt) = &debugger.rtt else {
        return Err(Box::new(
            Outcome::refused(
                ctx.tool,
                ErrorType::RttNotConfigured,
                format!("debuggers.{name} has no rtt section, so no RTT channel is configured."),
            )
            .with("debugger", name)
            .with_remediation([
                "The operator adds an rtt section (control_block or scan, and channels) to the debugger entry.",
            ])
            .not_contacted(),
        ));
    };
    Ok((name, debugger, rtt))
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(
        ctx.tool,
        &[
            ToolId::RttChannelsList,
            ToolId::RttSessionStart,
            ToolId::RttSessionStop,
        ],
    )?;
    let (name, debugger, rtt) = rtt_entry(ctx)?;
    let sessions = Arc::clone(&ctx.rtt);
    if ctx.tool == ToolId::RttChannelsList {
        let doc = list(name, rtt, &sessions);
        // Not `local_plan`: the listing states its proof of no contact, so the agent reads
        // `target_contacted: false`.
        return Ok(Plan::read_state(Work::Local(Box::new(move || {
            Acted::new(doc, Contact::none("listing reads the configuration only"))
        }))));
    }
    let executable = pinned_debugger_executable(ctx.loaded, name);
    let resources = debugger_keys(debugger, executable.as_deref());
    if ctx.tool == ToolId::RttSessionStop {
        let owned = name.to_owned();
        return Ok(Plan {
            action: Action::RttStop,
            device: Some(device(name, debugger)),
            also: Vec::new(),
            resources,
            work: Work::Driver(DriverJob {
                deadline: CLOSE_LIMIT + Duration::from_secs(5),
                if_abandoned: Contact::none("stopping a poller sends nothing to the target"),
                run: Box::new(move |_cancel| stop(&sessions, &owned)),
            }),
        });
    }
    let work = if let Some(reach) = reach(ctx, name, debugger, executable.clone())? {
        let locate = locate(ctx.tool, name, rtt)?;
        let named = named_elf(ctx)?;
        let start = Start {
            debugger: name.to_owned(),
            reach,
            locate,
            rtt: rtt.clone(),
            clear: ctx
                .args
                .get("clear_buffer")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            lock_keys: resources.clone(),
            host: Host::new(Audit::for_config(ctx.loaded), ctx.ownership, &sessions),
            record: Record::for_debugger(
                &ctx.loaded.config.state_root,
                debugger,
                executable.as_deref(),
            ),
            elf: None,
        };
        match named {
            Some(image) => super::staged_job(image, START_DEADLINE, move |staged, cancel| {
                Start {
                    elf: Some(staged_elf(&staged)),
                    ..start
                }
                .run(&cancel)
            }),
            None => Work::Driver(DriverJob {
                deadline: START_DEADLINE,
                if_abandoned: Contact::Possible,
                run: Box::new(move |cancel| start.run(&cancel)),
            }),
        }
    } else {
        let kind = debugger.kind;
        super::backend_not_built(
            ToolId::RttSessionStart,
            kind,
            format!(
                "RTT is served on the emulated board, probe-rs and OpenOCD, not on {}.",
                kind.as_str()
            ),
        )
    };
    Ok(Plan {
        action: Action::RttRead,
        device: Some(device(name, debugger)),
        also: Vec::new(),
        resources,
        work,
    })
}

/// The ELF `image_path` names for the defmt table, staged like `flash_firmware`'s image (inside
/// `artifacts.allowed_roots`, an ELF); none when the call names none.
fn named_elf(ctx: &Context<'_>) -> Result<Option<ArtifactUse>, Box<Outcome>> {
    if ctx.args.get("image_path").is_none() {
        return Ok(None);
    }
    ArtifactUse::from_args(
        ctx.tool,
        ctx.args,
        Purpose::DebugElf,
        ArtifactPolicy::from_config(&ctx.loaded.config),
    )
    .map(Some)
}

/// The staged ELF's bytes and where they came from.
fn staged_elf(staged: &StagedArtifact) -> Result<(Vec<u8>, Value), String> {
    let bytes = std::fs::read(staged.path())
        .map_err(|error| format!("the staged ELF could not be read: {}", error.kind()))?;
    let source =
        json!({"from": "image_path", "path": staged.display_path(), "sha256": staged.sha256()});
    Ok((bytes, source))
}

/// Whether a flash's RTT capture reads on this backend: the emulated board's memory only (a session
/// reaches more backends, `rtt_reach.rs`).
pub(super) fn serves_rtt(kind: DebuggerType) -> bool {
    kind == DebuggerType::Qemu
}

/// Where the rtt section says the block is; `None` for `from_elf`, found in the ELF the target
/// runs when the job has it.
pub(super) fn locate(tool: ToolId, name: &str, rtt: &Rtt) -> Result<Option<Locate>, Box<Outcome>> {
    let address = |text: &str| parse_address(text).and_then(|a| u32::try_from(a).ok());
    if let Some(at) = rtt.control_block.as_deref().and_then(address) {
        return Ok(Some(Locate::At(at)));
    }
    if let Some(scan) = &rtt.scan
        && let (Some(start), Ok(size)) = (address(&scan.start), u32::try_from(scan.size))
    {
        return Ok(Some(Locate::Scan { start, size }));
    }
    if rtt.from_elf {
        return Ok(None);
    }
    Err(Box::new(
        Outcome::refused(
            tool,
            ErrorType::RttNotConfigured,
            format!(
                "debuggers.{name}.rtt says nowhere to find the control block (control_block, scan \
                 or from_elf)."
            ),
        )
        .not_contacted(),
    ))
}

fn list(name: &str, rtt: &Rtt, sessions: &Sessions) -> Outcome {
    let control_block = if let Some(address) = &rtt.control_block {
        json!({"address": address})
    } else if let Some(scan) = &rtt.scan {
        json!({"scan": {"start": scan.start, "size": scan.size}})
    } else {
        json!({"from_elf": true})
    };
    let session = sessions.get(name);
    let mut outcome = Outcome::ok(ToolId::RttChannelsList, "RTT channels listed.")
        .with("debugger", name)
        .with(
            "channels",
            Value::Array(rtt.channels.iter().map(channel_doc).collect()),
        )
        .with("control_block", control_block)
        .with("max_buffer_bytes", rtt.max_buffer_bytes)
        .with("max_write_bytes", rtt.max_write_bytes)
        .with("poll_interval_ms", rtt.poll_interval_ms)
        .with(
            "session_active",
            session.as_ref().is_some_and(|s| s.link.is_alive()),
        );
    if let Some(session) = session {
        outcome.set("session", session.describe(true));
    }
    outcome
}

/// What the start job needs, owned so the blocking job can carry it.
struct Start {
    debugger: String,
    reach: Reach,
    /// `None` for `from_elf`.
    locate: Option<Locate>,
    rtt: Rtt,
    clear: bool,
    lock_keys: Vec<String>,
    host: Host<Sessions>,
    /// What the last confirmed flash on this debugger wrote.
    record: Record,
    /// The ELF the call named, staged.
    elf: Option<Result<(Vec<u8>, Value), String>>,
}

/// What the session takes from the target's ELF: the defmt table (or why none) and, for
/// `from_elf`, the control block.
struct FromElf {
    defmt: Option<Decoding>,
    defmt_missing: Option<String>,
    locate: Locate,
}

impl Start {
    /// The ELF the call named, else the one last flashed through this debugger.
    fn elf(&self) -> Result<(Vec<u8>, Value), Box<Acted>> {
        const TOOL: ToolId = ToolId::RttSessionStart;
        match &self.elf {
            Some(Ok((bytes, source))) => Ok((bytes.clone(), source.clone())),
            Some(Err(reason)) => Err(Box::new(Acted {
                outcome: Outcome::refused(TOOL, ErrorType::SymbolSourceNotAvailable, reason)
                    .not_contacted(),
                contact: Some(Contact::none("the ELF was read before the target")),
            })),
            None => self.record.load(TOOL).map(|(bytes, mut source)| {
                source["from"] = json!("last_flash");
                (bytes, source)
            }),
        }
    }

    /// The table when a channel is `format: defmt` (else none; a missing ELF only leaves those
    /// channels raw) and the block's place, from the ELF when the section says `from_elf` (there
    /// a missing ELF or symbol is the refusal).
    fn read_elf(&self) -> Result<FromElf, Box<Acted>> {
        let defmt_wanted = self
            .rtt
            .channels
            .iter()
            .any(|c| c.format == RttFormat::Defmt);
        let mut elf = (defmt_wanted || self.locate.is_none()).then(|| self.elf());
        let locate = if let Some(locate) = self.locate {
            locate
        } else {
            let (bytes, source) = elf.take().unwrap_or_else(|| self.elf())?;
            let found = crate::rtt::elf::control_block(ToolId::RttSessionStart, &bytes, &source)
                .map_err(|outcome| {
                    Box::new(Acted::new(
                        *outcome,
                        Contact::none("the ELF was read before the target"),
                    ))
                })?;
            elf = Some(Ok((bytes, source)));
            found
        };
        let (defmt, defmt_missing) = match elf.filter(|_| defmt_wanted) {
            None => (None, None),
            Some(Err(refused)) => (None, Some(refused.outcome.summary)),
            Some(Ok((bytes, source))) => match crate::rtt::elf::decoding(&bytes, source) {
                Ok(decoding) => (Some(decoding), None),
                Err(reason) => (None, Some(reason)),
            },
        };
        Ok(FromElf {
            defmt,
            defmt_missing,
            locate,
        })
    }

    fn run(self, cancel: &CancelFlag) -> Acted {
        const TOOL: ToolId = ToolId::RttSessionStart;
        if let Some(existing) = self.host.sessions.get(&self.debugger) {
            if existing.link.is_alive() {
                return Acted {
                    outcome: Outcome::ok(TOOL, "The RTT session was already active.")
                        .with("debugger", self.debugger.as_str())
                        .with("already_active", true)
                        .with("session", existing.describe(true))
                        .with_log(&existing.log.path),
                    contact: Some(Contact::none("the open session was reused")),
                };
            }
            let _ = stop(&self.host.sessions, &self.debugger);
        }
        let host = self.host.clone();
        let found = match self.read_elf() {
            Ok(found) => found,
            Err(refused) => return *refused,
        };
        session_lifecycle::start(Opening { start: self, found }, &host, cancel)
    }
}

/// The RTT link as a session kind.
struct Opening {
    start: Start,
    found: FromElf,
}

/// The up channels' chunks, logged passively with their channel's name.
pub(super) fn rx_tap(log: &SessionLog, rtt: &Rtt) -> Tap {
    let log = RxLog {
        audit: log.audit.clone(),
        name: log.name.clone(),
        names: rtt
            .channels
            .iter()
            .filter(|c| c.direction == RttDirection::Up)
            .map(|c| (c.index, c.name.clone()))
            .collect(),
        masks: Mutex::default(),
    };
    Box::new(move |index, bytes| {
        // Each channel's chunks are masked in the context of that channel's stream, and a
        // chunk's unfinished end that could still become a credential waits for the next, as a
        // COM session's log does.
        let shown = log
            .masks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(index)
            .or_default()
            .next(bytes);
        // The record counts the bytes it shows, as a COM session's does.
        if !shown.is_empty() {
            log.append(index, &shown);
        }
    })
}

/// The up channels' passive log: what the tap holds between chunks.
struct RxLog {
    audit: Audit,
    name: String,
    names: Vec<(u32, String)>,
    masks: Mutex<HashMap<u32, StreamMask>>,
}

impl RxLog {
    fn append(&self, index: u32, shown: &[u8]) {
        let channel = self.names.iter().find(|(i, _)| *i == index).map(|(_, n)| n);
        // Passive lines reach the workspace mirror only; a failed append loses log text, never
        // received bytes (they are in the ring already).
        let _ = self.audit.append_passive(
            &self.name,
            &json!({
                "direction": "rx",
                "channel": channel,
                "time": ahil_config::time::now_millis(),
                "bytes": shown.len(),
                "hex": to_hex(shown),
                "text": Encoding::Utf8.decode(shown),
            }),
        );
    }
}

impl Drop for RxLog {
    /// The link is done: each channel's word still held back is logged as it reads.
    fn drop(&mut self) {
        let masks = std::mem::take(self.masks.get_mut().unwrap_or_else(PoisonError::into_inner));
        for (index, mut mask) in masks {
            let rest = mask.finish();
            if !rest.is_empty() {
                self.append(index, &rest);
            }
        }
    }
}

impl SessionKind for Opening {
    type Device = Link;
    const CLASS: SessionClass = SessionClass::Rtt;

    fn holds(&self) -> (Cow<'_, str>, &[String]) {
        (Cow::from(&self.start.debugger), &self.start.lock_keys)
    }

    fn start_fields(&self) -> Value {
        json!({"debugger": self.start.debugger})
    }

    fn open(&mut self, log: &SessionLog) -> Result<Link, Box<Acted>> {
        let start = &self.start;
        let options = Options {
            locate: self.found.locate,
            up: indexes(&start.rtt, RttDirection::Up),
            down: indexes(&start.rtt, RttDirection::Down),
            ring_bytes: usize::try_from(start.rtt.max_buffer_bytes).unwrap_or(usize::MAX),
            interval: Duration::from_millis(start.rtt.poll_interval_ms),
        };
        let link = start.reach.open(
            self.found.locate,
            &start.rtt,
            &options,
            rx_tap(log, &start.rtt),
            &log.path,
        )?;
        if start.clear {
            for index in &options.up {
                if let Some(ring) = link.ring(*index) {
                    ring.clear();
                }
            }
        }
        Ok(link)
    }

    fn register(self, link: Link, begun: Begun) -> Option<Acted> {
        let start = self.start;
        let FromElf {
            defmt,
            defmt_missing,
            ..
        } = self.found;
        let session = Arc::new(Session {
            debugger: start.debugger.clone(),
            backend: start.reach.backend(),
            link,
            channels: start.rtt.channels.clone(),
            defmt,
            defmt_missing,
            log: begun.log.clone(),
            started_at: ahil_config::time::now_millis(),
            close_limit: CLOSE_LIMIT,
            shown: std::sync::Mutex::default(),
            locks: begun.locks,
        });
        let _ = session.log.append(&json!({
            "event": "control_block",
            "address": format!("{:#010x}", session.link.address()),
        }));
        if let Err(refused) = start.host.sessions.register(Arc::clone(&session)) {
            let _ = refused.link.close(refused.close_limit);
            return None;
        }
        Some(Acted {
            outcome: Outcome::ok(Self::CLASS.start_tool(), "RTT session started.")
                .with("debugger", start.debugger.as_str())
                .with("already_active", false)
                .with("session", session.describe(true))
                .with_log(&begun.log.path),
            // The poller publishes RdOff in the target's RAM: a write, though of the host's own
            // offset.
            contact: Some(Contact::Made),
        })
    }
}

/// Where the test firmware (`ahil-fw-v1.elf`) keeps its RTT control block (`_SEGGER_RTT`).
#[cfg(test)]
pub(super) const TEST_BLOCK: u32 = 0x2000_0070;

/// A start of a session on the emulated board in `board_dir` past its checks (RTT at the test
/// firmware's block), for the lifecycle's tests.
#[cfg(test)]
pub(super) fn test_kind(
    board_dir: &std::path::Path,
    lock_keys: Vec<String>,
    host: &Host<Sessions>,
) -> impl SessionKind + use<> {
    Opening {
        start: Start {
            debugger: "board".to_owned(),
            reach: Reach::Qemu(ahil_drivers::qemu::BoardPaths::new(board_dir)),
            locate: Some(Locate::At(TEST_BLOCK)),
            rtt: Rtt::default(),
            clear: false,
            lock_keys,
            host: host.clone(),
            record: Record::new(board_dir, "rtt-test"),
            elf: None,
        },
        found: FromElf {
            defmt: None,
            defmt_missing: None,
            locate: Locate::At(TEST_BLOCK),
        },
    }
}

fn indexes(rtt: &Rtt, direction: RttDirection) -> Vec<u32> {
    rtt.channels
        .iter()
        .filter(|c| c.direction == direction)
        .map(|c| c.index)
        .collect()
}

/// Stops the session on `debugger`: poller stopped, lock released, log closed.
pub fn stop(sessions: &Sessions, debugger: &str) -> Acted {
    const TOOL: ToolId = ToolId::RttSessionStop;
    let stopping = Stopping::new(TOOL, "debugger", debugger);
    let Some(session) = sessions.get(debugger) else {
        return stopping.not_active("RTT session was not active.");
    };
    if !session.link.close(session.close_limit) {
        return Acted {
            outcome: Outcome::refused(
                TOOL,
                ErrorType::CleanupFailed,
                "The RTT poller did not stop in time; the session is kept.",
            )
            .with("debugger", debugger)
            .with("session", session.describe(true))
            .with_remediation(["Call rtt_session_stop again."])
            .with_log(&session.log.path),
            contact: Some(Contact::none("stopping a poller sends nothing")),
        };
    }
    stopping.stopped(
        "RTT session stopped.",
        sessions,
        &session.log,
        &session.locks,
        session.describe(false),
        "stopping a poller sends nothing",
    )
}
