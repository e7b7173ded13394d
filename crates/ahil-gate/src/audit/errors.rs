//! The error catalogue: for every `error_type` the program can emit, what it means, what to do (in
//! order) and what not to do. Served as MCP resources (`agentic-hil://reference/errors` and
//! `…/errors/{error_type}`) and merged into refusals that carry no advice of their own.
//!
//! A key may carry a scope (`target_not_detected:pyocd`); lookups try the scoped entry first, then the
//! plain one. A test scans the crates for emitted error types and fails on any without an entry.

use serde_json::{Value, json};

use crate::envelope::Outcome;

/// One catalogue entry.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub key: &'static str,
    pub meaning: &'static str,
    pub remediation: &'static [&'static str],
    pub do_not: &'static [&'static str],
}

/// The URI prefix of the per-error resources.
pub const URI_PREFIX: &str = "agentic-hil://reference/errors/";

const NO_BYPASS: &str = "Do not reach the hardware another way (a shell debugger, a serial terminal) while this stands.";
const NO_STATE_EDIT: &str =
    "Do not edit, move or delete files under the state root to make this go away.";
const NO_CONFIG_EDIT: &str = "Do not edit the configuration file by hand to get past this.";

macro_rules! entry {
    ($key:literal, $meaning:literal, [$($fix:literal),* $(,)?], [$($dont:expr),* $(,)?]) => {
        Entry { key: $key, meaning: $meaning, remediation: &[$($fix),*], do_not: &[$($dont),*] }
    };
}

