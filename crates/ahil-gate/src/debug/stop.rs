//! Stop-reason classification from a `*stopped` record, as the reference names the reasons.

use ahil_drivers::gdbmi::{Record, Value as Mi};
use serde_json::{Value, json};

use super::Breakpoint;

const EXCEPTIONS: &[(&str, &str)] = &[
    ("hardfault", "hardfault"),
    ("hard_fault", "hardfault"),
    ("memmanage", "memmanage"),
    ("busfault", "busfault"),
    ("usagefault", "usagefault"),
    ("default_handler", "default_handler"),
];

/// Whether `record` is a `*stopped` async record.
pub fn is_stopped(record: &Record) -> bool {
    matches!(record, Record::Async { class, .. } if class == "stopped")
}

/// The stop object for a `*stopped` record.
pub fn classify(record: &Record, breakpoints: &[Breakpoint]) -> Value {
    let reason = record.field("reason").unwrap_or_default();
    let frame = record
        .results()
        .iter()
        .find(|(name, _)| name == "frame")
        .map(|(_, frame)| frame_of(frame));
    let function = frame
        .as_ref()
        .and_then(|f| f.get("function"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut stop = json!({"backend_stop_reason": reason});
    let exception = EXCEPTIONS
        .iter()
        .find(|(needle, _)| function.contains(needle))
        .map(|(_, kind)| *kind);
    let stop_reason = match reason {
        "breakpoint-hit" => {
            let number = record.field("bkptno").unwrap_or_default();
            stop["backend_breakpoint_id"] = json!(number);
            if let Some(known) = breakpoints.iter().find(|b| b.backend_id == number) {
                stop["breakpoint_expected"] = json!(true);
                stop["breakpoint_id"] = json!(known.id);
                stop["breakpoint"] = known.to_value();
                "breakpoint_hit"
            } else {
                stop["breakpoint_expected"] = json!(false);
                "unexpected_breakpoint"
            }
        }
        "exited-normally" | "exited" | "exited-signalled" => "target_exit",
        _ if exception.is_some() => {
            stop["exception_type"] = json!(exception);
            "exception"
        }
        "signal-received" => {
            let name = record.field("signal-name").unwrap_or_default();
            stop["signal"] = json!({
                "name": name,
                "meaning": record.field("signal-meaning").unwrap_or_default(),
            });
            match name {
                "SIGINT" => "halted",
                "SIGTRAP" => "unexpected_breakpoint",
                "SIGABRT" | "SIGBUS" | "SIGFPE" | "SIGILL" | "SIGSEGV" => {
                    stop["exception_type"] = json!(name.to_ascii_lowercase());
                    "exception"
                }
                _ => "signal",
            }
        }
        _ if function.contains("reset") => "reset",
        _ => "unknown",
    };
    stop["stop_reason"] = json!(stop_reason);
    if let Some(frame) = frame {
        stop["frame"] = frame;
    }
    stop
}

fn frame_of(frame: &Mi) -> Value {
    let text = |key: &str| frame.get(key).and_then(Mi::as_str).map(str::to_owned);
    json!({
        "function": text("func"),
        "address": text("addr"),
        "file": text("file"),
        "line": text("line").and_then(|l| l.parse::<u64>().ok()),
    })
}

/// Whether a stop reason is abnormal (answered `ok: false`), and its error type.
pub fn abnormal(stop_reason: &str) -> Option<&'static str> {
    match stop_reason {
        "exception" | "fault" => Some("target_exception"),
        "debugger_error" => Some("debugger_error"),
        "timeout" => Some("timeout"),
        "unexpected_breakpoint" => Some("unexpected_breakpoint"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use ahil_drivers::gdbmi::parse_line;

    use super::*;

    fn known() -> Vec<Breakpoint> {
        vec![Breakpoint {
            id: 1,
            backend_id: "1".into(),
            location: json!("on_tick"),
            gdb_location: "on_tick".into(),
        }]
    }

    #[test]
    fn a_known_breakpoint_is_a_breakpoint_hit_with_its_frame() {
        let record = parse_line(
            "*stopped,reason=\"breakpoint-hit\",disp=\"keep\",bkptno=\"1\",frame={addr=\"0x08000120\",func=\"on_tick\",args=[],file=\"main.c\",line=\"42\"},thread-id=\"1\"",
        )
        .expect("parses");
        let stop = classify(&record, &known());
        assert_eq!(stop["stop_reason"], "breakpoint_hit");
        assert_eq!(stop["breakpoint_id"], 1);
        assert_eq!(stop["frame"]["function"], "on_tick");
        assert_eq!(stop["frame"]["line"], 42);
    }

    #[test]
    fn an_unknown_breakpoint_and_a_fault_handler_are_abnormal() {
        let record = parse_line("*stopped,reason=\"breakpoint-hit\",bkptno=\"7\"").expect("parses");
        let stop = classify(&record, &known());
        assert_eq!(stop["stop_reason"], "unexpected_breakpoint");
        assert_eq!(
            abnormal("unexpected_breakpoint"),
            Some("unexpected_breakpoint")
        );
        let record = parse_line(
            "*stopped,reason=\"signal-received\",signal-name=\"SIGINT\",frame={func=\"HardFault_Handler\"}",
        )
        .expect("parses");
        let stop = classify(&record, &[]);
        assert_eq!(stop["stop_reason"], "exception");
        assert_eq!(stop["exception_type"], "hardfault");
    }

    #[test]
    fn an_interrupt_is_a_plain_halt() {
        let record = parse_line(
            "*stopped,reason=\"signal-received\",signal-name=\"SIGINT\",signal-meaning=\"Interrupt\",frame={func=\"main\"}",
        )
        .expect("parses");
        assert_eq!(classify(&record, &[])["stop_reason"], "halted");
        assert_eq!(abnormal("halted"), None);
    }
}
