//! The RS-3005P (Korad KA3005P family) serial protocol: ASCII commands at 9600 8N1, one per
//! exchange, each sent with a newline; queries answer one newline-terminated line, commands that
//! change the unit answer nothing.
//!
//! `*IDN?` → `RS-3005P V6.9 SN:…`; `VSET1?`/`VOUT1?` → `05.00` (10 mV steps); `ISET1?`/`IOUT1?`
//! → `1.000` (1 mA steps); `STATUS?` → one raw byte (bit 6: output on) and the newline;
//! `VSET1:3.30`, `ISET1:0.500`, `OUT1`, `OUT0` change the unit. The unit drops commands sent
//! while it is still applying the previous one, so a write is followed by a fixed pause.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use serialport::{SerialPort, TTYPort};

use super::{Capabilities, Fixed, Identity, PowerSupply, PsuError, Quantity, Reading};
use crate::process::CancelFlag;

/// The unit's fixed line speed.
pub const BAUD: u32 = 9600;
/// Pause after a command that changes the unit, before the next command.
const WRITE_SETTLE: Duration = Duration::from_millis(100);
/// Pause between two queries, so the unit's parser sees them apart.
const QUERY_GAP: Duration = Duration::from_millis(10);
/// The longest line a query may answer.
const MAX_REPLY: usize = 128;
/// Bit of the status byte that says the output is on.
const STATUS_OUTPUT_ON: u8 = 0x40;

pub const CAPABILITIES: Capabilities = Capabilities {
    channels: 1,
    voltage_places: 2,
    current_places: 3,
    reads_output: true,
    protection: false,
};

/// A byte link to the unit: a serial port in use, a scripted peer in tests.
pub trait Link: Send {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// The next byte, or `None` once `deadline` passes without one.
    fn read_byte(&mut self, deadline: Instant) -> std::io::Result<Option<u8>>;
    /// Drops whatever arrived unasked, so a late reply is never read as the next answer.
    fn discard_input(&mut self);
}

/// A serial port opened exclusively (the same `TIOCEXCL` plus `flock` pair COM sessions take).
pub struct SerialLink {
    port: TTYPort,
}

impl SerialLink {
    pub fn open(device: &str) -> Result<Self, PsuError> {
        let port = serialport::new(device, BAUD)
            .timeout(Duration::from_millis(50))
            .exclusive(true)
            .open_native()
            .map_err(|e| {
                let detail = e.to_string();
                let busy = matches!(e.kind, serialport::ErrorKind::Io(ErrorKind::WouldBlock))
                    || detail.contains("Resource temporarily unavailable")
                    || detail.contains("busy");
                if busy {
                    PsuError::Busy {
                        device: device.to_owned(),
                        detail,
                    }
                } else {
                    PsuError::Open {
                        device: device.to_owned(),
                        detail,
                    }
                }
            })?;
        Ok(Self { port })
    }
}

impl Link for SerialLink {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.port.write_all(bytes)?;
        self.port.flush()
    }

    fn read_byte(&mut self, deadline: Instant) -> std::io::Result<Option<u8>> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        self.port
            .set_timeout(left)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut byte = [0u8; 1];
        match self.port.read(&mut byte) {
            Ok(1) => Ok(Some(byte[0])),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == ErrorKind::TimedOut => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn discard_input(&mut self) {
        // A pty may refuse the flush; nothing was asked yet, so a stale byte is then read and
        // refused as a garbled answer rather than taken for one.
        let _ = self.port.clear(serialport::ClearBuffer::Input);
    }
}

/// One conversation with an RS-3005P.
pub struct Rs3005p<L: Link> {
    link: L,
    /// How long one exchange may take.
    timeout: Duration,
    wrote: bool,
    cancel: Option<CancelFlag>,
}

impl Rs3005p<SerialLink> {
    /// Opens `device` for one conversation.
    pub fn open(device: &str, timeout: Duration) -> Result<Self, PsuError> {
        Ok(Self::over(SerialLink::open(device)?, timeout))
    }
}

impl<L: Link> Rs3005p<L> {
    pub fn over(link: L, timeout: Duration) -> Self {
        Self {
            link,
            timeout,
            wrote: false,
            cancel: None,
        }
    }

    /// Ends the conversation between exchanges once `cancel` is raised.
    #[must_use]
    pub fn cancel_on(mut self, cancel: CancelFlag) -> Self {
        self.cancel = Some(cancel);
        self
    }

    fn check_cancel(&self) -> Result<(), PsuError> {
        if self.cancel.as_ref().is_some_and(CancelFlag::is_cancelled) {
            return Err(PsuError::Cancelled {
                after_write: self.wrote,
            });
        }
        Ok(())
    }

    fn send(&mut self, command: &str, changing: bool) -> Result<(), PsuError> {
        self.check_cancel()?;
        self.link.discard_input();
        let mut line = command.as_bytes().to_vec();
        line.push(b'\n');
        let sent = self.link.send(&line);
        if let Err(e) = sent {
            return Err(PsuError::Send {
                command: command.to_owned(),
                detail: e.to_string(),
                changing,
                after_write: self.wrote,
            });
        }
        if changing {
            self.wrote = true;
            std::thread::sleep(WRITE_SETTLE);
        }
        Ok(())
    }

