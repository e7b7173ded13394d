//! CAN adapters behind one trait, and the bus that pumps received frames into a capped queue.
//!
//! An adapter is opened with the bus settings (bitrate, FD, listen-only request) and then only sends,
//! reads and closes. Two exist: the process bridge (`bridge.rs`, protocol v2 over a child's stdin and
//! stdout) and SocketCAN (`socketcan.rs`; PEAK adapters on Linux are SocketCAN devices through the
//! kernel's peak_usb / peak_pci drivers). Listen-only is never assumed: the bridge must echo it in its
//! open result, SocketCAN must show it in the kernel's own link report, else the open is refused.

pub mod bridge;
pub mod bus;
pub mod frame;
pub mod link;
pub mod socketcan;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::Contact;
pub use bus::{Bus, Taken};
pub use frame::{Frame, FrameError};

/// What an open asks of the adapter.
#[derive(Debug, Clone)]
pub struct OpenRequest {
    pub channel: String,
    pub bitrate: u64,
    pub fd: bool,
    pub data_bitrate: Option<u64>,
    pub receive_own_messages: bool,
    /// The controller must stay silent on the bus (no ACK, no error frames); the adapter must prove it.
    pub listen_only: bool,
    pub poll_interval: Duration,
    /// How long the adapter may take to answer one request.
    pub timeout: Duration,
}

#[cfg(test)]
impl OpenRequest {
    /// A classic 500 kbit/s open of `channel` polled every 10 ms, own frames not echoed, for the
    /// adapters' tests.
    pub(crate) fn classic(channel: &str, listen_only: bool, timeout: Duration) -> Self {
        Self {
            channel: channel.into(),
            bitrate: 500_000,
            fd: false,
            data_bitrate: None,
            receive_own_messages: false,
            listen_only,
            poll_interval: Duration::from_millis(10),
            timeout,
        }
    }
}

/// Which adapter to open.
#[derive(Debug, Clone)]
pub enum AdapterSpec {
    /// A bridge executable speaking protocol v2 (already resolved against the workspace).
    Bridge { executable: PathBuf },
    /// A Linux network interface (`can0`, `vcan0`; PEAK adapters included).
    SocketCan,
}

/// A successful open.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The backend's name for itself.
    pub backend: String,
    /// Whether listen-only was proven (by the bridge's echo or the kernel's report).
    pub listen_only_confirmed: bool,
    /// What the adapter reported, for `adapter_result`.
    pub report: Map<String, Value>,
}

/// The end of a session on the adapter.
#[derive(Debug, Clone, Default)]
pub struct Closed {
    /// The adapter confirmed it left the bus in a safe state.
    pub safe_state_confirmed: bool,
    /// The adapter's process (if any) was reaped; true for in-process adapters.
    pub process_reaped: bool,
    /// What the adapter reported.
    pub report: Map<String, Value>,
}

/// One adapter, open on its channel.
/// Methods take `&self`: a send must not wait behind the pump's read that is waiting for frames.
pub trait Adapter: Send + Sync {
    /// `process` or `socketcan`.
    fn kind(&self) -> &'static str;
    /// Hand one frame to the adapter. Success means accepted for transmission, not acknowledged.
    fn send(&self, frame: &Frame) -> Result<Map<String, Value>, CanError>;
    /// Up to `max` frames; waits at most `wait` for the first.
    fn read(&self, max: usize, wait: Duration) -> Result<Vec<Frame>, CanError>;
    /// Leave the bus. Never fails: what could not be confirmed is said in [`Closed`].
    fn close(&self) -> Closed;
}

/// Open `spec` on `request.channel`.
pub fn open(
    spec: &AdapterSpec,
    request: &OpenRequest,
) -> Result<(Box<dyn Adapter>, Opened), CanError> {
    match spec {
        AdapterSpec::Bridge { executable } => bridge::Bridge::open(executable, request)
            .map(|(b, o)| (Box::new(b) as Box<dyn Adapter>, o)),
        AdapterSpec::SocketCan => {
            socketcan::SocketCan::open(request).map(|(s, o)| (Box::new(s) as Box<dyn Adapter>, o))
        }
    }
}

