//! The redaction half of the one output step ([`super::sink::Sink::scrub`]).
//!
//! Secret-named keys lose their value entirely. Every string, at any depth, gets a content pass
//! that masks only the secret span: URL userinfo passwords, `Authorization` credentials,
//! secret-named assignments (`=` or `:`, quoted or not) and query parameters, and the shapes in
//! `super::shapes` (private keys, issued tokens, cookies, `user:pass@host`, `--password X`). A
//! backend's words reach results under many keys (`backend_message`, `summary`, a transcript),
//! and a configuration value can carry a URL with a password, so the pass goes by content, not by
//! a list of keys. Every other byte is left as it was.

use std::borrow::Cow;

use serde_json::Value;

use super::shapes;
use crate::text::{Encoding, to_hex};

/// What a masked value becomes.
pub const MASK: &str = "[redacted]";

const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "psk",
    "apikey",
    "api_key",
    "authkey",
    "auth_key",
    "access_key",
    "secret_key",
    "private_key",
    "credential",
    "credentials",
    "signing_key",
    "encryption_key",
    "master_key",
    "session_key",
    "signature",
    "sig",
];
/// Words that are a secret's name only after a prefix: `DB_PASS`, `MYSQL_PWD`, but not a test
/// count's `pass=3` or a shell's `PWD=/dir`.
const PREFIXED_SECRET_WORDS: &[&str] = &["pass", "pwd"];
/// `(?:^|_)(?:token|secret|…)$`, case-insensitive; a camelCase word boundary also counts as `_`,
/// so `accessToken` and `PassWD` are secret while `mytoken` and `tokens` are not.
pub fn is_secret_key(key: &str) -> bool {
    let mut snake = String::with_capacity(key.len() + 4);
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            snake.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        snake.push(c.to_ascii_lowercase());
    }
    let secret = |key: &str| {
        SECRET_WORDS.iter().any(|word| {
            key.strip_suffix(word)
                .is_some_and(|rest| rest.is_empty() || rest.ends_with('_'))
        }) || PREFIXED_SECRET_WORDS.iter().any(|word| {
            key.strip_suffix(word)
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('_'))
        })
    };
    secret(&key.to_ascii_lowercase()) || secret(&snake)
}

/// A redacted copy of `value`.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut clean: serde_json::Map<String, Value> = map
                .iter()
                .map(|(key, item)| {
                    let item = if is_secret_key(key) {
                        Value::String(MASK.into())
                    } else {
                        redact(item)
                    };
                    // A key can be a value too: a map by lock key or device names a URL.
                    (redact_text(key), item)
                })
                .collect();
            mask_device_hex(map, &mut clean);
            Value::Object(clean)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(text) => Value::String(redact_text(text)),
        other => other.clone(),
    }
}

/// Device data comes as `{hex, text, encoding}`: when the text held a credential, the hex becomes
/// the masked text's bytes, so the secret is not still readable two characters a byte.
fn mask_device_hex(
    raw: &serde_json::Map<String, Value>,
    clean: &mut serde_json::Map<String, Value>,
) {
    let (Some(Value::String(text)), Some(Value::String(masked)), Some(Value::String(_))) =
        (raw.get("text"), clean.get("text"), raw.get("hex"))
    else {
        return;
    };
    if text == masked {
        return;
    }
    let encoding = clean
        .get("encoding")
        .and_then(Value::as_str)
        .and_then(Encoding::parse)
        .unwrap_or(Encoding::Utf8);
    let hex = encoding
        .encode(masked)
        .map_or_else(|_| MASK.to_owned(), |bytes| to_hex(&bytes));
    clean.insert("hex".into(), Value::String(hex));
}

/// The content pass over one string. Each step masks its own shape and leaves `[redacted]` as
/// it found it, so the pass is idempotent.
pub fn redact_text(text: &str) -> String {
    redact_cow(text).into_owned()
}

/// As [`redact_text`], taking the text: handed back as it is, without a copy, when nothing in it
/// is masked (a defmt line, most of the time).
pub fn redact_string(text: String) -> String {
    match redact_cow(&text) {
        Cow::Owned(masked) => masked,
        Cow::Borrowed(_) => text,
    }
}

fn redact_cow(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    for pass in PASSES {
        // Most strings hold no credential: a pass that masked nothing hands its input back.
        if let Cow::Owned(masked) = pass(&text) {
            text = Cow::Owned(masked);
        }
    }
    text
}

/// One step of the content pass: its input as it was when it masked nothing.
type Pass = for<'t> fn(&'t str) -> Cow<'t, str>;

