//! The RTT tools: a session on the debugger, channels, and bytes as the COM tools give them.

use serde_json::{Value, json};

use super::{count, flag, io, lines, list, object, text};

/// Fields the RTT tools share: the COM family's `data` and `audit_error`, and the RTT session.
pub(super) fn rtt_family() -> Value {
    let mut family = io::com_family();
    let fields = family.as_object_mut().expect("the COM family is an object");
    fields.insert("debugger".into(), text());
    fields.insert("channel".into(), text());
    fields.insert("configured_channels".into(), lines());
    fields.insert(
        "session".into(),
        json!({
            "type": ["null", "object"],
            "properties": {
                "session_active": flag(),
                "debugger": text(),
                "backend": text(),
                "started_at": text(),
                "log_path": text(),
                "control_block_address": text(),
                "channels": list(),
                "polls": count(),
                "last_error": text(),
                "defmt": object(),
            },
        }),
    );
    family
}

/// `rtt_channels_list`'s own fields.
pub(super) fn rtt_channels_list() -> Value {
    json!({
        "channels": list(),
        "control_block": object(),
        "max_buffer_bytes": count(),
        "max_write_bytes": count(),
        "poll_interval_ms": count(),
        "session_active": flag(),
    })
}

/// `rtt_write`'s own fields.
pub(super) fn rtt_write() -> Value {
    json!({
        "bytes_requested": count(),
        "max_write_bytes": count(),
    })
}

/// `rtt_read`'s own fields: `com_read`'s, and on a defmt channel the decoded frames.
pub(super) fn rtt_read() -> Value {
    let mut fields = io::com_read();
    let own = fields
        .as_object_mut()
        .expect("com_read's fields are an object");
    own.insert("frames".into(), list());
    own.insert("frames_queued".into(), count());
    own.insert("defmt".into(), object());
    fields
}