/// A CAN adapter failure. Each variant maps to one public `error_type`, except a bridge's own refusal,
/// which carries the bridge's words (see [`CanError::public_error_type`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CanError {
    #[error("the bridge executable could not be started: {0}")]
    ProcessStartFailed(String),
    #[error("the bridge process is not running{}", tail_note(.stderr_tail))]
    ProcessExited { stderr_tail: String },
    /// The bridge died after a request was written and before it answered.
    #[error("the bridge process ended while `{method}` was in flight{}", tail_note(.stderr_tail))]
    ExitedMidRequest {
        method: &'static str,
        stderr_tail: String,
    },
    #[error("the request could not be written to the bridge: {0}")]
    InvalidRequest(String),
    #[error("the bridge gave no answer to `{method}` within {limit:?}")]
    Timeout {
        method: &'static str,
        limit: Duration,
        stderr_tail: String,
    },
    #[error("the bridge's answer to `{method}` breaks protocol v2: {detail}")]
    InvalidResponse {
        method: &'static str,
        detail: String,
    },
    #[error("the bridge does not speak protocol v2: {0}")]
    ProtocolUnsupported(String),
    /// The bridge answered `ok: false` (or an `error` object).
    #[error("the bridge refused `{method}`: {summary}")]
    Refused {
        method: &'static str,
        summary: String,
        body: Map<String, Value>,
        /// The bridge said the channel was already on the bus when it failed.
        channel_open: bool,
    },
    #[error("{0}")]
    ListenOnlyUnsupported(String, Value),
    #[error("{0}")]
    ListenOnlyUnconfirmed(String),
    #[error("{0}")]
    InterfaceNotFound(String),
    #[error("{0}")]
    InterfaceDown(String),
    #[error("{0}")]
    BackendNotAvailable(String),
    #[error("the adapter could not be opened: {0}")]
    OpenFailed(String),
    #[error("the adapter did not take the frame: {0}")]
    SendFailed(String),
    #[error("reading from the adapter failed: {0}")]
    ReadFailed(String),
}

fn tail_note(tail: &str) -> String {
    let line = tail.lines().rev().find(|l| !l.trim().is_empty());
    line.map(|l| format!(" (it said: {})", l.trim()))
        .unwrap_or_default()
}

impl CanError {
    /// The public `error_type` of our own failures; a bridge refusal falls back to its method's.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::ProcessStartFailed(_) => "can_adapter_process_start_failed",
            Self::ProcessExited { .. } | Self::ExitedMidRequest { .. } => {
                "can_adapter_process_exited"
            }
            Self::InvalidRequest(_) => "can_adapter_invalid_request",
            Self::Timeout { .. } => "can_adapter_timeout",
            Self::InvalidResponse { .. } => "can_adapter_invalid_response",
            Self::ProtocolUnsupported(_) => "can_adapter_protocol_unsupported",
            Self::Refused { method: "send", .. } | Self::SendFailed(_) => "can_send_failed",
            Self::Refused { method: "read", .. } | Self::ReadFailed(_) => "can_read_failed",
            Self::Refused {
                method: "close", ..
            } => "can_adapter_close_failed",
            Self::Refused { .. } | Self::OpenFailed(_) => "can_adapter_open_failed",
            Self::ListenOnlyUnsupported(..) => "can_listen_only_unsupported",
            Self::ListenOnlyUnconfirmed(_) => "can_listen_only_unconfirmed",
            Self::InterfaceNotFound(_) => "can_interface_not_found",
            Self::InterfaceDown(_) => "can_interface_down",
            Self::BackendNotAvailable(_) => "can_backend_not_available",
        }
    }

    /// The `error_type` to publish: a bridge refusal keeps the bridge's own snake_case word.
    pub fn public_error_type(&self) -> String {
        if let Self::Refused { body, .. } = self
            && let Some(word) = body.get("error_type").and_then(Value::as_str)
            && !word.is_empty()
            && word.len() <= 64
            && word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return word.to_owned();
        }
        self.error_type().to_owned()
    }

    /// What is known about the bus: refusals before the channel went on the bus prove no contact.
    pub fn contact(&self) -> Contact {
        match self {
            Self::ProcessStartFailed(_) => Contact::none("the bridge never started"),
            Self::ProcessExited { .. } => {
                Contact::none("the bridge was not running, so the request was not sent")
            }
            Self::Refused {
                channel_open: false,
                method: "open",
                ..
            } => Contact::none("the bridge refused the open before its channel went on the bus"),
            Self::ListenOnlyUnsupported(..) => {
                Contact::none("the kernel's link report was read before anything was opened")
            }
            Self::InterfaceNotFound(_) | Self::InterfaceDown(_) | Self::BackendNotAvailable(_) => {
                Contact::none("the interface was refused before a socket was bound")
            }
            Self::ReadFailed(_) | Self::Refused { method: "read", .. } => {
                Contact::none("a read only takes frames the adapter already received")
            }
            _ => Contact::Possible,
        }
    }

    /// Captured stderr of a bridge, where the failure carries it.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            Self::ProcessExited { stderr_tail }
            | Self::ExitedMidRequest { stderr_tail, .. }
            | Self::Timeout { stderr_tail, .. }
                if !stderr_tail.is_empty() =>
            {
                Some(stderr_tail)
            }
            _ => None,
        }
    }
}
