//! The content pass for a byte stream that leaves the gate in pieces (a device's output, read
//! however many bytes at a time a caller asks for, or logged as the reader got it). Each piece is
//! masked in the context of what came before it, so `passw` + `ord=hunter2`, or a credential
//! read one byte at a time, shows `[redacted]` rather than the credential's bytes one by one.

use super::redact::redact_text;

/// How much earlier output a piece is read against: enough for a private-key block's header to
/// still be in view at its last body line.
const CONTEXT_BYTES: usize = 8 * 1024;

/// The recent output of one stream, one character a byte (Latin-1), so any encoding and any
/// stray byte reads the same to the masker and every unmasked byte goes out as it came.
#[derive(Debug, Default)]
pub struct StreamMask {
    seen: String,
    /// `seen` after the content pass, kept so each piece costs one pass.
    masked: String,
}

impl StreamMask {
    /// `piece`, masked as it reads after everything before it: the part of the masked whole that
    /// differs from the masked history. A shape that only becomes a credential with this piece
    /// (a URL's `@`) is masked from where the history and the whole first differ.
    pub fn next(&mut self, piece: &[u8]) -> Vec<u8> {
        if piece.is_empty() {
            return Vec::new();
        }
        self.seen.extend(piece.iter().map(|&b| char::from(b)));
        let after = redact_text(&self.seen);
        let common = self
            .masked
            .char_indices()
            .zip(after.chars())
            .find(|((_, a), b)| a != b)
            .map_or(self.masked.len().min(after.len()), |((at, _), _)| at);
        let shown: Vec<u8> = after[common..]
            .chars()
            .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
            .collect();
        self.masked = after;
        if self.seen.len() > 2 * CONTEXT_BYTES {
            self.forget_old();
        }
        shown
    }

    /// Keeps about the last [`CONTEXT_BYTES`], from a line start where there is one.
    fn forget_old(&mut self) {
        let mut cut = self.seen.len() - CONTEXT_BYTES;
        while !self.seen.is_char_boundary(cut) {
            cut += 1;
        }
        let cut = self.seen[cut..]
            .find('\n')
            .map_or(cut, |line| cut + line + 1);
        self.seen.drain(..cut);
        self.masked = redact_text(&self.seen);
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
