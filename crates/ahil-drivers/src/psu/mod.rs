//! Bench power supplies: one [`PowerSupply`] trait over the supply models this build can drive, and
//! the exact decimal type every set point travels in.
//!
//! Set points are never rounded: a value is carried as a whole number of the model's steps
//! ([`Fixed`]), so what was asked, what was written and what was read back compare exactly. A
//! driver tracks whether its conversation has sent anything that changes the supply, and every
//! failure says so through [`PsuError::contact`]: a failure after a write leaves the supply's
//! state unknown, one before any write provably changed nothing.

pub mod korad;

use std::time::Duration;

use crate::Contact;

pub use korad::Rs3005p;

/// A non-negative decimal with a fixed number of places: `units` × 10^-`places`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed {
    pub units: u64,
    pub places: u8,
}

impl Fixed {
    /// Parses decimal text such as `03.30` or `0.500`; more places than `places` are refused
    /// unless they are zeros.
    pub fn parse(text: &str, places: u8) -> Option<Self> {
        let text = text.trim();
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty() && frac.is_empty()
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let places_usize = usize::from(places);
        let (kept, dropped) = frac.split_at(frac.len().min(places_usize));
        if dropped.bytes().any(|b| b != b'0') {
            return None;
        }
        let mut units: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        for i in 0..places_usize {
            let digit = kept.as_bytes().get(i).map_or(0, |b| u64::from(b - b'0'));
            units = units.checked_mul(10)?.checked_add(digit)?;
        }
        Some(Self { units, places })
    }

    /// The exact value of `value` in steps of 10^-`places`, or `None` when it is not a whole
    /// number of steps (or negative, or not finite).
    pub fn from_f64(value: f64, places: u8) -> Option<Self> {
        if !value.is_finite() || value < 0.0 {
            return None;
        }
        let scaled = value * 10f64.powi(i32::from(places));
        let units = scaled.round();
        // A value on the grid is within float noise of a whole step; anything more is off it.
        if (scaled - units).abs() > 1e-6 * units.max(1.0) || units > 1e15 {
            return None;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(Self {
            units: units as u64,
            places,
        })
    }

    /// The value with exactly `places` decimals (`3.30`, `0.500`).
    pub fn render(self) -> String {
        if self.places == 0 {
            return self.units.to_string();
        }
        let scale = 10u64.pow(u32::from(self.places));
        format!(
            "{}.{:0width$}",
            self.units / scale,
            self.units % scale,
            width = usize::from(self.places)
        )
    }

    /// The value as a float, for comparisons against limits given as numbers.
    #[allow(clippy::cast_precision_loss)]
    pub fn to_f64(self) -> f64 {
        self.units as f64 / 10f64.powi(i32::from(self.places))
    }
}

/// What a unit says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The model as reported, `None` when the answer had no recognisable shape.
    pub model: Option<String>,
    pub firmware: Option<String>,
    /// The unit's serial; callers must keep it out of results.
    pub serial: Option<String>,
}

/// One channel as read from the unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub channel: u8,
    pub set_voltage: Fixed,
    pub set_current: Fixed,
    pub measured_voltage: Fixed,
    pub measured_current: Fixed,
    pub output_on: bool,
}

/// What a supply model can do, fixed per type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub channels: u8,
    /// Decimal places of a voltage set point (2 means 10 mV steps).
    pub voltage_places: u8,
    pub current_places: u8,
    /// Whether the output state can be read back.
    pub reads_output: bool,
    /// Whether over-voltage and over-current protection can be armed at a threshold.
    pub protection: bool,
}

/// The quantity a set point names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Voltage,
    Current,
}

impl Quantity {
    pub fn key(self) -> &'static str {
        match self {
            Self::Voltage => "voltage_v",
            Self::Current => "current_a",
        }
    }
}

/// A supply reached over some link. Every method is one short conversation step; a SCPI driver
/// implements the same calls with its own commands.
pub trait PowerSupply {
    fn capabilities(&self) -> Capabilities;
    /// Asks the unit who it is. Sends nothing that changes it.
    fn identify(&mut self) -> Result<Identity, PsuError>;
    /// Reads set points, measurements and output state of `channel`.
    fn read(&mut self, channel: u8) -> Result<Reading, PsuError>;
    /// Writes a set point and returns the value the unit reports back for it.
    fn set(&mut self, channel: u8, quantity: Quantity, value: Fixed) -> Result<Fixed, PsuError>;
    /// Switches the output and returns the state the unit reports back.
    fn set_output(&mut self, channel: u8, on: bool) -> Result<bool, PsuError>;
    /// Whether this conversation has sent anything that may have changed the unit.
    fn wrote(&self) -> bool;
}

