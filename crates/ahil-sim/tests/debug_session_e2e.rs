//! A GDB/MI debug session against the emulated board through the qemu driver's `open_gdb`: the
//! firmware's breakpoint target and typed globals, as the debug tools will use them.

mod common;

use std::time::Duration;

use ahil_drivers::gdbmi::{Record, Session};
use ahil_drivers::probe::DebugProbe;
use ahil_sim::firmware;
use common::{Bench, budget};

const STEP: Duration = Duration::from_secs(10);

fn is_stopped(record: &Record) -> bool {
    matches!(record, Record::Async { class, .. } if class == "stopped")
}

fn evaluate(session: &mut Session, expression: &str) -> String {
    let reply = session
        .command(&format!("-data-evaluate-expression {expression}"), STEP)
        .expect("gdb answers");
    assert!(reply.ok(), "{expression}: {}", reply.message());
    reply
        .results
        .iter()
        .find(|(name, _)| name == "value")
        .and_then(|(_, value)| value.as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_gdb_session_breaks_on_on_tick_and_reads_the_typed_globals() {
    let bench = Bench::start(Some((1, "elf")));
    bench.board.run().expect("cont");
    let target = bench.probe().open_gdb(&budget()).expect("gdb target");
    assert_eq!(target.reset_halt, ["monitor system_reset"]);
    let mut session = Session::spawn(&target.gdb).expect("gdb starts");
    let elf = firmware::image(1, "elf");
    for command in [
        "-gdb-set mi-async on".to_owned(),
        format!("-file-exec-and-symbols {}", elf.display()),
        format!("-target-select extended-remote {}", target.remote),
        "-break-insert on_tick".to_owned(),
    ] {
        let reply = session.command(&command, STEP).expect("gdb answers");
        assert!(reply.ok(), "{command}: {}", reply.message());
    }
    let reply = session.command("-exec-continue", STEP).expect("continue");
    assert!(reply.ok(), "{}", reply.message());
    let stop = match reply.events.iter().find(|record| is_stopped(record)) {
        Some(record) => record.clone(),
        None => session
            .wait_for(is_stopped, STEP)
            .expect("a breakpoint stop"),
    };
    assert_eq!(stop.field("reason"), Some("breakpoint-hit"), "{stop:?}");

    let counter: u32 = evaluate(&mut session, "counter").parse().expect("a number");
    assert!(counter >= 1);
    assert_eq!(evaluate(&mut session, "g_u8"), "165 '\\245'");
    assert_eq!(evaluate(&mut session, "g_i16"), "-1234");
    assert_eq!(evaluate(&mut session, "g_u32"), "3735928559");
    assert_eq!(evaluate(&mut session, "g_float"), "3.5");
    assert_eq!(evaluate(&mut session, "g_sample.levels[2]"), "-3 '\\375'");
    assert_eq!(evaluate(&mut session, "g_array[3]"), "40");
    assert_eq!(evaluate(&mut session, "magic"), "3237998146");

    let frames = session.command("-stack-list-frames", STEP).expect("frames");
    let funcs: Vec<String> = frames
        .results
        .iter()
        .find(|(name, _)| name == "stack")
        .map(|(_, stack)| {
            stack
                .items()
                .iter()
                .filter_map(|frame| {
                    frame
                        .get("func")
                        .and_then(|f| f.as_str())
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        funcs.first().map(String::as_str),
        Some("on_tick"),
        "{funcs:?}"
    );
    assert!(funcs.iter().any(|f| f == "main"), "{funcs:?}");

    // Halting a running core needs mi-async; the stop arrives within milliseconds.
    for command in ["-break-delete", "-exec-continue"] {
        assert!(session.command(command, STEP).expect("answers").ok());
    }
    let reply = session.command("-exec-interrupt", STEP).expect("interrupt");
    assert!(reply.ok(), "{}", reply.message());
    let stop = match reply.events.iter().find(|record| is_stopped(record)) {
        Some(record) => record.clone(),
        None => session
            .wait_for(is_stopped, STEP)
            .expect("an interrupt stop"),
    };
    assert_eq!(stop.field("reason"), Some("signal-received"), "{stop:?}");
    assert!(
        session
            .command("-target-disconnect", STEP)
            .expect("disconnect")
            .ok()
    );
    session.close(STEP);
    assert!(
        !bench.board.status().expect("status").running,
        "disconnect left the core halted"
    );
}
