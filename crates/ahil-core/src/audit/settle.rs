//! Where a stream's unfinished end could still become a credential: the one rule that decides
//! what [`super::StreamMask`] holds back.
//!
//! A content pass masks some shapes as their bytes arrive (a value after `password=`, a cookie,
//! a private key's body): whatever follows, those bytes are masked. Other shapes are only known
//! once whole, and their bytes read as plain text until then: an issued token or a JWT (its
//! prefix, body and length), `user:SECRET@host` and a URL's userinfo (the `@`), the word after a
//! bare `Bearer` or `Authorization:` (whether it reads as a credential), and an assignment's value
//! (a closing quote, or the syntax a diagnostic names). A stream shows its text up to the first
//! byte that one of those could still mask, and holds the rest until the shape is decided.

use super::redact::{assignment_at, ends_credential, is_name_byte, value_span};
use super::shapes::{ISSUED, alnum_under, ends_bare_word, plain_user, url_b64};

/// The first byte of `text` that a whole-shape pass could still mask once more text arrives,
/// looking at most `window` bytes back; `None` when every byte is settled. Only the last word
/// (after the last white space) can be open: each of these shapes ends at white space.
pub(super) fn unsettled_from(text: &str, window: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let word = bytes
        .iter()
        .rposition(u8::is_ascii_whitespace)
        .map_or(0, |at| at + 1);
    let word = word.max(bytes.len().saturating_sub(window));
    let open = if word == bytes.len() {
        None
    } else {
        [
            issued_open(bytes, word),
            url_open(bytes, word),
            bare_userinfo_open(bytes, word),
            after_keyword_open(bytes, word),
            assignment_open(text, word),
        ]
        .into_iter()
        .flatten()
        .filter(|at| (word..bytes.len()).contains(at))
        .min()
    };
    let shown = open.unwrap_or(bytes.len());
    private_key_open(&text[..shown]).or(open)
}

/// The white space that ends a private key's body before its END line: the mask covers the body
/// up to its last non-space byte, so a newline shown now could end up inside it.
fn private_key_open(text: &str) -> Option<usize> {
    let label = text.rfind("-----BEGIN ")? + "-----BEGIN ".len();
    let label_len = text[label..].find("-----")?;
    let header = &text[label..label + label_len];
    let body = label + label_len + "-----".len();
    if !header.contains("PRIVATE KEY") || header.contains('\n') || text[body..].contains("-----END")
    {
        return None;
    }
    let end = body + text[body..].trim_end().len();
    (end > body && end < text.len()).then_some(end)
}

/// The first word start in `bytes[word..]` from which the rest could still grow into an issued
/// token or a JWT.
fn issued_open(bytes: &[u8], word: usize) -> Option<usize> {
    (word..bytes.len()).find(|&i| {
        let starts_word = i == 0 || !alnum_under(bytes[i - 1]);
        starts_word && (issued_may_grow(&bytes[i..]) || jwt_may_grow(&bytes[i..]))
    })
}

/// Whether `rest` (running to the end of the text) is an issued token's beginning: a prefix, or
/// a prefix and a body with no byte that ends it and not yet past an exact length.
fn issued_may_grow(rest: &[u8]) -> bool {
    ISSUED.iter().any(|issued| {
        issued.prefixes.iter().any(|prefix| {
            let prefix = prefix.as_bytes();
            if rest.len() <= prefix.len() {
                return prefix.starts_with(rest);
            }
            let body = &rest[prefix.len()..];
            rest.starts_with(prefix)
                && body.iter().all(|b| (issued.body)(*b))
                && (!issued.exact || body.len() <= issued.min)
        })
    })
}

/// Whether `rest` is a JWT's beginning: `eyJ…` `.` `eyJ…` `.` signature, cut anywhere.
fn jwt_may_grow(rest: &[u8]) -> bool {
    let mut at = 0;
    for _ in 0..2 {
        let run = rest[at..].iter().take_while(|b| url_b64(**b)).count();
        let segment = &rest[at..at + run];
        let begins = if run < 3 {
            b"eyJ".starts_with(segment)
        } else {
            segment.starts_with(b"eyJ")
        };
        if !begins {
            return false;
        }
        if at + run == rest.len() {
            return true;
        }
        if rest[at + run] != b'.' || run < 8 {
            return false;
        }
        at += run + 1;
    }
    at + rest[at..].iter().take_while(|b| url_b64(**b)).count() == rest.len()
}

