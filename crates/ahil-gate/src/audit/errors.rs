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
        "config_exists",
        "A configuration already exists where a first one was to be written; it was left alone.",
        [
            "Call project_config_describe to see the configuration in force.",
            "To regenerate it, call project_config_create on the provisioned server (needs allow_config_write)."
        ],
        [NO_CONFIG_EDIT]
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
        "config_changed_underneath",
        "The configuration file changed between the check of a write and the write itself.",
        [
            "Run the command again; it reads the file afresh.",
            "If it repeats, find what else is editing the file."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "config_reload_in_open_run",
        "The bench description cannot be reloaded while a run or session of this server holds a device.",
        [
            "Stop the run (bench_run_stop) and any COM or debug session.",
            "Then call project_config_reload_description again."
        ],
        [NO_CONFIG_EDIT]
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
        "config_write_failed",
        "The configuration file could not be replaced; the old file is unchanged.",
        [
            "Check that the configuration directory is writable for this user.",
            "Run `agentic-hil doctor` for the exact problem."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "config_write_in_open_run",
        "The configuration cannot be written while a run or session holds the bench.",
        [
            "Stop the run (bench_run_stop) and any COM or debug session.",
            "Then send the same change again."
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
        "hardware_mismatch",
        "The attached hardware is not the one the configuration entry names.",
        [
            "Check probe_id against debugger_probes_list.",
            "Name the entry that describes this probe with debugger_id."
        ],
        [NO_CONFIG_EDIT]
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
        "permission_change_in_open_run",
        "Grants cannot change while a process holds a device of this bench.",
        [
            "Wait for the run or session named in `open_holds` to end, or stop it.",
            "Then run the grant or revoke again."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "operator_only_key",
        "The key names a program, script or library the bench runs; only the operator sets it, never an MCP call.",
        [
            "Report which program the task needs (`keys`) and stop.",
            "The operator edits the configuration file at their own shell, checks it with `agentic-hil config-reload`, and restarts the MCP server."
        ],
        [
            NO_CONFIG_EDIT,
            "Do not point another key, a PATH entry or a workspace file at the program instead."
        ]
    ),
    entry!(
        "permission_widening_denied",
        "Over MCP a permission can only be closed; opening one is the operator's decision.",
        [
            "Report which permission the task needs (`keys`) and stop.",
            "The operator may open it at their own shell with `operator_command`."
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
        "symbol_source_changed",
        "The ELF the symbols would be read from is not the one the target runs (it changed since it was loaded or flashed).",
        ["Start the session (or flash) again from the image you mean, then read the symbol."],
        []
    ),
    entry!(
        "symbol_source_not_available",
        "No ELF is on record for this probe: symbols are read offline from the image this server last flashed, and none was flashed yet.",
        ["Flash the ELF the board should run with flash_firmware, then read the symbol."],
        []
    ),
    entry!(
        "detach_resume_not_confirmed",
        "OpenOCD did not confirm that gdb leaving will keep the core halted, so the debug session was kept open.",
        [
            "Call debug_stop_session again.",
            "If it keeps failing, the operator checks the board and the OpenOCD version."
        ],
        ["Do not assume the target is halted."]
    ),
    entry!(
        "recovery_requires_physical_check",
        "The incident needs a person to check the bench; an agent cannot clear it on its own word.",
        [
            "Ask the operator to look at the board.",
            "Pass their words verbatim as operator_statement, or let them run the operator_command."
        ],
        [
            NO_BYPASS,
            "Do not write an operator_statement the operator did not give."
        ]
    ),
    entry!(
        "operator_confirmation_required",
        "Recovery releases a quarantined bench only when the operator confirms its state.",
        [
            "Check the board, then run `agentic-hil recover --confirm-safe-state --quarantine-id <id>`."
        ],
        []
    ),
    entry!(
        "quarantine_id_required",
        "Recovery must name the incident it recovers.",
        [
            "Read the quarantine_id from `agentic-hil lease-status` and pass it with --quarantine-id."
        ],
        []
    ),
    entry!(
        "resource_not_quarantined",
        "No incident is open on this bench, so there is nothing to recover.",
        ["Read `agentic-hil lease-status`; use the bench."],
        []
    ),
    entry!(
        "quarantine_changed",
        "The open incident is not the one named: it changed since it was read.",
        ["Read `agentic-hil lease-status` again and recover the incident it names."],
        []
    ),
    entry!(
        "config_changed",
        "The configuration changed since the incident was recorded.",
        [
            "Compare recorded_config_sha256 with current_config_sha256.",
            "If the change is intended, recover with --accept-config-change (accept_config_change over MCP)."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "recovery_audit_failed",
        "The recovery ledger could not be written, so the incident stays open.",
        ["Fix the state root (space, permissions), then run the same recovery again."],
        [NO_STATE_EDIT]
    ),
    entry!(
        "recovery_persist_failed",
        "The recovery was recorded in the ledger but the lease records could not be rewritten.",
        ["Run the same recovery again; it resumes with the same quarantine id."],
        [NO_STATE_EDIT]
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
        "run_stopped",
        "The test run ended early because a stop was requested; the step in progress finished and every session was closed.",
        [
            "Read stopped_after_step and the steps that ran; run the plan again when the bench is ready."
        ],
        []
    ),
    entry!(
        "run_failed",
        "The detached test run ended without passing.",
        ["Call test_reactor_status with the run handle for the failed step and its report."],
        []
    ),
    entry!(
        "step_failed",
        "A test plan step did not succeed.",
        [
            "Read the failed step's result in the run report; fix the firmware or the plan, then run it again."
        ],
        []
    ),
    entry!(
        "uart_expect_timeout",
        "The text or pattern a uart_expect step waited for did not arrive in time.",
        [
            "Read received_tail: it shows what the board did send.",
            "Check the baud rate and that the firmware prints the expected text; raise timeout_s only if the board is merely slow."
        ],
        [
            "Do not widen the pattern until it matches anything; the step exists to catch a wrong output."
        ]
    ),
    entry!(
        "comparator_unmet",
        "The value the step read (serial text, CAN frame or symbol) did not meet the plan's comparator.",
        [
            "Compare observed or captured_text with the comparator in the step result.",
            "Fix the firmware behaviour, or the plan if its expectation was wrong."
        ],
        ["Do not loosen the comparator just to make the run pass."]
    ),
    entry!(
        "symbol_size_mismatch",
        "The symbol a read_symbol step read is not as wide as the plan's size_bytes says.",
        ["Check the symbol's type in the firmware, then correct size_bytes or the firmware."],
        []
    ),
    entry!(
        "unexpected_stop",
        "The target stopped somewhere other than the breakpoint the plan ran to.",
        [
            "Read the stop reason and frame in the step result; a fault or another breakpoint stopped the core.",
            "Inspect the state with the debug tools before running the plan again."
        ],
        []
    ),
    entry!(
        "cleanup_failed",
        "A session the test run opened could not be closed at its end.",
        [
            "Read cleanup_errors for the session and its error.",
            "Call the matching stop tool (debug_stop_session, com_session_stop, can_session_stop) once more."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "run_worker_gone",
        "The process running this test plan ended before the run did; its devices were freed when it died.",
        [
            "Read the run's last progress with test_reactor_status and check the board's state.",
            "Run the plan again once the board is known to be safe."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "run_worker_failed",
        "The worker process of a detached test run ended before it registered the run.",
        ["Read worker_output for the reason, fix it, then start the run again."],
        []
    ),
    entry!(
        "run_worker_unresponsive",
        "The worker of a detached test run did not take its devices in time; a stop was requested for it.",
        [
            "Follow the handle with test_reactor_status; it ends once it reads the stop.",
            "Check for another owner holding the devices."
        ],
        []
    ),
    entry!(
        "run_state_invalid",
        "A test run's record under the state root cannot be read.",
        ["Run `agentic-hil doctor` to check the state root, then ask again."],
        [NO_STATE_EDIT]
    ),
    entry!(
        "junit_xml_requires_synchronous_run",
        "JUnit XML is written at a run's end, so it cannot be asked of a detached run.",
        [
            "Drop --detach to get the JUnit XML, or drop --junit-xml and read the run's report later."
        ],
        []
    ),
    entry!(
        "schema_exists",
        "The output file already exists.",
        ["Pass --force to replace it, or choose another path."],
        []
    ),
    entry!(
        "mcp_config_conflict",
        "The agent host's file already registers an agentic-hil server that agentic-hil did not write; it was left as it was.",
        [
            "Compare that entry with the output of `agentic-hil mcp-config`.",
            "Keep it, or run agent-install again with --force to replace it."
        ],
        ["Do not delete the host's file to get past this; it holds the operator's other servers."]
    ),
    entry!(
        "agent_mcp_config_invalid",
        "The agent host's registration file is not plain JSON (or its marker lines are unmatched), so it cannot be edited without losing something.",
        [
            "Repair the file, or add the entry by hand from `agentic-hil mcp-config`.",
            "Then run agent-install again."
        ],
        []
    ),
    entry!(
        "skill_conflict",
        "The host's skills directory already holds an agentic-hil skill that agentic-hil did not write.",
        ["Move that file away, or run again with --force to replace it."],
        []
    ),
    entry!(
        "skill_exists",
        "The --target file already exists and agentic-hil did not write it.",
        ["Pass --force to replace it, or name another --target."],
        []
    ),
    entry!(
        "unsupported_agent",
        "This agent host has no place for what was asked (for example no user-level skills directory).",
        ["Name a file with --target, or use agent-install, which registers the MCP server alone."],
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
        "com_port_reserved_for_power_supply",
        "The port is the serial link of a configured power supply; only the supply's own tools use it.",
        [
            "Use power_supply_status, power_supply_set, power_supply_output or power_supply_cycle for the supply.",
            "For the board's console, use the com_ports entry of the board's own adapter."
        ],
        [
            "Do not open the port another way: the supply would read bytes nobody meant for it.",
            NO_CONFIG_EDIT
        ]
    ),
    entry!(
        "permission_denied:power_supply_limits",
        "A write on this supply channel is refused because the configuration sets no limit for it; the refusal names the missing keys.",
        [
            "Report every key in `missing_limits` and stop.",
            "Only the operator writes a supply's limits, by hand, then restarts the server; power_supply_status still reads it."
        ],
        [
            "Do not propose a limit from the supply's range, its present set point or a datasheet.",
            NO_BYPASS
        ]
    ),
    entry!(
        "power_supply_identity_mismatch",
        "The unit on the supply's port reports a serial other than the configured idn_serial: another unit is connected.",
        [
            "Check which supply is cabled to the port and connect the configured unit.",
            "If the unit was replaced on purpose, the operator writes its idn_serial and checks that the limits still fit."
        ],
        [
            "Do not drive this unit through another entry or another way.",
            NO_CONFIG_EDIT
        ]
    ),
    entry!(
        "power_supply_identity_unknown",
        "The unit reports a model or firmware this build has no verified record for, so only its identity was asked.",
        [
            "Report the reported `model` and `firmware` and stop.",
            "Check that the supply on this port is the type the configuration names."
        ],
        [
            "Do not change the entry's `type` to get the call through.",
            NO_BYPASS
        ]
    ),
    entry!(
        "power_supply_limit_exceeded",
        "A requested or stored set point is above the channel's effective limit (the lower of the supply's and the channel's), so nothing was written.",
        [
            "Ask for a value at or below `limit`; when a stored set point is too high, set it within the limit first.",
            "If the task needs more, report it and stop: only the operator raises a limit."
        ],
        [
            "Do not raise the limit yourself or drive the supply another way.",
            NO_CONFIG_EDIT
        ]
    ),
    entry!(
        "power_supply_no_reply",
        "The supply did not answer (or its port did not open). Before any write nothing changed; after one the unit's state is unknown.",
        [
            "Read `cause`, `backend_error` and `last_known_output`.",
            "Without a write, check the cable and the port, then call power_supply_status once.",
            "After a write, the operator checks the set points and output on the unit itself before the bench is used again."
        ],
        [
            "Do not retry a write in a loop: a write without an answer may have been applied.",
            NO_BYPASS
        ]
    ),
    entry!(
        "power_supply_readback_mismatch",
        "The supply accepted a write but reads back a different value or output state; the comparison is exact.",
        [
            "Report `requested` and `read_back`, then call power_supply_status to read the whole channel.",
            "A supply that does not hold what it is told is for the operator to look at."
        ],
        ["Do not write an offset value to land on the request, and do not retry in a loop."]
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
        "bridge_process_reap_failed",
        "The CAN bridge process could not be reaped when its session was stopped; the session is kept.",
        [
            "Call can_session_stop again.",
            "If it keeps failing, ask the operator to check the bridge process."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "bridge_safe_state_unconfirmed",
        "The CAN session ended but its bridge never confirmed that it left the bus in a safe state (it crashed, or answered close wrongly).",
        [
            "Check the bus and the adapter behind the bridge before opening another session.",
            "Read `cleanup_reasons`."
        ],
        ["Do not assume the adapter stopped transmitting."]
    ),
    entry!(
        "can_adapter_close_failed",
        "The CAN adapter refused to close cleanly.",
        ["Call can_session_stop again."],
        [NO_BYPASS]
    ),
    entry!(
        "can_adapter_invalid_request",
        "A request could not be written to the CAN bridge.",
        ["Stop the session and start it again."],
        []
    ),
    entry!(
        "can_adapter_invalid_response",
        "The CAN bridge answered outside protocol v2 (extra keys, wrong types, malformed frames); what it did is unknown.",
        ["Stop the session, then ask the operator to fix or replace the bridge."],
        ["Do not trust frames from a bridge that answers malformed responses."]
    ),
    entry!(
        "can_adapter_not_found",
        "The CAN bridge executable named by the configuration is no longer a file.",
        ["Ask the operator to reinstall the bridge or correct `can_buses.<id>.executable`."],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "can_adapter_open_failed",
        "The CAN adapter could not be opened; with `channel_open` it may already have been on the bus.",
        ["Check the adapter and its cabling, then call can_session_start again."],
        [NO_BYPASS]
    ),
    entry!(
        "can_adapter_process_exited",
        "The CAN bridge process is not running (it exited or crashed); `stderr_tail` holds its last words.",
        ["Call can_session_stop to reap it and release the bus, then can_session_start."],
        [NO_BYPASS]
    ),
    entry!(
        "can_adapter_process_start_failed",
        "The CAN bridge executable could not be started.",
        ["Ask the operator to check the bridge executable and its permissions."],
        []
    ),
    entry!(
        "can_adapter_protocol_unsupported",
        "The CAN bridge's open answer is not protocol v2; it was closed.",
        ["Ask the operator for a bridge that speaks protocol v2."],
        []
    ),
    entry!(
        "can_adapter_timeout",
        "The CAN bridge did not answer within the bus's timeout_s.",
        ["Check the bridge and the adapter behind it, then call can_session_start again."],
        [NO_BYPASS]
    ),
    entry!(
        "can_backend_not_available",
        "This host cannot reach the adapter kind: the kernel has no SocketCAN support, or the bus names a PCAN-Basic channel, which this build does not load.",
        [
            "On Linux use the adapter's SocketCAN interface name (can0, …) as the channel.",
            "Run `agentic-hil doctor`."
        ],
        []
    ),
    entry!(
        "can_broker_authentication_failed",
        "The bus broker refused this server: it does not run as the broker's user or did not present the broker's key.",
        ["Ask the operator whether another user's program holds the bus."],
        [NO_STATE_EDIT]
    ),
    entry!(
        "can_broker_disconnected",
        "The broker of the shared bus went away; this participant's queue is gone.",
        ["Call can_session_stop, then can_session_start to attach to a new broker."],
        []
    ),
    entry!(
        "can_broker_invalid_message",
        "The bus broker and this server did not understand each other.",
        ["Call can_session_stop, then can_session_start again."],
        []
    ),
    entry!(
        "can_broker_protocol_mismatch",
        "The running bus broker speaks another protocol version (another build of this program).",
        ["Wait for the other participants to stop, then call can_session_start again."],
        []
    ),
    entry!(
        "can_broker_stopping",
        "The bus broker was closing the bus when this participant asked to attach.",
        ["Call can_session_start again."],
        []
    ),
    entry!(
        "can_broker_unavailable",
        "No broker for the shared bus could be reached or started; nothing was attached.",
        [
            "Call can_session_start again; if it persists, ask the operator to run `agentic-hil doctor`."
        ],
        [NO_STATE_EDIT]
    ),
    entry!(
        "can_broker_wrong_bus",
        "The broker found at this bus's rendezvous owns another bus.",
        ["Call can_session_start again."],
        [NO_STATE_EDIT]
    ),
    entry!(
        "can_bus_gated",
        "The shared bus's adapter failed; the broker attaches nobody until it is restarted.",
        [
            "Wait for every participant to stop (the broker then exits), then call can_session_start again."
        ],
        []
    ),
    entry!(
        "can_bus_incident",
        "The shared bus's adapter failed under every participant.",
        ["Call can_session_stop; check the adapter and its cabling before starting again."],
        []
    ),
    entry!(
        "can_bus_not_configured",
        "No can_buses entry has that bus_id; `configured_buses` lists the ones that exist.",
        ["Call can_buses_list and use one of its bus_id values."],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "can_channel_not_available",
        "The CAN bridge says the requested channel is not available.",
        ["Check that the adapter is plugged in, then call can_session_start again."],
        []
    ),
    entry!(
        "can_classic_frame_too_large",
        "A classic CAN frame carries at most 8 data bytes.",
        ["Send at most 8 bytes, or use an FD bus."],
        []
    ),
    entry!(
        "can_fd_frame_length_invalid",
        "An FD frame carries 0-8, 12, 16, 20, 24, 32, 48 or 64 bytes; `allowed_lengths` lists them.",
        ["Pad the payload to the next allowed length."],
        []
    ),
    entry!(
        "can_fd_remote_frame_unsupported",
        "CAN FD has no remote frames.",
        ["Send a data frame (rtr false)."],
        []
    ),
    entry!(
        "can_interface_down",
        "The SocketCAN interface exists but is down; it was refused before a socket was bound.",
        ["Ask the operator to bring it up (`ip link set <if> up type can bitrate …`)."],
        [NO_BYPASS]
    ),
    entry!(
        "can_interface_not_found",
        "The kernel has no CAN interface of that name (or the name is not a CAN interface).",
        ["Check the adapter is plugged in and the channel name in can_buses_list."],
        []
    ),
    entry!(
        "can_listen_only_conflict",
        "A participant that may write and one that needs a silent bus cannot be attached together, and a writer cannot attach to a listen-only bus.",
        ["Wait for the conflicting participant to stop, or attach as a share that does not write."],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "can_listen_only_mode",
        "The bus is configured listen-only, so nothing may be sent on it; refused before any adapter call.",
        ["Use can_read to observe the bus."],
        ["Do not send through another tool or program."]
    ),
    entry!(
        "can_listen_only_unconfirmed",
        "The adapter opened but did not confirm listen-only; it was closed again.",
        ["Ask the operator to check the adapter's listen-only support."],
        ["Do not clear listen_only to get past this."]
    ),
    entry!(
        "can_listen_only_unsupported",
        "The adapter cannot prove listen-only (for SocketCAN the kernel does not report LISTEN-ONLY); nothing was opened.",
        [
            "Ask the operator to enable listen-only on the controller (`ip link set <if> type can listen-only on`)."
        ],
        ["Do not clear listen_only to get past this."]
    ),
    entry!(
        "can_participant_busy",
        "That participant is already attached to the bus's broker.",
        ["Use another share of the bus, or wait for the holder to stop."],
        []
    ),
    entry!(
        "can_participant_filter_violation",
        "The frame's identifier is outside this participant's share filter; nothing was sent.",
        ["Send only identifiers the share's filter accepts (can_buses_list shows it)."],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "can_participant_frame_budget_exhausted",
        "This participant used its share's max_frames budget; the broker sends and delivers nothing more for it.",
        ["Call can_session_stop, then can_session_start for a fresh budget."],
        []
    ),
    entry!(
        "can_participant_incident",
        "The broker stopped serving this participant (its queue overflowed max_buffer_frames); the bus is unaffected.",
        ["Read more often; call can_session_stop, then can_session_start."],
        []
    ),
    entry!(
        "can_participant_not_configured",
        "The bus declares no share with that participant name (or no shares at all).",
        [
            "Call the tool again with a participant from configured_participants, or without `participant` on a bus without shares."
        ],
        []
    ),
    entry!(
        "can_participant_required",
        "The bus is shared; a session must name the participant (share) it attaches as.",
        ["Call can_session_start again with `participant`."],
        []
    ),
    entry!(
        "can_read_failed",
        "Reading from the CAN adapter failed; nothing was sent.",
        ["Stop and restart the session."],
        []
    ),
    entry!(
        "can_send_failed",
        "The CAN adapter did not take the frame; whether it reached the bus is unknown.",
        [
            "Read the bus (can_read) before sending again.",
            "Stop and restart the session if it keeps failing."
        ],
        ["Do not resend blindly."]
    ),
    entry!(
        "can_session_not_owned",
        "This server's session on the bus is another participant's.",
        ["Name the participant this server started, or leave `participant` out."],
        []
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
        "interrupted",
        "The client cancelled the call; its backend was stopped and its process group killed, as at a timeout.",
        [
            "Read `hardware_state`: unknown means the backend may have touched the board, and the recovery policy settled it (see `recovery`).",
            "Call the tool again when you want the action done; nothing of the cancelled call carries over."
        ],
        [NO_BYPASS]
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
        "probe_server_open_failed",
        "The probe's gdb server did not open its port; it was stopped and its process group killed.",
        [
            "Read `server_output_tail`: the server's last lines say why it stopped.",
            "Ask the operator to close any other program that holds the probe, then call the tool again."
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
        "adapter_not_found",
        "The debug probe was not found or could not be opened, so nothing reached the target.",
        [
            "Check that the probe is plugged in and that no other program (an IDE, another debugger) holds it.",
            "Check `probe_id` with debugger_probes_list; the operator fixes the configuration if it names another probe."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "debugger_config_not_found",
        "The debugger could not find an interface or target script (or another file) the configuration names.",
        [
            "Ask the operator to check `interface_cfg` and `target_cfg` against the scripts the installed tool ships.",
            "Call debugger_info to see which executable and version runs."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "debugger_command_rejected",
        "The debugger refused a command before it opened the probe; the target was not touched.",
        [
            "Check the installed tool's version with debugger_info; the command may not exist in it.",
            "Report `rejected_commands` to the operator."
        ],
        []
    ),
    entry!(
        "target_state_unconfirmed",
        "The debugger exited without the text that proves it reached the target, so the target's state is not known.",
        [
            "Call probe_target again; if it repeats, report the debugger output to the operator.",
            "Check the backend version with debugger_info."
        ],
        ["Do not assume the operation happened."]
    ),
    entry!(
        "verify_failed",
        "The flash contents did not match the image after programming; the target holds an unknown image.",
        [
            "Flash the same image again once; if it fails again, report it: the flash may be protected or worn.",
            "Check that the image fits the target's flash and does not overlap protected regions."
        ],
        ["Do not run or debug the target as if it held the new image."]
    ),
    entry!(
        "flash_erase_failed",
        "The programmer could not erase flash; `erase_abort_point` says whether writing had begun.",
        [
            "Read `erase_abort_point.reading`: `flash_change_underway` means the flash holds a partial image.",
            "Ask the operator to check the option bytes (write or read protection) before flashing again."
        ],
        ["Do not mass-erase or change option bytes another way to get past this."]
    ),
    entry!(
        "target_type_invalid",
        "pyOCD does not know the configured target type; nothing reached the target.",
        [
            "Ask the operator to install the device pack (`install_commands`) or correct `target_type`.",
            "Then call the tool again."
        ],
        [NO_CONFIG_EDIT]
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
    entry!(
        "upgrade_in_open_run",
        "The installation is not upgraded while this server holds a run or a session.",
        [
            "Stop the run (bench_run_stop) and every COM, CAN or debug session.",
            "Then call server_upgrade again."
        ],
        []
    ),
    entry!(
        "upgrade_blocked_by_pin",
        "The installation was installed at a pinned version; upgrading would silently undo the pin.",
        [
            "Ask the operator whether the pin should go; if so they run reinstall_command in a shell."
        ],
        ["Do not reinstall around the pin without the operator's word."]
    ),
    entry!(
        "upgrade_manager_not_found",
        "Nothing records where a newer build of this installation comes from (a copied binary), or cargo is missing.",
        [
            "For a copied binary the operator runs `agentic-hil upgrade --from <new binary>`.",
            "For a cargo install, the `cargo` that installed it must sit in the install root's `bin`, beside the binary; reinstall it with that cargo."
        ],
        []
    ),
    entry!(
        "installation_in_use",
        "Another upgrade of this installation is in progress (held_by names its process).",
        ["Wait for that upgrade to finish, then check the version with `agentic-hil --version`."],
        ["Do not delete the upgrade lock file beside the binary."]
    ),
    entry!(
        "upgrade_failed",
        "The upgrade did not complete; the installed binary on disk is the one that was there before.",
        [
            "Read install (cargo's output) or the summary for the cause.",
            "The operator runs reinstall_command in a shell once the cause is fixed."
        ],
        []
    ),
    entry!(
        "installation_broken",
        "After the upgrade the installed binary does not run or does not say which version it is.",
        [
            "The operator runs reinstall_command in a shell.",
            "Restart the MCP server only after `agentic-hil --version` works."
        ],
        ["Do not restart the agent host's server before the installation runs again."]
    ),
    entry!(
        "installation_changed_after_failed_upgrade",
        "The upgrade failed, but the installed binary on disk changed before it failed; which build is there now is not known.",
        [
            "The operator runs reinstall_command in a shell.",
            "Check `agentic-hil --version` before restarting the server."
        ],
        []
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
