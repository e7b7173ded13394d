//! The probe-rs backend, seen from the gate: each action runs our own binary's hidden
//! `probe-rs-worker` command in its own process group, so a USB stack that hangs or a library panic
//! ends one child, never the server.
//!
//! The protocol is newline JSON. The request travels as the worker's one `--request` argument (our
//! process runner gives children no stdin); the worker prints zero or more progress lines
//! `{"stage":"erase"}` and then exactly one answer line with `"ok"`. A run that ends without an answer
//! line crashed; one the deadline ended timed out. Both keep the contact the action could have made.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::ffi::OsString;

use crate::Backend;
use crate::error::{Classified, Contact, DriverError, Transcript};
use crate::probe::{Budget, DebugProbe, FlashRequest, ImageFormat, ProbeInfo, ResetMode};
use crate::probe_cli::{self, CliAnswers, CliSettings, CliSuccess, Listing};

/// Whether this build carries the probe-rs library (the `probe-rs` feature).
pub const BUILT_IN: bool = cfg!(feature = "probe-rs");

/// The probe-rs release this build links, as `Cargo.toml` pins it.
pub const LIBRARY_VERSION: &str = "0.32";

/// The hidden subcommand of our binary that runs one probe-rs action.
pub const WORKER_COMMAND: &str = "probe-rs-worker";

/// One action for the worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// List the probes on USB; opens none.
    List,
    /// Attach without reset and read the core's status.
    Probe {
        #[serde(flatten)]
        target: TargetRef,
    },
    /// Program an image, verify it when asked, then reset as asked.
    Flash {
        #[serde(flatten)]
        target: TargetRef,
        image: String,
        format: Format,
        /// Where a raw binary goes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<u64>,
        verify: bool,
        /// `run` or `halt`; absent leaves the core as programming left it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reset: Option<String>,
    },
    /// Reset the core: `run` or `halt`.
    Reset {
        #[serde(flatten)]
        target: TargetRef,
        mode: String,
    },
    /// Read `length` bytes of target memory at `address` without halting the core.
    Read {
        #[serde(flatten)]
        target: TargetRef,
        address: u64,
        length: u32,
    },
    /// Attach without reset, answer with the chip's memory map, then serve one memory read or
    /// write per stdin line until stdin closes (RTT, [`crate::probe_rs_memory`]).
    Memory {
        #[serde(flatten)]
        target: TargetRef,
    },
}

/// Which chip, through which probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRef {
    /// probe-rs's chip name (`STM32F405RGTx`), the entry's `target_type`.
    pub chip: String,
    /// The probe's serial number, the entry's `probe_id`; absent takes the only probe present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// `swd` or `jtag`.
    pub protocol: String,
}

/// An image format the worker loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Elf,
    Hex,
    Bin,
}

/// How far a failed action got, as the worker knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reached {
    /// Nothing was opened, or only the probe (the target's lines were never driven).
    None,
    /// The probe drove the debug port; whether the target answered is not known.
    Possible,
    /// The target answered.
    Made,
}

/// The worker's last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub ok: bool,
    /// The failure class on failure (`adapter_not_found`, `target_type_invalid`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached: Option<Reached>,
    /// probe-rs's own words, for the log.
    #[serde(default)]
    pub message: String,
    /// What the action found (probes, core state, bytes, memory).
    #[serde(default)]
    pub data: Map<String, Value>,
}

impl Answer {
    /// The list the worker answered under `key`, if it sent one.
    pub fn items(&self, key: &str) -> Option<&[Value]> {
        self.data
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
    }

    /// A success with `data`.
    pub fn success(message: impl Into<String>, data: Map<String, Value>) -> Self {
        Self {
            ok: true,
            class: None,
            reached: None,
            message: message.into(),
            data,
        }
    }

    /// A failure of `class`.
    pub fn failure(class: &str, reached: Reached, message: impl Into<String>) -> Self {
        Self {
            ok: false,
            class: Some(class.to_owned()),
            reached: Some(reached),
            message: message.into(),
            data: Map::new(),
        }
    }
}

/// What one worker run printed, read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Stages in the order reported.
    pub stages: Vec<String>,
    /// The answer, when the worker lived to print one.
    pub answer: Option<Answer>,
}

