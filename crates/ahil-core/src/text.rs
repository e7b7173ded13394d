//! Port encodings: text to bytes for `com_write` and `until`, bytes to text for results.

/// The encodings a port may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Latin1,
    Ascii,
}

impl Encoding {
    /// The encoding a configuration names, Python spellings included.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().replace('_', "-").as_str() {
            "utf-8" | "utf8" => Some(Self::Utf8),
            "latin-1" | "latin1" | "iso-8859-1" | "iso8859-1" => Some(Self::Latin1),
            "ascii" | "us-ascii" => Some(Self::Ascii),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Latin1 => "latin-1",
            Self::Ascii => "ascii",
        }
    }

    /// Bytes for `text`, or the first character this encoding cannot carry.
    pub fn encode(self, text: &str) -> Result<Vec<u8>, char> {
        match self {
            Self::Utf8 => Ok(text.as_bytes().to_vec()),
            Self::Latin1 | Self::Ascii => {
                let top = if self == Self::Ascii { 0x7f } else { 0xff };
                text.chars()
                    .map(|c| {
                        u8::try_from(u32::from(c))
                            .ok()
                            .filter(|b| u32::from(*b) <= top)
                            .ok_or(c)
                    })
                    .collect()
            }
        }
    }

    /// Text for `bytes`; what does not decode becomes U+FFFD.
    pub fn decode(self, bytes: &[u8]) -> String {
        match self {
            Self::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Self::Latin1 => bytes.iter().map(|&b| char::from(b)).collect(),
            Self::Ascii => bytes
                .iter()
                .map(|&b| {
                    if b.is_ascii() {
                        char::from(b)
                    } else {
                        '\u{fffd}'
                    }
                })
                .collect(),
        }
    }
}

/// Bytes from hexadecimal pairs, whitespace ignored.
pub fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(pair, 16).ok()
        })
        .collect()
}

/// Lowercase hexadecimal, no separators.
pub fn to_hex(bytes: &[u8]) -> String {
    ahil_config::digest::hex(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_accepts_spaced_pairs_and_refuses_odd_or_foreign_digits() {
        assert_eq!(parse_hex("0d 0a\tFF"), Some(vec![0x0d, 0x0a, 0xff]));
        assert_eq!(parse_hex("abc"), None);
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex("+1"), None);
    }

    #[test]
    fn latin1_refuses_what_it_cannot_carry_and_decodes_every_byte() {
        assert_eq!(Encoding::Latin1.encode("é"), Ok(vec![0xe9]));
        assert_eq!(Encoding::Latin1.encode("€"), Err('€'));
        assert_eq!(Encoding::Ascii.encode("é"), Err('é'));
        assert_eq!(Encoding::Utf8.decode(&[0x6f, 0xff]), "o\u{fffd}");
        assert_eq!(Encoding::parse("UTF_8"), Some(Encoding::Utf8));
        assert_eq!(Encoding::parse("cp1252"), None);
    }
}
