//! The run as JUnit XML, the format CI systems read: one suite (the plan), one test case per
//! top-level step, a failure element on the step that failed, skipped cases for steps never reached.

use std::fmt::Write as _;

use serde_json::Value;

/// Escapes text for XML content and attribute values; drops characters XML 1.0 cannot carry.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The JUnit document of a run report (`steps`, `name`, `failed_step`, …).
pub fn document(report: &Value, planned_steps: &[&str]) -> String {
    let name = report["name"].as_str().unwrap_or("test plan");
    let steps = report["steps"].as_array().cloned().unwrap_or_default();
    let total = planned_steps.len().max(steps.len());
    let mut failures = 0;
    let mut cases = String::new();
    let mut seconds = 0.0;
    for index in 0..total {
        let done = steps.get(index);
        let action = done
            .and_then(|s| s["action"].as_str())
            .or_else(|| planned_steps.get(index).copied())
            .unwrap_or("step");
        let time = done.and_then(|s| s["elapsed_ms"].as_f64()).unwrap_or(0.0) / 1000.0;
        seconds += time;
        let case = format!("{:03} {action}", index + 1);
        let _ = write!(
            cases,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.3}\">",
            escape(name),
            escape(&case)
        );
        match done {
            Some(step) if step["result"]["ok"] == Value::Bool(false) => {
                failures += 1;
                let error_type = step["result"]["error_type"]
                    .as_str()
                    .unwrap_or("step_failed");
                let summary = step["result"]["summary"].as_str().unwrap_or_default();
                let _ = write!(
                    cases,
                    "\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    ",
                    escape(error_type),
                    escape(summary),
                    escape(&step["result"].to_string())
                );
            }
            Some(_) => {}
            None => cases.push_str("\n      <skipped message=\"not reached\"/>\n    "),
        }
        cases.push_str("</testcase>\n");
    }
    let skipped = total - steps.len();
    let mut suite_end = String::new();
    if report["cleanup_ok"] == Value::Bool(false) {
        let _ = writeln!(
            suite_end,
            "    <system-err>{}</system-err>",
            escape(&report["cleanup_errors"].to_string())
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"agentic-hil\" tests=\"{total}\" failures=\"{failures}\">\n  <testsuite name=\"{}\" tests=\"{total}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{seconds:.3}\">\n{cases}{suite_end}  </testsuite>\n</testsuites>\n",
        escape(name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A small well-formedness check: every tag closes in order, every `&` starts a known entity,
    /// and no raw `<` sits in text.
    fn well_formed(xml: &str) -> Result<(), String> {
        let body = xml.split_once("?>").map_or(xml, |(_, rest)| rest);
        let mut stack: Vec<String> = Vec::new();
        let mut rest = body;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            check_entities(text)?;
            let close = rest[open..].find('>').ok_or("unterminated tag")? + open;
            let tag = &rest[open + 1..close];
            if let Some(name) = tag.strip_prefix('/') {
                let top = stack.pop().ok_or("close without open")?;
                if top != name {
                    return Err(format!("{name} closes {top}"));
                }
            } else if !tag.ends_with('/') {
                let name = tag.split_whitespace().next().ok_or("empty tag")?;
                stack.push(name.to_owned());
            }
            let attrs = tag.split_once(' ').map_or("", |(_, a)| a);
            if !attrs.matches('"').count().is_multiple_of(2) {
                return Err(format!("unbalanced quotes in {tag}"));
            }
            check_entities(attrs)?;
            rest = &rest[close + 1..];
        }
        if stack.is_empty() {
            Ok(())
        } else {
            Err(format!("unclosed {stack:?}"))
        }
    }

    fn check_entities(text: &str) -> Result<(), String> {
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                .iter()
                .any(|e| entity.starts_with(e))
            {
                return Err(format!("bare & in {text}"));
            }
        }
        Ok(())
    }

    #[test]
    fn a_failed_run_is_well_formed_junit_with_one_failure_and_the_rest_skipped() {
        let report = json!({
            "name": "boot <& \"smoke\">",
            "steps": [
                {"index": 1, "action": "uart_open", "elapsed_ms": 12, "result": {"ok": true}},
                {"index": 2, "action": "uart_expect", "elapsed_ms": 1500,
                 "result": {"ok": false, "error_type": "uart_expect_timeout", "summary": "no <boot> & \"ok\"\u{1}"}},
            ],
            "cleanup_ok": true,
        });
        let xml = document(&report, &["uart_open", "uart_expect", "uart_close"]);
        well_formed(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
        assert!(xml.contains("tests=\"3\" failures=\"1\""), "{xml}");
        assert!(xml.contains("type=\"uart_expect_timeout\""), "{xml}");
        assert!(xml.contains("<skipped message=\"not reached\"/>"), "{xml}");
        assert!(
            xml.contains("boot &lt;&amp; &quot;smoke&quot;&gt;"),
            "{xml}"
        );
        assert!(!xml.contains('\u{1}'), "control characters are replaced");
    }

    #[test]
    fn the_checker_itself_rejects_broken_xml() {
        assert!(well_formed("<a><b></a></b>").is_err());
        assert!(well_formed("<a>x & y</a>").is_err());
        assert!(well_formed("<a>ok</a>").is_ok());
    }
}