/// Read the worker's stdout: progress lines, then the answer. Lines that are not protocol (a library
/// printing to stdout) are ignored rather than trusted.
pub fn parse_reply(stdout: &str) -> Reply {
    let mut stages = Vec::new();
    let mut answer = None;
    for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(stage) = value.get("stage").and_then(Value::as_str) {
            stages.push(stage.to_owned());
        } else if value.get("ok").is_some()
            && let Ok(parsed) = serde_json::from_value::<Answer>(value)
        {
            answer = Some(parsed);
        }
    }
    Reply { stages, answer }
}

/// The backend the gate drives: the worker is `settings.executable` (our own binary).
#[derive(Debug, Clone)]
pub struct ProbeRs {
    settings: CliSettings,
    chip: Option<String>,
    protocol: &'static str,
}

impl ProbeRs {
    /// A backend for `chip` (the entry's `target_type`) over `protocol` (`swd`, `jtag`).
    pub fn new(settings: CliSettings, chip: Option<&str>, protocol: &'static str) -> Self {
        Self {
            settings,
            chip: chip.map(str::to_owned),
            protocol,
        }
    }

    fn target(&self) -> Result<TargetRef, DriverError> {
        let Some(chip) = self.chip.clone() else {
            return Err(DriverError::Classified(probe_cli::with_detail(
                failure_of(
                    "target_type_invalid",
                    Contact::none("the worker was not started"),
                    Vec::new(),
                ),
                "reason",
                json!("debuggers.<name>.target_type names no chip"),
            )));
        };
        Ok(TargetRef {
            chip,
            probe: self.settings.probe_id.clone(),
            protocol: self.protocol.to_owned(),
        })
    }

    /// Run one request to its answer, or the failure that stands for its absence.
    fn exchange(
        &self,
        request: &Request,
        budget: &Budget,
    ) -> Result<(Answer, Transcript), DriverError> {
        let line = serde_json::to_string(request)
            .map_err(|e| DriverError::Io(std::io::Error::other(e)))?;
        let args: Vec<OsString> = vec![WORKER_COMMAND.into(), "--request".into(), line.into()];
        budget.stage("connect");
        // The worker's stage lines are passed on as they arrive, so a long flash is heard while it runs.
        let stage_lines = budget.stage_reporter().map(|report| {
            crate::process::LineHook::new(move |line| {
                if let Some(stage) = parse_reply(line).stages.first() {
                    // The worker's words: the log writer scrubs them like every other sink.
                    tracing::debug!(stage = %stage, "probe-rs worker stage");
                    report(stage);
                }
            })
        });
        let ran = probe_cli::run_hearing(
            &self.settings.executable,
            args,
            self.settings.timeout,
            budget,
            "probe_rs_worker_not_found",
            stage_lines,
        )?;
        let reply = parse_reply(&ran.transcript.stdout);
        let listing = matches!(request, Request::List);
        let transcript = ran.transcript.clone();
        if ran.timed_out() {
            let contact = if listing {
                Contact::none("listing opens no target")
            } else {
                Contact::Possible
            };
            return Err(DriverError::Classified(failure_of(
                "timeout",
                contact,
                vec![transcript],
            )));
        }
        let Some(answer) = reply.answer else {
            let contact = if listing {
                Contact::none("listing opens no target")
            } else {
                Contact::Possible
            };
            let mut failed = failure_of("worker_crashed", contact, vec![transcript]);
            failed.summary =
                "The probe-rs worker ended without an answer (it crashed or was killed).".into();
            return Err(DriverError::Classified(failed));
        };
        if answer.ok {
            return Ok((answer, transcript));
        }
        let class = answer.class.as_deref().unwrap_or("unknown");
        let contact = match (listing, answer.reached.unwrap_or(Reached::Possible)) {
            (true, _) | (false, Reached::None) => {
                Contact::none("the worker reports that it drove no debug port")
            }
            (false, Reached::Possible) => Contact::Possible,
            (false, Reached::Made) => Contact::Made,
        };
        let mut failed = failure_of(static_class(class), contact, vec![transcript]);
        failed
            .details
            .insert("probe_rs_message".into(), json!(answer.message));
        Err(DriverError::Classified(failed))
    }

    fn success(answer: &Answer, transcript: Transcript) -> CliSuccess {
        CliSuccess {
            transcripts: vec![transcript],
            warnings: Vec::new(),
            matched_success_text: vec![answer.message.clone()],
        }
    }

