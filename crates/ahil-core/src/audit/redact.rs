//! The redaction half of the one output step ([`super::sink::Sink::scrub`]).
//!
//! Secret-named keys lose their value entirely. Every string, at any depth, gets a content pass
//! that masks only the secret span: URL userinfo passwords, `Authorization: Bearer|Basic`
//! credentials, and secret-named assignments or query parameters. A backend's words reach results
//! under many keys (`backend_message`, `summary`, a transcript), and a configuration value can
//! carry a URL with a password, so the pass goes by content, not by a list of keys. Every other
//! byte is left as it was.

use serde_json::Value;

use crate::text::{Encoding, to_hex};

/// What a masked value becomes.
pub const MASK: &str = "[redacted]";

const SECRET_WORDS: &[&str] = &[
    "token", "secret", "password", "passwd", "apikey", "api_key", "authkey", "auth_key",
];
/// `(?:^|_)(?:token|secret|…)$`, case-insensitive.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| {
        key.strip_suffix(word)
            .is_some_and(|rest| rest.is_empty() || rest.ends_with('_'))
    })
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
                    (key.clone(), item)
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

/// The content pass over one string.
pub fn redact_text(text: &str) -> String {
    let text = mask_userinfo(text);
    let text = mask_authorization(&text);
    mask_assignments(&text)
}

/// `scheme://user:SECRET@host` → `scheme://user:[redacted]@host`.
fn mask_userinfo(text: &str) -> String {
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
        if let Some(at_sign) = authority.rfind('@')
            && let Some(colon) = authority[..at_sign].find(':')
        {
            out.push_str(&authority[..=colon]);
            out.push_str(MASK);
            out.push_str(&authority[at_sign..]);
            rest = &rest[authority_end..];
        }
    }
    out.push_str(rest);
    out
}

/// `Authorization: Bearer <cred>` (optionally quoted) → the credential masked, the scheme kept.
fn mask_authorization(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = lower[from..].find("authorization") {
        let start = from + found + "authorization".len();
        from = start;
        let bytes = lower.as_bytes();
        let mut i = start;
        while i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
            i += 1;
        }
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        if i >= bytes.len() || !matches!(bytes[i], b':' | b'=') {
            continue;
        }
        i += 1;
        while i < bytes.len() && matches!(bytes[i], b' ' | b'"' | b'\'') {
            i += 1;
        }
        let scheme_len = if lower[i..].starts_with("bearer") {
            6
        } else if lower[i..].starts_with("basic") {
            5
        } else {
            continue;
        };
        let mut cred = i + scheme_len;
        if !lower[cred..].starts_with(' ') {
            continue;
        }
        while cred < bytes.len() && bytes[cred] == b' ' {
            cred += 1;
        }
        let end = lower[cred..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';'))
            .map_or(lower.len(), |n| cred + n);
        if end > cred {
            out.push_str(&text[copied..cred]);
            out.push_str(MASK);
            copied = end;
            from = end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// A name whose tail is a secret word on a word boundary: `DB_PASSWORD`, `--api-key`, `token`.
fn is_secret_name(name: &str) -> bool {
    let name = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('-', "_");
    let name = name.rsplit('.').next().unwrap_or_default();
    is_secret_key(name)
}

/// Secret-named `name=value`: in a query (`?`/`&` before the name) the value runs to whitespace,
/// `&`, `#` or a quote; elsewhere it is a shell word (quotes, escapes), and a wholly quoted value
/// keeps its quotes.
fn mask_assignments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'=' {
            i += 1;
            continue;
        }
        let mut start = i;
        while start > 0 && is_name_byte(bytes[start - 1]) {
            start -= 1;
        }
        if start == i || start < copied || !is_secret_name(&text[start..i]) {
            i += 1;
            continue;
        }
        let query = start > 0 && matches!(bytes[start - 1], b'?' | b'&');
        let value_start = i + 1;
        let (mask_start, mask_end, resume) = if query {
            let end = text[value_start..]
                .find(|c: char| c.is_whitespace() || matches!(c, '&' | '#' | '"' | '\''))
                .map_or(text.len(), |n| value_start + n);
            (value_start, end, end)
        } else {
            shell_word(bytes, value_start)
        };
        if mask_end > mask_start {
            out.push_str(&text[copied..mask_start]);
            out.push_str(MASK);
            copied = mask_end;
        }
        i = resume.max(i + 1);
    }
    out.push_str(&text[copied..]);
    out
}

/// The span of a shell word starting at `at`: `(mask_start, mask_end, word_end)`. A value that is one
/// quoted string keeps its quotes; an unterminated quote runs to the end of the line.
fn shell_word(bytes: &[u8], at: usize) -> (usize, usize, usize) {
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
        let doc =
            json!({"a": {"api_key": 5, "DB_PASSWORD": ["x"], "tokens": "kept", "mytoken": "kept"}});
        assert_eq!(
            redact(&doc),
            json!({"a": {"api_key": "[redacted]", "DB_PASSWORD": "[redacted]", "tokens": "kept", "mytoken": "kept"}})
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
