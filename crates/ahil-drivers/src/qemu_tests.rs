use super::*;
use std::path::PathBuf;

fn firmware(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../firmware/build")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(firmware(name)).expect("the committed firmware images are present")
}

#[test]
fn the_elf_hex_and_bin_of_one_build_load_the_same_bytes() {
    let elf = image::segments(&read("ahil-fw-v1.elf"), ImageFormat::Elf).expect("elf");
    let hex = image::segments(&read("ahil-fw-v1.hex"), ImageFormat::Hex).expect("hex");
    let bin = image::segments(
        &read("ahil-fw-v1.bin"),
        ImageFormat::Bin { base: 0x0800_0000 },
    )
    .expect("bin");
    assert_eq!(elf, hex);
    assert_eq!(elf, bin);
    assert_eq!(elf[0].address, 0x0800_0000);
}

#[test]
fn malformed_images_are_refused_not_panicked_on() {
    let cases: [(&[u8], ImageFormat); 6] = [
        (b"", ImageFormat::Elf),
        (b"\x7fELF\x01\x01", ImageFormat::Elf),
        (b":0000000", ImageFormat::Hex),
        (b":00000001FE\n", ImageFormat::Hex),
        (b":020000040800F0\n:0100000000FE\n", ImageFormat::Hex),
        (b"", ImageFormat::Bin { base: 0 }),
    ];
    for (bytes, format) in cases {
        assert!(
            image::segments(bytes, format).is_err(),
            "accepted {bytes:?}"
        );
    }
}

#[test]
fn a_truncated_elf_segment_is_refused() {
    let mut elf = read("ahil-fw-v1.elf");
    elf.truncate(200);
    assert!(image::segments(&elf, ImageFormat::Elf).is_err());
}

#[test]
fn an_elf_cut_inside_its_header_fields_is_refused_where_it_ends() {
    let elf = read("ahil-fw-v1.elf");
    // The program header table's offset is the u32 at 0x1c; a file that ends inside it is short.
    let error = image::segments(&elf[..0x1e], ImageFormat::Elf).expect_err("refused");
    assert_eq!(error, "ELF truncated at byte 28");
}

#[test]
fn every_action_on_an_absent_board_proves_no_contact() {
    let dir = tempfile::tempdir().expect("temp dir");
    let probe = QemuProbe::new(dir.path(), "gdb-multiarch", "netduinoplus2");
    let budget = Budget::new(Duration::from_secs(5));
    assert!(
        probe
            .list_probes(&budget)
            .expect("listing never fails")
            .is_empty()
    );
    let request = FlashRequest {
        image: firmware("ahil-fw-v1.elf"),
        format: ImageFormat::Elf,
        verify: true,
        reset: Some(ResetMode::Run),
    };
    let errors = [
        probe.probe(&budget).expect_err("no board"),
        probe.flash(&request, &budget).expect_err("no board"),
        probe.reset(ResetMode::Run, &budget).expect_err("no board"),
        probe.reset_halt(&budget).expect_err("no board"),
        probe.open_gdb(&budget).expect_err("no board"),
    ];
    for error in errors {
        let Contact::None { proof } = error.contact() else {
            panic!("claimed contact without a board: {error:?}");
        };
        assert!(proof.contains("QMP socket"), "{proof}");
    }
}

#[test]
fn an_unloadable_image_is_refused_before_the_board_is_touched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let junk = dir.path().join("junk.elf");
    std::fs::write(&junk, b"not an elf").expect("write");
    let probe = QemuProbe::new(dir.path(), "gdb-multiarch", "netduinoplus2");
    let request = FlashRequest {
        image: junk,
        format: ImageFormat::Elf,
        verify: true,
        reset: None,
    };
    let error = probe
        .flash(&request, &Budget::new(Duration::from_secs(5)))
        .expect_err("junk");
    assert!(matches!(error.contact(), Contact::None { .. }));
}
