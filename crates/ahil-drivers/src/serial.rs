//! Serial ports: host enumeration with USB identity, and an exclusively opened port with a reader
//! thread that buffers what the device sends into a capped ring.
//!
//! The port is opened with `TIOCEXCL` and an exclusive `flock` (the same pair pyserial's
//! `exclusive=True` takes, so the reference and this build exclude each other), in raw mode at the
//! configured baud. DTR and RTS are driven as configured after the open; a pty has no modem lines and
//! answers `ENOTTY`, which is reported in [`Port::modem`], not treated as a failure.

mod enumerate;
pub(crate) mod ring;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;
use serialport::{SerialPort, TTYPort};

use crate::Contact;

pub use enumerate::{BY_ID_DIR, HostPort, enumerate, same_device, stable_names};
pub use ring::{Ring, Taken};

/// The most the reader asks for in one read.
const READ_CHUNK: usize = 4096;
/// Extra attempts for the remainder of a short write before it is reported.
const WRITE_RETRIES: usize = 3;

/// A serial failure; each variant maps to one public `error_type`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
#[cfg_attr(test, derive(strum::EnumIter))]
pub enum SerialError {
    #[error("the host's serial ports could not be listed: {detail}")]
    #[strum(serialize = "com_port_discovery_failed")]
    Discovery { detail: String },
    #[error("{device} is held by another program: {detail}")]
    #[strum(serialize = "com_port_busy")]
    Busy { device: String, detail: String },
    #[error("{device} could not be opened: {detail}")]
    #[strum(serialize = "com_port_open_failed")]
    Open { device: String, detail: String },
    #[error("the write failed after {written} bytes: {detail}")]
    #[strum(serialize = "serial_write_failed")]
    Write { detail: String, written: usize },
    #[error("only {written} of {requested} bytes were written")]
    #[strum(serialize = "serial_write_incomplete")]
    Incomplete { written: usize, requested: usize },
    #[error("the reader did not stop within {limit:?}")]
    #[strum(serialize = "com_port_close_failed")]
    Close { limit: Duration },
}

impl SerialError {
    /// The public `error_type` of this failure.
    pub fn error_type(&self) -> &'static str {
        self.into()
    }

    /// What is known about contact with the device when this failure ended the operation.
    pub fn contact(&self) -> Contact {
        match self {
            Self::Discovery { .. } => Contact::none("only sysfs was read; no port was opened"),
            Self::Busy { .. } | Self::Open { .. } => {
                Contact::none("the open failed, so no byte and no modem line reached the device")
            }
            Self::Write { written: 0, .. } | Self::Close { .. } => Contact::Possible,
            Self::Write { .. } | Self::Incomplete { .. } => Contact::Made,
        }
    }
}

/// How to open a port.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub device: String,
    pub baud: u32,
    pub assert_dtr: bool,
    pub assert_rts: bool,
    /// Capacity of the receive ring.
    pub max_buffer_bytes: usize,
    pub write_timeout: Duration,
    /// How long the reader blocks in one wait before it looks at its stop flag.
    pub reader_poll: Duration,
}

/// What happened to the modem lines on open: `None` when the line was set, else the host's reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModemReport {
    pub dtr: bool,
    pub rts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtr_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rts_error: Option<String>,
}

/// Called by the reader with each chunk it received, after the chunk is in the ring.
pub type RxTap = Box<dyn FnMut(&[u8]) + Send>;

