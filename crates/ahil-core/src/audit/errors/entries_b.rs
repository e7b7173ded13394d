//! Catalogue entries `com_port_open_failed` to `installation_changed_after_failed_upgrade`.

use super::{Entry, NO_BYPASS, NO_CONFIG_EDIT, NO_STATE_EDIT};

pub(super) const ENTRIES: &[Entry] = &[
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
        "can_adapter_library_missing",
        "The bus names a PCAN-Basic channel (`PCAN_USBBUS1`, …), and this build loads no PCAN-Basic library: it reaches PEAK adapters through the kernel's SocketCAN drivers. Nothing was opened and no controller was addressed.",
        [
            "Ask the operator to name the adapter's SocketCAN interface (can0, …; `ip link` lists them) as the bus's channel.",
            "`can_buses_list` shows every bus and its adapter."
        ],
        []
    ),
    entry!(
        "can_backend_not_available",
        "This host cannot reach the adapter kind: the kernel has no SocketCAN support.",
        [
            "On Linux use the adapter's SocketCAN interface name (can0, …) as the channel.",
            "Run `agentic-hil doctor`."
        ],
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
        "can_participant_not_configured",
        "The bus declares no share with that participant name (or no shares at all).",
        [
            "Call the tool again with a participant from configured_participants, or without `participant` on a bus without shares."
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
        "can_listen_only_conflict",
        "A participant that may write and one that needs a silent bus cannot be attached together, and a writer cannot attach to a listen-only bus.",
        ["Wait for the conflicting participant to stop, or attach as a share that does not write."],
        [NO_CONFIG_EDIT]
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
        "can_participant_required",
        "The bus is shared; a session must name the participant (share) it attaches as.",
        ["Call can_session_start again with `participant`."],
        []
    ),
    entry!(
        "can_session_not_owned",
        "This server's session on the bus is another participant's.",
        ["Name the participant this server started, or leave `participant` out."],
        []
    ),
    entry!(
        "can_queue_clear_failed",
        "`can_session_start` was clearing a new session's receive queue and the adapter's read failed (`backend_result` is its answer), so the session was closed again (`cleanup_confirmed`). `frames_drained` were read off and discarded before it.",
        [
            "`retry_safe` is true when nothing was drained: call can_session_start again; if the clear keeps failing, start with `clear_rx_queue: false` and read with can_read."
        ],
        []
    ),
    entry!(
        "can_queue_clear_limit",
        "`can_session_start` was clearing the receive queue and frames arrived as fast as they were read: the adapter never ran dry within the bounded drain. The bus is busy, which is not a fault. A session this call had just opened was closed again (`cleanup_confirmed`); one that was already active stays open.",
        [
            "On a bus that never falls silent, call can_session_start with `clear_rx_queue: false`, then can_read with `until_id` for the frame the test waits for."
        ],
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
        "sim_failed",
        "The emulated board's supervisor could not run the board, or QEMU ended with an error.",
        [
            "Read `summary` for QEMU's own words.",
            "Run `agentic-hil sim status`, then `agentic-hil sim start` again."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "sim_start_failed",
        "The emulated board did not start: QEMU or its supervisor failed before the board was ready.",
        [
            "Read `summary` for what failed.",
            "Run `agentic-hil doctor` to check the qemu debugger's executable, then start it again."
        ],
        ["Do not start QEMU by hand beside the supervisor: the gate would not know the board."]
    ),
    entry!(
        "sim_stop_failed",
        "The emulated board could not be stopped; it may still run.",
        [
            "Run `agentic-hil sim status` to see whether it still runs.",
            "Run `agentic-hil sim stop` again."
        ],
        ["Do not kill QEMU by hand while an agent's session may hold the board."]
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
