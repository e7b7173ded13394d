//! The format checkers read untrusted bytes: they never panic, and a well-formed image always passes.

mod artifacts_support;

use ahil_gate::artifacts::formats::{Format, check_bin, check_elf, check_ihex};
use artifacts_support::{elf, ihex};
use proptest::prelude::*;

const MACHINES: [u16; 4] = [40, 183, 94, 243];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_checker_panics_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = check_elf(&bytes);
        let _ = check_ihex(&bytes);
        let _ = check_bin(&bytes, 1024);
    }

    #[test]
    fn the_elf_checker_never_panics_on_a_damaged_elf(
        wide in any::<bool>(),
        big in any::<bool>(),
        flips in proptest::collection::vec((0_usize..200, any::<u8>()), 1..12),
        cut in 0_usize..400,
    ) {
        let mut bytes = elf(wide, big, 40, 300);
        for (at, value) in flips {
            if let Some(byte) = bytes.get_mut(at) {
                *byte = value;
            }
        }
        bytes.truncate(cut);
        let _ = check_elf(&bytes);
    }

    #[test]
    fn the_hex_checker_never_panics_on_random_text(text in "[:0-9A-Fa-f\r\n ]{0,400}") {
        let _ = check_ihex(text.as_bytes());
    }

    #[test]
    fn a_valid_elf_always_passes(
        wide in any::<bool>(),
        big in any::<bool>(),
        machine in proptest::sample::select(MACHINES.to_vec()),
        size in 0_usize..5000,
    ) {
        let bytes = elf(wide, big, machine, size);
        prop_assert_eq!(check_elf(&bytes), Ok(()));
        prop_assert_eq!(Format::Elf.check(&bytes, 1 << 20), Ok(()));
    }

    #[test]
    fn a_valid_hex_always_passes(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
        prop_assert_eq!(check_ihex(&ihex(&data)), Ok(()));
    }

    #[test]
    fn a_valid_hex_with_crlf_line_ends_passes(data in proptest::collection::vec(any::<u8>(), 1..200)) {
        let text = String::from_utf8(ihex(&data)).expect("ascii").replace('\n', "\r\n");
        prop_assert_eq!(check_ihex(text.as_bytes()), Ok(()));
    }

    #[test]
    fn a_non_empty_binary_within_the_limit_always_passes(data in proptest::collection::vec(any::<u8>(), 1..4096)) {
        prop_assert_eq!(check_bin(&data, 4096), Ok(()));
    }

    #[test]
    fn one_changed_hex_digit_is_always_caught(data in proptest::collection::vec(any::<u8>(), 1..64), at in any::<usize>(), bump in 1_u8..16) {
        let mut text = ihex(&data);
        // Only data-record hex digits: skip the ':' of each line and the end record.
        let digits: Vec<usize> = text
            .iter()
            .enumerate()
            .take(text.len() - ":00000001FF\n".len())
            .filter(|(_, c)| c.is_ascii_hexdigit())
            .map(|(i, _)| i)
            .collect();
        let index = digits[at % digits.len()];
        let value = char::from(text[index]).to_digit(16).expect("hex");
        let changed = (value + u32::from(bump)) % 16;
        text[index] = char::from_digit(changed, 16).expect("digit").to_ascii_uppercase() as u8;
        prop_assert!(check_ihex(&text).is_err());
    }
}

#[test]
fn elf_refusals_say_what_is_wrong() {
    let good = elf(false, false, 40, 300);
    assert!(check_elf(&good[..3]).expect_err("short").contains("magic"));
    assert!(
        check_elf(&good[..40])
            .expect_err("truncated")
            .contains("shorter than an ELF header")
    );
    assert!(
        check_elf(&good[..200])
            .expect_err("cut")
            .contains("past the end")
    );
    assert!(
        check_elf(&elf(false, false, 3, 300))
            .expect_err("x86")
            .contains("machine 3")
    );
    let mut no_phdr = good.clone();
    no_phdr[44] = 0;
    assert!(
        check_elf(&no_phdr)
            .expect_err("no phdr")
            .contains("no program headers")
    );
}

#[test]
fn hex_refusals_say_what_is_wrong() {
    assert!(
        check_ihex(b":0400000001020304F3\n:00000001FF\n")
            .expect_err("sum")
            .contains("checksum")
    );
    assert!(
        check_ihex(b":0400000001020304F2\n")
            .expect_err("end")
            .contains("end-of-file")
    );
    assert!(
        check_ihex(b"0400000001020304F2\n")
            .expect_err("colon")
            .contains("':'")
    );
    assert!(
        check_ihex(b":00000001FF\n:0400000001020304F2\n")
            .expect_err("after")
            .contains("follows")
    );
    assert!(check_ihex(b"").expect_err("empty").contains("no records"));
    assert!(
        check_ihex(":00000001FF\u{e9}".as_bytes())
            .expect_err("ascii")
            .contains("ASCII")
    );
    assert_eq!(check_ihex(b":0400000001020304F2\n\n:00000001FF"), Ok(()));
}

#[test]
fn formats_are_chosen_by_the_lowercased_extension() {
    assert_eq!(Format::from_extension(".ELF"), Some(Format::Elf));
    assert_eq!(Format::from_extension(".Hex"), Some(Format::IntelHex));
    assert_eq!(Format::from_extension(".bin"), Some(Format::Bin));
    assert_eq!(Format::from_extension(".srec"), None);
}
