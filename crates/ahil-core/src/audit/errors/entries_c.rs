//! Catalogue entries of the RTT tools (ours alone).

use super::{Entry, NO_BYPASS, NO_CONFIG_EDIT};

pub(super) const ENTRIES: &[Entry] = &[
    entry!(
        "rtt_expect_timeout",
        "The text or pattern an rtt_expect step waited for did not arrive on its RTT channel in time.",
        [
            "Read received_tail: it shows what the firmware did write on the channel.",
            "Check that the firmware writes the expected text to that up channel; raise timeout_s only if it is merely slow."
        ],
        [
            "Do not widen the pattern until it matches anything; the step exists to catch a wrong output."
        ]
    ),
    entry!(
        "rtt_not_configured",
        "The debugger entry has no rtt section, or it names no such channel, so there is nothing to read or write.",
        [
            "Call rtt_channels_list to see the channels this debugger names.",
            "Ask the operator to add the channel to the debugger's rtt section."
        ],
        [NO_CONFIG_EDIT]
    ),
    entry!(
        "rtt_channel_not_found",
        "The target's RTT control block has no buffer at the index the configuration names for this channel.",
        [
            "Check the firmware's RTT buffer counts (SEGGER_RTT_MAX_NUM_UP_BUFFERS / DOWN) against the rtt section.",
            "Ask the operator to correct the channel's index."
        ],
        []
    ),
    entry!(
        "rtt_control_block_not_found",
        "No \"SEGGER RTT\" control block was found where the rtt section says to look.",
        [
            "Check that the running firmware initialises RTT (it writes the id at start-up), then start again.",
            "Ask the operator to check rtt.control_block or rtt.scan against the ELF's _SEGGER_RTT."
        ],
        []
    ),
    entry!(
        "rtt_control_block_invalid",
        "The control block's counts, sizes or offsets cannot be right (a firmware that crashed, or memory overwritten), so it was not followed.",
        ["Reset the target, then start the session again."],
        []
    ),
    entry!(
        "rtt_memory_unavailable",
        "The target's memory could not be read or written without halting it (the board is not running, or the host refuses access to the emulator's memory).",
        [
            "Start the board (`agentic-hil sim start`) and call rtt_session_start again.",
            "On a kernel with Yama ptrace_scope above 0 the operator allows it or runs the server as the board's parent."
        ],
        [NO_BYPASS]
    ),
    entry!(
        "rtt_write_incomplete",
        "The down channel's buffer had room for only part of the bytes; the rest was not sent.",
        ["Read what the firmware answered, then send the rest."],
        ["Do not resend the whole text blindly; the first part arrived."]
    ),
];