const PASSES: [Pass; 9] = [
    shapes::mask_private_keys,
    mask_userinfo,
    shapes::mask_bare_userinfo,
    mask_authorization,
    shapes::mask_bare_bearer,
    shapes::mask_cookies,
    shapes::mask_issued_tokens,
    shapes::mask_secret_flags,
    mask_assignments,
];

/// Whether `text` holds `needle` (ASCII, lower case) in any case, before a pass copies the text
/// to lower case to find it.
pub(super) fn contains_ignore_case(text: &str, needle: &str) -> bool {
    text.as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

/// `scheme://user:SECRET@host` → `scheme://user:[redacted]@host`; `scheme://SECRET@host` →
/// `scheme://[redacted]@host`.
fn mask_userinfo(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        rest = tail;
        let scheme: String = head[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .collect();
        if !scheme
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphabetic())
        {
            continue;
        }
        let authority_end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\''))
            .unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let Some(at_sign) = authority.rfind('@') else {
            continue;
        };
        let userinfo = &authority[..at_sign];
        // With a colon, the password is the secret and the user name is not. Without one, the
        // user name is the credential only when it reads as one (`https://<token>@host`): a
        // plain name (`ssh://git@host`, `ftp://anonymous@host`) logs in with a key or nothing.
        let keep = match userinfo.find(':') {
            Some(colon) => colon + 1,
            None if reads_as_credential(userinfo, 8) => 0,
            None => continue,
        };
        out.push_str(&authority[..keep]);
        out.push_str(MASK);
        out.push_str(&authority[at_sign..]);
        rest = &rest[authority_end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Schemes whose credential is one token (RFC 7235 token68).
const TOKEN_SCHEMES: &[&str] = &[
    "bearer",
    "basic",
    "token",
    "apikey",
    "api-key",
    "key",
    "dpop",
    "negotiate",
    "ntlm",
    "sso",
];
/// Schemes whose credential is a list of parameters, any of which may be the secret.
const PARAM_SCHEMES: &[&str] = &[
    "digest",
    "aws4-hmac-sha256",
    "oauth",
    "hoba",
    "mutual",
    "gnap",
    "vapid",
    "scram-sha-1",
    "scram-sha-256",
];

/// The credential's span in an `Authorization` value starting at `at` (`lower` is `text`
/// lowercased): after a token scheme, one word; after a parameter scheme, the rest of the line (or
/// the value's closing quote); with no scheme, the value itself when it looks like a credential rather than a word.
fn credential_span(text: &str, lower: &str, at: usize) -> (usize, usize) {
    let quote = lower[..at]
        .bytes()
        .next_back()
        .filter(|b| matches!(b, b'"' | b'\''));
    let word_end = |from: usize| credential_end(text, from);
    let scheme_end = word_end(at);
    let scheme = &lower[at..scheme_end];
    let cred = scheme_end
        + lower[scheme_end..]
            .bytes()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
    if cred > scheme_end && TOKEN_SCHEMES.contains(&scheme) {
        return (cred, word_end(cred));
    }
    if cred > scheme_end && PARAM_SCHEMES.contains(&scheme) {
        let end = lower[cred..]
            .find(|c: char| c == '\n' || c == '\r' || quote.is_some_and(|q| c == char::from(q)))
            .map_or(lower.len(), |n| cred + n);
        return (cred, end);
    }
    if reads_as_credential(&text[at..scheme_end], 8) {
        (at, scheme_end)
    } else {
        (at, at)
    }
}

/// Whether `c` ends a one-word credential (an `Authorization` scheme's, a bare `Bearer`'s): white
/// space, a quote, a list's `,` or `;`, or a closing bracket. A credential (RFC 7235 token68, a
/// key, a JWT) holds no bracket, so a `)`, `]` or `}` closes the text around it, as in
/// `(Authorization: Bearer X)`, and stays.
pub(super) fn ends_credential(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | ')' | ']' | '}')
}

/// Where a one-word credential starting at `from` ends; a [`MASK`] there is one word, brackets
/// and all, so masking again changes nothing.
pub(super) fn credential_end(text: &str, from: usize) -> usize {
    if text[from..].starts_with(MASK) {
        return from + MASK.len();
    }
    text[from..]
        .find(ends_credential)
        .map_or(text.len(), |n| from + n)
}

