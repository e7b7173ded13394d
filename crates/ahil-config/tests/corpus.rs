//! Every corpus file is loaded as the authoritative config of a fresh workspace.
//!
//! Invalid files declare `# expect: <error_type> <field>` (`-` for no field) on their first
//! line; each expectation was checked against the reference's `doctor --json`.

mod common;

use std::fs;

use ahil_config::{load_authoritative, parse_config};
use common::{Bench, corpus_dir, fill_bytes};

fn header(raw: &[u8]) -> String {
    let end = raw.iter().position(|b| *b == b'\n').unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

#[test]
fn every_invalid_file_is_refused_with_its_declared_error_type_and_field() {
    let mut files: Vec<_> = fs::read_dir(corpus_dir("invalid"))
        .expect("corpus dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 45, "only {} corpus files", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let raw = fs::read(file).expect("read corpus file");
        let head = header(&raw);
        let mut parts = head
            .strip_prefix("# expect: ")
            .expect("expect header")
            .split_whitespace();
        let (want_type, want_field) = (
            parts.next().expect("error_type"),
            parts.next().expect("field"),
        );
        let bench = Bench::new();
        bench.write_canonical(&fill_bytes(&bench, &raw));
        let name = file
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        match load_authoritative(&bench.workspace, &bench.env()) {
            Ok(_) => failures.push(format!("{name}: loaded")),
            Err(e) => {
                let field = e.field().unwrap_or("-");
                if e.error_type() != want_type || field != want_field {
                    failures.push(format!(
                        "{name}: got {} {field} ({})",
                        e.error_type(),
                        e.summary()
                    ));
                }
                let shown = serde_json::Value::Object(e.details()).to_string();
                if shown.contains(&bench.home.display().to_string()) {
                    failures.push(format!(
                        "{name}: details name an absolute path under home: {shown}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_valid_file_loads() {
    for entry in fs::read_dir(corpus_dir("valid")).expect("corpus dir") {
        let file = entry.expect("entry").path();
        let raw = fs::read(&file).expect("read");
        let mode = header(&raw);
        let bench = Bench::new();
        let bytes = fill_bytes(&bench, &raw);
        let name = file.display().to_string();
        if mode == "# valid: parse" {
            parse_config(&bytes).unwrap_or_else(|e| panic!("{name}: {e} {:?}", e.field()));
        } else {
            assert_eq!(mode, "# valid: load", "{name}");
            bench.write_canonical(&bytes);
            load_authoritative(&bench.workspace, &bench.env()).unwrap_or_else(|e| {
                panic!("{name}: {} {:?} {}", e.error_type(), e.field(), e.summary())
            });
        }
    }
}

#[test]
fn the_annotated_example_keeps_file_order_and_normalises_usb_ids() {
    let bench = Bench::new();
    let raw = fs::read(corpus_dir("valid").join("annotated-v3.yaml")).expect("read");
    let cfg = parse_config(&fill_bytes(&bench, &raw)).expect("parses");
    assert_eq!(cfg.debuggers.keys().collect::<Vec<_>>(), ["dut", "board_b"]);
    let uart = &cfg.com_ports["dut_uart"];
    assert_eq!((uart.vid, uart.pid), (Some(0x0483), Some(0x374b)));
    assert_eq!(cfg.effective_target("board_b").name, "sensor-node");
    assert_eq!(cfg.effective_target("board_b").controller, "stm32f446ret6");
    let share = &cfg.can_buses["dut_can"].shares.as_ref().expect("shares")["logger"];
    assert_eq!((share.filter[0].id, share.filter[0].mask), (0x200, 0x700));
    assert_eq!(cfg.can_buses["dut_can"].max_frame_data_bytes, 8);
}

#[test]
fn the_reference_init_file_leaves_the_starter_unbound() {
    let bench = Bench::new();
    bench.tool("openocd");
    let raw = fs::read(corpus_dir("valid").join("reference-init.yaml")).expect("read");
    bench.write_canonical(&fill_bytes(&bench, &raw));
    let loaded = load_authoritative(&bench.workspace, &bench.env()).expect("loads");
    // openocd is on PATH, yet the untouched starter is not bound to it (as the reference does).
    assert!(matches!(
        loaded.executables.debuggers["dut"],
        ahil_config::ExecutableState::Unbound { .. }
    ));
    assert!(loaded.auto_recover_explicit);
    assert!(loaded.config.is_placeholder_controller());
}

#[test]
fn our_starter_says_what_the_reference_init_file_says() {
    let bench = Bench::new();
    let raw = fs::read(corpus_dir("valid").join("reference-init.yaml")).expect("read");
    let theirs = parse_config(&fill_bytes(&bench, &raw)).expect("reference file parses");
    let ours =
        parse_config(ahil_config::render_init_config(&bench.workspace, &bench.state()).as_bytes())
            .expect("our starter parses");
    assert_eq!(ours, theirs);
}

#[test]
fn a_qemu_board_defaults_its_machine_and_its_directory_under_the_state_root() {
    let bench = Bench::new();
    let raw = b"version: 3\nworkspace_root: \"{{WORKSPACE}}\"\nstate_root: \"{{STATE}}\"\n\
debuggers:\n  board:\n    type: qemu\n";
    let cfg = parse_config(&fill_bytes(&bench, raw)).expect("parses");
    let board = &cfg.debuggers["board"];
    assert_eq!(board.qemu_machine(), "netduinoplus2");
    assert_eq!(
        cfg.board_dir("board"),
        Some(cfg.state_root.join("sim").join("board"))
    );
    let raw = fs::read(corpus_dir("valid").join("qemu-board.yaml")).expect("read");
    let cfg = parse_config(&fill_bytes(&bench, &raw)).expect("parses");
    assert_eq!(
        cfg.board_dir("board"),
        Some(bench.state().join("sim/board"))
    );
}
