//! OpenOCD as a one-shot CLI: `-f <interface> [-c "adapter serial <id>"] -f <target>`, its servers
//! disabled, then one script that echoes a stage marker after `init` and a result marker at the end.
//!
//! OpenOCD aborts a `-c` script at the first failing command, so the result marker is the proof of
//! success; the init marker is the proof that the probe was opened. Without the init marker, and with
//! OpenOCD's own words saying the adapter or a script was not found, nothing reached the target.

mod classify;
pub mod gdbserver;
pub mod rtt;
mod usb;

/// The host's USB devices of known probe vendors, for discovery before any toolchain is configured.
pub use usb::inventory as usb_probe_inventory;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::Backend;
use crate::error::{Classified, Contact, DriverError};
use crate::probe::{Budget, DebugProbe, FlashRequest, ImageFormat, ResetMode};
use crate::probe_cli::{
    self, CliAnswers, CliSettings, CliSuccess, Listing, Ran, failure, failure_lines,
};

pub use classify::classify;

/// Printed once `init` has opened the adapter and examined the target.
pub const INIT_MARKER: &str = "AGENTIC_HIL_STAGE:init:ok";

/// What one OpenOCD run does: the driver's own words for it, so it never decides by a tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Probe,
    Flash,
    Reset,
}

impl Operation {
    /// The word in the script's result marker (the reference's, so transcripts read the same).
    fn marker_word(self) -> &'static str {
        match self {
            Self::Probe => "probe_target",
            Self::Flash => "flash_firmware",
            Self::Reset => "reset_target",
        }
    }

    /// The failure class of a run that exited 0 without its result marker.
    fn unconfirmed(self) -> &'static str {
        match self {
            Self::Probe => "probe_unconfirmed",
            Self::Flash => "flash_unconfirmed",
            Self::Reset => "reset_unconfirmed",
        }
    }
}

/// The result marker of `operation`.
fn result_marker(operation: Operation) -> String {
    format!("AGENTIC_HIL_RESULT:{}:ok", operation.marker_word())
}

/// The OpenOCD backend of one debugger entry.
#[derive(Debug, Clone)]
pub struct OpenOcd {
    settings: CliSettings,
    interface_cfg: String,
    target_cfg: String,
    sysfs_usb: PathBuf,
}

impl OpenOcd {
    /// A backend over the pinned executable and the entry's scripts.
    pub fn new(settings: CliSettings, interface_cfg: &str, target_cfg: &str) -> Self {
        Self {
            settings,
            interface_cfg: interface_cfg.to_owned(),
            target_cfg: target_cfg.to_owned(),
            sysfs_usb: PathBuf::from("/sys/bus/usb/devices"),
        }
    }

    /// Read the USB inventory from another directory (tests).
    #[must_use]
    pub fn with_sysfs_usb(mut self, dir: impl Into<PathBuf>) -> Self {
        self.sysfs_usb = dir.into();
        self
    }

    /// The interface script, the probe's serial when one is pinned, the target script, then each of
    /// `commands` as a `-c`, in order: how every OpenOCD run of this entry (one-shot or server) starts.
    pub(crate) fn board_argv(
        &self,
        commands: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec!["-f".into(), self.interface_cfg.clone().into()];
        if let Some(serial) = &self.settings.probe_id {
            argv.push("-c".into());
            argv.push(format!("adapter serial {serial}").into());
        }
        argv.push("-f".into());
        argv.push(self.target_cfg.clone().into());
        for command in commands {
            argv.push("-c".into());
            argv.push(command.into());
        }
        argv
    }

    /// The full argv after the executable for one script.
    pub fn argv(&self, script: &str) -> Vec<OsString> {
        self.board_argv([
            "gdb_port disabled",
            "tcl_port disabled",
            "telnet_port disabled",
            script,
        ])
    }

    fn script(operation: Operation, action: &str) -> String {
        format!(
            "init; echo \"{INIT_MARKER}\"; {action}; echo \"{}\"; shutdown",
            result_marker(operation)
        )
    }