    /// Read target memory without halting (symbol values after a flash).
    pub fn read_memory(
        &self,
        address: u64,
        length: u32,
        budget: &Budget,
    ) -> Result<Vec<u8>, DriverError> {
        let request = Request::Read {
            target: self.target()?,
            address,
            length,
        };
        let (answer, transcript) = self.exchange(&request, budget)?;
        let bytes = answer.items("bytes").map(|items| {
            items
                .iter()
                .filter_map(Value::as_u64)
                .filter_map(|b| u8::try_from(b).ok())
                .collect::<Vec<u8>>()
        });
        match bytes {
            Some(bytes) if bytes.len() == length as usize => Ok(bytes),
            _ => Err(DriverError::Classified(failure_of(
                "memory_read_unconfirmed",
                Contact::Made,
                vec![transcript],
            ))),
        }
    }
}

/// The worker's classes as the static names the classifier publishes.
fn static_class(class: &str) -> &'static str {
    match class {
        "adapter_not_found" => "adapter_not_found",
        "target_type_invalid" => "target_type_invalid",
        "target_not_detected" => "target_not_detected",
        "flash_failed" => "flash_failed",
        "flash_erase_failed" => "flash_erase_failed",
        "verify_failed" => "verify_failed",
        "reset_failed" => "reset_failed",
        "memory_read_unconfirmed" => "memory_read_unconfirmed",
        "probe_discovery_failed" => "probe_discovery_failed",
        "invalid_request" => "invalid_request",
        "not_built" => "not_built",
        _ => "unknown",
    }
}

/// The public meaning of a class, worded for probe-rs where the shared wording names another tool.
fn failure_of(
    class: &'static str,
    contact: Contact,
    transcripts: Vec<Transcript>,
) -> Box<Classified> {
    let mut failed = probe_cli::failure(class, contact, transcripts);
    match class {
        "target_type_invalid" => {
            failed.summary = "probe-rs does not know the configured chip (target_type).".into();
            failed.likely_causes = vec![
                "the chip name is misspelt (probe-rs names them like STM32F405RGTx)".into(),
                "the chip is not in this build's built-in target list".into(),
            ];
        }
        "worker_crashed" | "invalid_request" | "unknown" => {
            failed.likely_causes = vec!["see the worker output in driver_log".into()];
        }
        "not_built" => {
            failed.error_type = "not_supported";
            failed.summary =
                "This build of agentic-hil was made without the probe-rs backend.".into();
            failed.likely_causes = vec!["the binary was built with --no-default-features".into()];
        }
        _ => {}
    }
    failed
}

impl DebugProbe for ProbeRs {
    type Answers = CliAnswers;

    fn kind(&self) -> Backend {
        Backend::ProbeRs
    }

    fn list_probes(&self, budget: &Budget) -> Result<Listing, DriverError> {
        let (answer, transcript) = self.exchange(&Request::List, budget)?;
        let probes = answer
            .items("probes")
            .unwrap_or_default()
            .iter()
            .map(|p| ProbeInfo {
                id: probe_cli::text(p, "serial"),
                description: probe_cli::text(p, "description"),
            })
            .collect();
        let complete = answer
            .data
            .get("complete")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Listing {
            probes,
            complete,
            note: (!complete).then(|| {
                "This host exposes no USB device tree (/sys/bus/usb), so probes may be missing."
                    .to_owned()
            }),
            transcripts: vec![transcript],
        })
    }

    fn probe(&self, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let request = Request::Probe {
            target: self.target()?,
        };
        let (answer, transcript) = self.exchange(&request, budget)?;
        Ok(Self::success(&answer, transcript))
    }

    fn flash(&self, request: &FlashRequest, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let (format, base) = match request.format {
            ImageFormat::Elf => (Format::Elf, None),
            ImageFormat::Hex => (Format::Hex, None),
            ImageFormat::Bin { base } => (Format::Bin, Some(base)),
        };
        let request = Request::Flash {
            target: self.target()?,
            image: request.image.to_string_lossy().into_owned(),
            format,
            base,
            verify: request.verify,
            reset: request.reset.map(|mode| match mode {
                ResetMode::Run => "run".to_owned(),
                ResetMode::Halt | ResetMode::Init => "halt".to_owned(),
            }),
        };
        let (answer, transcript) = self.exchange(&request, budget)?;
        Ok(Self::success(&answer, transcript))
    }

    fn reset(&self, mode: ResetMode, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let request = Request::Reset {
            target: self.target()?,
            mode: match mode {
                ResetMode::Run => "run".to_owned(),
                ResetMode::Halt | ResetMode::Init => "halt".to_owned(),
            },
        };
        let (answer, transcript) = self.exchange(&request, budget)?;
        Ok(Self::success(&answer, transcript))
    }
}

#[cfg(test)]
#[path = "probe_rs_tests.rs"]
mod tests;