/// Every entry, grouped roughly by key.
pub const CATALOGUE: &[Entry] = &[
    entry!(
        "artifact_changed",
        "The firmware file changed between its check and its use, so the checked bytes are not the ones that would be flashed.",
        [
            "Finish the build, then call the tool again with the same path.",
            "Stop any process that rewrites the file while a flash is in progress."
        ],
        ["Do not flash a file that is still being written."]
    ),
    entry!(
        "artifact_not_found",
        "The firmware path names no regular file inside the allowed artifact roots.",
        [
            "Build the firmware, then pass its workspace-relative path.",
            "Check `artifacts.allowed_roots` with project_config_describe."
        ],
        ["Do not copy firmware outside the workspace or point the tool at a link."]
    ),
    entry!(
        "artifact_staging_failed",
        "The firmware could not be copied into private staging, so nothing was handed to the backend.",
        [
            "Check free space and permissions of the state root with `agentic-hil doctor`.",
            "Call the tool again once the state root is writable."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "artifact_too_large",
        "The firmware or upload is larger than the configured limit.",
        [
            "Check the image: a debug build with symbols can be far larger than the flash.",
            "Ask the operator to raise the limit if the size is right."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "artifact_validation_failed",
        "The file is not a plausible firmware image of the declared format (ELF, Intel HEX or raw binary).",
        [
            "Pass the build's ELF or HEX output, or a .bin with its flash address.",
            "Rebuild if the file is truncated."
        ],
        ["Do not rename a file to change how it is checked."]
    ),
    entry!(
        "audit_broken",
        "Evidence of an action that already touched the bench could not be recorded, so the bench state is not provable.",
        [
            "Stop and report the `audit_error` to the operator.",
            "The operator checks the state root's disk and permissions, then runs recovery."
        ],
        [NO_BYPASS, NO_STATE_EDIT]
    ),
    entry!(
        "audit_failed",
        "A recorded failure carried no error type of its own but its audit was not clean.",
        [
            "Read the report with get_last_report and its `audit_error`.",
            "Fix what the audit error names, then repeat the call."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "audit_failed_after_action",
        "The action ran, but writing its evidence failed afterwards; the effect may have happened.",
        [
            "Treat the bench state as unknown and report to the operator.",
            "After the operator repairs the audit trail, check the board with probe_target."
        ],
        [NO_BYPASS, NO_STATE_EDIT]
    ),
    entry!(
        "audit_unavailable",
        "The action was not started because its report or log could not be written first. Nothing touched the bench.",
        [
            "Make the workspace reports and logs directories writable and not links.",
            "Run `agentic-hil doctor` to check the state root, then call the tool again."
        ],
        ["Do not run the action another way to avoid the audit."]
    ),
    entry!(
        "audit_write_failed",
        "A report, log or its digest could not be written.",
        [
            "Check free space and permissions of the workspace and the state root.",
            "Call the tool again; the canonical trail is kept under the state root."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "backend_error",
        "The host could not run the backend program (an operating-system error, not the board).",
        [
            "Run `agentic-hil doctor` to see whether the toolchain is installed and executable.",
            "Call the tool again after fixing the installation."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "canonical_write_pending",
        "A run report was staged but not yet promoted; the run's evidence is incomplete.",
        [
            "Read the report again after the run finishes.",
            "If it stays pending, report it to the operator."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "config_file_not_found",
        "This workspace has no authoritative configuration, so there is no bench and no permission.",
        [
            "The operator runs `agentic-hil init` in the workspace.",
            "Then `agentic-hil doctor` checks the bench it describes."
        ],
        [NO_CONFIG_EDIT, NO_BYPASS]
    ),
    entry!(
        "config_invalid",
        "The configuration file does not satisfy its schema or its rules; the named key says where.",
        [
            "Read `field` and `summary` for the key at fault.",
            "The operator fixes that key, or rewrites the file with `agentic-hil init --force`."
        ],
        ["Do not guess at a different key to make the error move."]
    ),
    entry!(
        "config_stale",
        "The configuration on disk differs from the one this server enforces.",
        [
            "Restart the MCP server to load the file on disk.",
            "Until then, results reflect the configuration in force, shown in `config_in_force`."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "config_unreadable",
        "The configuration file exists but could not be read.",
        [
            "Check the file's permissions and that it is a regular file.",
            "Run `agentic-hil doctor` for the exact problem."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "coordination_state_invalid",
        "A canonical audit log or record disagrees with its digest or cannot be parsed, so appending to it would break the chain.",
        [
            "Stop and report it to the operator: the trusted trail may have been tampered with.",
            "The operator keeps the damaged files for inspection and starts a new log."
        ],
        [NO_STATE_EDIT, NO_BYPASS]
    ),
    entry!(
        "debugger_error",
        "The debugger program ran but reported a failure.",
        [
            "Read `backend_error` and `likely_causes`.",
            "Check the probe's cable and the board's power, then call the tool again."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "debugger_not_found",
        "The configured debugger executable is missing or not executable.",
        [
            "Install the toolchain the configuration names.",
            "Or ask the operator to set `debuggers.<name>.executable` to its absolute path."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "device_busy",
        "Another process on this machine holds the device.",
        [
            "Wait for the other session to finish, then call the tool again.",
            "`holder` says which process holds it."
        ],
        ["Do not kill another session's process to take the device."]
    ),
    entry!(
        "hardware_action_exception",
        "The action failed unexpectedly inside the server; the bench state is not known.",
        [
            "Treat the board as in an unknown state and check it with probe_target.",
            "Report the `summary` to the operator."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "internal_error",
        "The server could not produce a well-formed result.",
        [
            "Call the tool again.",
            "If it repeats, report the summary to the operator."
        ],
        []
    ),
    entry!(
        "invalid_argument",
        "An argument is missing, unknown, of the wrong type or out of range; nothing was started.",
        [
            "Read `field` and `summary`, fix the argument, and call again.",
            "tools/list shows each tool's argument schema."
        ],
        []
    ),
    entry!(
        "mcp_command_untrusted",
        "The command an MCP host would launch is not a stable, trusted executable path.",
        [
            "Install agentic-hil at a fixed location outside the workspace.",
            "Then generate the snippet again with `agentic-hil mcp-config`."
        ],
        ["Do not point the host at a copy inside the workspace."]
    ),
    entry!(
        "mcp_config_exists",
        "The output file already exists.",
        ["Pass --force to replace it, or choose another path."],
        []
    ),
    entry!(
        "not_supported",
        "This bench or backend cannot do what was asked.",
        [
            "Read `summary` for what is missing.",
            "Use project_config_describe to see the bench's devices and backends."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "output_validation_failed",
        "An output path is outside the workspace or would overwrite something it must not.",
        ["Choose a workspace-relative path in an ordinary directory."],
        ["Do not point the output at a link."]
    ),
    entry!(
        "output_write_failed",
        "An output file could not be written.",
        ["Check the directory exists and is writable, then try again."],
        []
    ),
    entry!(
        "permission_denied",
        "The configuration does not allow this action. The refusal is the answer.",
        [
            "Report which permission was refused and stop.",
            "Only the operator can grant it, at their own shell (`agentic-hil grant`)."
        ],
        [NO_CONFIG_EDIT, "Do not carry out the action another way."]
    ),
    entry!(
        "redaction_unavailable",
        "The output could not be redacted, so nothing was printed.",
        [
            "Run the command again.",
            "If it repeats, report it to the operator."
        ],
        ["Do not print the raw document another way."]
    ),
    entry!(
        "report_not_found",
        "Nothing is recorded yet: no audited call has written a report in this project (or, for classify_last_error, none has failed).",
        [
            "Make the hardware call whose report you want first, then read it.",
            "Check this is the same configuration and workspace that made the call: reports are kept per project."
        ],
        [
            "Do not read this as a pass or a failure of anything.",
            NO_STATE_EDIT
        ]
    ),
    entry!(
        "report_state_damaged",
        "The trusted report state under the state root is not a document this program wrote.",
        [
            "The operator runs `agentic-hil report-state-repair`; it moves the damaged file aside with every byte kept.",
            "Then repeat the call whose report is wanted."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "report_unreadable",
        "The trusted report state could not be read.",
        [
            "Check the state root's permissions with `agentic-hil doctor`.",
            "Then run `agentic-hil report-state-repair`."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "report_write_failed",
        "The report of a call could not be written.",
        ["Check free space and permissions of the workspace and the state root."],
        [NO_STATE_EDIT]
    ),
    entry!(
        "resource_busy",
        "Another call in this server is using the same device.",
        ["Wait for the other call to finish, then call again."],
        []
    ),
    entry!(
        "resource_quarantined",
        "The device is quarantined after an incident; only recovery may touch it.",
        [
            "Read `cleanup_reasons` and `quarantine_guidance`.",
            "Run the recovery the guidance names, or ask the operator."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "run_report_invalid",
        "The run report is not a run report this program wrote.",
        ["Pass the report of a finished run (reports/runs/<handle>.json)."],
        []
    ),
    entry!(
        "run_report_not_found",
        "The run report path names no file.",
        ["Pass the path of a run report that exists."],
        []
    ),
    entry!(
        "run_report_unreadable",
        "The run report could not be read or is not JSON.",
        ["Check the file is a regular, readable JSON file."],
        []
    ),
    entry!(
        "run_already_active",
        "A bench run is already open for this project; a second one cannot start over it.",
        [
            "Finish the open run with bench_run_stop, or keep working inside it.",
            "If its owner is gone, the operator reclaims it with `agentic-hil recover`."
        ],
        ["Do not delete run records under the state root to start a new run."]
    ),
    entry!(
        "run_not_found",
        "No open bench run matches the request.",
        ["Start a run with bench_run_start first, or check the run handle."],
        []
    ),
    entry!(
        "schema_exists",
        "The output file already exists.",
        ["Pass --force to replace it, or choose another path."],
        []
    ),
    entry!(
        "com_port_not_configured",
        "No com_ports entry has the port_id the call named.",
        ["Call com_ports_list and pass one of its port ids, not a device path."],
        [NO_BYPASS]
    ),
    entry!(
        "com_port_busy",
        "Another program holds the serial device open exclusively.",
        [
            "Close the terminal or program that has the port, or stop the session that holds it.",
            "Then call com_session_start again."
        ],
        ["Do not kill a process you did not start to free the port."]
    ),
    entry!(
        "com_port_open_failed",
        "The serial device could not be opened: missing, renamed on replug, or not permitted.",
        [
            "Call com_ports_list to see what the host reports, then ask the operator to fix the entry's device."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "com_port_close_failed",
        "The session's reader did not stop in time, so the port was left open and the session kept.",
        ["Call com_session_stop again."],
        []
    ),
    entry!(
        "com_port_discovery_failed",
        "The host's serial ports could not be listed.",
        ["Run `agentic-hil doctor` and check that /sys/class/tty is readable."],
        []
    ),
    entry!(
        "com_port_identity_mismatch",
        "The adapter attached at the configured device is not the one the entry names (serial number or USB ids differ).",
        [
            "Call com_ports_list to find where the expected adapter is attached.",
            "The operator corrects the entry, preferably to a /dev/serial/by-id name."
        ],
        [NO_BYPASS, NO_CONFIG_EDIT]
    ),
    entry!(
        "com_port_identity_unverified",
        "The entry names a serial number or USB ids, but the host does not report them for the configured device.",
        ["Check the adapter is plugged in, then call com_ports_list to see what the host reports."],
        [NO_BYPASS]
    ),
    entry!(
        "serial_read_failed",
        "The session's reader stopped on a read failure (adapter unplugged, line hung up).",
        ["Call com_session_start again; it replaces the failed session."],
        []
    ),
    entry!(
        "serial_write_incomplete",
        "Only part of the bytes reached the port before it stopped accepting more.",
        ["Read what the device answered before sending the rest; do not resend blindly."],
        []
    ),
    entry!(
        "serial_write_failed",
        "Writing to the serial port failed.",
        ["Check the port is still attached, then start a new session."],
        [NO_BYPASS]
    ),
    entry!(
        "session_already_active",
        "A session of this kind is already open.",
        ["Stop the open session first, or keep using it."],
        []
    ),
    entry!(
        "session_not_active",
        "No session of this kind is open.",
        ["Start a session first."],
        []
    ),
    entry!(
        "test_config_invalid",
        "The test plan does not satisfy its schema or its rules; `field` names the key at fault.",
        [
            "Fix the key the refusal names in .agentic-hil/testconfig.yaml.",
            "Check the plan again before running it."
        ],
        ["Do not run the plan's steps by hand instead."]
    ),
    entry!(
        "test_config_not_found",
        "There is no test plan at the expected path.",
        ["Write the plan at .agentic-hil/testconfig.yaml, or pass its workspace-relative path."],
        []
    ),
    entry!(
        "test_config_unreadable",
        "The test plan exists but could not be read.",
        ["Check it is a regular, readable file inside the workspace and not a link."],
        []
    ),
    entry!(
        "timeout",
        "The backend did not finish in time; it was stopped and its process group killed.",
        [
            "Check the probe's connection and the board's power.",
            "Call the tool again; a slow host may need a longer timeout from the operator."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "unknown_debugger_error",
        "A recorded failure carried no error type; the backend failed in a way it did not classify.",
        [
            "Read the report with get_last_report, especially `backend_error`.",
            "Check the probe and board, then repeat the call."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "undeclared_device",
        "The call addresses a device the open run did not declare.",
        [
            "Stop the run and start a new one that declares this device too.",
            "Or address only the devices the run declared."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "unknown_tool",
        "No tool of that name is listed by this server.",
        ["Call tools/list and use one of the names it returns."],
        ["Do not reach the hardware another way because a tool name was not found."]
    ),
    entry!(
        "unknown_device",
        "The name matches no device in the configuration.",
        ["Use a device name that project_config_describe lists."],
        ["Do not add a device to the configuration by hand to get past this."]
    ),
    entry!(
        "unsafe_configured_path",
        "A configured or state path goes through a symbolic link, a multi-link file or something that is not a directory, where an agent could redirect it.",
        [
            "Replace the link with a real directory or file, or ask the operator to configure a path without links.",
            "Then run `agentic-hil doctor`."
        ],
        [
            "Do not create links in the workspace's reports, logs or upload directories.",
            NO_STATE_EDIT
        ]
    ),
    entry!(
        "workspace_is_home",
        "The workspace is the home directory, which would put the whole home under the agent's reach.",
        ["Run the command from a project directory instead."],
        []
    ),
    entry!(
        "target_not_detected",
        "The debugger's backend ran but no board answered it (for the emulated board: no QEMU runs in its board directory).",
        [
            "Check the board is powered and wired; for the emulated board the operator runs `agentic-hil sim start`.",
            "Then call probe_target again."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "flash_failed",
        "Writing or verifying the image failed after the board was reached; what the flash holds now is not known.",
        [
            "Call probe_target to see whether the board answers.",
            "Flash the image again; if it fails again, read the report with get_last_report."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "reset_failed",
        "The reset was not confirmed by the backend.",
        [
            "Call probe_target to see whether the board answers.",
            "Call reset_target again."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "probe_discovery_failed",
        "The backend could not list its probes.",
        ["Check the probe's USB connection (or that the emulated board runs), then list again."],
        []
    ),
    entry!(
        "capture_timeout",
        "The image was flashed, verified and the board reset, but the capture did not see what it waited for in time.",
        [
            "The image is on the board: read the port again, or reset_target and capture again.",
            "Check the capture's `until` text against what the firmware prints."
        ],
        ["Do not flash again only because the capture missed its text."]
    ),
    entry!(
        "capture_failed",
        "The capture port could not be opened, so the flash did not start.",
        [
            "Check the com_ports entry's device (for the emulated board: `<board_dir>/uart`, present while it runs)."
        ],
        []
    ),
    entry!(
        "stop_reason_not_available",
        "The debug session has not seen the target stop since it started, so there is no stop to report.",
        ["Set a breakpoint and call debug_continue, or call debug_halt, then ask again."],
        []
    ),
    entry!(
        "symbol_not_found",
        "The session's ELF has no symbol of that name.",
        [
            "Check the spelling against the firmware's sources and rebuild with debug information.",
            "Start the session with the ELF the board actually runs."
        ],
        []
    ),
    entry!(
        "symbol_resolution_failed",
        "gdb could not give the symbol's address or size.",
        ["Call debug_get_session_status; if the session is in error, stop it and start it again."],
        [NO_BYPASS]
    ),
    entry!(
        "memory_read_failed",
        "The target answered fewer bytes than the symbol holds, so no value is reported.",
        ["Halt the target with debug_halt, then read the symbol again."],
        [NO_BYPASS]
    ),
    entry!(
        "halt_not_confirmed",
        "The debug session could not prove the core is halted, so it was kept open rather than left running unseen.",
        [
            "Call debug_halt, then debug_stop_session again.",
            "If the board no longer answers, the operator restarts it with `agentic-hil sim stop` and `sim start`."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "unexpected_breakpoint",
        "The target stopped at a breakpoint the session did not set.",
        [
            "Read the stop's frame; call debug_list_breakpoints and debug_clear_breakpoints before resuming."
        ],
        []
    ),
    entry!(
        "target_exception",
        "The target stopped in a fault or exception handler; it is not resumed.",
        [
            "Read the stop's frame and the globals that explain the fault, then stop the session and fix the firmware."
        ],
        ["Do not resume a core stopped on an exception."]
    ),
    entry!(
        "breakpoint_reconciliation_failed",
        "gdb still lists breakpoints after all were deleted, so the session's breakpoints are not known.",
        ["Call debug_clear_breakpoints again, or stop the session and start a new one."],
        [NO_BYPASS]
    ),
];

/// An entry by key: `type:scope` first, then `type`.
pub fn lookup(key: &str) -> Option<&'static Entry> {
    CATALOGUE.iter().find(|e| e.key == key).or_else(|| {
        let (plain, _) = key.split_once(':')?;
        CATALOGUE.iter().find(|e| e.key == plain)
    })
}

/// One entry as the resource serves it.
pub fn entry_value(entry: &Entry) -> Value {
    let (error_type, scope) = match entry.key.split_once(':') {
        Some((t, s)) => (t, Some(s)),
        None => (entry.key, None),
    };
    let mut doc = json!({"error_type": error_type});
    if let Some(scope) = scope {
        doc["scope"] = scope.into();
    }
    doc["meaning"] = entry.meaning.into();
    doc["remediation"] = json!(entry.remediation);
    if !entry.do_not.is_empty() {
        doc["do_not"] = json!(entry.do_not);
    }
    doc
}

/// The whole catalogue, keyed by error type.
pub fn catalogue_value() -> Value {
    Value::Object(
        CATALOGUE
            .iter()
            .map(|e| (e.key.to_owned(), entry_value(e)))
            .collect(),
    )
}

/// Fills `remediation` and `do_not` of a refusal that has none, from its catalogue entry.
pub fn merge_advice(outcome: &mut Outcome) {
    let Some(entry) = outcome.error_type.as_deref().and_then(lookup) else {
        return;
    };
    if outcome.remediation.is_empty() {
        outcome.remediation = entry.remediation.iter().map(|s| (*s).to_owned()).collect();
    }
    if outcome.do_not.is_empty() {
        outcome.do_not = entry.do_not.iter().map(|s| (*s).to_owned()).collect();
    }
}

#[cfg(test)]
#[path = "errors_tests.rs"]
mod tests;
