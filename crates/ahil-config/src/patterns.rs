//! The handful of string shapes the configuration allows, written as plain matchers.
//!
//! Each has its regular expression beside it for the published JSON schema. Python's
//! `re.search` lets `$` match before a trailing newline; these matchers do not, which only
//! ever refuses more.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// Entry names under `debuggers`, `com_ports`, `can_buses`, shares, supplies.
    Name,
    /// `probe_id`, `resource_id`, `serial_number`, `idn_serial`.
    Id,
    /// `flash_address`: hex with `0x` or decimal.
    FlashAddress,
    /// A C or C++ symbol, `::`-qualified.
    Symbol,
    /// USB vendor/product id as 1-4 hex digits, optional `0x`.
    UsbHex,
    /// Power supply channel number, from 1.
    Channel,
}

impl Pattern {
    pub(crate) fn regex(self) -> &'static str {
        match self {
            Pattern::Name => "^[A-Za-z0-9_.-]+$",
            Pattern::Id => "^[A-Za-z0-9_.:-]+$",
            Pattern::FlashAddress => "^(0x[0-9A-Fa-f]+|[0-9]+)$",
            Pattern::Symbol => "^[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*$",
            Pattern::UsbHex => "^(?:0[xX])?[0-9A-Fa-f]{1,4}$",
            Pattern::Channel => "^[1-9][0-9]*$",
        }
    }

    pub(crate) fn matches(self, s: &str) -> bool {
        match self {
            Pattern::Name => !s.is_empty() && s.bytes().all(is_name_byte),
            Pattern::Id => !s.is_empty() && s.bytes().all(|b| is_name_byte(b) || b == b':'),
            Pattern::FlashAddress => match s.strip_prefix("0x") {
                Some(hex) => !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                None => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
            },
            Pattern::Symbol => !s.is_empty() && s.split("::").all(is_identifier),
            Pattern::UsbHex => {
                let hex = s
                    .strip_prefix("0x")
                    .or_else(|| s.strip_prefix("0X"))
                    .unwrap_or(s);
                (1..=4).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit())
            }
            Pattern::Channel => {
                s.bytes().next().is_some_and(|b| (b'1'..=b'9').contains(&b))
                    && s.bytes().all(|b| b.is_ascii_digit())
            }
        }
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses a USB id written as a hex string (`"0483"`, `"0x374b"`).
pub(crate) fn parse_usb_hex(s: &str) -> Option<u16> {
    if !Pattern::UsbHex.matches(s) {
        return None;
    }
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u16::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pattern_takes_exactly_the_texts_its_rule_allows() {
        use Pattern::{Channel, FlashAddress, Id, Name, Symbol};
        let cases = [
            // Names allow dots, dashes and underscores only.
            (Name, "dut_1.a-b", true),
            (Name, "my dut", false),
            (Name, "a:b", false),
            (Name, "", false),
            (Name, "dut\n", false),
            // Ids also allow colons.
            (Id, "stlink:066AFF", true),
            (Id, "a/b", false),
            // Flash addresses are lowercase 0x hex or decimal.
            (FlashAddress, "0x08000000", true),
            (FlashAddress, "134217728", true),
            (FlashAddress, "0X0800", false),
            (FlashAddress, "0x", false),
            (FlashAddress, "0x8000000g", false),
            // Symbols may be namespace-qualified.
            (Symbol, "main", true),
            (Symbol, "ns::Type::member_1", true),
            (Symbol, "1main", false),
            (Symbol, "a::", false),
            (Symbol, "a:::b", false),
            // Channels count from one.
            (Channel, "1", true),
            (Channel, "10", true),
            (Channel, "0", false),
            (Channel, "01", false),
        ];
        for (pattern, text, matches) in cases {
            assert_eq!(pattern.matches(text), matches, "{pattern:?} {text:?}");
        }
    }

    #[test]
    fn usb_hex_strings_are_read_as_hex() {
        assert_eq!(parse_usb_hex("0483"), Some(0x0483));
        assert_eq!(parse_usb_hex("0X1"), Some(1));
        assert_eq!(parse_usb_hex("374b"), Some(0x374b));
        assert_eq!(parse_usb_hex("04831"), None);
        assert_eq!(parse_usb_hex(""), None);
    }
}
