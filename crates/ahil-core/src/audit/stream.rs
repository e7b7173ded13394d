//! The content pass for a byte stream that leaves the gate in pieces (a device's output, read
//! however many bytes at a time a caller asks for, or logged as the reader got it). Each piece is
//! masked in the context of what came before it, so `passw` + `ord=hunter2`, or a credential
//! read one byte at a time, shows `[redacted]` rather than the credential's bytes one by one.

use std::time::Instant;

use super::redact::redact_text;
use super::settle::unsettled_from;

/// How much earlier output a piece is read against: enough for a private-key block's header to
/// still be in view at its last body line.
const CONTEXT_BYTES: usize = 8 * 1024;

/// The longest unfinished tail a stream holds back (a JWT's header and payload fit): past it the
/// tail goes out as it reads.
const MAX_HELD: usize = 4 * 1024;

/// The recent output of one stream, one character a byte (Latin-1), so any encoding and any
/// stray byte reads the same to the masker and every unmasked byte goes out as it came.
///
/// What it shows is the masked text of the settled part of the stream: everything before the
/// first byte a whole-shape pass could still mask once more arrives ([`super::settle`]). The rest
/// is held until its shape is decided, whoever reads and however the device paused, so no
/// poll, cut or uncut, shows a token's first bytes before the token is whole.
#[derive(Debug, Default)]
pub struct StreamMask {
    seen: String,
    /// Where the held tail of `seen` begins.
    settled: usize,
    /// The masked text of `seen[..settled]`: what a new piece is compared with, so each piece
    /// costs one pass.
    shown: String,
}

impl StreamMask {
    /// `piece`, masked as it reads after everything before it: the part of the masked settled
    /// text that differs from what was shown. A shape that only becomes a credential with this
    /// piece is masked from where the shown text and the whole first differ.
    pub fn next(&mut self, piece: &[u8]) -> Vec<u8> {
        if piece.is_empty() {
            return Vec::new();
        }
        self.seen.extend(piece.iter().map(|&b| char::from(b)));
        let open = unsettled_from(&self.seen, MAX_HELD).unwrap_or(self.seen.len());
        self.show(open.max(self.settled))
    }

    /// The held tail, masked as it reads: the stream has ended, so nothing will complete it.
    pub fn finish(&mut self) -> Vec<u8> {
        if self.settled == self.seen.len() {
            return Vec::new();
        }
        self.show(self.seen.len())
    }

    fn show(&mut self, settled: usize) -> Vec<u8> {
        let after = redact_text(&self.seen[..settled]);
        let common = self
            .shown
            .char_indices()
            .zip(after.chars())
            .find(|((_, a), b)| a != b)
            .map_or(self.shown.len().min(after.len()), |((at, _), _)| at);
        let shown: Vec<u8> = after[common..]
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .collect();
        self.shown = after;
        self.settled = settled;
        if self.seen.len() > 2 * CONTEXT_BYTES {
            self.forget_old();
        }
        shown
    }

    /// Keeps about the last [`CONTEXT_BYTES`], from a line start where there is one, and never
    /// past the held tail.
    fn forget_old(&mut self) {
        let mut cut = self.seen.len() - CONTEXT_BYTES;
        while !self.seen.is_char_boundary(cut) {
            cut += 1;
        }
        let cut = self.seen[cut..]
            .find('\n')
            .map_or(cut, |line| cut + line + 1)
            .min(self.settled);
        self.seen.drain(..cut);
        self.settled -= cut;
        self.shown = redact_text(&self.seen[..self.settled]);
    }
}

/// What a source (a receive ring) had when a read pulled from it.
#[derive(Debug, Default)]
pub struct Pulled {
    pub bytes: Vec<u8>,
    /// The source has ended: nothing more will come, so the held tail goes out as it reads.
    pub ended: bool,
}

/// What a read of a [`MaskedStream`] took: masked bytes only, and decisions made on them.
#[derive(Debug, PartialEq, Eq)]
pub struct Took {
    pub bytes: Vec<u8>,
    /// With patterns: whether the bytes end with a match.
    pub matched: Option<bool>,
    /// Masked bytes still waiting for a read.
    pub remaining: usize,
    /// Masked bytes dropped, oldest first, because more than the cap waited unread.
    pub dropped: u64,
    /// The read ended because its call was given up, not by its own rules: it took nothing.
    pub gave_up: bool,
}

