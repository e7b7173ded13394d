//! esptool (`type: esptool`): Espressif chips flashed through their ROM bootloader over the board's
//! USB-UART bridge. There is no probe: esptool opens the configured serial port, pulses DTR/RTS to
//! reset the chip into its bootloader, and talks to the ROM over the same line.
//!
//! Only esptool 5 is driven: version 4 spells its commands (`write_flash`) and some success lines
//! differently, so every call first asks the executable for its version. Success is read from esptool's
//! own sentences; an exit 0 without them is unconfirmed, not a success.
//!
//! The no-contact rule: opening the port already resets the chip, so a failure leaves `Contact::None`
//! only when esptool says it could not open the port, or when it never got past `version`.

use std::ffi::OsString;

use serde_json::{Map, json};

use crate::Backend;
use crate::error::{Classified, Contact, DriverError, Transcript};
use crate::probe::{Budget, DebugProbe, FlashRequest, ImageFormat, ResetMode};
use crate::probe_cli::{self, CliAnswers, CliSettings, CliSuccess, Listing, Ran, any};

/// The esptool major version whose command spelling and output this backend reads.
pub const SUPPORTED_MAJOR: u32 = 5;
/// The release the fakes replay and setup installs.
pub const TESTED_VERSION: &str = "5.5.0";
/// The serial speed for writing flash; connecting always starts at the ROM's 115200.
const FLASH_BAUD: u32 = 460_800;

/// The esptool backend of one debugger entry.
#[derive(Debug, Clone)]
pub struct Esptool {
    settings: CliSettings,
    port: String,
    chip: Option<String>,
}

/// The major.minor.patch an `esptool version` output reports, if any line carries one.
pub fn parse_version(output: &str) -> Option<String> {
    output.lines().map(str::trim).find_map(|line| {
        let word = line
            .strip_prefix("esptool.py v")
            .or_else(|| line.strip_prefix("esptool v"))
            .unwrap_or(line);
        let word = word.split_whitespace().next()?;
        let mut parts = word.split('.');
        let numeric = parts.next()?.parse::<u32>().is_ok() && parts.next()?.parse::<u32>().is_ok();
        numeric.then(|| word.to_owned())
    })
}

/// esptool's output, sorted into the backend classes (first match wins).
pub fn classify(output: &str, flashing: bool) -> &'static str {
    let lower = output.to_lowercase();
    if any(
        &lower,
        &[
            "could not open",
            "the port is busy or doesn't exist",
            "could not exclusively lock port",
        ],
    ) {
        return "port_open_failed";
    }
    if (lower.contains("this chip is ") && lower.contains(", not "))
        || any(&lower, &["wrong chip argument", "unexpected chip id"])
    {
        return "chip_mismatch";
    }
    if any(
        &lower,
        &[
            "failed to connect to",
            "no serial data received",
            "wrong boot mode detected",
            "invalid head of packet",
            "the chip stopped responding",
        ],
    ) {
        return "target_not_detected";
    }
    if any(
        &lower,
        &[
            "md5 of file does not match",
            "hash of data does not match",
            "verify failed",
        ],
    ) {
        return "verify_failed";
    }
    if flashing && any(&lower, &["a fatal error occurred", "error:", "failed"]) {
        return "flash_failed";
    }
    "unknown_debugger_error"
}

/// Every class this backend reports; `public` words each one.
pub const CLASSES: [&str; 12] = [
    "esptool_not_found",
    "esptool_version_unsupported",
    "port_open_failed",
    "chip_mismatch",
    "target_not_detected",
    "verify_failed",
    "flash_failed",
    "flash_unconfirmed",
    "probe_unconfirmed",
    "reset_unconfirmed",
    "timeout",
    "unknown_debugger_error",
];

