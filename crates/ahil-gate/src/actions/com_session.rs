//! `com_session_start` and `com_session_stop`: open a configured port and hold it (with its device
//! lock) across calls, then give both back.

use super::args::Args;
use crate::ErrorType;
use crate::catalogue::ToolId;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use ahil_config::ComPort;
use ahil_drivers::Contact;
use ahil_drivers::process::CancelFlag;
use ahil_drivers::serial::{OpenOptions, Port, RxTap, SerialError};
use serde_json::{Value, json};

use super::com_ports::{device, no_device, port_entry};
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::audit::Audit;
use crate::envelope::Outcome;
use crate::ownership::device_keys;
use crate::policy::Action;
use crate::serial::{Encoding, Session, Sessions, identity, text::to_hex};
use crate::session_lifecycle::{
    self, Begun, Host, SessionClass, SessionKind, SessionLog, Stopping,
};

/// Generous: identity checks read sysfs and the open itself is quick.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// How long the reader blocks before it looks at its stop flag.
const READER_POLL: Duration = Duration::from_millis(50);

/// The encoding of an entry, or `config_invalid` naming the key.
pub fn encoding_of(tool: &str, port_id: &str, port: &ComPort) -> Result<Encoding, Box<Outcome>> {
    Encoding::parse(&port.encoding).ok_or_else(|| {
        Box::new(
            Outcome::refused(
                tool,
                ErrorType::ConfigInvalid,
                format!("com_ports.{port_id}.encoding names an encoding this build does not know."),
            )
            .with("encoding", port.encoding.as_str())
            .with_remediation(["The operator sets the encoding to utf-8, latin-1 or ascii."])
            .not_contacted(),
        )
    })
}

/// What the start job needs, owned so the blocking job can carry it.
struct Start {
    port_id: String,
    device: String,
    /// The configured key first, then the host keys of the node the device name leads to now.
    lock_keys: Vec<String>,
    clear: bool,
    options: OpenOptions,
    encoding: Encoding,
    close_limit: Duration,
    expected: Option<identity::Expected>,
    host: Host<Sessions>,
}

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    super::serves(ctx.tool, &[ToolId::ComSessionStart, ToolId::ComSessionStop])?;
    let (port_id, port) = port_entry(ctx)?;
    // A supply's serial link carries its commands only: a second writer would interleave bytes.
    if ctx.tool == ToolId::ComSessionStart
        && let Some(supply) =
            super::power::supply_holding(&ctx.loaded.config, &ctx.snapshot.nodes, port_id)
    {
        return Err(Box::new(super::power::port_reserved(
            ctx.tool.name(),
            port_id,
            supply,
        )));
    }
    let resources = vec![port.lock_key(port_id)];
    let sessions = Arc::clone(&ctx.serial);
    if ctx.tool == ToolId::ComSessionStop {
        let work = Work::Driver(DriverJob {
            deadline: close_limit(port) + Duration::from_secs(5),
            if_abandoned: Contact::Possible,
            run: Box::new({
                let port_id = port_id.to_owned();
                move |_cancel| stop(&sessions, &port_id)
            }),
        });
        return Ok(Plan {
            action: Action::ComStop,
            device: Some(device(port_id, port)),
            also: Vec::new(),
            resources,
            work,
        });
    }
    let encoding = encoding_of(ctx.tool.name(), port_id, port)?;
    let Some(path) = port.device.clone() else {
        return Err(Box::new(no_device(
            ctx.tool,
            port_id,
            "there is nothing to open",
        )));
    };
    // The session opens the node its name resolves to now, and holds that very node's keys: a
    // link moved after this point cannot make it open a node it did not lock.
    let node = ctx.snapshot.nodes.of(&path);
    let mut lock_keys =
        device_keys::with_host_keys(&ctx.loaded.config, &resources, &ctx.snapshot.nodes);
    for key in device_keys::node_keys(&node) {
        if !lock_keys.contains(&key) {
            lock_keys.push(key);
        }
    }
    let start = Start {
        port_id: port_id.to_owned(),
        device: path,
        lock_keys,
        clear: ctx.args.arg_bool("clear_buffer").unwrap_or(true),
        options: open_options(port, node),
        encoding,
        close_limit: close_limit(port),
        expected: identity::expected(&ctx.loaded.config, port_id, port),
        host: Host::new(Audit::for_config(ctx.loaded), ctx.ownership, &sessions),
    };
    let action =
        session_lifecycle::start_action(port.permissions, Action::ComRead, Action::ComWrite);
    Ok(Plan {
        action,
        device: Some(device(port_id, port)),
        also: Vec::new(),
        resources,
        work: Work::Driver(DriverJob {
            deadline: START_DEADLINE,
            if_abandoned: Contact::Possible,
            run: Box::new(move |cancel| start.run(&cancel)),
        }),
    })
}

