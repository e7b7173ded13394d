//! `flash_firmware`'s `capture` on an RTT channel (`rtt_channel` instead of `port_id`).
//!
//! Planned with the flash: the channel must be an up channel of the bound debugger's rtt section,
//! and the read is authorized as `rtt_read` on that debugger (see [`debugger_use`]), so a refusal
//! flashes nothing. Unlike a UART, RTT lives in the target's RAM, which the flash and its reset
//! rebuild: the link is opened after the reset, finding the control block the new firmware built
//! (retried while the firmware is still building it, within the capture's wait), and what the
//! firmware wrote since its boot is still in its up buffer, so the boot line is the first read.
//! The read and its answer are the COM capture's ([`super::flash_capture::Rules`]); the capture
//! keeps a log chained like an RTT session's, named in `capture.log_path`. While an RTT session is
//! open on the debugger the capture is refused: two readers would both publish `RdOff`.
//!
//! The flashed ELF is what the new firmware is, so it answers for the capture what the last flash
//! answers for a session: the control block's address under `rtt.from_elf`, and on a
//! `format: defmt` channel the table its frames are decoded with (`rtt_read`'s frames and lines,
//! `until` matched on the lines; a frame that does not decode is a marked line of its own).

use std::time::{Duration, Instant};

use ahil_config::{Rtt, RttChannel, RttDirection, RttFormat};
use ahil_drivers::process::CancelFlag;
use ahil_drivers::qemu::BoardPaths;
use ahil_drivers::qemu::memory::QemuMemory;
use ahil_drivers::rtt::link::{Link, Locate, Options};
use serde_json::{Value, json};

use super::Context;
use super::args::Args;
use super::debugger_info::bound_debugger;
use super::debugger_info::device;
use super::flash_capture::{Read, Rules, max_bytes_of, settle, untrusted, wait_of};
use super::rtt_io::channel_named;
use super::rtt_session::{locate, rtt_entry, rx_tap};
use crate::ErrorType;
use crate::artifacts::{Format, StagedArtifact};
use crate::audit::Audit;
use crate::catalogue::ToolId;
use crate::envelope::Outcome;
use crate::policy::{Action, DeviceUse};
use crate::rtt::defmt::Decoding;
use crate::serial::{Encoding, log_stamp};
use crate::session_lifecycle::{self, NotOpened, SessionClass, SessionLog};

/// QMP steps while finding the block are capped at this each.
const STEP: Duration = Duration::from_secs(5);
/// Time the job may take beyond the wait: the memory opened, the poller stopped.
const MARGIN: Duration = Duration::from_secs(5);
const CLOSE_LIMIT: Duration = Duration::from_secs(2);

/// A defmt channel's table, or why it reads raw: `None` on a channel that is not defmt.
type Table = Result<Decoding, Option<String>>;

/// An RTT read after the flash's reset.
pub(super) struct RttCapture {
    debugger: String,
    channel: RttChannel,
    until: Vec<String>,
    wait: Duration,
    max_bytes: usize,
    /// The emulated board's files; `None` on a backend without RTT (its flash is `not_supported`).
    paths: Option<BoardPaths>,
    /// `None` for `from_elf`: found in the flashed ELF.
    locate: Option<Locate>,
    rtt: Rtt,
    audit: Audit,
}

/// The capture's read of the debugger, for the pipeline to authorize with the flash: what
/// `rtt_read` needs there.
pub(super) fn debugger_use<'a>(ctx: &'a Context<'a>) -> Option<DeviceUse<'a>> {
    let (name, debugger) = bound_debugger(ctx).ok()?;
    Some(DeviceUse::on(device(name, debugger), Action::RttRead))
}

/// The capture the arguments ask for, refused before any contact: a debugger without an rtt
/// section, a channel that is not one of its up channels, an RTT session already reading it.
pub(super) fn plan(ctx: &Context<'_>, spec: &Value) -> Result<RttCapture, Box<Outcome>> {
    let tool = ctx.tool;
    let (name, _, rtt) = rtt_entry(ctx)?;
    let wanted = spec
        .get("rtt_channel")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let channel = channel_named(tool, name, &rtt.channels, RttDirection::Up, wanted).map_err(
        |mut refusal| {
            refusal.set("field", "capture.rtt_channel");
            refusal
        },
    )?;
    if ctx.rtt.get(name).is_some_and(|s| s.link.is_alive()) {
        return Err(Box::new(
            Outcome::refused(
                tool,
                ErrorType::ResourceBusy,
                format!("An RTT session reads debuggers.{name}'s RTT, the capture's channel; nothing was flashed."),
            )
            .with("held_by", SessionClass::Rtt.label())
            .with_next_step("Call rtt_session_stop first, or flash without capture and read the session (it follows the reset).")
            .not_contacted(),
        ));
    }
    Ok(RttCapture {
        debugger: name.to_owned(),
        channel,
        until: spec.arg_texts("until"),
        wait: wait_of(tool, spec)?,
        max_bytes: max_bytes_of(tool, spec, rtt.max_buffer_bytes, "this rtt section's")?,
        paths: ctx.loaded.config.board_dir(name).map(BoardPaths::new),
        locate: locate(tool, name, rtt)?,
        rtt: rtt.clone(),
        audit: Audit::for_config(ctx.loaded),
    })
}

