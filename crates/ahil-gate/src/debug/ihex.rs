//! Intel HEX for symbol dumps: 16 data bytes a record, an extended linear address record first and
//! whenever the upper 16 address bits change, uppercase, `:00000001FF` last.

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
