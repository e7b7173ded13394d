//! How the executable is linked (decision 0012): a fixed-address executable, so the loader applies no
//! relocation table at start and `.data.rel.ro` stays shared with the page cache.

#[test]
fn the_executable_is_linked_at_a_fixed_address_not_position_independent() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_agentic-hil")).expect("read the executable");
    assert_eq!(&bytes[..4], b"\x7fELF", "an ELF file");
    // e_type, little-endian at offset 16: 2 is ET_EXEC, 3 is ET_DYN (a PIE).
    let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
    assert_eq!(
        e_type, 2,
        "e_type {e_type}: linked as a position-independent executable"
    );
}
