//! STM32CubeProgrammer's CLI (`type: stlink`): `-q -c port=<SWD|JTAG> mode=<…> [sn=<id>]` then one
//! action. The CLI says what it did in fixed sentences; every sentence an action must print is required,
//! so a run that exits 0 without them is unconfirmed, not a success.

use std::ffi::OsString;

use serde_json::json;

use crate::Backend;
use crate::error::{Contact, DriverError, Transcript};
use crate::probe::{Budget, DebugProbe, FlashRequest, ImageFormat, ResetMode};
use crate::probe_cli::{
    self, CliAnswers, CliSettings, CliSuccess, Listing, Ran, Reading, any, failure,
};

/// How flash connects (`connect_mode`): hot-plug, or under reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectMode {
    /// `mode=HOTPLUG`.
    Hotplug,
    /// `mode=UR`.
    UnderReset,
}

/// The CubeProgrammer backend of one debugger entry.
#[derive(Debug, Clone)]
pub struct CubeProg {
    settings: CliSettings,
    port: String,
    connect: ConnectMode,
}

/// How ST's tools (the CLI and its GDB server alike) say no ST-LINK is attached, lowercased.
pub(crate) const NO_STLINK: [&str; 4] = [
    "no st-link",
    "no stlink",
    "st-link not found",
    "stlink not found",
];

/// How ST's tools say the probe enumerates but its USB link refuses them, lowercased: the CLI's
/// `ST-LINK error (DEV_USB_COMM_ERR)`, ST-LINK_gdbserver's `Target USB comms error`.
pub(crate) const USB_LINK_REFUSED: [&str; 2] = ["dev_usb_comm_err", "usb comms error"];

/// The CLI's output, sorted into the backend classes (first match wins).
pub fn classify(output: &str, flashing: bool) -> &'static str {
    let lower = output.to_lowercase();
    if any(&lower, &NO_STLINK) || lower.contains("no debug probe") {
        return "probe_not_found";
    }
    if any(&lower, &USB_LINK_REFUSED) {
        return "adapter_usb_error";
    }
    if any(
        &lower,
        &[
            "no stm32 target found",
            "cannot connect to target",
            "can not connect to target",
            "failed to connect",
            "no device found",
            "device not found",
            "unable to connect",
        ],
    ) {
        return "target_not_detected";
    }
    if lower.contains("failed to erase memory") {
        return "flash_erase_failed";
    }
    // The CLI says "verification" where other tools say "verify".
    if any(&lower, &["verify", "verification"]) && any(&lower, &["failed", "mismatch", "error"]) {
        return "verify_failed";
    }
    if lower.contains("reset") && any(&lower, &["failed", "error"]) {
        return "reset_failed";
    }
    if flashing
        && any(
            &lower,
            &["download failed", "write failed", "failed to download"],
        )
    {
        return "flash_failed";
    }
    if any(
        &lower,
        &["can't find", "couldn't find", "couldn't open", "not found"],
    ) {
        return "config_file_not_found";
    }
    if flashing && any(&lower, &["failed", "error"]) {
        return "flash_failed";
    }
    "unknown_debugger_error"
}

/// Where an erase refusal left the flash, read from the last telling line.
pub fn erase_abort_point(output: &str) -> serde_json::Value {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    // Any sign of writing outranks the refusal line that always ends such output.
    for line in lines.iter().rev() {
        let lower = line.to_lowercase();
        if any(
            &lower,
            &[
                "download in progress",
                "file download complete",
                "download verified successfully",
                "mass erase successfully achieved",
                "[=",
            ],
        ) {
            return json!({"reading": "flash_change_underway", "evidence_line": line, "evidence_rule": "a write or erase had begun before the refusal"});
        }
    }
    for line in lines.iter().rev() {
        if line.to_lowercase().contains("failed to erase memory") {
            return json!({"reading": "erase_refused_effect_unconfirmed", "evidence_line": line, "evidence_rule": "the erase was refused and nothing after it reports a write"});
        }
    }
    json!({"reading": "abort_point_unreadable", "evidence_line": lines.last().copied().unwrap_or_default(), "evidence_rule": "no line tells how far the programmer got"})
}

/// The ST-LINK serials in `-l st-link-only` output, deduplicated in order.
pub fn parse_serials(output: &str) -> Vec<String> {
    let mut serials: Vec<String> = Vec::new();
    for line in output.lines() {
        let line = line.trim();
        let lower = line.to_lowercase();
        let rest = lower
            .strip_prefix("st-link")
            .or_else(|| lower.strip_prefix("stlink"))
            .map(str::trim_start);
        let Some(rest) = rest.and_then(|r| r.strip_prefix("sn")) else {
            continue;
        };
        let Some(value) = rest.trim_start().strip_prefix(':') else {
            continue;
        };
        let mut words = value.split_whitespace();
        if let (Some(_), None) = (words.next(), words.next()) {
            // Keep the serial's own case: take it from the original line.
            let start = line.len() - value.trim_start().len();
            let serial = line[start..].trim().to_owned();
            if !serials.contains(&serial) {
                serials.push(serial);
            }
        }
    }
    serials
}

impl CubeProg {
    /// A backend over the pinned executable; `port` is `SWD` or `JTAG`.
    pub fn new(settings: CliSettings, port: &str, connect: ConnectMode) -> Self {
        Self {
            settings,
            port: port.to_owned(),
            connect,
        }
    }