/// Why a supply conversation ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
#[cfg_attr(test, derive(strum::EnumIter))]
pub enum PsuError {
    #[error("{device} could not be opened: {detail}")]
    #[strum(serialize = "open_failed")]
    Open { device: String, detail: String },
    #[error("{device} is held by another program: {detail}")]
    #[strum(serialize = "port_busy")]
    Busy { device: String, detail: String },
    #[error("the supply did not answer {command} within {limit:?}")]
    #[strum(serialize = "no_reply")]
    NoReply {
        command: String,
        limit: Duration,
        after_write: bool,
    },
    #[error("the supply answered {command} with {reply:?}, which is not a valid answer")]
    #[strum(serialize = "invalid_reply")]
    Garbled {
        command: String,
        reply: String,
        after_write: bool,
    },
    #[error("sending {command} failed: {detail}")]
    #[strum(serialize = "write_failed")]
    Send {
        command: String,
        detail: String,
        /// Whether the failed command itself changes the unit.
        changing: bool,
        after_write: bool,
    },
    #[error("the call was cancelled")]
    #[strum(serialize = "cancelled")]
    Cancelled { after_write: bool },
}

impl PsuError {
    /// What ended the conversation, for the result's `cause`.
    pub fn cause(&self) -> &'static str {
        self.into()
    }

    /// Whether anything that changes the unit had been sent before the failure.
    pub fn after_write(&self) -> bool {
        match self {
            Self::Open { .. } | Self::Busy { .. } => false,
            Self::NoReply { after_write, .. }
            | Self::Garbled { after_write, .. }
            | Self::Cancelled { after_write } => *after_write,
            Self::Send {
                changing,
                after_write,
                ..
            } => *changing || *after_write,
        }
    }

    /// What is known about contact: before any write only queries went out, which change
    /// nothing; after one the unit's state is unknown.
    pub fn contact(&self) -> Contact {
        match self {
            Self::Open { .. } | Self::Busy { .. } => {
                Contact::none("the port did not open, so nothing reached the supply")
            }
            Self::Send {
                changing: true,
                after_write: false,
                ..
            } => Contact::Possible,
            _ if self.after_write() => Contact::Made,
            _ => Contact::none("only queries were sent, and a query changes nothing on the supply"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_a_conversation_ends_keeps_its_published_cause() {
        use strum::IntoEnumIterator;
        let causes: Vec<&str> = PsuError::iter().map(|end| end.cause()).collect();
        assert_eq!(
            causes.join(" "),
            "open_failed port_busy no_reply invalid_reply write_failed cancelled"
        );
    }

    #[test]
    fn fixed_parses_device_text_exactly() {
        assert_eq!(
            Fixed::parse("03.30", 2),
            Some(Fixed {
                units: 330,
                places: 2
            })
        );
        assert_eq!(
            Fixed::parse("0.500", 3).map(Fixed::render).as_deref(),
            Some("0.500")
        );
        assert_eq!(
            Fixed::parse("5", 2).map(Fixed::render).as_deref(),
            Some("5.00")
        );
        assert_eq!(
            Fixed::parse("1.2345", 3),
            None,
            "a fourth place is not rounded away"
        );
        assert_eq!(Fixed::parse("1.2340", 3).map(|f| f.units), Some(1234));
        assert_eq!(Fixed::parse("", 2), None);
        assert_eq!(Fixed::parse("-1.00", 2), None);
        assert_eq!(Fixed::parse("1.0a", 2), None);
    }

    #[test]
    fn fixed_from_a_number_refuses_values_between_steps() {
        assert_eq!(Fixed::from_f64(3.3, 2).map(|f| f.units), Some(330));
        assert_eq!(Fixed::from_f64(0.5, 3).map(|f| f.units), Some(500));
        assert_eq!(Fixed::from_f64(3.333, 2), None);
        assert_eq!(Fixed::from_f64(-0.01, 2), None);
        assert_eq!(Fixed::from_f64(f64::NAN, 2), None);
        assert_eq!(
            Fixed::from_f64(29.99, 2).map(Fixed::render).as_deref(),
            Some("29.99")
        );
    }

    #[test]
    fn a_failure_after_a_write_is_contact_made_and_before_it_is_none() {
        let silent = |after_write| PsuError::NoReply {
            command: "VSET1?".into(),
            limit: Duration::from_secs(1),
            after_write,
        };
        assert_eq!(silent(true).contact(), Contact::Made);
        assert!(matches!(silent(false).contact(), Contact::None { .. }));
        let failed_write = PsuError::Send {
            command: "OUT1".into(),
            detail: "EIO".into(),
            changing: true,
            after_write: false,
        };
        assert_eq!(failed_write.contact(), Contact::Possible);
    }
}