/// The reader's tap that logs each received chunk to `log_name`, for a COM session and a capture.
pub(super) fn rx_tap(audit: &Audit, log_name: &str, encoding: Encoding) -> RxTap {
    let mut log = RxLog {
        audit: audit.clone(),
        log_name: log_name.to_owned(),
        encoding,
        mask: crate::audit::StreamMask::default(),
    };
    Box::new(move |bytes: &[u8]| {
        // The reader's chunks split lines wherever the device paused: each is masked in the
        // context of the stream before it, and an unfinished end that could still become a
        // credential waits for the next chunk (a key id or `user:pass@host` is one only once
        // whole), so the mirror shows no credential in pieces.
        // The record counts the bytes it shows: a held chunk, or a credential's length, is not
        // told apart from the masked text.
        let shown = log.mask.next(bytes);
        if !shown.is_empty() {
            log.append(&shown);
        }
    })
}

/// A received stream's passive log: what the tap holds between chunks.
struct RxLog {
    audit: Audit,
    log_name: String,
    encoding: Encoding,
    mask: crate::audit::StreamMask,
}

impl RxLog {
    fn append(&self, shown: &[u8]) {
        // Passive lines only reach the workspace mirror; a failed append loses log text, never
        // received bytes (they are in the ring already).
        let _ = self.audit.append_passive(
            &self.log_name,
            &json!({
                "direction": "rx",
                "time": ahil_config::time::now_millis(),
                "bytes": shown.len(),
                "hex": to_hex(shown),
                "text": self.encoding.decode(shown),
            }),
        );
    }
}

impl Drop for RxLog {
    /// The reader is done: the word still held back is logged as it reads.
    fn drop(&mut self) {
        let rest = self.mask.finish();
        if !rest.is_empty() {
            self.append(&rest);
        }
    }
}

/// How the serial driver opens `port` at `node`, the node its name resolved to when the call was
/// planned (so the device opened is the one locked): the same for a COM session and a capture.
pub(super) fn open_options(port: &ComPort, node: String) -> OpenOptions {
    OpenOptions {
        device: node,
        baud: u32::try_from(port.baudrate).unwrap_or(u32::MAX),
        assert_dtr: port.assert_dtr,
        assert_rts: port.assert_rts,
        max_buffer_bytes: usize::try_from(port.max_buffer_bytes).unwrap_or(usize::MAX),
        write_timeout: Duration::try_from_secs_f64(port.write_timeout_s)
            .unwrap_or(Duration::from_secs(1)),
        reader_poll: READER_POLL,
    }
}

/// max(1 s, timeout_s + 0.5 s): how long a stop waits for the reader.
fn close_limit(port: &ComPort) -> Duration {
    Duration::try_from_secs_f64(port.timeout_s + 0.5)
        .unwrap_or(Duration::from_secs(1))
        .max(Duration::from_secs(1))
}

impl Start {
    fn run(self, cancel: &CancelFlag) -> Acted {
        const TOOL: ToolId = Opening::CLASS.start_tool();
        if let Some(existing) = self.host.sessions.get(&self.port_id) {
            if existing.port.is_alive() {
                if self.clear {
                    existing.port.clear();
                }
                return Acted {
                    outcome: Outcome::ok(TOOL, "The COM port session was already active.")
                        .with("port_id", self.port_id.as_str())
                        .with("already_active", true)
                        .with("session", existing.describe(true))
                        .with("identity", existing.identity.clone())
                        .with_log(&existing.log.path),
                    contact: Some(Contact::none(
                        "the open session was reused; nothing was sent",
                    )),
                };
            }
            // A session whose reader died is replaced.
            let _ = stop(&self.host.sessions, &self.port_id);
        }
        let identity = match identity::verify_on_host(
            TOOL.name(),
            &self.port_id,
            &self.device,
            self.expected.as_ref(),
        ) {
            Ok(identity) => identity,
            Err(refusal) => {
                return Acted::new(
                    *refusal,
                    Contact::none("the identity check only reads sysfs"),
                );
            }
        };
        let host = self.host.clone();
        session_lifecycle::start(
            Opening {
                start: self,
                identity,
            },
            &host,
            cancel,
        )
    }
}

/// A start past its identity check: the COM port as a session kind.
struct Opening {
    start: Start,
    identity: Value,
}

impl SessionKind for Opening {
    type Device = Port;
    const CLASS: SessionClass = SessionClass::Com;

    fn holds(&self) -> (Cow<'_, str>, &[String]) {
        (Cow::from(&self.start.port_id), &self.start.lock_keys)
    }

    fn start_fields(&self) -> Value {
        json!({"port_id": self.start.port_id, "device": self.start.device})
    }