/// A URL whose authority has not ended: its user name may yet be a token before an `@`, or its
/// password the text after the first `:`.
fn url_open(bytes: &[u8], word: usize) -> Option<usize> {
    let tail = &bytes[word..];
    let sep = word + tail.windows(3).rposition(|w| w == b"://")?;
    let scheme_ok = bytes[word..sep]
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
        .last()
        .is_some_and(u8::is_ascii_alphabetic);
    let authority = sep + 3;
    let ended = bytes[authority..]
        .iter()
        .any(|b| matches!(b, b'/' | b'?' | b'#' | b'"' | b'\''));
    if !scheme_ok || ended {
        return None;
    }
    let colon = bytes[authority..].iter().position(|b| *b == b':');
    Some(colon.map_or(authority, |c| authority + c + 1))
}

/// `user:` without its `@` yet: what follows the colon may be a password.
fn bare_userinfo_open(bytes: &[u8], word: usize) -> Option<usize> {
    let bare = word
        + bytes[word..]
            .iter()
            .rposition(|b| ends_bare_word(char::from(*b)))
            .map_or(0, |at| at + 1);
    let colon = bare + bytes[bare..].iter().position(|b| *b == b':')?;
    plain_user(&bytes[bare..colon]).then_some(colon + 1)
}

/// The word after a bare `Bearer ` or an `Authorization:` value's first word: whether it is a
/// credential depends on how it reads once whole.
fn after_keyword_open(bytes: &[u8], word: usize) -> Option<usize> {
    let before = &bytes[..word];
    let spaced = before.len() - before.iter().rev().take_while(|b| **b == b' ').count();
    let bearer = spaced < before.len()
        && spaced >= 6
        && before[spaced - 6..spaced].eq_ignore_ascii_case(b"bearer")
        && (spaced == 6 || !is_name_byte(before[spaced - 7]));
    let ended = |from: usize| {
        bytes[from..]
            .iter()
            .any(|b| ends_credential(char::from(*b)))
    };
    if bearer {
        return (!ended(word)).then_some(word);
    }
    // `authorization`, quotes and spaces, `:` or `=`, spaces and quotes, then the value.
    let from = word.saturating_sub(64);
    let found = from
        + bytes[from..]
            .windows(13)
            .rposition(|w| w.eq_ignore_ascii_case(b"authorization"))?;
    let mut i = found + 13;
    while i < bytes.len() && matches!(bytes[i], b'"' | b'\'' | b' ' | b'\t') {
        i += 1;
    }
    if i >= bytes.len() || !matches!(bytes[i], b':' | b'=') {
        return None;
    }
    i += 1;
    while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'"' | b'\'') {
        i += 1;
    }
    (i < bytes.len() && !ended(i)).then_some(i)
}

/// A secret-named assignment's value that has not ended: it is masked as it arrives, but a
/// closing quote narrows the mask to the quotes' inside, and a value that ends as a little
/// punctuation is syntax, not a secret; so it waits for its end (`{"token":"x"}` goes out at its
/// `}`, not at the next white space).
fn assignment_open(text: &str, word: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    // The separator may stand just before the spaces that begin the word (`token: '}'`).
    let spaces = bytes[..word]
        .iter()
        .rev()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    let from = if spaces > 0 { word - spaces - 1 } else { word };
    (from..bytes.len())
        .filter(|&sep| matches!(bytes[sep], b'=' | b':'))
        .find_map(|sep| {
            let (start, value) = assignment_at(text, sep)?;
            let (_, _, end) = value_span(text, start, sep, value);
            (end >= bytes.len()).then_some(value)
        })
}

#[cfg(test)]
#[path = "settle_tests.rs"]
mod tests;
