//! Judging what a device sent: serial text windows (substring, regex, line equality, captured
//! numbers in a range), CAN frames, and symbol values. Pure functions, so each rule is tested alone.

use ahil_config::plan::{CanComparator, Matcher, Range, SymbolComparator};
use regex_automata::meta::Regex;
use serde_json::{Map, Value, json};

/// A match, with what it captured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hit {
    pub captured_text: Option<String>,
    pub captured_value: Option<f64>,
}

/// The bytes kept for matching: at least 512, more for a long expected text.
pub fn window_size(expected_len: usize) -> usize {
    512.max(4 * expected_len + 16)
}

fn in_range(value: f64, range: &Range) -> bool {
    value >= range.min && value <= range.max
}

/// Regex search; with a range, group 1 of any match parsed by `parse` must land in it.
fn search(
    pattern: &str,
    range: Option<&Range>,
    haystack: &str,
    parse: fn(&str) -> Option<f64>,
) -> Option<Hit> {
    let regex = Regex::new(pattern).ok()?;
    let Some(range) = range else {
        return regex.is_match(haystack).then(Hit::default);
    };
    captures(&regex, haystack).find_map(|text| {
        let value = parse(text);
        value.is_some_and(|v| in_range(v, range)).then(|| Hit {
            captured_text: Some(text.to_owned()),
            captured_value: value,
        })
    })
}

/// The last capture in a window that did not pass, for the failure report.
pub fn last_capture(pattern: &str, haystack: &str) -> Option<String> {
    let regex = Regex::new(pattern).ok()?;
    captures(&regex, haystack).last().map(str::to_owned)
}

/// Group 1 of every match, left to right; a match without it yields nothing, and an empty match
/// moves the search one byte on, so the scan always ends.
fn captures<'h>(regex: &'h Regex, haystack: &'h str) -> impl Iterator<Item = &'h str> + 'h {
    let mut caps = regex.create_captures();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at <= haystack.len() {
            let input = regex_automata::Input::new(haystack).span(at..haystack.len());
            regex.search_captures(&input, &mut caps);
            let whole = caps.get_match()?;
            at = if whole.end() > whole.start() {
                whole.end()
            } else {
                whole.end() + 1
            };
            if let Some(span) = caps.get_group(1) {
                return Some(&haystack[span.range()]);
            }
        }
        None
    })
}

