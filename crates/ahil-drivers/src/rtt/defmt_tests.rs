use super::*;

fn elf(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../firmware/build")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn table() -> DefmtTable {
    DefmtTable::from_elf(&elf("ahil-fw-defmt.elf"))
        .expect("the defmt image's table reads")
        .expect("the defmt image has a table")
}

/// The firmware's encoder (firmware/src/defmt.c `send`), for frames built here.
fn rzcobs(raw: &[u8]) -> Vec<u8> {
    let (mut out, mut run, mut zeros) = (Vec::new(), 0u32, 0u8);
    for &byte in raw {
        if run < 7 {
            if byte == 0 {
                zeros |= 1 << run;
            } else {
                out.push(byte);
            }
            run += 1;
            if run == 7 && zeros != 0 {
                out.push(zeros);
                (run, zeros) = (0, 0);
            }
        } else if byte == 0 {
            out.push(0x80 | u8::try_from(run - 7).expect("a run below 134"));
            (run, zeros) = (0, 0);
        } else {
            out.push(byte);
            run += 1;
            if run == 134 {
                out.push(0xff);
                (run, zeros) = (0, 0);
            }
        }
    }
    if run >= 7 {
        out.push(0x80 | u8::try_from(run - 7).expect("a run below 134"));
    } else if run > 0 {
        out.push((zeros | (0xff << run)) & 0x7f);
    }
    out.push(0);
    out
}

/// Index, the u32 millisecond timestamp, then the arguments, as the firmware frames them.
fn frame(index: u16, ms: u32, args: &[u8]) -> Vec<u8> {
    let mut raw = index.to_le_bytes().to_vec();
    raw.extend(ms.to_le_bytes());
    raw.extend(args);
    rzcobs(&raw)
}

/// The index of the entry whose format is `format`, as the firmware's symbols place it.
const BOOT: u16 = 0;
const EVERY5: u16 = 1;
const TICK: u16 = 2;

fn boot() -> Vec<u8> {
    let mut args = 3u32.to_le_bytes().to_vec();
    args.extend(b"1.0");
    frame(BOOT, 0, &args)
}

#[test]
fn a_good_frame_decodes_into_level_timestamp_text() {
    let table = table();
    assert_eq!(table.encoding(), "rzcobs");
    let frames = DefmtStream::new().push(&table, &boot());
    assert_eq!(frames.len(), 1);
    let boot = &frames[0];
    assert!(boot.decoded(), "{boot:?}");
    assert_eq!(boot.level, Some("info"));
    assert_eq!(boot.text, "boot ahil-fw 1.0 netduinoplus2");
    assert_eq!(boot.timestamp.as_deref(), Some("0.000"));
    let tick = DefmtStream::new().push(&table, &frame(TICK, 1230, &7u32.to_le_bytes()));
    assert_eq!(tick[0].level, Some("debug"));
    assert_eq!(tick[0].text, "tick 7");
    assert_eq!(tick[0].timestamp.as_deref(), Some("1.230"));
}

#[test]
fn a_frame_that_does_not_decode_is_returned_raw_and_the_next_one_decodes() {
    let table = table();
    let mut bytes = frame(99, 0, &[1, 2, 3, 4]);
    let bad = bytes[..bytes.len() - 1].to_vec();
    bytes.extend(frame(EVERY5, 2000, &10u32.to_le_bytes()));
    let frames = DefmtStream::new().push(&table, &bytes);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert!(!frames[0].decoded());
    assert_eq!(frames[0].raw.as_deref(), Some(bad.as_slice()));
    assert!(frames[0].error.is_some());
    assert_eq!(frames[1].level, Some("warn"));
    assert_eq!(frames[1].text, "five more ticks, now 10");
}

#[test]
fn bytes_that_are_not_rzcobs_are_returned_raw() {
    // 0x05 asks for five bytes before it that are not there.
    let frames = DefmtStream::new().push(&table(), &[0x05, 0x00]);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].raw.as_deref(), Some(&[0x05][..]));
}

#[test]
fn a_frame_cut_across_two_polls_decodes_once_whole() {
    let table = table();
    let bytes = boot();
    let mut stream = DefmtStream::new();
    let (first, second) = bytes.split_at(5);
    assert!(stream.push(&table, first).is_empty());
    assert_eq!(stream.pending(), 5);
    let frames = stream.push(&table, second);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].text, "boot ahil-fw 1.0 netduinoplus2");
    assert_eq!(stream.pending(), 0);
}

#[test]
fn a_stream_with_no_frame_end_is_returned_raw_past_the_largest_frame() {
    let mut stream = DefmtStream::new();
    let frames = stream.push(&table(), &vec![0x41; MAX_FRAME + 1]);
    assert_eq!(frames.len(), 1);
    assert!(!frames[0].decoded());
    assert_eq!(stream.pending(), 0);
}

#[test]
fn an_elf_without_a_defmt_section_has_no_table() {
    assert!(
        DefmtTable::from_elf(&elf("ahil-fw-v1.elf"))
            .expect("the plain image parses")
            .is_none()
    );
}

#[test]
fn bytes_that_are_no_elf_are_refused() {
    assert!(DefmtTable::from_elf(b"not an elf").is_err());
}