/// The published meaning of an esptool class: public `error_type`, summary, likely causes.
pub fn public(class: &'static str) -> probe_cli::Wording {
    match class {
        "esptool_not_found" => probe_cli::public("openocd_not_found"),
        "esptool_version_unsupported" => (
            "debugger_not_found",
            "The configured esptool is not version 5, the only one this backend reads.",
            &[
                "esptool 4 is installed (it spells commands and success lines differently)",
                "the configured executable is not esptool",
            ],
        ),
        "port_open_failed" => (
            "com_port_open_failed",
            "esptool could not open the board's serial port.",
            &[
                "another program (a terminal, a serial monitor) holds the port",
                "the board was unplugged or came back under another device name",
                "this user may not open the device (on Linux usually the dialout group)",
            ],
        ),
        "chip_mismatch" => (
            "target_type_invalid",
            "The chip esptool found is not the family debuggers.<name>.target_type names.",
            &[
                "target_type names another ESP32 family",
                "the COM port reaches a different board",
            ],
        ),
        "target_not_detected" => (
            "target_not_detected",
            "esptool opened the serial port but the chip's ROM bootloader did not answer.",
            &[
                "the board's auto-reset circuit did not enter the bootloader (hold BOOT while pressing EN)",
                "the port belongs to another adapter than the board's",
                "the board is unpowered or the cable carries power only",
            ],
        ),
        "verify_failed" => (
            "verify_failed",
            "esptool wrote the image but the flash did not hash to it afterwards.",
            &[
                "the flash did not keep what was written",
                "power or signal integrity failed during the write",
            ],
        ),
        "flash_failed" | "flash_unconfirmed" => (
            "flash_failed",
            "esptool did not confirm the image was written and verified.",
            &[
                "the serial link dropped during the write",
                "the image does not fit the chip's flash at that address",
            ],
        ),
        "probe_unconfirmed" => (
            "target_state_unconfirmed",
            "esptool exited without the lines that prove it reached the chip.",
            &["esptool's output format changed", "the run was cut short"],
        ),
        "reset_unconfirmed" => (
            "reset_failed",
            "esptool did not confirm the reset.",
            &[
                "the bridge's DTR/RTS lines are not wired to EN and IO0",
                "the chip lost power",
            ],
        ),
        "timeout" => (
            "timeout",
            "esptool did not finish within the entry's timeout.",
            &[
                "the chip stopped answering mid-transfer",
                "timeout_s is too short for this image at this baud rate",
            ],
        ),
        _ => (
            "debugger_error",
            "esptool failed with an error this build does not recognise.",
            &["see esptool's output in driver_log"],
        ),
    }
}

fn failure(class: &'static str, contact: Contact, transcripts: Vec<Transcript>) -> DriverError {
    // The tests that word and catalogue each class go by the list.
    debug_assert!(
        CLASSES.contains(&class),
        "{class} is not in esptool::CLASSES"
    );
    DriverError::Classified(probe_cli::worded_failure(
        class,
        public(class),
        contact,
        transcripts,
    ))
}

impl Esptool {
    /// A backend over the pinned executable, reaching the chip through serial device `port`; `chip`
    /// is the entry's `target_type` (`esp32s3`), or esptool detects it.
    pub fn new(settings: CliSettings, port: &str, chip: Option<&str>) -> Self {
        Self {
            settings,
            port: port.to_owned(),
            chip: chip.map(str::to_owned),
        }
    }

    fn run(&self, args: Vec<OsString>, budget: &Budget) -> Result<Ran, DriverError> {
        self.settings.run(args, budget, "esptool_not_found")
    }

    /// The installed version, when it is one this backend reads. Runs `esptool version` only.
    pub fn installed_version(&self, budget: &Budget) -> Result<String, DriverError> {
        let transcript = self.check_version(budget)?;
        Ok(
            parse_version(&format!("{}{}", transcript.stdout, transcript.stderr))
                .unwrap_or_default(),
        )
    }

    /// `esptool version` must report major 5 before anything opens the port.
    fn check_version(&self, budget: &Budget) -> Result<Transcript, DriverError> {
        let ran = self.run(vec!["version".into()], budget)?;
        let proof = || Contact::none("only `esptool version` ran, which opens no port");
        if ran.timed_out() {
            return Err(failure("timeout", proof(), vec![ran.transcript]));
        }
        let version = parse_version(&ran.output());
        let major = version
            .as_deref()
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        if ran.code() == Some(0) && major == Some(SUPPORTED_MAJOR) {
            return Ok(ran.transcript);
        }
        let class = "esptool_version_unsupported";
        let mut failed =
            probe_cli::worded_failure(class, public(class), proof(), vec![ran.transcript]);
        failed.details.insert("version".into(), json!(version));
        failed.details.insert(
            "supported_versions".into(),
            json!(format!(
                "{SUPPORTED_MAJOR}.x (tested with {TESTED_VERSION})"
            )),
        );
        Err(DriverError::Classified(failed))
    }