    fn open(&mut self, log: &SessionLog) -> Result<Port, Box<Acted>> {
        let start = &self.start;
        let tap = rx_tap(&log.audit, &log.name, start.encoding);
        let port = Port::open(&start.options, Some(tap)).map_err(|err| {
            Box::new(Acted::new(
                open_refusal(&start.port_id, &start.device, &err).with_log(&log.path),
                err.contact(),
            ))
        })?;
        if start.clear {
            port.clear();
        }
        Ok(port)
    }

    /// Closed and its reader joined before the refusal answers: a port only told to stop keeps its
    /// exclusive open until its reader notices, and the next start would find it busy.
    fn close_unregistered(&self, port: Port) {
        let _ = port.close(self.start.close_limit);
    }

    fn register(self, port: Port, begun: Begun) -> Option<Acted> {
        let Self { start, identity } = self;
        let session = Session {
            port_id: start.port_id.clone(),
            port,
            device: start.device.clone(),
            log: begun.log,
            started_at: ahil_config::time::now_millis(),
            encoding: start.encoding,
            close_limit: start.close_limit,
            identity: identity.clone(),
            shown: std::sync::Mutex::default(),
            locks: begun.locks,
        };
        let session = start.host.sessions.register_opened(session, |refused| {
            let _ = refused.port.close(refused.close_limit);
        })?;
        Some(Acted {
            outcome: Outcome::ok(Self::CLASS.start_tool(), "COM port session started.")
                .with("port_id", start.port_id.as_str())
                .with("already_active", false)
                .with("session", session.describe(true))
                .with("identity", identity)
                .with_log(&session.log.path),
            // Opening a tty drives its modem lines; on a real adapter that reaches the board.
            contact: Some(Contact::Made),
        })
    }
}

/// A start of a session on `device` past its checks, for the lifecycle's tests.
#[cfg(test)]
pub(super) fn test_kind(
    port_id: &str,
    device: &str,
    lock_keys: Vec<String>,
    host: &Host<Sessions>,
) -> impl SessionKind + use<> {
    Opening {
        start: Start {
            port_id: port_id.to_owned(),
            device: device.to_owned(),
            lock_keys,
            clear: true,
            options: OpenOptions {
                device: device.to_owned(),
                baud: 115_200,
                assert_dtr: false,
                assert_rts: false,
                max_buffer_bytes: 4096,
                write_timeout: Duration::from_secs(1),
                reader_poll: READER_POLL,
            },
            encoding: Encoding::Utf8,
            close_limit: Duration::from_secs(1),
            expected: None,
            host: host.clone(),
        },
        identity: Value::Null,
    }
}

/// The refusal of a port that would not open, with the likely causes of its kind of failure.
fn open_refusal(port_id: &str, device: &str, err: &SerialError) -> Outcome {
    let outcome = Outcome::refused(
        ToolId::ComSessionStart,
        ErrorType::layer(err.error_type()),
        err.to_string(),
    )
    .with("port_id", port_id)
    .with("configured_device", device)
    .not_contacted();
    if err.error_type() == "com_port_busy" {
        outcome
            .with_causes(["another program (a terminal, another agentic-hil) has the port open"])
            .with_remediation(["Close the other program, or call com_session_stop where it is held, then start again."])
    } else {
        outcome
            .with_causes([
                "the adapter is not plugged in",
                "the device name moved on replug",
                "this user may not open the device",
            ])
            .with_remediation(["Call com_ports_list to see the host's ports, then ask the operator to fix the entry."])
    }
}

/// Stops the session on `port_id`: reader stopped, port closed, lock released, log closed.
pub fn stop(sessions: &Sessions, port_id: &str) -> Acted {
    const TOOL: ToolId = ToolId::ComSessionStop;
    let stopping = Stopping::new(TOOL, "port_id", port_id);
    let Some(session) = sessions.get(port_id) else {
        return stopping.not_active("COM port session was not active.");
    };
    if let Err(err) = session.port.close(session.close_limit) {
        return Acted {
            outcome: Outcome::refused(TOOL, ErrorType::layer(err.error_type()), err.to_string())
                .with("port_id", port_id)
                .with("session", session.describe(true))
                .with_remediation(["The session is kept; call com_session_stop again to retry."])
                .with_log(&session.log.path),
            contact: Some(err.contact()),
        };
    }
    stopping.stopped(
        "COM port session stopped.",
        sessions,
        &session.log,
        &session.locks,
        session.describe(false),
        "closing a port sends nothing",
    )
}

/// Setting the envelope's `log_path` in a builder chain.
pub(super) trait WithLog {
    fn with_log(self, path: &str) -> Self;
}

impl WithLog for Outcome {
    fn with_log(mut self, path: &str) -> Self {
        self.log_path = Some(path.to_owned());
        self
    }
}
