//! Format plausibility for the three accepted image formats. Each checker reads untrusted bytes, so
//! every offset is computed with checked arithmetic and every slice is taken with `get`: a checker
//! answers `Err(reason)`, it never panics (the property tests in `tests/artifacts_formats.rs` hold it to
//! that).

/// The image formats, chosen by the lowercased last extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Elf,
    IntelHex,
    Bin,
}

impl Format {
    /// The format an extension (with its dot, any case) names, if any.
    pub fn from_extension(extension: &str) -> Option<Self> {
        match extension.to_ascii_lowercase().as_str() {
            ".elf" => Some(Self::Elf),
            ".hex" | ".ihex" => Some(Self::IntelHex),
            ".bin" => Some(Self::Bin),
            _ => None,
        }
    }

    /// The key of this format's verdict in a `validation` object (the reference's names).
    pub fn validation_key(self) -> &'static str {
        match self {
            Self::Elf => "elf_header",
            Self::IntelHex => "hex_parseable",
            Self::Bin => "bin_size_plausible",
        }
    }

    /// Check `bytes` against this format; `max_bytes` bounds a raw image.
    pub fn check(self, bytes: &[u8], max_bytes: u64) -> Result<(), String> {
        match self {
            Self::Elf => check_elf(bytes),
            Self::IntelHex => check_ihex(bytes),
            Self::Bin => check_bin(bytes, max_bytes),
        }
    }
}

/// ELF machines a debug probe in this bench can flash: ARM, AArch64, Xtensa, RISC-V.
const MACHINES: &[(u16, &str)] = &[
    (40, "ARM"),
    (183, "AArch64"),
    (94, "Xtensa"),
    (243, "RISC-V"),
];
const PT_LOAD: u32 = 1;

/// Reads fixed-width integers in the file's byte order, refusing anything past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    big_endian: bool,
}

impl Reader<'_> {
    fn array<const N: usize>(&self, at: u64) -> Result<[u8; N], String> {
        let start = usize::try_from(at).map_err(|_| "offset does not fit".to_owned())?;
        let end = start
            .checked_add(N)
            .ok_or_else(|| "offset overflows".to_owned())?;
        self.bytes
            .get(start..end)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .ok_or_else(|| format!("the file ends before offset {end}"))
    }

    /// The integer at `at` in the file's byte order.
    fn int<const N: usize, T>(
        &self,
        at: u64,
        big: fn([u8; N]) -> T,
        little: fn([u8; N]) -> T,
    ) -> Result<T, String> {
        let raw = self.array::<N>(at)?;
        Ok(if self.big_endian {
            big(raw)
        } else {
            little(raw)
        })
    }

    fn u16(&self, at: u64) -> Result<u16, String> {
        self.int(at, u16::from_be_bytes, u16::from_le_bytes)
    }

    fn u32(&self, at: u64) -> Result<u32, String> {
        self.int(at, u32::from_be_bytes, u32::from_le_bytes)
    }

    fn u64(&self, at: u64) -> Result<u64, String> {
        self.int(at, u64::from_be_bytes, u64::from_le_bytes)
    }

    /// A word: 4 bytes in ELF32, 8 in ELF64.
    fn word(&self, at: u64, wide: bool) -> Result<u64, String> {
        if wide {
            self.u64(at)
        } else {
            self.u32(at).map(u64::from)
        }
    }
}

/// `start + count * size` lies within `len`.
fn table_in_bounds(start: u64, count: u64, size: u64, len: u64, what: &str) -> Result<(), String> {
    let end = count
        .checked_mul(size)
        .and_then(|n| n.checked_add(start))
        .ok_or_else(|| format!("the {what} table's extent overflows"))?;
    if end > len {
        return Err(format!(
            "the {what} table ends at byte {end}, past the end of the file ({len} bytes)"
        ));
    }
    Ok(())
}

