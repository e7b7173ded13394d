//! defmt frames on an RTT channel, decoded with the `.defmt` table of the ELF the target runs
//! (knurling's `defmt-decoder`): each frame becomes its level, timestamp, text and location.
//!
//! The stream is cut into frames here, not by the crate's stream decoder, because that decoder drops
//! a frame it cannot decode: an rzCOBS frame ends at its `0x00`, so a frame that does not decode is
//! kept and returned raw (hex) and marked, and the next frame decodes as usual. A raw-encoded stream
//! has no delimiter: after a frame that does not decode, nothing later can be framed, so the rest
//! is returned raw. Bytes of a frame not yet complete wait for the next poll.

use defmt_decoder::{DecodeError, Encoding, Locations, Table};

/// The most a frame may hold before it ends: larger is a stream that is not defmt's.
pub const MAX_FRAME: usize = 4096;

/// Why a table could not be read from an ELF.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the ELF's defmt table could not be read: {0}")]
pub struct TableError(pub String);

/// Where a log statement is in the source.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    pub file: String,
    pub line: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub module: String,
}

/// One frame as a caller sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Frame {
    /// `trace` … `error`; none for a `println`.
    pub level: Option<&'static str>,
    /// As the table's timestamp format renders it; none without one.
    pub timestamp: Option<String>,
    /// The message with its arguments.
    pub text: String,
    pub location: Option<Location>,
    /// The frame's own bytes when it did not decode.
    #[serde(skip)]
    pub raw: Option<Vec<u8>>,
    /// Why it did not decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Frame {
    /// Whether the frame decoded.
    pub fn decoded(&self) -> bool {
        self.raw.is_none()
    }

    fn undecoded(raw: Vec<u8>, error: &str) -> Self {
        Self {
            level: None,
            timestamp: None,
            text: String::new(),
            location: None,
            raw: Some(raw),
            error: Some(error.to_owned()),
        }
    }
}

/// The ELF's table and the statements' locations.
#[derive(Debug)]
pub struct DefmtTable {
    table: Table,
    locations: Locations,
}

impl DefmtTable {
    /// The table of `elf`, or none when it has no `.defmt` section (defmt is not in use).
    pub fn from_elf(elf: &[u8]) -> Result<Option<Self>, TableError> {
        let Some(table) = Table::parse(elf).map_err(|e| TableError(format!("{e:#}")))? else {
            return Ok(None);
        };
        // Locations come from DWARF, which a stripped ELF lacks: frames then carry none.
        let locations = table.get_locations(elf).unwrap_or_default();
        Ok(Some(Self { table, locations }))
    }

    /// `rzcobs` or `raw`.
    pub fn encoding(&self) -> &'static str {
        match self.table.encoding() {
            Encoding::Raw => "raw",
            _ => "rzcobs",
        }
    }

    /// A frame's payload (index, timestamp, arguments), decoded.
    #[allow(
        clippy::redundant_closure_for_method_calls,
        reason = "defmt-decoder does not re-export defmt-parser's Level, so its as_str cannot be named"
    )]
    fn decode(&self, payload: &[u8]) -> Result<(Frame, usize), DecodeError> {
        let (frame, consumed) = self.table.decode(payload)?;
        let location = self.locations.get(&frame.index()).map(|l| Location {
            file: l.file.display().to_string(),
            line: l.line,
            module: l.module.clone(),
        });
        Ok((
            Frame {
                level: frame.level().map(|level| level.as_str()),
                timestamp: frame.display_timestamp().map(|t| t.to_string()),
                text: frame.display_message().to_string(),
                location,
                raw: None,
                error: None,
            },
            consumed,
        ))
    }
}

/// One channel's decoding: the table and the bytes of a frame still incomplete.
#[derive(Debug)]
pub struct DefmtStream {
    pending: Vec<u8>,
    /// A raw stream that lost its framing: everything from here on is returned raw.
    lost: bool,
}

impl Default for DefmtStream {
    fn default() -> Self {
        Self::new()
    }
}

impl DefmtStream {
    pub fn new() -> Self {
        Self {
            pending: Vec::new(),
            lost: false,
        }
    }

    /// Bytes of a frame not yet complete.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Take `bytes` as they came off the channel; the frames they complete.
    pub fn push(&mut self, table: &DefmtTable, bytes: &[u8]) -> Vec<Frame> {
        self.pending.extend_from_slice(bytes);
        match table.table.encoding() {
            Encoding::Raw => self.raw_frames(table),
            _ => self.rzcobs_frames(table),
        }
    }

    fn rzcobs_frames(&mut self, table: &DefmtTable) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut start = 0;
        while let Some(at) = self.pending[start..].iter().position(|b| *b == 0) {
            let encoded = &self.pending[start..start + at];
            start += at + 1;
            if encoded.is_empty() {
                continue;
            }
            frames.push(match rzcobs_decode(encoded) {
                Some(payload) => match table.decode(&payload) {
                    Ok((frame, _)) => frame,
                    Err(_) => Frame::undecoded(
                        encoded.to_vec(),
                        "the frame does not match the ELF's defmt table",
                    ),
                },
                None => Frame::undecoded(encoded.to_vec(), "the frame is not valid rzCOBS"),
            });
        }
        self.pending.drain(..start);
        if self.pending.len() > MAX_FRAME {
            frames.push(Frame::undecoded(
                std::mem::take(&mut self.pending),
                "no frame end within the largest frame",
            ));
        }
        frames
    }

    fn raw_frames(&mut self, table: &DefmtTable) -> Vec<Frame> {
        let mut frames = Vec::new();
        while !self.pending.is_empty() {
            if self.lost {
                frames.push(Frame::undecoded(
                    std::mem::take(&mut self.pending),
                    "a raw-encoded stream cannot be framed again after a frame that did not decode",
                ));
                break;
            }
            match table.decode(&self.pending) {
                Ok((frame, consumed)) => {
                    self.pending.drain(..consumed.min(self.pending.len()));
                    frames.push(frame);
                }
                Err(DecodeError::UnexpectedEof) if self.pending.len() <= MAX_FRAME => break,
                Err(_) => self.lost = true,
            }
        }
        frames
    }
}

/// rzCOBS (reverse zero-compressing COBS): read from the end, a byte `0x01..=0x7f` is a group of 7
/// whose set bits are zeros, `0x80 | n` is `n + 7` bytes and a zero, `0xff` is 134 bytes. The
/// crate's own decoder is private to its stream decoder, which drops frames that fail.
fn rzcobs_decode(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() * 2);
    let mut bytes = data.iter().rev().copied();
    while let Some(x) = bytes.next() {
        match x {
            0 => return None,
            0x01..=0x7f => {
                for i in 0..7 {
                    if x & (1 << (6 - i)) == 0 {
                        out.push(bytes.next()?);
                    } else {
                        out.push(0);
                    }
                }
            }
            0x80..=0xfe => {
                out.push(0);
                for _ in 0..(x & 0x7f) + 7 {
                    out.push(bytes.next()?);
                }
            }
            0xff => {
                for _ in 0..134 {
                    out.push(bytes.next()?);
                }
            }
        }
    }
    out.reverse();
    Some(out)
}

#[cfg(test)]
#[path = "defmt_tests.rs"]
mod tests;
