//! The bytes an image puts where: ELF program headers, Intel HEX records, or a raw binary at a base.
//! Used to verify a load by reading the target back; the gate has checked the file's plausibility
//! already, but these parsers still refuse anything malformed instead of panicking.

use crate::probe::ImageFormat;

/// Contiguous bytes at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Load (physical) address.
    pub address: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The segments `image` loads, merged where contiguous and sorted by address.
pub fn segments(image: &[u8], format: ImageFormat) -> Result<Vec<Segment>, String> {
    let mut segments = match format {
        ImageFormat::Elf => elf_segments(image)?,
        ImageFormat::Hex => hex_segments(image)?,
        ImageFormat::Bin { base } => vec![Segment {
            address: base,
            bytes: image.to_vec(),
        }],
    };
    segments.retain(|segment| !segment.bytes.is_empty());
    segments.sort_by_key(|segment| segment.address);
    let mut merged: Vec<Segment> = Vec::new();
    for segment in segments {
        if let Some(last) = merged.last_mut()
            && last.address + last.bytes.len() as u64 == segment.address
        {
            last.bytes.extend_from_slice(&segment.bytes);
            continue;
        }
        merged.push(segment);
    }
    if merged.is_empty() {
        return Err("the image loads no bytes".into());
    }
    Ok(merged)
}

/// The `N` bytes at `at`, or where the file ends too early.
fn read_bytes<const N: usize>(bytes: &[u8], at: usize) -> Result<[u8; N], String> {
    bytes
        .get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("ELF truncated at byte {at}"))
}

fn read_u16(bytes: &[u8], at: usize) -> Result<u16, String> {
    read_bytes(bytes, at).map(u16::from_le_bytes)
}

fn read_u32(bytes: &[u8], at: usize) -> Result<u32, String> {
    read_bytes(bytes, at).map(u32::from_le_bytes)
}

/// 32-bit little-endian ELF (every Cortex-M image): the file bytes of each `PT_LOAD` at its physical
/// address, which is where a loader (gdb `load`, OpenOCD `program`) writes them.
fn elf_segments(image: &[u8]) -> Result<Vec<Segment>, String> {
    if image.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("not an ELF file".into());
    }
    if image.get(4) != Some(&1) || image.get(5) != Some(&1) {
        return Err("only 32-bit little-endian ELF is supported".into());
    }
    let phoff = read_u32(image, 0x1c)? as usize;
    let phentsize = usize::from(read_u16(image, 0x2a)?);
    let phnum = usize::from(read_u16(image, 0x2c)?);
    if phentsize < 32 {
        return Err("ELF program header entries are too small".into());
    }
    let mut segments = Vec::new();
    for index in 0..phnum {
        let at = phoff
            .checked_add(index * phentsize)
            .ok_or("ELF program header offset overflows")?;
        if read_u32(image, at)? != 1 {
            continue; // not PT_LOAD
        }
        let offset = read_u32(image, at + 4)? as usize;
        let paddr = read_u32(image, at + 12)?;
        let filesz = read_u32(image, at + 16)? as usize;
        let bytes = offset
            .checked_add(filesz)
            .and_then(|end| image.get(offset..end))
            .ok_or("an ELF segment lies outside the file")?;
        segments.push(Segment {
            address: u64::from(paddr),
            bytes: bytes.to_vec(),
        });
    }
    Ok(segments)
}

fn hex_segments(image: &[u8]) -> Result<Vec<Segment>, String> {
    let text = std::str::from_utf8(image).map_err(|_| "Intel HEX is not ASCII")?;
    let mut segments = Vec::new();
    let mut upper: u64 = 0;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| format!("Intel HEX line {}: {what}", number + 1);
        let digits = line.strip_prefix(':').ok_or_else(|| bad("no ':'"))?;
        if digits.len() % 2 != 0 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("not hex digits"));
        }
        let record: Vec<u8> = (0..digits.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap_or(0))
            .collect();
        if record.len() < 5 || record.len() != usize::from(record[0]) + 5 {
            return Err(bad("wrong length"));
        }
        if record.iter().fold(0_u8, |sum, b| sum.wrapping_add(*b)) != 0 {
            return Err(bad("bad checksum"));
        }
        let data = &record[4..record.len() - 1];
        let offset = u64::from(u16::from_be_bytes([record[1], record[2]]));
        match record[3] {
            0 => segments.push(Segment {
                address: upper + offset,
                bytes: data.to_vec(),
            }),
            1 => break,
            2 if data.len() == 2 => upper = u64::from(u16::from_be_bytes([data[0], data[1]])) << 4,
            4 if data.len() == 2 => upper = u64::from(u16::from_be_bytes([data[0], data[1]])) << 16,
            3 | 5 => {}
            _ => return Err(bad("unknown record type")),
        }
    }
    Ok(segments)
}