fn decimal(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn hex_number(text: &str) -> Option<f64> {
    let digits = text
        .trim()
        .trim_start_matches("0x")
        .trim_start_matches("0X");
    // Payload captures are a few bytes; u32 keeps the conversion exact.
    u32::from_str_radix(digits, 16).ok().map(f64::from)
}

/// A serial comparator over the decoded window; `last_pass` lets the whole window equal the value.
pub fn text(matcher: &Matcher, window: &str, last_pass: bool) -> Option<Hit> {
    match matcher {
        Matcher::Equals(value) => {
            let mut lines: Vec<&str> = window.split(['\n', '\r']).collect();
            // The part after the last terminator is not a complete line yet.
            lines.pop();
            let found = lines.iter().any(|line| line.trim() == value)
                || (last_pass && window.trim() == value);
            found.then(Hit::default)
        }
        Matcher::Pattern { pattern, range } => search(pattern, range.as_ref(), window, decimal),
    }
}

/// `uart_expect`: a substring or a regex search.
pub fn expect(matcher: &ahil_config::plan::UartMatch, window: &str) -> bool {
    match matcher {
        ahil_config::plan::UartMatch::Text(text) => window.contains(text.as_str()),
        ahil_config::plan::UartMatch::Pattern(pattern) => {
            Regex::new(pattern).is_ok_and(|r| r.is_match(window))
        }
    }
}

fn normalized_hex(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase()
}

/// Whether a frame (as `can_read` answers it) is one the comparator looks at.
pub fn frame_selected(comparator: &CanComparator, frame: &Value) -> bool {
    let id = frame["id"].as_u64();
    let extended = frame["extended"].as_bool().unwrap_or(false);
    let mask = comparator.id_mask.unwrap_or(if comparator.extended {
        0x1FFF_FFFF
    } else {
        0x7FF
    });
    id.is_some_and(|id| id & mask == comparator.id & mask) && extended == comparator.extended
}

/// A CAN comparator on one selected frame.
pub fn frame(comparator: &CanComparator, frame: &Value) -> Option<Hit> {
    let payload = normalized_hex(frame["data_hex"].as_str().unwrap_or_default());
    match &comparator.matcher {
        Matcher::Equals(value) => (normalized_hex(value) == payload).then(Hit::default),
        Matcher::Pattern { pattern, range } => {
            search(pattern, range.as_ref(), &payload, hex_number)
        }
    }
}

/// A symbol comparator on `debug_symbol_value`'s answer; `Err` names why it did not pass.
pub fn symbol(
    comparator: &SymbolComparator,
    answer: &Value,
) -> Result<Map<String, Value>, Map<String, Value>> {
    let unsigned = answer["value_unsigned"].as_u64().map(i128::from);
    let signed = answer["value_signed"].as_i64().map(i128::from);
    let mut doc = Map::new();
    let (passed, reading) = match comparator {
        SymbolComparator::Equals {
            value,
            mask,
            signed: want_signed,
        } => {
            let reading = if *want_signed { signed } else { unsigned };
            let judged = match (reading, mask) {
                (Some(r), Some(m)) => Some(r & m),
                (r, None) => r,
                (None, Some(_)) => None,
            };
            doc.insert("expected".into(), json!(value.to_string()));
            if let Some(m) = mask {
                doc.insert("mask".into(), json!(m.to_string()));
            }
            (judged == Some(*value), reading)
        }
        SymbolComparator::Range {
            min,
            max,
            signed: want_signed,
        } => {
            let reading = if *want_signed { signed } else { unsigned };
            doc.insert(
                "range".into(),
                json!({"min": min.to_string(), "max": max.to_string()}),
            );
            (reading.is_some_and(|r| r >= *min && r <= *max), reading)
        }
    };
    doc.insert(
        "observed".into(),
        reading.map_or(Value::Null, |r| json!(r.to_string())),
    );
    doc.insert("passed".into(), passed.into());
    if passed { Ok(doc) } else { Err(doc) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &str, range: Option<(f64, f64)>) -> Matcher {
        Matcher::Pattern {
            pattern: p.into(),
            range: range.map(|(min, max)| Range { min, max }),
        }
    }

    #[test]
    fn equals_needs_a_complete_line_until_the_last_pass() {
        let m = Matcher::Equals("boot ok".into());
        assert!(text(&m, "x\r\nboot ok\r\nti", false).is_some());
        assert!(
            text(&m, "x\nboot ok", false).is_none(),
            "line not ended yet"
        );
        assert!(
            text(&m, "  boot ok ", true).is_some(),
            "the whole window on the last pass"
        );
    }

    #[test]
    fn a_range_passes_when_any_capture_lands_in_it() {
        let m = pattern(r"tick (\d+)", Some((5.0, 6.0)));
        let hit = text(&m, "tick 3\ntick 5\ntick 9\n", false).expect("tick 5 is in range");
        assert_eq!(hit.captured_value, Some(5.0));
        assert!(text(&m, "tick 3\ntick 9\n", false).is_none());
        assert_eq!(
            last_capture(r"tick (\d+)", "tick 3\ntick 9\n").as_deref(),
            Some("9")
        );
    }

    #[test]
    fn a_range_looks_past_matches_without_the_group_and_empty_matches() {
        let optional = pattern(r"v(\d)?", Some((7.0, 7.0)));
        let hit = text(&optional, "v v7", false).expect("the second match captures 7");
        assert_eq!(hit.captured_text.as_deref(), Some("7"));
        let empty_first = pattern(r"(\d*)", Some((5.0, 5.0)));
        let hit = text(&empty_first, "a5", false).expect("an empty match at 0, then 5");
        assert_eq!(hit.captured_value, Some(5.0));
        assert_eq!(last_capture(r"v(\d)?", "v7 v").as_deref(), Some("7"));
    }

    #[test]
    fn frames_are_selected_by_id_mask_and_format() {
        let c = CanComparator {
            id: 0x120,
            id_mask: Some(0x7F0),
            extended: false,
            matcher: Matcher::Equals("01 FF".into()),
        };
        let f = json!({"id": 0x123, "extended": false, "data_hex": "01ff"});
        assert!(frame_selected(&c, &f));
        assert!(frame(&c, &f).is_some());
        assert!(!frame_selected(
            &c,
            &json!({"id": 0x123, "extended": true, "data_hex": ""})
        ));
        let r = CanComparator {
            matcher: pattern("^01(..)", Some((250.0, 255.0))),
            ..c
        };
        assert_eq!(frame(&r, &f).and_then(|h| h.captured_value), Some(255.0));
    }

    #[test]
    fn symbol_comparators_read_the_chosen_width_and_mask() {
        let answer = json!({"value_unsigned": 0xFB2E, "value_signed": -1234});
        let eq = SymbolComparator::Equals {
            value: -1234,
            mask: None,
            signed: true,
        };
        assert!(symbol(&eq, &answer).is_ok());
        let masked = SymbolComparator::Equals {
            value: 0x2E,
            mask: Some(0xFF),
            signed: false,
        };
        assert!(symbol(&masked, &answer).is_ok());
        let range = SymbolComparator::Range {
            min: 0,
            max: 10,
            signed: false,
        };
        assert_eq!(
            symbol(&range, &answer).expect_err("out of range")["observed"],
            "64302"
        );
    }
}
