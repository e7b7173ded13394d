//! Intel HEX for symbol dumps: 16 data bytes a record, an extended linear address record first and
//! whenever the upper 16 address bits change, uppercase, `:00000001FF` last. The reader takes back
//! what a programmer wrote (ST-Link memory reads) for exactly the bytes asked for.

use std::collections::BTreeMap;

/// Why a HEX text does not give the bytes asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// A line is not a well-formed record (no colon, odd or bad hex, wrong length, bad checksum).
    #[error("line {0} is not a valid Intel HEX record")]
    Malformed(usize),
    /// A record type this reader does not take.
    #[error("line {0} has record type {1:02X}")]
    UnknownType(usize, u8),
    /// Two records give different values for one address.
    #[error("address 0x{0:x} is given twice with different values")]
    Conflict(u64),
    /// Some requested byte is in no record.
    #[error("address 0x{0:x} is in no record")]
    Hole(u64),
}

/// The `size` bytes at `start` from HEX `text`: data (00) records placed by the segment (02) and
/// linear (04) base records, start records (03, 05) skipped, reading stopped at end-of-file (01);
/// bytes outside the range are ignored, a missing one fails.
pub fn read(text: &str, start: u64, size: u64) -> Result<Vec<u8>, ReadError> {
    let mut base = 0u64;
    let mut memory: BTreeMap<u64, u8> = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let fields = decode_record(line).ok_or(ReadError::Malformed(number))?;
        let (count, kind) = (usize::from(fields[0]), fields[3]);
        let data = &fields[4..4 + count];
        match kind {
            0 => {
                let offset = u64::from(u16::from_be_bytes([fields[1], fields[2]]));
                for (i, byte) in data.iter().enumerate() {
                    let at = base + offset + i as u64;
                    if at < start || at >= start + size {
                        continue;
                    }
                    if let Some(old) = memory.insert(at, *byte)
                        && old != *byte
                    {
                        return Err(ReadError::Conflict(at));
                    }
                }
            }
            1 => break,
            2 | 4 if count == 2 => {
                let value = u64::from(u16::from_be_bytes([data[0], data[1]]));
                base = if kind == 2 { value * 16 } else { value << 16 };
            }
            3 | 5 => {}
            2 | 4 => return Err(ReadError::Malformed(number)),
            other => return Err(ReadError::UnknownType(number, other)),
        }
    }
    (start..start + size)
        .map(|at| memory.get(&at).copied().ok_or(ReadError::Hole(at)))
        .collect()
}

/// One record's bytes (count, offset, type, data, checksum), checked for length and checksum.
fn decode_record(line: &str) -> Option<Vec<u8>> {
    let hex = line.strip_prefix(':')?;
    if hex.len() % 2 != 0 || hex.len() < 10 {
        return None;
    }
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    let sum = bytes.iter().fold(0u8, |sum, b| sum.wrapping_add(*b));
    (bytes.len() == usize::from(bytes[0]) + 5 && sum == 0).then_some(bytes)
}

/// `bytes` at `address` as Intel HEX text.
pub fn write(address: u64, bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut upper: Option<u16> = None;
    let mut offset = 0usize;
    while offset < bytes.len() {
        let at = address + offset as u64;
        let high = u16::try_from((at >> 16) & 0xffff).unwrap_or_default();
        if upper != Some(high) {
            record(&mut out, 0, 4, &high.to_be_bytes());
            upper = Some(high);
        }
        // A record never crosses a 64 KiB boundary: its 16-bit offset would wrap.
        let room = usize::try_from(0x1_0000 - (at & 0xffff)).unwrap_or(16);
        let len = 16.min(bytes.len() - offset).min(room);
        record(
            &mut out,
            u16::try_from(at & 0xffff).unwrap_or_default(),
            0,
            &bytes[offset..offset + len],
        );
        offset += len;
    }
    out.push_str(":00000001FF\n");
    out
}

const DIGITS: &[u8; 16] = b"0123456789ABCDEF";

fn record(out: &mut String, offset: u16, kind: u8, data: &[u8]) {
    let [hi, lo] = offset.to_be_bytes();
    let mut fields = vec![u8::try_from(data.len()).unwrap_or(u8::MAX), hi, lo, kind];
    fields.extend_from_slice(data);
    let sum = fields.iter().fold(0u8, |sum, b| sum.wrapping_add(*b));
    fields.push(sum.wrapping_neg());
    out.push(':');
    for byte in fields {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_dump_is_an_address_record_a_data_record_and_the_end() {
        let text = write(0x2000_0010, &[0xef, 0xbe, 0xad, 0xde]);
        assert_eq!(text, ":020000042000DA\n:04001000EFBEADDEB4\n:00000001FF\n");
    }

    #[test]
    fn what_the_writer_wrote_reads_back_exactly_for_the_range_asked() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(600).collect();
        let text = write(0x2000_fe00, &bytes);
        assert_eq!(read(&text, 0x2000_fe00, 600), Ok(bytes.clone()));
        assert_eq!(read(&text, 0x2001_0000, 4), Ok(bytes[512..516].to_vec()));
    }

    #[test]
    fn segment_bases_place_data_and_start_records_are_skipped() {
        // Segment 0x1000 puts offset 0x0010 at 0x10010.
        let text = ":020000021000EC\n:0400000300000000F9\n:02001000ABCD76\n:00000001FF\n";
        assert_eq!(read(text, 0x10010, 2), Ok(vec![0xab, 0xcd]));
    }

    #[test]
    fn holes_bad_checksums_unknown_types_and_conflicts_are_refused() {
        let text = write(0x100, &[1, 2]);
        assert_eq!(read(&text, 0x100, 3), Err(ReadError::Hole(0x102)));
        assert_eq!(
            read(":0200000001020B\n", 0, 2),
            Err(ReadError::Malformed(1)),
            "bad checksum"
        );
        assert_eq!(
            read(":00000006FA\n", 0, 0),
            Err(ReadError::UnknownType(1, 6))
        );
        let twice = ":0100000001FE\n:0100000002FD\n:00000001FF\n";
        assert_eq!(read(twice, 0, 1), Err(ReadError::Conflict(0)));
        assert_eq!(read("garbage", 0, 1), Err(ReadError::Malformed(1)));
    }

    #[test]
    fn records_after_the_end_of_file_are_not_read() {
        let text = ":00000001FF\n:0100000001FE\n";
        assert_eq!(read(text, 0, 1), Err(ReadError::Hole(0)));
    }

    #[test]
    fn a_dump_across_a_64k_boundary_gets_a_new_address_record() {
        let text = write(0x2000_fffe, &[1, 2, 3, 4]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], ":020000042000DA");
        assert!(lines[1].starts_with(":02FFFE00"), "{text}");
        assert_eq!(lines[2], ":020000042001D9");
        assert!(lines[3].starts_with(":02000000"), "{text}");
        assert_eq!(lines.len(), 5);
    }
}