    fn one_shot(
        &self,
        operation: Operation,
        action: &str,
        budget: &Budget,
    ) -> Result<CliSuccess, DriverError> {
        let script = Self::script(operation, action);
        let ran = self
            .settings
            .run(self.argv(&script), budget, "openocd_not_found")?;
        decide(
            operation,
            &script,
            &self.interface_cfg,
            &self.target_cfg,
            ran,
        )
    }
}

/// Quote a path for a Tcl double-quoted word.
pub fn tcl_quote(path: &Path) -> String {
    let mut text = path.to_string_lossy().into_owned();
    if text.starts_with('\\') {
        text = text.replace('\\', "/");
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// OpenOCD's `program` wraps its file name in braces and `eval`s it (`set filename \{$filename\}`
/// in startup.tcl), so quoting cannot make every path safe: a `}` ends the braces and the rest runs
/// as Tcl, `exec` included; a `{` or `\` unbalances them. Such a path is refused before OpenOCD
/// runs (the gate stages under names without them; this keeps any other caller safe too).
fn refuse_unsafe_image_path(image: &Path) -> Result<(), DriverError> {
    let text = image.to_string_lossy();
    if !text.contains(['{', '}', '\\']) && !text.chars().any(char::is_control) {
        return Ok(());
    }
    Err(DriverError::Classified(Box::new(Classified {
        error_type: "invalid_argument",
        backend_error_type: "invalid_argument",
        summary: "OpenOCD evaluates an image path as Tcl; a path with a brace, a backslash or a control character is not given to it.".into(),
        likely_causes: Vec::new(),
        contact: Contact::none("refused before OpenOCD ran"),
        transcripts: Vec::new(),
        details: serde_json::Map::new(),
    })))
}

/// Commands OpenOCD refused before `init` that we sent (`invalid command name "reset"`).
pub fn rejected_before_init(output: &str, script: &str) -> Vec<String> {
    let sent: Vec<String> = script
        .split(';')
        .filter_map(|segment| segment.split_whitespace().next())
        .map(str::to_lowercase)
        .collect();
    let lower = output.to_lowercase();
    let mut named = Vec::new();
    for line in lower.lines() {
        if let Some(rest) = line.split("invalid command name \"").nth(1)
            && let Some(name) = rest.split('"').next()
        {
            named.push(name.to_owned());
        }
        if let Some(rest) = line.split("the '").nth(1)
            && let Some((name, tail)) = rest.split_once('\'')
            && (tail.starts_with(" command must be used after 'init'")
                || tail.starts_with(" command must be used before 'init'"))
        {
            named.push(name.to_owned());
        }
    }
    let mut rejected: Vec<String> = named.into_iter().filter(|n| sent.contains(n)).collect();
    rejected.dedup();
    rejected
}

/// Turn a finished run into success or a classified failure.
fn decide(
    operation: Operation,
    script: &str,
    interface_cfg: &str,
    target_cfg: &str,
    ran: Ran,
) -> Result<CliSuccess, DriverError> {
    let output = ran.output();
    let init_reached = output.contains(INIT_MARKER);
    let marker = result_marker(operation);
    let class = classify(
        &output,
        interface_cfg,
        target_cfg,
        operation == Operation::Flash,
    );
    let read_only = operation == Operation::Probe;
    let pre_contact = !init_reached
        && (matches!(
            class,
            "interface_config_not_found"
                | "target_config_not_found"
                | "config_file_not_found"
                | "adapter_not_found"
        ) || (read_only && class == "target_not_detected"));
    let no_contact = || Contact::none("OpenOCD never reached `init`, and its own output says why");
    if ran.timed_out() {
        let contact = if pre_contact {
            no_contact()
        } else {
            Contact::Possible
        };
        return Err(probe_cli::timed_out(ran, contact));
    }
    if ran.code() == Some(0) {
        // OpenOCD stops a script at the first failing command, so the result marker proves the
        // actions before it succeeded; what it complained about on the way (the dummy adapter's scan
        // chain, a shutdown hiccup) is a warning, as the reference reports it.
        if init_reached && output.contains(&marker) {
            return Ok(CliSuccess {
                warnings: failure_lines(&output),
                matched_success_text: vec![INIT_MARKER.to_owned(), marker],
                transcripts: vec![ran.transcript],
            });
        }
        if class == "unknown_debugger_error" && !probe_cli::contains_failure_text(&output) {
            let unconfirmed = operation.unconfirmed();
            let matched: Vec<&str> = [INIT_MARKER, marker.as_str()]
                .into_iter()
                .filter(|m| output.contains(m))
                .collect();
            let contact = if init_reached {
                Contact::Made
            } else {
                Contact::Possible
            };
            let failed = failure(unconfirmed, contact, vec![ran.transcript]);
            return Err(DriverError::Classified(probe_cli::with_detail(
                failed,
                "operation_result",
                json!({
                    "confirmed": false,
                    "expected_success_text": [INIT_MARKER, marker],
                    "matched_success_text": matched,
                }),
            )));
        }
    }
    let rejected = if init_reached {
        Vec::new()
    } else {
        rejected_before_init(&output, script)
    };
    if !rejected.is_empty() {
        let failed = failure(
            "command_rejected_before_init",
            Contact::none("OpenOCD refused the command before `init` opened the probe"),
            vec![ran.transcript],
        );
        return Err(DriverError::Classified(probe_cli::with_detail(
            failed,
            "rejected_commands",
            json!(rejected),
        )));
    }
    let contact = if pre_contact {
        no_contact()
    } else if init_reached {
        Contact::Made
    } else {
        Contact::Possible
    };
    let transcript = ran.transcript;
    let mut failed: Box<Classified> = failure(class, contact, vec![transcript.clone()]);
    if class == "flash_erase_failed" {
        failed.details.insert(
            "programmer_output".into(),
            json!({"returncode": transcript.returncode, "stdout": transcript.stdout, "stderr": transcript.stderr}),
        );
    }
    if let Some(line) = failure_lines(&output).last() {
        failed
            .details
            .insert("backend_message".into(), Value::from(line.clone()));
    }
    Err(DriverError::Classified(failed))
}

impl DebugProbe for OpenOcd {
    type Answers = CliAnswers;

    fn kind(&self) -> Backend {
        Backend::OpenOcd
    }

    fn list_probes(&self, _budget: &Budget) -> Result<Listing, DriverError> {
        Ok(Listing {
            probes: usb::inventory(&self.sysfs_usb),
            complete: false,
            note: Some(
                "OpenOCD cannot enumerate probes itself; this is the host's USB inventory of known probe vendors, which may miss probes behind other vendors' IDs.".into(),
            ),
            transcripts: Vec::new(),
        })
    }

    fn probe(&self, budget: &Budget) -> Result<CliSuccess, DriverError> {
        self.one_shot(Operation::Probe, "targets", budget)
    }

    fn flash(&self, request: &FlashRequest, budget: &Budget) -> Result<CliSuccess, DriverError> {
        refuse_unsafe_image_path(&request.image)?;
        let mut action = format!("program {} verify", tcl_quote(&request.image));
        if request.reset.is_some() {
            action.push_str(" reset");
        }
        // `program` takes a raw image's load address as its last word; ELF and HEX carry their own.
        if let ImageFormat::Bin { base } = request.format {
            action = format!("{action} {base:#x}");
        }
        self.one_shot(Operation::Flash, &action, budget)
    }

    fn reset(&self, mode: ResetMode, budget: &Budget) -> Result<CliSuccess, DriverError> {
        self.one_shot(
            Operation::Reset,
            &format!("reset {}", mode.as_str()),
            budget,
        )
    }
}

#[cfg(test)]
#[path = "openocd_tests.rs"]
mod tests;