    fn connect_args(&self, baud: Option<u32>, after: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            format!("--chip={}", self.chip.as_deref().unwrap_or("auto")).into(),
            format!("--port={}", self.port).into(),
        ];
        if let Some(baud) = baud {
            args.push(format!("--baud={baud}").into());
        }
        args.push("--before=default-reset".into());
        args.push(format!("--after={after}").into());
        args
    }

    /// Version check, then one command judged by its expected sentences.
    fn act(
        &self,
        args: Vec<OsString>,
        expected: &[&str],
        unconfirmed: &'static str,
        flashing: bool,
        budget: &Budget,
    ) -> Result<CliSuccess, DriverError> {
        // pyserial opens `socket://`, `rfc2217://` and other URLs as ports: a port that is no
        // absolute device path (an agent may set a com_ports device) would send the image over
        // the network. Refused before esptool runs.
        if !self.port.starts_with('/') {
            return Err(DriverError::Classified(Box::new(Classified {
                error_type: "invalid_argument",
                backend_error_type: "invalid_argument",
                summary: "esptool's port must be a device's absolute path; pyserial would open any other name as a URL.".into(),
                likely_causes: Vec::new(),
                contact: Contact::none("refused before esptool ran"),
                transcripts: Vec::new(),
                details: Map::new(),
            })));
        }
        let version = self.check_version(budget)?;
        let ran = self.run(args, budget)?;
        let output = ran.output();
        let class = classify(&output, flashing);
        let contact = if class == "port_open_failed" {
            Contact::none("esptool reported that it could not open the serial port")
        } else {
            Contact::Possible
        };
        if ran.timed_out() {
            return Err(failure("timeout", contact, vec![version, ran.transcript]));
        }
        let fatal = output.to_lowercase().contains("a fatal error occurred");
        if ran.code() == Some(0) && class == "unknown_debugger_error" && !fatal {
            return probe_cli::confirm(
                &output,
                expected,
                unconfirmed,
                public,
                vec![version, ran.transcript],
            );
        }
        Err(failure(class, contact, vec![version, ran.transcript]))
    }
}

impl DebugProbe for Esptool {
    type Answers = CliAnswers;

    fn kind(&self) -> Backend {
        Backend::Esptool
    }

    fn list_probes(&self, _budget: &Budget) -> Result<Listing, DriverError> {
        let mut details = Map::new();
        details.insert("com_port_device".into(), json!(self.port));
        Err(probe_cli::not_supported(
            "esptool has no debug probe to list: it reaches the chip through the board's USB-UART bridge (debuggers.<name>.com_port); com_ports_list shows this host's serial ports.",
            details,
        ))
    }

    fn probe(&self, budget: &Budget) -> Result<CliSuccess, DriverError> {
        let mut args = self.connect_args(None, "hard-reset");
        args.extend(["--no-stub".into(), "flash-id".into()]);
        self.act(
            args,
            &["Chip type:", "Detected flash size:", "Hard resetting"],
            "probe_unconfirmed",
            false,
            budget,
        )
    }

    fn flash(&self, request: &FlashRequest, budget: &Budget) -> Result<CliSuccess, DriverError> {
        // esptool writes flash images; an ELF must go through `esptool elf2image` first.
        let address = match request.format {
            ImageFormat::Bin { base } => base,
            ImageFormat::Hex => 0,
            ImageFormat::Elf => {
                return Err(DriverError::Classified(Box::new(Classified {
                    error_type: "invalid_argument",
                    backend_error_type: "invalid_argument",
                    summary: "esptool writes .bin images at debuggers.<name>.flash_address, or .hex images that carry their addresses; convert an ELF with `esptool elf2image` first.".into(),
                    likely_causes: Vec::new(),
                    contact: Contact::none("refused before esptool ran"),
                    transcripts: Vec::new(),
                    details: Map::new(),
                })));
            }
        };
        let (after, settled) = if request.reset.is_some() {
            ("hard-reset", "Hard resetting")
        } else {
            ("no-reset", "Staying in bootloader.")
        };
        let mut args = self.connect_args(Some(FLASH_BAUD), after);
        args.extend([
            "write-flash".into(),
            "--no-progress".into(),
            format!("{address:#x}").into(),
            request.image.clone().into_os_string(),
        ]);
        self.act(
            args,
            &["Hash of data verified.", settled],
            "flash_unconfirmed",
            true,
            budget,
        )
    }

    fn reset(&self, mode: ResetMode, budget: &Budget) -> Result<CliSuccess, DriverError> {
        // A reset is a connect: `default-reset` enters the bootloader, `--after` decides where it ends.
        let (after, expected): (&str, &[&str]) = match mode {
            ResetMode::Run => ("hard-reset", &["Hard resetting"]),
            ResetMode::Halt => ("no-reset", &["Staying in bootloader."]),
            ResetMode::Init => return Err(crate::pyocd::init_not_supported("esptool")),
        };
        let mut args = self.connect_args(None, after);
        args.extend(["--no-stub".into(), "flash-id".into()]);
        self.act(args, expected, "reset_unconfirmed", false, budget)
    }
}

#[cfg(test)]
#[path = "esptool_tests.rs"]
mod tests;