    fn connect_args(&self, mode: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "-q".into(),
            "-c".into(),
            format!("port={}", self.port).into(),
            format!("mode={mode}").into(),
        ];
        if let Some(serial) = &self.settings.probe_id {
            args.push(format!("sn={serial}").into());
        }
        args
    }

    fn run(&self, args: Vec<OsString>, budget: &Budget) -> Result<Ran, DriverError> {
        self.settings
            .run(args, budget, "stm32_programmer_cli_not_found")
    }

    /// Success only on exit 0, no failure words, and every expected sentence present.
    fn judge(
        ran: Ran,
        unconfirmed: &'static str,
        expected: &[&str],
        flashing: bool,
        read_only: bool,
    ) -> Result<CliSuccess, DriverError> {
        let output = ran.output();
        let class = classify(&output, flashing);
        let pre_contact =
            class == "probe_not_found" || (read_only && class == "target_not_detected");
        let proof = "the programmer's own words say no probe or target was opened";
        let (ran, contact) = match probe_cli::read(ran, &output, class, pre_contact, proof)? {
            Reading::Clean(ran) => {
                return probe_cli::confirm(
                    &output,
                    expected,
                    unconfirmed,
                    probe_cli::public,
                    vec![ran.transcript],
                );
            }
            Reading::Failed(ran, contact) => (ran, contact),
        };
        let transcript: Transcript = ran.transcript;
        let mut failed = failure(class, contact, vec![transcript.clone()]);
        if class == "flash_erase_failed" {
            let point = erase_abort_point(&output);
            failed.summary = match point["reading"].as_str() {
                Some("flash_change_underway") => {
                    "The erase failed after writing had begun; the flash holds a partial image.".into()
                }
                Some("erase_refused_effect_unconfirmed") => {
                    "The programmer refused to erase flash; whether any sector changed is not confirmed.".into()
                }
                _ => "The erase failed and the output does not tell how far the programmer got.".into(),
            };
            failed.details.insert("erase_abort_point".into(), point);
            failed.details.insert(
                "programmer_output".into(),
                json!({"returncode": transcript.returncode, "stdout": transcript.stdout, "stderr": transcript.stderr}),
            );
        }
        Err(DriverError::Classified(failed))
    }
}

impl CubeProg {
    /// Read `size` bytes at `address` into the Intel HEX file `out` (`-r 0x<addr> <size> <file>`).
    /// The caller owns `out`'s directory; success needs the CLI's "Data read successfully".
    /// It connects `HOTPLUG`, without a halt or a reset, as the reference does: a read answers
    /// `side_effect_status: not_started`, and a `NORMAL` connection halts the core (or resets it,
    /// with the probe's reset mode) before reading.
    pub fn read_memory_hex(
        &self,
        address: u64,
        size: u64,
        out: &std::path::Path,
        budget: &Budget,
    ) -> Result<CliSuccess, DriverError> {
        let mut args = self.connect_args("HOTPLUG");
        args.push("-r".into());
        args.push(format!("{address:#x}").into());
        args.push(size.to_string().into());
        args.push(out.as_os_str().to_owned());
        let ran = self.run(args, budget)?;
        Self::judge(
            ran,
            "memory_read_unconfirmed",
            &["Data read successfully"],
            false,
            true,
        )
    }
}

impl DebugProbe for CubeProg {
    type Answers = CliAnswers;

    fn kind(&self) -> Backend {
        Backend::StLink
    }

    fn list_probes(&self, budget: &Budget) -> Result<Listing, DriverError> {
        let ran = self.run(
            vec!["-q".into(), "-l".into(), "st-link-only".into()],
            budget,
        )?;
        let no_contact = || Contact::none("listing probes opens no target");
        if ran.timed_out() {
            return Err(probe_cli::timed_out(ran, no_contact()));
        }
        let output = ran.output();
        let serials = parse_serials(&output);
        let none_seen = any(
            &output.to_lowercase(),
            &[
                "no st-link detected",
                "no stlink detected",
                "0 st-link detected",
                "0 stlink detected",
            ],
        );
        if ran.code() != Some(0) || (serials.is_empty() && !none_seen) {
            return Err(DriverError::Classified(failure(
                "probe_discovery_failed",
                no_contact(),
                vec![ran.transcript],
            )));
        }
        Ok(Listing::complete(serials, "ST-LINK", ran.transcript))
    }

    fn probe(&self, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let ran = self.run(self.connect_args("HOTPLUG"), budget)?;
        Self::judge(
            ran,
            "probe_unconfirmed",
            &["ST-LINK SN", "Device name"],
            false,
            true,
        )
    }

    fn flash(&self, request: &FlashRequest, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let mode = match self.connect {
            ConnectMode::Hotplug => "HOTPLUG",
            ConnectMode::UnderReset => "UR",
        };
        let mut args = self.connect_args(mode);
        args.push("-w".into());
        args.push(request.image.clone().into_os_string());
        if let ImageFormat::Bin { base } = request.format {
            args.push(format!("{base:#x}").into());
        }
        args.push("-v".into());
        if request.reset.is_some() {
            args.push("-rst".into());
        }
        let ran = self.run(args, budget)?;
        Self::judge(
            ran,
            "flash_unconfirmed",
            &["Download verified successfully"],
            true,
            false,
        )
    }

    fn reset(&self, mode: ResetMode, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let mut args = self.connect_args("NORMAL");
        let expected: &[&str] = match mode {
            ResetMode::Run => {
                args.push("-rst".into());
                &["MCU Reset", "reset is performed"]
            }
            ResetMode::Halt => {
                args.push("-halt".into());
                &["Core halted"]
            }
            ResetMode::Init => return Err(crate::pyocd::init_not_supported("STM32CubeProgrammer")),
        };
        let ran = self.run(args, budget)?;
        Self::judge(ran, "reset_unconfirmed", expected, false, false)
    }
}

pub mod gdbserver;

#[cfg(test)]
#[path = "cubeprog_tests.rs"]
mod tests;