/// Whether a word that only its place marks as a possible credential (a bare `Authorization`
/// value, a bare `Bearer`'s word, a URL's user name without a password) reads as one: at least
/// `min` bytes, and not a word or a name (`required`, `Denied`, `john.smith`): past its first
/// byte a credential has a digit, a capital or a symbol other than a name's `.`, `_` and `-`.
pub(super) fn reads_as_credential(word: &str, min: usize) -> bool {
    word.len() >= min
        && word != MASK
        && word
            .bytes()
            .skip(1)
            .any(|b| !b.is_ascii_lowercase() && !matches!(b, b'.' | b'_' | b'-'))
}

/// `Authorization: Bearer <cred>` (optionally quoted) → the credential masked, the scheme kept.
fn mask_authorization(text: &str) -> Cow<'_, str> {
    if !contains_ignore_case(text, "authorization") {
        return Cow::Borrowed(text);
    }
    let lower = text.to_ascii_lowercase();
    let mut masked = Masked::new(text);
    let mut from = 0;
    while let Some(found) = lower[from..].find("authorization") {
        let start = from + found + "authorization".len();
        from = start;
        let bytes = lower.as_bytes();
        let mut i = start;
        while i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
            i += 1;
        }
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t') {
            i += 1;
        }
        if i >= bytes.len() || !matches!(bytes[i], b':' | b'=') {
            continue;
        }
        i += 1;
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'"' | b'\'') {
            i += 1;
        }
        let (cred, end) = credential_span(text, &lower, i);
        if end > cred {
            masked.mask(cred, end);
            from = end;
        }
    }
    masked.finish()
}

/// A masked copy of a text, built left to right: each span handed to [`Masked::mask`], in order,
/// becomes [`MASK`] and the rest is copied as it was.
pub(super) struct Masked<'a> {
    text: &'a str,
    out: String,
    copied: usize,
}

impl<'a> Masked<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            text,
            out: String::new(),
            copied: 0,
        }
    }

    /// Where the text not yet copied begins: a span starting before it overlaps one masked.
    pub(super) fn copied(&self) -> usize {
        self.copied
    }

    /// Masks `text[start..end]`.
    pub(super) fn mask(&mut self, start: usize, end: usize) {
        if self.out.capacity() == 0 {
            self.out.reserve(self.text.len());
        }
        self.out.push_str(&self.text[self.copied..start]);
        self.out.push_str(MASK);
        self.copied = end;
    }

    /// The masked copy, or the text itself when nothing was masked.
    pub(super) fn finish(mut self) -> Cow<'a, str> {
        if self.out.capacity() == 0 {
            return Cow::Borrowed(self.text);
        }
        self.out.push_str(&self.text[self.copied..]);
        Cow::Owned(self.out)
    }
}

pub(super) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// A name whose tail is a secret word on a word boundary: `DB_PASSWORD`, `--api-key`, `token`.
pub(super) fn is_secret_name(name: &str) -> bool {
    let name = name.trim_start_matches('-').replace('-', "_");
    let name = name.rsplit('.').next().unwrap_or_default();
    is_secret_key(name)
}

/// Secret-named `name=value` and `name: value`, the name optionally quoted (`"password": "…"`
/// inside a string) and the separator optionally spaced. A quoted value is masked inside its
/// quotes; in a query (`?`/`&` before the name) the value runs to whitespace, `&`, `#` or a quote;
/// after `name=` it is a shell word (quotes, escapes); after `name:` it is one word.
fn mask_assignments(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut masked = Masked::new(text);
    let mut i = 0;
    while i < bytes.len() {
        let Some((start, value_start)) =
            assignment_at(text, i).filter(|(start, _)| *start >= masked.copied())
        else {
            i += 1;
            continue;
        };
        if text[value_start..].starts_with(MASK) {
            i = value_start + MASK.len();
            continue;
        }
        let (mask_start, mask_end, resume) = value_span(text, start, i, value_start);
        if mask_end > mask_start && !is_syntax(&bytes[mask_start..mask_end]) {
            masked.mask(mask_start, mask_end);
        }
        i = resume.max(i + 1);
    }
    masked.finish()
}

/// The value of the assignment whose name starts at `start`, separator at `sep`:
/// `(mask_start, mask_end, value_end)`.
pub(super) fn value_span(
    text: &str,
    start: usize,
    sep: usize,
    value_start: usize,
) -> (usize, usize, usize) {
    let bytes = text.as_bytes();
    let query = start > 0 && matches!(bytes[start - 1], b'?' | b'&');
    if let Some(span) = quoted_value(bytes, value_start) {
        span
    } else if query {
        let end = text[value_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, '&' | '#' | '"' | '\''))
            .map_or(text.len(), |n| value_start + n);
        (value_start, end, end)
    } else if bytes[sep] == b'=' && value_start == sep + 1 {
        shell_word(bytes, value_start)
    } else {
        let end = text[value_start..]
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '}' | ']' | ')'))
            .map_or(text.len(), |n| value_start + n);
        (value_start, end, end)
    }
}