/// A device's output as the agent may observe it: the stream masked ([`StreamMask`]) and queued,
/// and every decision of a read made on that queue: where an `until` pattern matches, how many
/// bytes a read returns, when its wait ends. A credential's bytes are not in the queue, so no
/// pattern can match them, nor end a wait, nor count them: probing `until: "AKIAQ"` against a key
/// id the device prints reads as any pattern that never arrives.
#[derive(Debug, Default)]
pub struct MaskedStream {
    mask: StreamMask,
    ready: Vec<u8>,
    dropped: u64,
}

impl MaskedStream {
    /// Takes up to `max` masked bytes: at once what waits without `patterns`, else through the
    /// first match (the rest stays queued); waiting until `deadline` for bytes, a match or `max`
    /// bytes. `pull(until)` takes everything the source has, first waiting for a byte until
    /// `until`; at most `cap` masked bytes wait between reads. Once `gave_up()` (the call was
    /// cancelled or abandoned) the read takes nothing: what arrived stays queued for the next read.
    pub fn read(
        &mut self,
        max: usize,
        deadline: Instant,
        patterns: &[Vec<u8>],
        cap: usize,
        mut pull: impl FnMut(Instant) -> Pulled,
        gave_up: impl Fn() -> bool,
    ) -> Took {
        let max = max.max(1);
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        // Queued bytes before `scanned` hold no match that ends inside them.
        let mut scanned = 0;
        let mut wait_until = Instant::now();
        loop {
            let pulled = pull(wait_until);
            wait_until = deadline;
            let mut arrived = self.mask.next(&pulled.bytes);
            if pulled.ended {
                arrived.extend(self.mask.finish());
            }
            if self.queue(&arrived, cap) {
                scanned = 0;
            }
            if gave_up() {
                return Took {
                    bytes: Vec::new(),
                    matched: (!patterns.is_empty()).then_some(false),
                    remaining: self.ready.len(),
                    dropped: self.dropped,
                    gave_up: true,
                };
            }
            if patterns.is_empty() {
                if !self.ready.is_empty() {
                    break;
                }
            } else {
                if let Some(end) = first_match(&self.ready, scanned, max, patterns) {
                    return self.split(end, Some(true));
                }
                scanned = self
                    .ready
                    .len()
                    .min(max)
                    .saturating_sub(longest.saturating_sub(1));
                if self.ready.len() >= max {
                    break;
                }
            }
            if pulled.ended || Instant::now() >= deadline {
                break;
            }
        }
        let n = self.ready.len().min(max);
        self.split(n, (!patterns.is_empty()).then_some(false))
    }

    /// Queues `arrived`, dropping the oldest past `cap`; true when some were dropped.
    fn queue(&mut self, arrived: &[u8], cap: usize) -> bool {
        self.ready.extend_from_slice(arrived);
        let excess = self.ready.len().saturating_sub(cap.max(1));
        if excess > 0 {
            self.ready.drain(..excess);
            self.dropped += excess as u64;
        }
        excess > 0
    }

    fn split(&mut self, n: usize, matched: Option<bool>) -> Took {
        Took {
            bytes: self.ready.drain(..n).collect(),
            matched,
            remaining: self.ready.len(),
            dropped: self.dropped,
            gave_up: false,
        }
    }
}

/// The end of the earliest match that ends within the first `max` bytes, searching from `from`.
fn first_match(hay: &[u8], from: usize, max: usize, patterns: &[Vec<u8>]) -> Option<usize> {
    let hay = &hay[..hay.len().min(max)];
    let start = from.min(hay.len());
    patterns
        .iter()
        .filter(|p| !p.is_empty() && hay.len() >= p.len())
        .filter_map(|p| {
            hay[start..]
                .windows(p.len())
                .position(|w| w == p.as_slice())
                .map(|at| start + at + p.len())
        })
        .min()
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
