//! The content pass for a byte stream that leaves the gate in pieces (a device's output, read
//! however many bytes at a time a caller asks for, or logged as the reader got it). Each piece is
//! masked in the context of what came before it, so `passw` + `ord=hunter2`, or a credential
//! read one byte at a time, shows `[redacted]` rather than the credential's bytes one by one.

use super::redact::redact_text;
use super::shapes::may_become_credential;

/// How much earlier output a piece is read against: enough for a private-key block's header to
/// still be in view at its last body line.
const CONTEXT_BYTES: usize = 8 * 1024;

/// The longest unfinished word a cut read holds back: past it the word goes out as it reads.
const MAX_HELD: usize = 512;

/// The recent output of one stream, one character a byte (Latin-1), so any encoding and any
/// stray byte reads the same to the masker and every unmasked byte goes out as it came.
#[derive(Debug, Default)]
pub struct StreamMask {
    seen: String,
    /// The masked text shown so far, in the same window as `seen`: what a new piece is compared
    /// with, so each piece costs one pass.
    shown: String,
}

impl StreamMask {
    /// `piece`, masked as it reads after everything before it: the part of the masked whole that
    /// differs from what was shown. A shape that only becomes a credential with this piece (a
    /// URL's `@`) is masked from where the shown text and the whole first differ.
    pub fn next(&mut self, piece: &[u8]) -> Vec<u8> {
        self.next_cut(piece, false)
    }

    /// As [`StreamMask::next`]; when `cut` (the reader asked for fewer bytes than were waiting),
    /// an unfinished last word that could still become a credential is held back until more of it
    /// is read, so a caller cannot take a token (`AKIA…`, `user:pass@host`) a few bytes at a time
    /// before its shape is complete. Any other text goes out as the read takes it.
    pub fn next_cut(&mut self, piece: &[u8], cut: bool) -> Vec<u8> {
        self.seen.extend(piece.iter().map(|&b| char::from(b)));
        let mut after = redact_text(&self.seen);
        let common = self
            .shown
            .char_indices()
            .zip(after.chars())
            .find(|((_, a), b)| a != b)
            .map_or(self.shown.len().min(after.len()), |((at, _), _)| at);
        let mut end = after.len();
        if cut {
            let word = after
                .rfind(|c: char| c.is_ascii_whitespace())
                .map_or(0, |at| at + 1);
            if after.len() - word <= MAX_HELD && may_become_credential(&after[word..]) {
                end = word.max(common);
            }
        }
        let shown: Vec<u8> = after[common..end]
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .collect();
        let held = end < after.len();
        after.truncate(end);
        self.shown = after;
        if !held && self.seen.len() > 2 * CONTEXT_BYTES {
            self.forget_old();
        }
        shown
    }

    /// Keeps about the last [`CONTEXT_BYTES`], from a line start where there is one. Only called
    /// with nothing held back, so the shown text is the masked window.
    fn forget_old(&mut self) {
        let mut cut = self.seen.len() - CONTEXT_BYTES;
        while !self.seen.is_char_boundary(cut) {
            cut += 1;
        }
        let cut = self.seen[cut..]
            .find('\n')
            .map_or(cut, |line| cut + line + 1);
        self.seen.drain(..cut);
        self.shown = redact_text(&self.seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(mask: &mut StreamMask, pieces: &[&[u8]]) -> Vec<u8> {
        pieces.iter().flat_map(|p| mask.next(p)).collect()
    }

    #[test]
    fn a_credential_read_one_byte_at_a_time_is_masked() {
        let mut mask = StreamMask::default();
        let text = b"boot\npassword=hunter2 ok\nAuthorization: Bearer abc.def\n";
        let shown: Vec<u8> = text.iter().flat_map(|b| mask.next(&[*b])).collect();
        assert_eq!(
            String::from_utf8_lossy(&shown),
            "boot\npassword=[redacted] ok\nAuthorization: Bearer [redacted]\n"
        );
    }

    #[test]
    fn a_credential_split_across_pieces_is_masked_and_other_bytes_pass_as_they_came() {
        let mut mask = StreamMask::default();
        assert_eq!(
            pieces(
                &mut mask,
                &[b"wifi passw", b"ord=hun", b"ter2 up\n\xff\x00 tick"]
            ),
            b"wifi password=[redacted] up\n\xff\x00 tick"
        );
        // A URL's password is only a password once its `@` arrives: from there on, masked.
        let mut mask = StreamMask::default();
        assert_eq!(
            pieces(&mut mask, &[b"fetch https://bob:hunter2", b"@host/x\n"]),
            b"fetch https://bob:hunter2[redacted]@host/x\n"
        );
    }

    #[test]
    fn a_cut_read_holds_back_an_unfinished_word_until_its_shape_is_known() {
        let text = b"id AKIAIOSFODNN7EXAMPLE scp bob:hunter2@host:/x done\n";
        let mut mask = StreamMask::default();
        let mut shown = Vec::new();
        for (n, b) in text.iter().enumerate() {
            shown.extend(mask.next_cut(&[*b], n + 1 < text.len()));
        }
        assert_eq!(
            String::from_utf8_lossy(&shown),
            "id [redacted] scp bob:[redacted]@host:/x done\n"
        );
        // An uncut read, or the last piece of a cut one, shows everything it has.
        assert_eq!(mask.next_cut(b"ghp_ab", true), b"");
        assert_eq!(mask.next_cut(b"", false), b"ghp_ab");
    }

    #[test]
    fn a_cut_read_gives_every_byte_of_a_word_that_cannot_become_a_credential() {
        let mut mask = StreamMask::default();
        // `max_bytes: 5` of `hello world`: the five bytes, as an unmasked read gives them.
        assert_eq!(mask.next_cut(b"hello", true), b"hello");
        assert_eq!(mask.next_cut(b" wor", true), b" wor");
        // A time has a `:` and waits for its word to end; then all of it goes out.
        assert_eq!(mask.next_cut(b"ld 12:3", true), b"ld ");
        assert_eq!(mask.next_cut(b"0 ok", false), b"12:30 ok");
    }

    #[test]
    fn a_long_stream_keeps_a_bounded_context_and_still_masks() {
        let mut mask = StreamMask::default();
        let line = [b'x'; 100];
        for _ in 0..400 {
            mask.next(&line);
            mask.next(b"\n");
        }
        assert!(mask.seen.len() <= 2 * CONTEXT_BYTES);
        assert_eq!(
            pieces(&mut mask, &[b"token=", b"abc\n"]),
            b"token=[redacted]\n"
        );
    }
}
