//! The defmt side of an RTT session: the table of the ELF the target runs, and per defmt channel the
//! decoder's state and the frames decoded but not yet returned.
//!
//! `rtt_read` on such a channel keeps `com_read`'s rules on the decoded text: each frame is one line
//! (`<timestamp> <LEVEL> <text>`, masked as the output step masks text), `until` matches within a line and the read ends with the line that
//! matched, `max_bytes` caps the lines' bytes (a frame is never split: at least one is returned, the
//! rest stay queued for the next read). A frame that does not decode is a line of its own, marked,
//! with its bytes in hex.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ahil_drivers::rtt::defmt::{DefmtStream, DefmtTable, Frame};
use ahil_drivers::serial::Ring;
use serde_json::{Value, json};

use crate::audit::redact::redact_string;
use crate::serial::text::to_hex;

/// A session's table and its defmt channels.
#[derive(Debug)]
pub struct Decoding {
    table: DefmtTable,
    /// Which ELF the table came from (`path`, `sha256`, `from`).
    pub source: Value,
    channels: Mutex<BTreeMap<u32, Channel>>,
}

/// A read's wait looks at whether its call was given up this often.
const CANCEL_SLICE: Duration = Duration::from_millis(100);

#[derive(Debug, Default)]
struct Channel {
    stream: DefmtStream,
    ready: VecDeque<(Frame, String)>,
}

/// What one read returned.
#[derive(Debug)]
pub struct Read {
    pub frames: Vec<Value>,
    /// The frames' lines, each ended by `\n`.
    pub text: String,
    /// With patterns: whether the last line matched.
    pub matched: Option<bool>,
    /// The pattern that matched.
    pub pattern: Option<String>,
    /// Raw bytes still in the ring, of a frame not yet complete, and frames decoded but not returned.
    pub remaining_bytes: usize,
    pub pending_bytes: usize,
    pub queued_frames: usize,
    pub overflow: u64,
    /// The read ended because its call was given up, not by its own rules: it returned no frame.
    pub gave_up: bool,
}

impl Decoding {
    pub fn new(table: DefmtTable, source: Value) -> Self {
        Self {
            table,
            source,
            channels: Mutex::new(BTreeMap::new()),
        }
    }

    /// The `defmt` object a session describes itself with.
    pub fn describe(&self) -> Value {
        json!({"table": true, "encoding": self.table.encoding(), "elf": self.source})
    }

    /// Take frames of up channel `index` from `ring`: waiting until `deadline` for a frame, or with
    /// `patterns` for a line that holds one of them (or `max_bytes` of lines). Once `gave_up()`
    /// (the call was cancelled or abandoned) the read returns no frame: what was decoded stays
    /// queued for the next read, and the channel is not held up behind a wait nobody awaits.
    pub fn read(
        &self,
        index: u32,
        ring: &Ring,
        max_bytes: usize,
        deadline: Instant,
        patterns: &[String],
        gave_up: impl Fn() -> bool,
    ) -> Read {
        // One reader per channel at a time, so frames are handed out once and in order.
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        let channel = channels.entry(index).or_default();
        let max_bytes = max_bytes.max(1);
        let mut wait_until = Instant::now();
        loop {
            let taken = ring.take(usize::MAX, wait_until);
            for frame in channel.stream.push(&self.table, &taken.bytes) {
                channel.ready.push_back(queued(frame));
            }
            if gave_up() {
                let matched = (!patterns.is_empty()).then_some(false);
                let read = answer(channel, ring, 0, matched, patterns, taken.overflow);
                return Read {
                    gave_up: true,
                    ..read
                };
            }
            let now = Instant::now();
            let out_of_time = now >= deadline || ring.reader_done();
            if let Some((count, matched)) = choose(&channel.ready, max_bytes, patterns, out_of_time)
            {
                return answer(channel, ring, count, matched, patterns, taken.overflow);
            }
            wait_until = deadline.min(Instant::now() + CANCEL_SLICE);
        }
    }
}

fn answer(
    channel: &mut Channel,
    ring: &Ring,
    count: usize,
    matched: Option<bool>,
    patterns: &[String],
    overflow: u64,
) -> Read {
    let returned: Vec<(Frame, String)> = channel.ready.drain(..count).collect();
    let mut text = String::new();
    for (_, line) in &returned {
        text.push_str(line);
        text.push('\n');
    }
    let pattern = matched.filter(|m| *m).and_then(|_| {
        let last = &returned.last()?.1;
        patterns.iter().find(|p| last.contains(p.as_str())).cloned()
    });
    Read {
        frames: returned.iter().map(|(f, _)| frame_doc(f)).collect(),
        text,
        matched,
        pattern,
        remaining_bytes: ring.levels().0,
        pending_bytes: channel.stream.pending(),
        queued_frames: channel.ready.len(),
        overflow,
        gave_up: false,
    }
}

