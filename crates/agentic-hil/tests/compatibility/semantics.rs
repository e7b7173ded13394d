//! Arguments the schema admits and the tool refuses, side by side: on the permission matrix's
//! version 3 bench with every grant open (its `open` port and bus, a port whose device does not
//! exist, the bridge simulator behind the bus), values only the bench can judge (a frame the bus
//! cannot carry, a wait past the bus's timeout, hex that is not hex, a path of the wrong kind) and
//! the order of a refusal against a missing session. One server per implementation.

use std::path::Path;

use crate::driver::{Step, tool};
use crate::permissions::write_bench;
use crate::support::World;

/// Compared beside `isError` and `error_type`: the argument a refusal names.
const FIELDS: &[&str] = &["field"];

/// (case, tool, arguments as JSON text), in call order: a session opens part way.
#[rustfmt::skip]
const ROWS: &[(&str, &str, &str)] = &[
    ("com_write hex that is not hex, no session", "com_write", r#"{"port_id": "open", "hex": "zz"}"#),
    ("com_write an odd hex, no session", "com_write", r#"{"port_id": "open", "hex": "414"}"#),
    ("com_write neither text nor hex, no session", "com_write", r#"{"port_id": "open"}"#),
    ("com_read until empty list, no session", "com_read", r#"{"port_id": "open", "until": []}"#),
    ("com_session_start a port whose device is missing", "com_session_start", r#"{"port_id": "open"}"#),
    ("can_send hex that is not hex, no session", "can_send", r#"{"bus_id": "open", "frame_id": 1, "data_hex": "zz"}"#),
    ("can_send an extended id without extended, no session", "can_send", r#"{"bus_id": "open", "frame_id": 2048}"#),
    ("can_session_start", "can_session_start", r#"{"bus_id": "open"}"#),
    ("can_send hex that is not hex", "can_send", r#"{"bus_id": "open", "frame_id": 1, "data_hex": "zz"}"#),
    ("can_send an odd hex", "can_send", r#"{"bus_id": "open", "frame_id": 1, "data_hex": "012"}"#),
    ("can_send an extended id without extended", "can_send", r#"{"bus_id": "open", "frame_id": 2048}"#),
    ("can_send an extended id as a string", "can_send", r#"{"bus_id": "open", "frame_id": "0x800"}"#),
    ("can_send a 29-bit id with extended", "can_send", r#"{"bus_id": "open", "frame_id": 536870911, "extended": true}"#),
    ("can_send a remote frame with data", "can_send", r#"{"bus_id": "open", "frame_id": 1, "rtr": true, "data_hex": "01"}"#),
    ("can_send a remote frame", "can_send", r#"{"bus_id": "open", "frame_id": 1, "rtr": true}"#),
    ("can_read a wait past the bus timeout", "can_read", r#"{"bus_id": "open", "wait_timeout_s": 30}"#),
    ("can_read until an id past 29 bits", "can_read", r#"{"bus_id": "open", "until_id": 536870912}"#),
    ("can_read more frames than the buffer", "can_read", r#"{"bus_id": "open", "max_frames": 1048576, "wait_timeout_s": 0}"#),
    ("can_session_stop", "can_session_stop", r#"{"bus_id": "open"}"#),
    ("flash_firmware an image of another extension", "flash_firmware", r#"{"image_path": "fw/fw.txt"}"#),
    ("flash_firmware a directory", "flash_firmware", r#"{"image_path": "fw"}"#),
    ("flash_firmware an image outside the allowed roots", "flash_firmware", r#"{"image_path": "other/fw.elf"}"#),
    ("flash_firmware a capture without a reset", "flash_firmware", r#"{"image_path": "fw/fw.elf", "capture": {"port_id": "open"}}"#),
    ("flash_firmware a capture on an unknown port", "flash_firmware", r#"{"image_path": "fw/fw.elf", "reset_after_flash": true, "capture": {"port_id": "nope"}}"#),
    ("flash_firmware an artifact id that is no id", "flash_firmware", r#"{"artifact_id": "../fw.elf"}"#),
    ("artifact_upload base64 that is not", "artifact_upload", r#"{"filename": "x.elf", "data_base64": "!!!"}"#),
    ("artifact_upload a name of another extension", "artifact_upload", r#"{"filename": "x.exe", "data_base64": "AAAA"}"#),
    ("artifact_upload a name with a directory", "artifact_upload", r#"{"filename": "sub/x.elf", "data_base64": "AAAA"}"#),
    ("artifact_upload both a path and data", "artifact_upload", r#"{"image_path": "fw/fw.elf", "filename": "x.elf", "data_base64": "AAAA"}"#),
    ("artifact_upload neither", "artifact_upload", "{}"),
    ("debug_dump_symbol_ihex a path of another extension", "debug_dump_symbol_ihex", r#"{"symbol": "main", "output_path": "dump.bin"}"#),
    ("debug_dump_symbol_ihex the workspace itself", "debug_dump_symbol_ihex", r#"{"symbol": "main", "output_path": "."}"#),
    ("debug_set_breakpoint a symbol not allowed", "debug_set_breakpoint", r#"{"location": "counter"}"#),
    ("debug_set_breakpoint a file line without allow_all_symbols", "debug_set_breakpoint", r#"{"location": {"file": "main.c", "line": 3}}"#),
    ("debug_symbol_value a symbol not allowed", "debug_symbol_value", r#"{"symbol": "counter"}"#),
    ("bench_run_start a device twice", "bench_run_start", r#"{"devices": [{"kind": "uart", "id": "open"}, {"kind": "uart", "id": "open"}]}"#),
    ("bench_run_start a port as a debugger", "bench_run_start", r#"{"devices": [{"kind": "debugger", "id": "open"}]}"#),
    ("bench_run_start a participant on a bus without shares", "bench_run_start", r#"{"devices": [{"kind": "can", "id": "open", "participant": "tester"}]}"#),
    ("bench_run_start a supply without id", "bench_run_start", r#"{"devices": [{"kind": "power_supply"}]}"#),
    ("bench_run_start a debugger without id", "bench_run_start", r#"{"devices": [{"kind": "debugger"}]}"#),
    ("bench_run_stop", "bench_run_stop", "{}"),
    ("power_supply_set no set point", "power_supply_set", r#"{"supply_id": "open"}"#),
    ("power_supply_set above the supply limit", "power_supply_set", r#"{"supply_id": "open", "voltage_v": 5.6}"#),
    ("power_supply_status an unknown channel", "power_supply_status", r#"{"supply_id": "open", "channel": 2}"#),
    ("power_supply_cycle an unknown channel", "power_supply_cycle", r#"{"supply_id": "open", "channel": 2, "off_s": 1}"#),
    ("test_reactor_status a run id of another shape", "test_reactor_status", r#"{"run": "run-XYZ"}"#),
    ("test_reactor_status an unknown run", "test_reactor_status", r#"{"run": "run-0123456789abcdef"}"#),
    ("test_reactor_stop an unknown run", "test_reactor_stop", r#"{"run": "run-0123456789abcdef"}"#),
    ("hardware_recover with nothing standing", "hardware_recover", r#"{"operator_statement": "the board is back"}"#),
];

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

#[test]
fn arguments_only_the_bench_can_judge_are_refused_as_the_reference_does() {
    let steps: Vec<Step> = ROWS
        .iter()
        .map(|(case, name, args)| {
            let args = serde_json::from_str(args).expect("a row's arguments are JSON");
            tool(leak(format!("bench-args/{case}")), name, args, FIELDS)
        })
        .collect();
    let bench = |world: &World, _: &Path| {
        write_bench(world, 3, &[]);
        std::fs::write(world.workspace.join("fw/fw.txt"), "not firmware").expect("fw.txt");
        let other = world.workspace.join("other");
        std::fs::create_dir_all(&other).expect("other dir");
        std::fs::copy(world.workspace.join("fw/fw.elf"), other.join("fw.elf")).expect("copy");
    };
    crate::driver::compare("bench-args/", &bench, &steps);
}

/// Compared there: the grant a refusal names, and what a write did.
const SESSION_FIELDS: &[&str] = &["permission", "bytes_written", "was_active"];

/// A version 1 port session opened on one grant alone, on a pty that echoes: what it may do and
/// what stays refused, in both.
#[rustfmt::skip]
const ONE_GRANT_SESSIONS: &[(&str, &str, &str)] = &[
    ("com_session_start on write alone", "com_session_start", r#"{"port_id": "noread"}"#),
    ("com_write on write alone", "com_write", r#"{"port_id": "noread", "text": "ping\n"}"#),
    ("com_read on write alone", "com_read", r#"{"port_id": "noread", "wait_timeout_s": 0}"#),
    ("com_session_stop on write alone", "com_session_stop", r#"{"port_id": "noread"}"#),
    ("com_session_start on read alone", "com_session_start", r#"{"port_id": "nowrite"}"#),
    ("com_write on read alone", "com_write", r#"{"port_id": "nowrite", "text": "ping\n"}"#),
    ("com_read on read alone", "com_read", r#"{"port_id": "nowrite", "wait_timeout_s": 0}"#),
    ("com_session_stop on read alone", "com_session_stop", r#"{"port_id": "nowrite"}"#),
];

#[test]
fn a_version_one_session_on_one_grant_alone_answers_as_the_reference_does() {
    use crate::support::raw::EchoBoard;
    let steps: Vec<Step> = ONE_GRANT_SESSIONS
        .iter()
        .map(|(case, name, args)| {
            let args = serde_json::from_str(args).expect("a row's arguments are JSON");
            tool(
                leak(format!("one-grant/{case}")),
                name,
                args,
                SESSION_FIELDS,
            )
        })
        .collect();
    let bench = |world: &World, _: &Path| {
        write_bench(world, 1, &[]);
        let boards = [EchoBoard::start(), EchoBoard::start()];
        let path = world.config_path();
        let mut text = std::fs::read_to_string(&path).expect("config");
        for (name, board) in ["noread", "nowrite"].iter().zip(&boards) {
            let tty = world.home.join(format!("tty-{name}"));
            text = text.replace(
                &format!("\"{}\"", tty.display()),
                &format!("\"{}\"", board.device),
            );
        }
        std::fs::write(&path, text).expect("config");
        boards
    };
    crate::driver::compare("one-grant/", &bench, &steps);
    // Not vacuous: in ours the write-only session wrote, and its read was refused by its grant.
    let seen = crate::driver::observe(Path::new(World::binary()), &bench, &steps);
    let value = |case: &str, spec: &str| {
        seen.iter()
            .find(|(c, s, _)| c.ends_with(case) && s == spec)
            .map(|(_, _, v)| v.clone())
    };
    assert_eq!(
        value("com_write on write alone", "bytes_written"),
        Some(serde_json::json!(5))
    );
    assert_eq!(
        value("com_read on write alone", "permission"),
        Some(serde_json::json!("com_ports.noread.permissions.allow_read"))
    );
}
