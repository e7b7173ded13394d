//! One CAN frame as the tools and the bridge protocol carry it, and the length rules of classic and FD
//! buses. Frames from a bridge are untrusted input: they are normalised here or refused whole.

use serde_json::{Map, Value, json};

/// Highest 11-bit identifier.
pub const MAX_STANDARD_ID: u32 = 0x7FF;
/// Highest 29-bit identifier.
pub const MAX_EXTENDED_ID: u32 = 0x1FFF_FFFF;
/// The payload lengths an FD frame can have (its DLC codes 9..15 map to 12..64).
pub const FD_LENGTHS: [usize; 15] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48];
const FD_MAX: usize = 64;

/// A frame: identifier, its width, remote request flag and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub id: u32,
    pub extended: bool,
    pub rtr: bool,
    pub data: Vec<u8>,
}

/// Why a frame was refused before it reached an adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("identifier {id:#x} is out of range for a {} id", if *extended { "29-bit" } else { "11-bit" })]
    IdOutOfRange { id: u64, extended: bool },
    #[error("data_hex must be pairs of hexadecimal digits (whitespace is ignored)")]
    BadHex,
    #[error("an FD bus carries no remote frames")]
    FdRemote,
    #[error("an FD frame cannot carry {0} bytes")]
    FdLength(usize),
    #[error("a classic frame carries at most 8 bytes, not {0}")]
    ClassicTooLarge(usize),
}

impl FrameError {
    /// The public `error_type` of this refusal.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::IdOutOfRange { .. } | Self::BadHex => "invalid_argument",
            Self::FdRemote => "can_fd_remote_frame_unsupported",
            Self::FdLength(_) => "can_fd_frame_length_invalid",
            Self::ClassicTooLarge(_) => "can_classic_frame_too_large",
        }
    }
}

/// Every length an FD frame may carry, for refusals.
pub fn fd_lengths() -> Vec<usize> {
    FD_LENGTHS.iter().copied().chain([FD_MAX]).collect()
}

/// Hex pairs to bytes, whitespace ignored.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, FrameError> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(FrameError::BadHex);
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
                .ok_or(FrameError::BadHex)
        })
        .collect()
}

/// Lowercase hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// An identifier given as an integer, a decimal string or a `0x` string.
pub fn parse_id(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let s = s.trim();
            if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).ok()
            } else if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse().ok()
            } else {
                None
            }
        }
        _ => None,
    }
}

impl Frame {
    /// A frame from its parts, with the identifier range checked.
    pub fn new(id: u64, extended: bool, rtr: bool, data: Vec<u8>) -> Result<Self, FrameError> {
        let max = if extended {
            MAX_EXTENDED_ID
        } else {
            MAX_STANDARD_ID
        };
        match u32::try_from(id) {
            Ok(id) if id <= max => Ok(Self {
                id,
                extended,
                rtr,
                data,
            }),
            _ => Err(FrameError::IdOutOfRange { id, extended }),
        }
    }

    /// Whether this frame may go on a bus of the given kind: FD buses take no remote frames and only
    /// the FD lengths; classic frames stop at 8 bytes.
    pub fn check_for_bus(&self, fd: bool) -> Result<(), FrameError> {
        let len = self.data.len();
        if fd {
            if self.rtr {
                return Err(FrameError::FdRemote);
            }
            if len != FD_MAX && !FD_LENGTHS.contains(&len) {
                return Err(FrameError::FdLength(len));
            }
        } else if len > 8 {
            return Err(FrameError::ClassicTooLarge(len));
        }
        Ok(())
    }