    fn no_reply(&self, command: &str) -> PsuError {
        PsuError::NoReply {
            command: command.to_owned(),
            limit: self.timeout,
            after_write: self.wrote,
        }
    }

    fn garbled(&self, command: &str, reply: &[u8]) -> PsuError {
        PsuError::Garbled {
            command: command.to_owned(),
            reply: String::from_utf8_lossy(reply).into_owned(),
            after_write: self.wrote,
        }
    }

    fn byte(&mut self, command: &str, deadline: Instant) -> Result<Option<u8>, PsuError> {
        self.link.read_byte(deadline).map_err(|e| PsuError::Send {
            command: command.to_owned(),
            detail: format!("reading the answer failed: {e}"),
            changing: false,
            after_write: self.wrote,
        })
    }

    /// Sends a query and reads its one line, without the newline.
    fn query(&mut self, command: &str) -> Result<String, PsuError> {
        self.send(command, false)?;
        let deadline = Instant::now() + self.timeout;
        let mut reply = Vec::new();
        loop {
            match self.byte(command, deadline)? {
                Some(b'\n') => break,
                Some(byte) if reply.len() < MAX_REPLY => reply.push(byte),
                None if reply.is_empty() => return Err(self.no_reply(command)),
                // Too long, or cut off before its newline.
                Some(_) | None => return Err(self.garbled(command, &reply)),
            }
        }
        std::thread::sleep(QUERY_GAP);
        let text = String::from_utf8(reply).map_err(|e| self.garbled(command, e.as_bytes()))?;
        Ok(text.trim_end_matches('\r').to_owned())
    }

    /// `STATUS?`: one raw byte (which may itself be a newline's value) and then the newline.
    fn status(&mut self) -> Result<u8, PsuError> {
        const COMMAND: &str = "STATUS?";
        self.send(COMMAND, false)?;
        let deadline = Instant::now() + self.timeout;
        let Some(status) = self.byte(COMMAND, deadline)? else {
            return Err(self.no_reply(COMMAND));
        };
        match self.byte(COMMAND, deadline)? {
            Some(b'\n') => {}
            Some(other) => return Err(self.garbled(COMMAND, &[status, other])),
            None => return Err(self.garbled(COMMAND, &[status])),
        }
        std::thread::sleep(QUERY_GAP);
        Ok(status)
    }

    fn value(&mut self, command: &str, places: u8) -> Result<Fixed, PsuError> {
        let text = self.query(command)?;
        Fixed::parse(&text, places).ok_or_else(|| self.garbled(command, text.as_bytes()))
    }

    fn places(quantity: Quantity) -> u8 {
        match quantity {
            Quantity::Voltage => CAPABILITIES.voltage_places,
            Quantity::Current => CAPABILITIES.current_places,
        }
    }
}

/// `RS-3005P V6.9 SN:03682957` → model, firmware, serial; any other shape names nothing.
pub fn parse_identity(line: &str) -> Identity {
    let parts: Vec<&str> = line.split_whitespace().collect();
    match parts.as_slice() {
        [model, firmware, serial] if serial.starts_with("SN:") => Identity {
            model: Some((*model).to_owned()),
            firmware: Some((*firmware).to_owned()),
            serial: Some(serial["SN:".len()..].to_owned()),
        },
        _ => Identity {
            model: None,
            firmware: None,
            serial: None,
        },
    }
}

impl<L: Link> PowerSupply for Rs3005p<L> {
    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn identify(&mut self) -> Result<Identity, PsuError> {
        Ok(parse_identity(&self.query("*IDN?")?))
    }

    fn read(&mut self, channel: u8) -> Result<Reading, PsuError> {
        let v = CAPABILITIES.voltage_places;
        let a = CAPABILITIES.current_places;
        Ok(Reading {
            channel,
            set_voltage: self.value(&format!("VSET{channel}?"), v)?,
            set_current: self.value(&format!("ISET{channel}?"), a)?,
            measured_voltage: self.value(&format!("VOUT{channel}?"), v)?,
            measured_current: self.value(&format!("IOUT{channel}?"), a)?,
            output_on: self.status()? & STATUS_OUTPUT_ON != 0,
        })
    }

    fn set(&mut self, channel: u8, quantity: Quantity, value: Fixed) -> Result<Fixed, PsuError> {
        let places = Self::places(quantity);
        let letter = match quantity {
            Quantity::Voltage => 'V',
            Quantity::Current => 'I',
        };
        let exact = Fixed {
            units: value.units,
            places,
        };
        self.send(&format!("{letter}SET{channel}:{}", exact.render()), true)?;
        self.value(&format!("{letter}SET{channel}?"), places)
    }

    fn set_output(&mut self, _channel: u8, on: bool) -> Result<bool, PsuError> {
        self.send(if on { "OUT1" } else { "OUT0" }, true)?;
        Ok(self.status()? & STATUS_OUTPUT_ON != 0)
    }