/// ELF: magic, class, byte order, version, a flashable machine, a well-formed header, the program and
/// section header tables inside the file, and at least one loadable segment whose bytes are inside it.
pub fn check_elf(bytes: &[u8]) -> Result<(), String> {
    if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("the file does not start with the ELF magic 7F 45 4C 46".into());
    }
    let wide = match bytes.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("the ELF class is neither 32-bit nor 64-bit".into()),
    };
    let big_endian = match bytes.get(5) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err("the ELF byte order is neither little- nor big-endian".into()),
    };
    if bytes.get(6) != Some(&1) {
        return Err("the ELF identification version is not 1".into());
    }
    let header_size: u64 = if wide { 64 } else { 52 };
    let len = u64::try_from(bytes.len()).map_err(|_| "the file is too large".to_owned())?;
    if len < header_size {
        return Err(format!(
            "the file is {len} bytes, shorter than an ELF header ({header_size})"
        ));
    }
    let r = Reader { bytes, big_endian };
    let machine = r.u16(18)?;
    if !MACHINES.iter().any(|(m, _)| *m == machine) {
        return Err(format!(
            "ELF machine {machine} is not one this bench flashes (ARM, AArch64, Xtensa, RISC-V)"
        ));
    }
    if r.u32(20)? != 1 {
        return Err("the ELF version is not 1".into());
    }
    // Offsets of e_phoff, e_shoff, e_ehsize and the table fields differ between the classes.
    let (phoff, shoff, rest) = if wide {
        (r.u64(32)?, r.u64(40)?, 52)
    } else {
        (u64::from(r.u32(28)?), u64::from(r.u32(32)?), 40)
    };
    let ehsize = u64::from(r.u16(rest)?);
    let phentsize = u64::from(r.u16(rest + 2)?);
    let phnum = u64::from(r.u16(rest + 4)?);
    let shentsize = u64::from(r.u16(rest + 6)?);
    let shnum = u64::from(r.u16(rest + 8)?);
    if ehsize != header_size {
        return Err(format!(
            "e_ehsize is {ehsize}, not the {header_size} of this ELF class"
        ));
    }
    let (ph_size, sh_size) = if wide { (56, 64) } else { (32, 40) };
    if phnum == 0 || phnum == 0xffff {
        return Err("the ELF has no program headers, so nothing to load".into());
    }
    if phentsize != ph_size {
        return Err(format!("e_phentsize is {phentsize}, not {ph_size}"));
    }
    table_in_bounds(phoff, phnum, phentsize, len, "program header")?;
    if shnum > 0 {
        if shentsize != sh_size {
            return Err(format!("e_shentsize is {shentsize}, not {sh_size}"));
        }
        table_in_bounds(shoff, shnum, shentsize, len, "section header")?;
    }
    let mut loadable = 0_u32;
    for index in 0..phnum {
        let at = phoff + index * phentsize;
        if r.u32(at)? != PT_LOAD {
            continue;
        }
        // ELF64 puts p_flags before p_offset; ELF32 after p_memsz.
        let (offset, filesz, memsz) = if wide {
            (
                r.word(at + 8, true)?,
                r.word(at + 32, true)?,
                r.word(at + 40, true)?,
            )
        } else {
            (
                r.word(at + 4, false)?,
                r.word(at + 16, false)?,
                r.word(at + 20, false)?,
            )
        };
        let end = offset
            .checked_add(filesz)
            .ok_or_else(|| format!("loadable segment {index} overflows"))?;
        if end > len {
            return Err(format!(
                "loadable segment {index} ends at byte {end}, past the end of the file ({len} bytes)"
            ));
        }
        if filesz > memsz {
            return Err(format!(
                "loadable segment {index} has more file bytes ({filesz}) than memory ({memsz})"
            ));
        }
        loadable += 1;
    }
    if loadable == 0 {
        return Err("the ELF has no loadable (PT_LOAD) segment".into());
    }
    Ok(())
}

fn hex_byte(pair: &[u8]) -> Option<u8> {
    let digit = |c: u8| char::from(c).to_digit(16);
    match pair {
        [hi, lo] => u8::try_from(digit(*hi)? * 16 + digit(*lo)?).ok(),
        _ => None,
    }
}

/// Intel HEX: ASCII lines; every non-blank line is one record that parses, has a known type with the
/// right length, and checksums; exactly one end record, last.
pub fn check_ihex(bytes: &[u8]) -> Result<(), String> {
    if !bytes.is_ascii() {
        return Err("the file is not ASCII text".into());
    }
    let mut records = 0_usize;
    let mut ended = false;
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_no = index + 1;
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        if ended {
            return Err(format!("line {line_no} follows the end-of-file record"));
        }
        let Some(payload) = line.strip_prefix(b":") else {
            return Err(format!("line {line_no} does not start with ':'"));
        };
        if payload.len() < 10 || payload.len() % 2 != 0 {
            return Err(format!("line {line_no} is not a whole record"));
        }
        let data: Vec<u8> = payload
            .chunks(2)
            .map(hex_byte)
            .collect::<Option<_>>()
            .ok_or_else(|| format!("line {line_no} holds a non-hex digit"))?;
        let count = usize::from(data[0]);
        if data.len() != count + 5 {
            return Err(format!(
                "line {line_no}: the byte count {count} does not match the record's length"
            ));
        }
        if data.iter().fold(0_u8, |sum, b| sum.wrapping_add(*b)) != 0 {
            return Err(format!("line {line_no}: checksum mismatch"));
        }
        let expected = match data[3] {
            0 => None,
            1 => Some(0),
            2 | 4 => Some(2),
            3 | 5 => Some(4),
            other => return Err(format!("line {line_no}: unknown record type {other:02X}")),
        };
        if expected.is_some_and(|n| n != count) {
            return Err(format!(
                "line {line_no}: a type {:02X} record cannot hold {count} bytes",
                data[3]
            ));
        }
        ended = data[3] == 1;
        records += 1;
    }
    if records == 0 {
        return Err("the file holds no records".into());
    }
    if !ended {
        return Err("the file has no end-of-file record (:00000001FF)".into());
    }
    Ok(())
}

/// Raw binary: non-empty and within the size limit.
pub fn check_bin(bytes: &[u8], max_bytes: u64) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("the image is empty".into());
    }
    if u64::try_from(bytes.len()).map_or(true, |n| n > max_bytes) {
        return Err(format!("the image is larger than {max_bytes} bytes"));
    }
    Ok(())
}