/// How many of the ready frames a read returns, and whether they end with a match; none while it
/// should wait for more.
fn choose(
    ready: &VecDeque<(Frame, String)>,
    max_bytes: usize,
    patterns: &[String],
    out_of_time: bool,
) -> Option<(usize, Option<bool>)> {
    // The frames whose lines fit max_bytes; the first always does.
    let mut fit = 0;
    let mut bytes = 0;
    for (_, line) in ready {
        bytes += line.len() + 1;
        if fit > 0 && bytes > max_bytes {
            break;
        }
        fit += 1;
    }
    if patterns.is_empty() {
        return (fit > 0 || out_of_time).then_some((fit, None));
    }
    if let Some(at) = ready
        .iter()
        .take(fit)
        .position(|(_, line)| patterns.iter().any(|p| line.contains(p.as_str())))
    {
        return Some((at + 1, Some(true)));
    }
    (out_of_time || fit < ready.len()).then_some((fit, Some(false)))
}

/// A decoded frame and the line a read shows and matches. A frame is a whole line, so it is
/// masked whole, and `until` matches the masked line: a credential the target logs decides
/// nothing a read answers.
fn queued(frame: Frame) -> (Frame, String) {
    let line = redact_string(line(&frame));
    (frame, line)
}

/// A frame as one line of text: `<timestamp> <LEVEL> <text>`, or the undecoded frame's mark.
fn line(frame: &Frame) -> String {
    if let Some(raw) = &frame.raw {
        return format!("<undecoded defmt frame: {}>", to_hex(raw));
    }
    let mut line = String::new();
    if let Some(timestamp) = &frame.timestamp {
        line.push_str(timestamp);
        line.push(' ');
    }
    if let Some(level) = frame.level {
        line.push_str(&level.to_uppercase());
        line.push(' ');
    }
    line.push_str(&frame.text);
    line
}

/// A frame in `rtt_read`'s `frames`.
fn frame_doc(frame: &Frame) -> Value {
    match &frame.raw {
        Some(raw) => json!({
            "decoded": false,
            "hex": to_hex(raw),
            "error": frame.error,
        }),
        None => json!({
            "decoded": true,
            "level": frame.level,
            "timestamp": frame.timestamp,
            "text": frame.text,
            "location": frame.location,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(lines: &[&str]) -> VecDeque<(Frame, String)> {
        lines
            .iter()
            .map(|l| {
                let frame = Frame {
                    level: Some("info"),
                    timestamp: None,
                    text: (*l).to_owned(),
                    location: None,
                    raw: None,
                    error: None,
                };
                (frame, (*l).to_owned())
            })
            .collect()
    }

    /// `choose` on a queue of lines, with max_bytes, the until patterns and whether the read is out
    /// of time: the lines it ends the read with and whether until matched, or None to wait on.
    type Choice = (
        &'static str,
        &'static [&'static str],
        usize,
        &'static [&'static str],
        bool,
        Option<(usize, Option<bool>)>,
    );

    #[rustfmt::skip]
    const CHOICES: &[Choice] = &[
        ("match ends it", &["boot", "tick 1", "tick 2"], 1000, &["tick 1"], false, Some((2, Some(true)))),
        ("no match waits", &["boot", "tick 1"], 1000, &["tick 9"], false, None),
        ("no match, out of time", &["boot", "tick 1"], 1000, &["tick 9"], true, Some((2, Some(false)))),
        ("first line over max_bytes", &["a long first line", "b"], 4, &[], false, Some((1, None))),
        ("all fit", &["a long first line", "b"], 1000, &[], false, Some((2, None))),
        // A match past max_bytes is not reached: the read ends at the cap, unmatched.
        ("match past max_bytes", &["a long first line", "b"], 4, &["b"], false, Some((1, Some(false)))),
        ("no frame waits", &[], 10, &[], false, None),
        ("no frame, out of time", &[], 10, &[], true, Some((0, None))),
    ];

    #[test]
    fn an_until_is_matched_against_the_masked_line_never_the_credential_it_hides() {
        let frame = Frame {
            level: Some("info"),
            timestamp: None,
            text: "key AKIAIOSFODNN7EXAMPLE loaded".into(),
            location: None,
            raw: None,
            error: None,
        };
        let ready: VecDeque<(Frame, String)> = [queued(frame)].into();
        assert_eq!(ready[0].1, "INFO key [redacted] loaded");
        let until = |p: &str| vec![p.to_owned()];
        assert_eq!(choose(&ready, 1000, &until("AKIAI"), false), None);
        assert_eq!(
            choose(&ready, 1000, &until("AKIAI"), true),
            Some((1, Some(false)))
        );
        assert_eq!(
            choose(&ready, 1000, &until("loaded"), false),
            Some((1, Some(true)))
        );
    }

    #[test]
    fn a_read_ends_at_a_match_or_max_bytes_never_splitting_the_first_line_else_at_its_deadline() {
        for &(label, lines, max_bytes, until, out_of_time, chosen) in CHOICES {
            let until: Vec<String> = until.iter().map(|p| (*p).to_owned()).collect();
            let q = ready(lines);
            assert_eq!(
                choose(&q, max_bytes, &until, out_of_time),
                chosen,
                "{label}"
            );
        }
    }
}