/// An open port with its reader.
pub struct Port {
    device: String,
    /// `None` once closed.
    writer: Mutex<Option<TTYPort>>,
    ring: Arc<Ring>,
    stop: Arc<AtomicBool>,
    reader: Mutex<Option<JoinHandle<()>>>,
    modem: ModemReport,
}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl Port {
    /// Opens the port exclusively and starts its reader.
    pub fn open(options: &OpenOptions, tap: Option<RxTap>) -> Result<Self, SerialError> {
        let device = options.device.clone();
        let mut port = serialport::new(&device, options.baud)
            .timeout(options.write_timeout)
            // TIOCEXCL plus an exclusive flock (the builder's default, stated here because it matters).
            .exclusive(true)
            .open_native()
            .map_err(|e| open_error(&device, &e))?;
        let modem = ModemReport {
            dtr: options.assert_dtr,
            rts: options.assert_rts,
            dtr_error: port
                .write_data_terminal_ready(options.assert_dtr)
                .err()
                .map(|e| modem_error(&e)),
            rts_error: port
                .write_request_to_send(options.assert_rts)
                .err()
                .map(|e| modem_error(&e)),
        };
        let mut reader = port
            .try_clone_native()
            .map_err(|e| open_error(&device, &e))?;
        reader
            .set_timeout(options.reader_poll.max(Duration::from_millis(1)))
            .map_err(|e| open_error(&device, &e))?;
        let ring = Arc::new(Ring::new(options.max_buffer_bytes));
        let stop = Arc::new(AtomicBool::new(false));
        let chunk = options.max_buffer_bytes.clamp(1, READ_CHUNK);
        let handle = std::thread::Builder::new()
            .name(format!("serial-reader {device}"))
            .spawn({
                let ring = Arc::clone(&ring);
                let stop = Arc::clone(&stop);
                move || read_loop(reader, &ring, &stop, chunk, tap)
            })
            .map_err(|e| SerialError::Open {
                device: device.clone(),
                detail: format!("the reader thread could not start: {e}"),
            })?;
        Ok(Self {
            device,
            writer: Mutex::new(Some(port)),
            ring,
            stop,
            reader: Mutex::new(Some(handle)),
            modem,
        })
    }

    pub fn device(&self) -> &str {
        &self.device
    }

    pub fn modem(&self) -> &ModemReport {
        &self.modem
    }

    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Whether the reader is still running.
    pub fn is_alive(&self) -> bool {
        !self.ring.reader_done()
    }

    /// Drops what the host and the ring hold, and zeroes the overflow count.
    pub fn clear(&self) {
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(port) = writer.as_ref() {
            // A pty or a vanished adapter may refuse the flush; the ring is cleared either way.
            let _ = port.clear(serialport::ClearBuffer::Input);
        }
        drop(writer);
        self.ring.clear();
    }

    /// Writes all of `data`, retrying the remainder of a short write a few times, then drains.
    pub fn write(&self, data: &[u8]) -> Result<usize, SerialError> {
        let mut guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(writer) = guard.as_mut() else {
            return Err(SerialError::Write {
                detail: "the port is closed".into(),
                written: 0,
            });
        };
        let mut written = 0usize;
        let mut attempts = 0usize;
        while written < data.len() && attempts <= WRITE_RETRIES {
            attempts += 1;
            match writer.write(&data[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(SerialError::Write {
                        detail: e.to_string(),
                        written,
                    });
                }
            }
        }
        if let Err(e) = writer.flush()
            && e.kind() != std::io::ErrorKind::TimedOut
        {
            return Err(SerialError::Write {
                detail: e.to_string(),
                written,
            });
        }
        if written < data.len() {
            return Err(SerialError::Incomplete {
                written,
                requested: data.len(),
            });
        }
        Ok(written)
    }

    /// Stops the reader and closes the port. A reader that does not end within `limit` keeps the
    /// port open and comes back with the error, so the caller can keep the session and retry.
    pub fn close(&self, limit: Duration) -> Result<(), SerialError> {
        self.stop.store(true, Ordering::SeqCst);
        if !self.ring.wait_done(Instant::now() + limit) {
            return Err(SerialError::Close { limit });
        }
        // The reader has set its done flag as its last act; a panic in it has nothing to undo.
        crate::worker::join(&self.reader);
        // Closing the last descriptor releases the flock and the exclusive mode.
        drop(
            self.writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        Ok(())
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The controlling side of a pseudo-terminal pair, for tests and benchmarks: what is written here
/// arrives at the device path as if a board had sent it.
pub struct PtyPeer {
    master: TTYPort,
    device: String,
}

impl PtyPeer {
    /// A new pair; the device end is closed again so a [`Port`] can open it by name.
    pub fn open() -> std::io::Result<Self> {
        let (master, slave) = TTYPort::pair().map_err(std::io::Error::from)?;
        let device = slave
            .name()
            .ok_or_else(|| std::io::Error::other("the pty has no device name"))?;
        drop(slave);
        Ok(Self { master, device })
    }

    /// The device path a [`Port`] opens.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Sends bytes towards the device end.
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.master.write_all(bytes)
    }

    /// Reads what the device end wrote, waiting up to `wait` for the first byte.
    pub fn receive(&mut self, wait: Duration) -> std::io::Result<Vec<u8>> {
        self.master
            .set_timeout(wait)
            .map_err(std::io::Error::from)?;
        let mut buf = vec![0u8; READ_CHUNK];
        match self.master.read(&mut buf) {
            Ok(n) => {
                buf.truncate(n);
                Ok(buf)
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }
}

/// ENOTTY ("Not a typewriter") is what a pty answers for modem lines: say so plainly.
fn modem_error(error: &serialport::Error) -> String {
    let detail = error.to_string();
    if detail.contains("typewriter") || detail.contains("Inappropriate ioctl") {
        "this device has no modem lines (ENOTTY, as on a pty); the line was not driven".to_owned()
    } else {
        detail
    }
}

fn open_error(device: &str, error: &serialport::Error) -> SerialError {
    let detail = error.to_string();
    match error.kind() {
        serialport::ErrorKind::NoDevice => SerialError::Busy {
            device: device.to_owned(),
            detail,
        },
        _ => SerialError::Open {
            device: device.to_owned(),
            detail,
        },
    }
}

fn read_loop(
    mut port: TTYPort,
    ring: &Ring,
    stop: &AtomicBool,
    chunk: usize,
    mut tap: Option<RxTap>,
) {
    let mut buf = vec![0u8; chunk];
    let mut failure = None;
    while !stop.load(Ordering::SeqCst) {
        match port.read(&mut buf) {
            Ok(0) => {
                failure = Some("the device reported end of file (hung up)".to_owned());
                break;
            }
            Ok(n) => {
                ring.push(&buf[..n]);
                if let Some(tap) = tap.as_mut() {
                    tap(&buf[..n]);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                        | std::io::ErrorKind::WouldBlock
                ) => {}
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        }
    }
    drop(port);
    ring.finish(failure);
}

#[cfg(test)]
#[path = "serial_tests.rs"]
mod tests;