    /// `{id, id_hex, extended, rtr, data_hex, dlc}`: `dlc` is the byte count.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "id_hex": format!("{:#x}", self.id),
            "extended": self.extended,
            "rtr": self.rtr,
            "data_hex": to_hex(&self.data),
            "dlc": self.data.len(),
        })
    }

    /// A frame as a bridge reports it. Only the protocol's keys are allowed; the id may come as `id`
    /// or `frame_id`, the payload as `data_hex` or `hex`; `dlc` and `id_hex`, when present, must agree
    /// with what they describe.
    pub fn from_bridge(value: &Value) -> Option<Self> {
        const KEYS: [&str; 8] = [
            "id", "id_hex", "frame_id", "extended", "rtr", "data_hex", "hex", "dlc",
        ];
        let object: &Map<String, Value> = value.as_object()?;
        if object.keys().any(|k| !KEYS.contains(&k.as_str())) {
            return None;
        }
        let flag = |key: &str| match object.get(key) {
            None => Some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => None,
        };
        let extended = flag("extended")?;
        let rtr = flag("rtr")?;
        let id = parse_id(object.get("id").or_else(|| object.get("frame_id"))?)?;
        let data = match object.get("data_hex").or_else(|| object.get("hex")) {
            None => Vec::new(),
            Some(Value::String(text)) => parse_hex(text).ok()?,
            Some(_) => return None,
        };
        let frame = Self::new(id, extended, rtr, data).ok()?;
        if let Some(dlc) = object.get("dlc")
            && dlc.as_u64() != Some(frame.data.len() as u64)
        {
            return None;
        }
        if let Some(id_hex) = object.get("id_hex")
            && id_hex.as_str() != Some(format!("{:#x}", frame.id).as_str())
        {
            return None;
        }
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_read_as_integers_decimal_or_hex_strings() {
        assert_eq!(parse_id(&json!(291)), Some(291));
        assert_eq!(parse_id(&json!("0x123")), Some(0x123));
        assert_eq!(parse_id(&json!("0X7ff")), Some(0x7FF));
        assert_eq!(parse_id(&json!("291")), Some(291));
        assert_eq!(parse_id(&json!("12a")), None);
        assert_eq!(parse_id(&json!(true)), None);
        assert_eq!(parse_id(&json!(-1)), None);
    }

    #[test]
    fn a_standard_id_stops_at_0x7ff_and_an_extended_one_at_29_bits() {
        assert!(Frame::new(0x7FF, false, false, vec![]).is_ok());
        assert!(Frame::new(0x800, false, false, vec![]).is_err());
        assert!(Frame::new(0x1FFF_FFFF, true, false, vec![]).is_ok());
        assert!(Frame::new(0x2000_0000, true, false, vec![]).is_err());
    }

    #[test]
    fn classic_and_fd_buses_apply_their_own_length_rules() {
        let frame = |n: usize, rtr: bool| Frame::new(1, false, rtr, vec![0; n]).expect("id");
        assert_eq!(frame(8, false).check_for_bus(false), Ok(()));
        assert_eq!(
            frame(9, false).check_for_bus(false),
            Err(FrameError::ClassicTooLarge(9))
        );
        assert_eq!(frame(12, false).check_for_bus(true), Ok(()));
        assert_eq!(frame(64, false).check_for_bus(true), Ok(()));
        assert_eq!(
            frame(9, false).check_for_bus(true),
            Err(FrameError::FdLength(9))
        );
        assert_eq!(
            frame(0, true).check_for_bus(true),
            Err(FrameError::FdRemote)
        );
        assert_eq!(frame(0, true).check_for_bus(false), Ok(()));
    }

    #[test]
    fn hex_payloads_ignore_whitespace_and_refuse_odd_digits() {
        assert_eq!(parse_hex("de ad\tBE ef"), Ok(vec![0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(parse_hex("abc"), Err(FrameError::BadHex));
        assert_eq!(parse_hex("zz"), Err(FrameError::BadHex));
    }

    #[test]
    fn bridge_frames_are_normalised_or_refused_whole() {
        let frame = Frame::from_bridge(&json!({"frame_id": "0x7e8", "hex": "0102", "dlc": 2}))
            .expect("valid");
        assert_eq!(
            frame.to_json(),
            json!({"id": 0x7e8, "id_hex": "0x7e8", "extended": false, "rtr": false, "data_hex": "0102", "dlc": 2})
        );
        assert!(Frame::from_bridge(&json!({"id": 1, "dlc": 3, "data_hex": "01"})).is_none());
        assert!(Frame::from_bridge(&json!({"id": 1, "id_hex": "0x2"})).is_none());
        assert!(Frame::from_bridge(&json!({"id": 1, "colour": "red"})).is_none());
        assert!(Frame::from_bridge(&json!({"id": 0x800})).is_none());
        assert!(Frame::from_bridge(&json!({"id": 1, "extended": "yes"})).is_none());
    }
}