/// A value of at most three ASCII punctuation bytes is syntax a diagnostic names after a secret
/// word (`unexpected token: '}'`, `token: =>`), not a secret: a password or key that short and
/// without a letter or digit protects nothing, and masking it loses the one word an engineer
/// needs. Anything with a letter, a digit or a fourth byte is masked.
fn is_syntax(value: &[u8]) -> bool {
    value.len() <= 3 && value.iter().all(u8::is_ascii_punctuation)
}

/// When `text[sep]` is the `=` or `:` of a secret-named assignment: where its name starts and
/// where its value does. `==`, `::` and `://` are not assignments.
pub(super) fn assignment_at(text: &str, sep: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let b = *bytes.get(sep)?;
    if !matches!(b, b'=' | b':') || bytes.get(sep + 1) == Some(&b) {
        return None;
    }
    if b == b':' && bytes[sep + 1..].starts_with(b"//") || sep > 0 && bytes[sep - 1] == b {
        return None;
    }
    // Go's `token := value` names its value like `=` does.
    let mut name_end = if b == b'=' && sep > 0 && bytes[sep - 1] == b':' {
        sep - 1
    } else {
        sep
    };
    if b == b':' && bytes.get(sep + 1) == Some(&b'=') {
        return None;
    }
    while name_end > 0 && matches!(bytes[name_end - 1], b' ' | b'\t') {
        name_end -= 1;
    }
    if name_end > 0 && matches!(bytes[name_end - 1], b'"' | b'\'') {
        name_end -= 1;
        if name_end > 0 && bytes[name_end - 1] == b'\\' {
            name_end -= 1;
        }
    }
    let mut start = name_end;
    while start > 0 && is_name_byte(bytes[start - 1]) {
        start -= 1;
    }
    if start == name_end || !is_secret_name(&text[start..name_end]) {
        return None;
    }
    // Userinfo (`scheme://token:…@`) is the URL pass's.
    if b == b':' && text[..start].ends_with("//") {
        return None;
    }
    let value = sep
        + 1
        + bytes[sep + 1..]
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t'))
            .count();
    (value < bytes.len() && !matches!(bytes[value], b'\n' | b'\r')).then_some((start, value))
}

/// A value that is one quoted string (`"…"`, `'…'`, or JSON-escaped `\"…\"`) followed by the end
/// of the word: the span inside the quotes. An unterminated quote is masked to the end of the line,
/// quote and all.
fn quoted_value(bytes: &[u8], at: usize) -> Option<(usize, usize, usize)> {
    let escaped = bytes[at] == b'\\';
    let open = at + usize::from(escaped);
    let quote = *bytes.get(open).filter(|q| matches!(q, b'"' | b'\''))?;
    let inner = open + 1;
    let mut i = inner;
    while i < bytes.len() && bytes[i] != b'\n' {
        let close = bytes[i] == quote && (!escaped || bytes[i - 1] == b'\\');
        if close {
            let inner_end = i - usize::from(escaped);
            let after = i + 1;
            let ends = bytes
                .get(after)
                .is_none_or(|c| c.is_ascii_whitespace() || b",;}])&\\".contains(c));
            return ends.then_some((inner, inner_end, after));
        }
        if bytes[i] == b'\\' && !escaped && quote == b'"' {
            i += 1;
        }
        i += 1;
    }
    Some((at, i.min(bytes.len()), i.min(bytes.len())))
}

