//! Catalogue entries `artifact_changed` to `com_port_busy`.

use super::{Entry, NO_BYPASS, NO_CONFIG_EDIT, NO_STATE_EDIT};

pub(super) const ENTRIES: &[Entry] = &[
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
        "debugger_not_executable",
        "The configured debugger executable is there and this host refuses to run it: `not_executable_reason` is `permission_denied` (no execute bit, or a noexec mount) or `not_an_executable_image` (a script without a shebang, an archive, a binary for another machine). Nothing was spawned.",
        [
            "For `permission_denied`, ask the operator to restore the execute bit (`chmod +x`) or move the file off the noexec mount.",
            "For `not_an_executable_image`, ask the operator to point `debuggers.<name>.executable` at the real program for this machine.",
            "Then run `agentic-hil doctor`, which repeats the check."
        ],
        [NO_BYPASS, NO_CONFIG_EDIT]
    ),
    entry!(
        "gdb_async_unsupported",
        "The gdb `debug.gdb_executable` names refused `-gdb-set mi-async on` (`backend_error` is its answer). A debug session needs asynchronous MI to interrupt a running target, so this gdb cannot run one. The target was not connected.",
        [
            "Ask the operator to point `debug.gdb_executable` at a gdb that accepts asynchronous MI (7.8 or newer), then restart the MCP server."
        ],
        [NO_BYPASS, NO_CONFIG_EDIT]
    ),
    entry!(
        "gdb_start_failed",
        "The debug server started, and the gdb `debug.gdb_executable` names could not be started for GDB/MI (`backend_error` says why: a binary for another machine, a script without a shebang). The debug server was stopped again.",
        [
            "Ask the operator to point `debug.gdb_executable` at a gdb that runs on this host and knows the target's architecture (gdb-multiarch, arm-none-eabi-gdb), then restart the MCP server."
        ],
        [NO_BYPASS, NO_CONFIG_EDIT]
    ),
    entry!(
        "gdb_not_found",
        "A debug session needs gdb, and none is there: no gdb-multiarch or arm-none-eabi-gdb was found when the server started, or the one `debug.gdb_executable` was pinned to has gone since. Found before the debug server starts, so nothing was spawned and the board is as it was.",
        [
            "Ask the operator to install gdb (scripts/setup-debian.sh) or name it in `debug.gdb_executable`, then restart the MCP server: gdb is pinned when it starts."
        ],
        [NO_BYPASS, NO_CONFIG_EDIT]
    ),
    entry!(
        "adapter_usb_error",
        "The debug probe enumerates, but its USB link refused ST's tools (`ST-LINK error (DEV_USB_COMM_ERR)`, `Target USB comms error`); it is seen after a debug server was killed while it held the probe's USB. Nothing reached the target.",
        [
            "Do not repeat the call unchanged: the probe keeps refusing until it is reset or re-plugged.",
            "Ask the operator to reconnect the probe's USB cable (or reset the target through an OpenOCD entry for the same probe), then call probe_target."
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
        "device_access_denied",
        "`doctor` asked the kernel whether this account may open a configured serial port's node for reading and writing, and it may not: `mode`, `owner` and `group` say how the node stands. Nothing was opened.",
        [
            "Ask the operator to add this account to the node's `group` (then log in again), or to grant it with the device's udev rule.",
            "Then run `agentic-hil doctor` again."
        ],
        ["Do not run the server as root to get past this.", NO_BYPASS]
    ),
    entry!(
        "probe_inventory_incomplete",
        "Discovery saw no board on this host, and what it reads (the emulated boards under the state root, the USB serial inventory) is no authoritative count: a probe without a serial port does not show in it. Nothing was written.",
        [
            "Start the bench (`agentic-hil sim start` for the emulated board, or plug the probe in) and call the tool again.",
            "Or ask the operator to run `agentic-hil init`, which writes the starter configuration, and `agentic-hil adopt-hardware` with the board attached."
        ],
        [
            "Do not write the configuration file yourself; it is the operator's.",
            NO_CONFIG_EDIT
        ]
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
        "The run report is not JSON, or not a run report this program wrote.",
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
        "The run report could not be read (not a regular file, or no access).",
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
        "symbol_width_not_numeric",
        "A read_symbol step's comparator met a symbol that is not 1, 2, 4 or 8 bytes wide (`integer_widths`): there was no number to compare, so nothing was judged. The bytes read are in `hex`.",
        [
            "Compare a member of the object (a 1, 2, 4 or 8 byte integer) instead, or drop the comparator and check `hex`."
        ],
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
        "run_state_unwritable",
        "The runs directory under the state root (`runs_directory`) refused a write, so the run was refused before it took any device: without its record nobody could watch it or stop it by its handle.",
        [
            "Ask the operator to make `runs_directory` writable for the account the server runs as (a changed owner or mode, or a full disk), then start the run again."
        ],
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
        "junit_xml_write_failed",
        "The run happened and its report stands; only the JUnit XML could not be written where --junit-xml said. A run that failed on its own keeps its own error_type; `junit_xml_error.backend_error` says what the write answered.",
        [
            "Fix the path or the permission `junit_xml_error.backend_error` names (a directory in its place, a file where a folder should be), then run the plan again with --junit-xml if the CI job needs the file."
        ],
        ["Do not read the missing file as a passed run: the run's own report says how it went."]
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
        "agent_permissions_unreadable",
        "The agent's settings file at `path` cannot be used as it stands: it does not read, is not JSON, is not an object, or its `permissions` is not an object or `permissions.deny` not a list. It is the operator's, so it was left exactly as it was and no write refusal was added to it.",
        [
            "Have the operator repair the file in place, keeping the settings and rules it holds.",
            "Then run the same command again."
        ],
        [
            "Do not delete or replace the file to get past this: it holds the operator's own settings."
        ]
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
        "com_port_not_bound",
        "The com_ports entry names no device yet: the project declares the port, but not which of this host's serial devices it is.",
        [
            "Ask the operator to plug the board in and run `agentic-hil adopt-hardware`, or to set the entry's device (a /dev/serial/by-id name is best).",
            "Call com_ports_list to see what this host reports."
        ],
        [
            "Do not open a device that looks free instead: a serial device name is an enumeration order, not a board.",
            NO_CONFIG_EDIT
        ]
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
];