    fn wrote(&self) -> bool {
        self.wrote
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A peer that answers each query from a script and records what it was sent.
    #[derive(Clone, Default)]
    struct Scripted {
        sent: Arc<Mutex<Vec<String>>>,
        replies: Arc<Mutex<VecDeque<Vec<u8>>>>,
        pending: Arc<Mutex<VecDeque<u8>>>,
    }

    impl Scripted {
        fn answering(replies: &[&[u8]]) -> Self {
            let s = Self::default();
            s.replies
                .lock()
                .unwrap()
                .extend(replies.iter().map(|r| r.to_vec()));
            s
        }
        fn sent(&self) -> Vec<String> {
            self.sent.lock().unwrap().clone()
        }
    }

    impl Link for Scripted {
        fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let query = text.contains('?');
            self.sent.lock().unwrap().push(text);
            if query && let Some(reply) = self.replies.lock().unwrap().pop_front() {
                self.pending.lock().unwrap().extend(reply);
            }
            Ok(())
        }
        fn read_byte(&mut self, _deadline: Instant) -> std::io::Result<Option<u8>> {
            Ok(self.pending.lock().unwrap().pop_front())
        }
        fn discard_input(&mut self) {}
    }

    fn supply(link: &Scripted) -> Rs3005p<Scripted> {
        Rs3005p::over(link.clone(), Duration::from_millis(20))
    }

    #[test]
    fn identity_splits_model_firmware_and_serial() {
        let id = parse_identity("RS-3005P V6.9 SN:03682957");
        assert_eq!(id.model.as_deref(), Some("RS-3005P"));
        assert_eq!(id.firmware.as_deref(), Some("V6.9"));
        assert_eq!(id.serial.as_deref(), Some("03682957"));
        assert_eq!(parse_identity("KORAD KA3005P V5.8 SN:1").model, None);
    }

    #[test]
    fn a_reading_sends_the_five_queries_and_decodes_the_status_byte() {
        let link = Scripted::answering(&[
            b"05.00\n",
            b"1.000\n",
            b"04.98\n",
            b"0.120\n",
            &[0x41, b'\n'],
        ]);
        let reading = supply(&link).read(1).expect("a full reading");
        assert_eq!(
            link.sent(),
            ["VSET1?\n", "ISET1?\n", "VOUT1?\n", "IOUT1?\n", "STATUS?\n"]
        );
        assert_eq!(reading.set_voltage.render(), "5.00");
        assert_eq!(reading.measured_current.render(), "0.120");
        assert!(reading.output_on);
    }

    #[test]
    fn a_status_byte_equal_to_a_newline_is_still_the_status() {
        let link = Scripted::answering(&[&[0x0A, b'\n']]);
        assert_eq!(supply(&link).status(), Ok(0x0A));
    }

    #[test]
    fn a_set_point_is_written_with_the_models_places_and_read_back() {
        let link = Scripted::answering(&[b"03.30\n"]);
        let mut psu = supply(&link);
        let value = Fixed::from_f64(3.3, 2).expect("on the grid");
        assert_eq!(
            psu.set(1, Quantity::Voltage, value).map(Fixed::render),
            Ok("3.30".into())
        );
        assert_eq!(link.sent(), ["VSET1:3.30\n", "VSET1?\n"]);
        assert!(psu.wrote());
        let link = Scripted::answering(&[b"0.500\n"]);
        let value = Fixed::from_f64(0.5, 3).expect("on the grid");
        let _ = supply(&link).set(1, Quantity::Current, value);
        assert_eq!(link.sent(), ["ISET1:0.500\n", "ISET1?\n"]);
    }

    #[test]
    fn silence_before_a_write_is_no_contact_and_after_one_is_contact() {
        let link = Scripted::answering(&[]);
        let err = supply(&link).identify().expect_err("silent");
        assert!(matches!(
            err,
            PsuError::NoReply {
                after_write: false,
                ..
            }
        ));
        let link = Scripted::answering(&[]);
        let err = supply(&link)
            .set_output(1, true)
            .expect_err("silent after OUT1");
        assert_eq!(link.sent(), ["OUT1\n", "STATUS?\n"]);
        assert!(err.after_write());
        assert_eq!(err.contact(), crate::Contact::Made);
    }

    #[test]
    fn a_reply_without_its_newline_or_with_letters_is_refused() {
        let link = Scripted::answering(&[b"05.00"]);
        assert!(matches!(
            supply(&link).value("VSET1?", 2),
            Err(PsuError::Garbled { .. })
        ));
        let link = Scripted::answering(&[b"5.0x\n"]);
        assert!(matches!(
            supply(&link).value("VSET1?", 2),
            Err(PsuError::Garbled { .. })
        ));
    }

    #[test]
    fn a_raised_cancel_flag_stops_before_the_next_command() {
        let link = Scripted::answering(&[b"05.00\n"]);
        let cancel = CancelFlag::default();
        cancel.cancel();
        let err = supply(&link)
            .cancel_on(cancel)
            .identify()
            .expect_err("cancelled");
        assert_eq!(err, PsuError::Cancelled { after_write: false });
        assert!(link.sent().is_empty());
    }
}
