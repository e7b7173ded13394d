//! Human output: the first line says what happened; indented lines say why and what to do next.
//! Agents use `--json`; this is for the operator at a terminal.

use std::fmt::Write;

use serde_json::Value;

const INDENT: &str = "         ";

pub fn human(doc: &Value) -> String {
    let mut out = String::new();
    let ok = doc.get("ok").and_then(Value::as_bool).unwrap_or(false);
    let findings = list(doc, "findings");
    if findings.is_empty() {
        headline(&mut out, doc, ok);
    } else {
        // A report made of findings (doctor) says everything in its findings; a headline would repeat one.
        for finding in findings {
            let verdict = finding.get("verdict").and_then(Value::as_str).map_or_else(
                || {
                    if truthy(finding, "ok") {
                        "OK".to_owned()
                    } else {
                        "FAIL".to_owned()
                    }
                },
                str::to_uppercase,
            );
            let _ = writeln!(out, "{verdict:<8} {}", text(finding, "summary"));
            for step in strings(finding, "remediation").chain(strings(finding, "next_step")) {
                let _ = writeln!(out, "{INDENT}{step}");
            }
        }
    }
    // A probe listing is read for its ids: one line each.
    for probe in list(doc, "probes") {
        let _ = writeln!(
            out,
            "{INDENT}probe: {}  {}",
            text(probe, "probe_id"),
            text(probe, "description")
        );
    }
    // A lease status's labgrid places: one line each, as the status words it.
    if let Some(places) = doc.get("labgrid") {
        for place in list(places, "places") {
            let _ = writeln!(out, "{INDENT}place: {}", text(place, "summary"));
        }
    }
    for cause in strings(doc, "likely_causes") {
        let _ = writeln!(out, "{INDENT}cause: {cause}");
    }
    for step in strings(doc, "remediation") {
        let _ = writeln!(out, "{INDENT}next: {step}");
    }
    if findings.is_empty() {
        for step in strings(doc, "next_step") {
            let _ = writeln!(out, "{INDENT}next: {step}");
        }
    }
    for step in strings(doc, "next_steps") {
        let _ = writeln!(out, "{INDENT}next: {step}");
    }
    out
}

fn headline(out: &mut String, doc: &Value, ok: bool) {
    let summary = text(doc, "summary");
    if ok {
        let _ = writeln!(out, "{:<8} {summary}", "OK");
    } else {
        let error_type = text(doc, "error_type");
        let _ = writeln!(out, "{:<8} {error_type}: {summary}", "REFUSED");
    }
    if let Some(field) = doc.get("field").and_then(Value::as_str) {
        let _ = writeln!(out, "{INDENT}key: {field}");
    }
}

fn truthy(doc: &Value, key: &str) -> bool {
    doc.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(doc: &'a Value, key: &str) -> &'a str {
    doc.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn strings<'a>(doc: &'a Value, key: &str) -> impl Iterator<Item = &'a str> {
    let values: &'a [Value] = match doc.get(key) {
        Some(Value::Array(items)) => items.as_slice(),
        Some(single @ Value::String(_)) => std::slice::from_ref(single),
        _ => &[],
    };
    values.iter().filter_map(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refusal_leads_with_its_error_type_and_ends_with_the_next_step() {
        let text = human(&json!({
            "ok": false,
            "error_type": "config_invalid",
            "summary": "Unknown key.",
            "field": "debuggers.dut.colour",
            "remediation": ["Remove the key."]
        }));
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines[0], "REFUSED  config_invalid: Unknown key.");
        assert_eq!(lines[1], "         key: debuggers.dut.colour");
        assert_eq!(lines[2], "         next: Remove the key.");
    }

    #[test]
    fn findings_print_one_verdict_line_each() {
        let text = human(&json!({
            "ok": false,
            "error_type": "bench_unbound",
            "summary": "Not usable yet.",
            "findings": [
                {"name": "state_root", "ok": true, "summary": "The state root accepts writes."},
                {"name": "bench_binding", "ok": false, "verdict": "unbound", "summary": "debuggers.dut names no executable.",
                 "next_step": "Attach the board, then run: agentic-hil adopt-hardware --debugger dut"}]
        }));
        assert!(
            text.starts_with("OK       The state root accepts writes.\n"),
            "{text}"
        );
        assert!(
            text.contains("\nUNBOUND  debuggers.dut names no executable.\n"),
            "{text}"
        );
        assert!(
            !text.contains("Not usable yet."),
            "no headline repeats a finding: {text}"
        );
        assert!(text.contains("\n         Attach the board"));
    }

    #[test]
    fn a_probe_listing_shows_each_probe_id_on_its_own_line() {
        let text = human(&json!({
            "ok": true,
            "summary": "2 probes.",
            "probes": [
                {"probe_id": "066DFF535254887767184038", "description": "ST-LINK/V2-1"},
                {"probe_id": "qemu:board", "description": "QEMU netduinoplus2"},
            ],
        }));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "OK       2 probes.");
        assert_eq!(
            lines[1],
            "         probe: 066DFF535254887767184038  ST-LINK/V2-1"
        );
        assert_eq!(lines[2], "         probe: qemu:board  QEMU netduinoplus2");
    }
}