impl RttCapture {
    /// How much longer the flash's job may take for this capture.
    pub(super) fn budget(&self) -> Duration {
        self.wait + MARGIN + CLOSE_LIMIT
    }

    /// After a good flash and its reset: open the RTT, read with `com_read`'s rules, close, and
    /// put the capture into `outcome`. A failed flash started no new firmware; nothing is read.
    pub(super) fn finish(
        &self,
        outcome: &mut Outcome,
        staged: &StagedArtifact,
        cancel: &CancelFlag,
    ) {
        const TOOL: ToolId = ToolId::FlashFirmware;
        if !outcome.ok {
            return;
        }
        // Only the emulated board reaches here in this build (probe.rs answers the others
        // not_supported); a backend that gains RTT must say how its memory opens.
        let Some(paths) = self.paths.as_ref() else {
            return self.not_read(
                outcome,
                "not_supported",
                "this build reads RTT after a flash on the emulated board only.",
            );
        };
        let (locate, decoding) = match self.elf_answers(staged) {
            Ok(found) => found,
            Err(refused) => {
                let error_type = refused.error_type.clone().unwrap_or_default();
                return self.not_read(outcome, &error_type, &refused.summary);
            }
        };
        let clock = Instant::now();
        let deadline = clock + self.wait;
        let log_name = format!("capture-{}-rtt-{}.jsonl", log_stamp(), self.debugger);
        let started = json!({"event": "start", "tool": TOOL.name(), "debugger": self.debugger, "rtt_channel": self.channel.name});
        let opened = session_lifecycle::open_logged(&self.audit, log_name, &started, |log| {
            self.start_link(paths, locate, log, deadline)
        });
        let (log, link) = match opened {
            Ok(opened) => opened,
            Err(NotOpened::Log(_)) => {
                // The error may name paths under the state root; the agent hears only that it failed.
                return self.not_read(
                    outcome,
                    "audit_unavailable",
                    "The capture's log could not be written, so the RTT was not opened.",
                );
            }
            Err(NotOpened::Device(refusal)) => {
                let error_type = refusal.error_type.clone().unwrap_or_default();
                return self.not_read(outcome, &error_type, &refusal.summary);
            }
        };
        let rules = Rules {
            until: &self.until,
            encoding: Encoding::Utf8,
            max_bytes: self.max_bytes,
        };
        let ring = link
            .ring(self.channel.index)
            .expect("the link polls the channel it was started with");
        let (read, frames) = match &decoding {
            Ok(decoding) => self.read_frames(decoding, ring, deadline, cancel),
            Err(_) => (
                rules.read(
                    deadline.saturating_duration_since(Instant::now()),
                    ring,
                    cancel,
                ),
                None,
            ),
        };
        let closed = link.close(CLOSE_LIMIT);
        let logged = log.append(&json!({"event": "stop", "reason": "capture_done", "bytes_read": read.bytes.len(), "matched": read.matched}));
        let mut shown = rules.shown(
            ("rtt_channel", &self.channel.name),
            &read,
            self.wait,
            clock,
            &log.path,
        );
        shown["debugger"] = json!(self.debugger);
        shown["control_block_address"] = json!(format!("{:#010x}", link.address()));
        match (&decoding, frames) {
            (Ok(decoding), Some(frames)) => {
                shown["frames"] = Value::Array(frames);
                shown["defmt"] = decoding.describe();
            }
            (Err(Some(reason)), _) => shown["defmt"] = json!({"table": false, "reason": reason}),
            _ => {}
        }
        if logged.is_err() {
            shown["log_error"] = json!({"error_type": "audit_unavailable", "summary": "The capture's stop event could not be logged."});
        }
        if let Some(error) = link.last_error() {
            shown["last_error"] = json!(error);
        }
        outcome.set("capture", shown);
        let mut meta = untrusted(("rtt_channel", &self.channel.name));
        if decoding.is_ok()
            && let Some(fields) = meta["agentic_hil/untrusted_content"]["fields"].as_array_mut()
        {
            fields.push(json!("capture.frames"));
        }
        outcome.meta = Some(meta);
        if !closed {
            outcome.set("cleanup_error", "The RTT poller did not stop in time.");
        }
        settle(outcome, &read, &self.until, self.wait);
    }