/// The span of a shell word starting at `at`: `(mask_start, mask_end, word_end)`. A value that is one
/// quoted string keeps its quotes; an unterminated quote runs to the end of the line.
pub(super) fn shell_word(bytes: &[u8], at: usize) -> (usize, usize, usize) {
    let mut i = at;
    let mut quote: Option<u8> = None;
    let mut segments = 0;
    let mut whole_quoted = true;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) if b == b'\n' => break,
            Some(b'"') if b == b'\\' => i += 1,
            Some(_) => {}
            None if b.is_ascii_whitespace() => break,
            None if b == b'"' || b == b'\'' => {
                quote = Some(b);
                segments += 1;
            }
            None if b == b'\\' => {
                whole_quoted = false;
                i += 1;
            }
            None => whole_quoted = false,
        }
        i += 1;
    }
    let end = i.min(bytes.len());
    let closed = quote.is_none();
    if whole_quoted && segments == 1 && closed && end >= at + 2 {
        (at + 1, end - 1, end)
    } else {
        (at, end, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_named_keys_lose_their_value_at_any_depth() {
        let doc = json!({"a": {"api_key": 5, "DB_PASSWORD": ["x"], "tokens": "kept", "mytoken": "kept",
                         "clientSecret": "x", "AWS_SECRET_ACCESS_KEY": "y", "lock_key": "kept"}});
        assert_eq!(
            redact(&doc),
            json!({"a": {"api_key": "[redacted]", "DB_PASSWORD": "[redacted]", "tokens": "kept",
                         "mytoken": "kept", "clientSecret": "[redacted]",
                         "AWS_SECRET_ACCESS_KEY": "[redacted]", "lock_key": "kept"}})
        );
    }

    #[test]
    fn a_key_that_carries_a_credential_is_masked_like_a_value() {
        let doc = json!({"holds": {"com:rfc2217://ci:pw@h:9": {"held": true}, "com:uart0": 1}});
        assert_eq!(
            redact(&doc),
            json!({"holds": {"com:rfc2217://ci:[redacted]@h:9": {"held": true}, "com:uart0": 1}})
        );
    }

    #[test]
    fn url_userinfo_passwords_are_masked_and_the_rest_kept() {
        assert_eq!(
            redact_text("fetch https://bob:hunter2@example.com/x ok"),
            "fetch https://bob:[redacted]@example.com/x ok"
        );
        assert_eq!(
            redact_text("see http://example.com:80/a@b"),
            "see http://example.com:80/a@b"
        );
        assert_eq!(
            redact_text("clone https://ghtoken123@example.com/r.git"),
            "clone https://[redacted]@example.com/r.git"
        );
    }

    #[test]
    fn authorization_credentials_are_masked_and_the_scheme_kept() {
        assert_eq!(
            redact_text("> Authorization: Bearer abc.def-123\nnext"),
            "> Authorization: Bearer [redacted]\nnext"
        );
        assert_eq!(
            redact_text("-H 'authorization: Basic dXNlcjpwYXNz' x"),
            "-H 'authorization: Basic [redacted]' x"
        );
    }

    #[test]
    fn secret_assignments_and_query_parameters_are_masked() {
        assert_eq!(
            redact_text("GET /a?x=1&api-key=s3cr3t&y=2 HTTP"),
            "GET /a?x=1&api-key=[redacted]&y=2 HTTP"
        );
        assert_eq!(
            redact_text("export DB_PASSWORD=hunter2 done"),
            "export DB_PASSWORD=[redacted] done"
        );
        assert_eq!(
            redact_text("PASSWORD=\"a b\" next"),
            "PASSWORD=\"[redacted]\" next"
        );
        assert_eq!(
            redact_text("--auth-key=ab'c d' next"),
            "--auth-key=[redacted] next"
        );
        assert_eq!(
            redact_text("TOKEN='open to end\nline2"),
            "TOKEN=[redacted]\nline2"
        );
        assert_eq!(redact_text("speed=4000 kHz"), "speed=4000 kHz");
    }

    #[test]
    fn every_string_is_scanned_whatever_its_key() {
        let doc = json!({
            "summary": "probe said password=visible-in-prose",
            "backend": {"stdout": ["token=abc", "fine"], "backend_message": "x https://u:p@h"},
            "backend_warnings": ["SECRET=zz"],
        });
        assert_eq!(
            redact(&doc),
            json!({
                "summary": "probe said password=[redacted]",
                "backend": {"stdout": ["token=[redacted]", "fine"], "backend_message": "x https://u:[redacted]@h"},
                "backend_warnings": ["SECRET=[redacted]"],
            })
        );
    }

    #[test]
    fn device_bytes_that_spell_a_credential_are_masked_in_their_hex_too() {
        let data = json!({"hex": to_hex(b"pass=1\npassword=hunter2\n"),
                          "text": "pass=1\npassword=hunter2\n", "encoding": "utf-8"});
        let clean = redact(&data);
        assert_eq!(clean["text"], json!("pass=1\npassword=[redacted]\n"));
        assert_eq!(
            clean["hex"],
            json!(to_hex(b"pass=1\npassword=[redacted]\n"))
        );
        let plain = json!({"hex": "6869", "text": "hi", "encoding": "utf-8"});
        assert_eq!(redact(&plain), plain);
    }

    #[test]
    fn text_without_secrets_is_byte_for_byte_unchanged() {
        let text = "Open On-Chip Debugger 0.12.0\nInfo : clock speed 2000 kHz\n\u{2014} a=b c://d";
        assert_eq!(redact_text(text), text);
    }
}