    /// Opens the link after the reset, within `deadline`.
    fn start_link(
        &self,
        paths: &BoardPaths,
        locate: Locate,
        log: &SessionLog,
        deadline: Instant,
    ) -> Result<Link, Box<Outcome>> {
        let interval = Duration::from_millis(self.rtt.poll_interval_ms.max(1));
        let options = Options {
            locate,
            up: vec![self.channel.index],
            down: Vec::new(),
            ring_bytes: usize::try_from(self.rtt.max_buffer_bytes).unwrap_or(usize::MAX),
            interval,
        };
        // The new firmware may still be building its block (its id last): found again until the
        // capture's deadline.
        Link::start_by(
            || QemuMemory::opener(paths.clone(), STEP),
            &options,
            || Some(rx_tap(log, &self.rtt)),
            deadline,
        )
        .map_err(|error| {
            Box::new(Outcome::refused(
                ToolId::FlashFirmware,
                ErrorType::layer(error.error_type()),
                error.to_string(),
            ))
        })
    }

    /// The block's place and, on a defmt channel, the table (`Err(None)` on another channel,
    /// `Err(Some(why))` where the ELF has none), from the ELF just flashed; the refusal when
    /// `from_elf` finds no block.
    fn elf_answers(&self, staged: &StagedArtifact) -> Result<(Locate, Table), Box<Outcome>> {
        const TOOL: ToolId = ToolId::FlashFirmware;
        let defmt = self.channel.format == RttFormat::Defmt;
        if !defmt && let Some(locate) = self.locate {
            return Ok((locate, Err(None)));
        }
        let elf = if staged.format() == Some(Format::Elf) {
            std::fs::read(staged.path())
                .map_err(|error| format!("the flashed ELF could not be read: {}", error.kind()))
        } else {
            Err("the flashed image is not an ELF, so it carries no symbols.".to_owned())
        };
        let source =
            json!({"from": "flashed", "path": staged.display_path(), "sha256": staged.sha256()});
        let locate = match (self.locate, &elf) {
            (Some(locate), _) => locate,
            (None, Ok(bytes)) => crate::rtt::elf::control_block(TOOL, bytes, &source)?,
            (None, Err(reason)) => {
                return Err(Box::new(Outcome::refused(
                    TOOL,
                    ErrorType::RttControlBlockNotFound,
                    format!("rtt.from_elf: {reason}"),
                )));
            }
        };
        let decoding = match elf {
            _ if !defmt => Err(None),
            Ok(bytes) => crate::rtt::elf::decoding(&bytes, source).map_err(Some),
            Err(reason) => Err(Some(reason)),
        };
        Ok((locate, decoding))
    }

    /// A defmt channel's read: the frames decoded into lines, with `com_read`'s rules on the lines
    /// (`until` ends the read with the line that holds it; without one, every frame the window
    /// holds, or `max_bytes` of lines).
    fn read_frames(
        &self,
        decoding: &Decoding,
        ring: &ahil_drivers::serial::Ring,
        deadline: Instant,
        cancel: &CancelFlag,
    ) -> (Read, Option<Vec<Value>>) {
        let mut read = Read::default();
        let mut frames = Vec::new();
        loop {
            let left = self.max_bytes.saturating_sub(read.bytes.len());
            let step = decoding.read(
                self.channel.index,
                ring,
                left,
                deadline,
                &self.until,
                || cancel.is_cancelled(),
            );
            read.bytes.extend_from_slice(step.text.as_bytes());
            read.overflow = step.overflow;
            frames.extend(step.frames);
            read.cancelled = step.gave_up;
            if read.cancelled {
                return (read, Some(frames));
            }
            if !self.until.is_empty() {
                read.matched = step.pattern;
                return (read, Some(frames));
            }
            // A cancel meanwhile is seen by the next read at once.
            if read.bytes.len() >= self.max_bytes
                || Instant::now() >= deadline
                || ring.reader_done()
            {
                return (read, Some(frames));
            }
        }
    }

    /// A good flash whose RTT could not be read: still ok (the image is on the board), with the
    /// capture's own error.
    fn not_read(&self, outcome: &mut Outcome, error_type: &str, summary: &str) {
        outcome.set(
            "capture",
            json!({
                "rtt_channel": self.channel.name,
                "debugger": self.debugger,
                "error": {"error_type": error_type, "summary": summary},
            }),
        );
        outcome.summary = format!(
            "{} The RTT capture read nothing: {summary}",
            outcome.summary
        );
        outcome.next_step = Some(
            "The image is on the board; open rtt_session_start to read its RTT rather than flashing again.".into(),
        );
    }
}
