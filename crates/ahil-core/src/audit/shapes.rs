//! Credential shapes the content pass ([`super::redact::redact_text`]) recognises by their form
//! rather than by a secret-named key: private-key blocks, issued tokens with a known prefix (AWS,
//! GitHub, GitLab, Slack, Google, npm, PyPI, `sk-` API keys, JWTs), `user:password@host` without a
//! scheme, cookies, and secret-named command-line flags given as `--password VALUE`. Each masks the
//! secret span alone, so a hex dump, a digest or a port name next to it stays as it was.

use std::borrow::Cow;

use super::redact::{
    MASK, Masked, contains_ignore_case, credential_end, is_name_byte, is_secret_name,
    reads_as_credential,
};

/// The body of a `-----BEGIN … PRIVATE KEY-----` block, up to its END line (or the end of the
/// text, when a capture cut it short). The armour lines stay, so a reader sees what was there.
pub(super) fn mask_private_keys(text: &str) -> Cow<'_, str> {
    if !text.contains("-----BEGIN ") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("-----BEGIN ") {
        let label_start = at + "-----BEGIN ".len();
        let Some(label_len) = rest[label_start..].find("-----") else {
            break;
        };
        let header_end = label_start + label_len + "-----".len();
        let label = &rest[label_start..label_start + label_len];
        out.push_str(&rest[..header_end]);
        rest = &rest[header_end..];
        if !label.contains("PRIVATE KEY") || label.contains('\n') {
            continue;
        }
        let body_end = rest.find("-----END").unwrap_or(rest.len());
        let body = &rest[..body_end];
        let trimmed = body.trim();
        if trimmed.is_empty() {
            out.push_str(body);
        } else {
            let lead = body.len() - body.trim_start().len();
            out.push_str(&body[..lead]);
            out.push_str(MASK);
            out.push_str(&body[lead + trimmed.len()..]);
        }
        rest = &rest[body_end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A token issuer's prefix, the bytes its body may hold and the body's least length.
pub(super) struct Issued {
    pub(super) prefixes: &'static [&'static str],
    pub(super) body: fn(u8) -> bool,
    pub(super) min: usize,
    /// An exact body length, where the issuer fixes one (AWS key ids).
    pub(super) exact: bool,
}

fn upper_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}
fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}
pub(super) fn alnum_under(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}
fn alnum_dash(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}
pub(super) fn url_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

pub(super) const ISSUED: &[Issued] = &[
    Issued {
        prefixes: &[
            "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "AROA", "ANPA", "ANVA", "APKA",
        ],
        body: upper_digit,
        min: 16,
        exact: true,
    },
    Issued {
        prefixes: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        body: alnum,
        min: 30,
        exact: false,
    },
    Issued {
        prefixes: &["github_pat_"],
        body: alnum_under,
        min: 20,
        exact: false,
    },
    Issued {
        prefixes: &["glpat-", "gldt-", "glrt-"],
        body: url_b64,
        min: 20,
        exact: false,
    },
    Issued {
        prefixes: &["xoxa-", "xoxb-", "xoxe-", "xoxp-", "xoxr-", "xoxs-"],
        body: alnum_dash,
        min: 10,
        exact: false,
    },
    Issued {
        prefixes: &["sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        body: url_b64,
        min: 20,
        exact: false,
    },
    Issued {
        prefixes: &["AIza"],
        body: url_b64,
        min: 30,
        exact: false,
    },
    Issued {
        prefixes: &["npm_"],
        body: alnum,
        min: 30,
        exact: false,
    },
    Issued {
        prefixes: &["pypi-"],
        body: url_b64,
        min: 50,
        exact: false,
    },
];

/// The length of an issued token starting at `at`, if one does.
fn issued_at(bytes: &[u8], at: usize) -> Option<usize> {
    let ends_word = |end: usize| end >= bytes.len() || !alnum_under(bytes[end]);
    for issued in ISSUED {
        for prefix in issued.prefixes {
            if !bytes[at..].starts_with(prefix.as_bytes()) {
                continue;
            }
            let body_start = at + prefix.len();
            let body = bytes[body_start..]
                .iter()
                .take_while(|b| (issued.body)(**b))
                .count();
            let fits = if issued.exact {
                body == issued.min
            } else {
                body >= issued.min
            };
            if fits && ends_word(body_start + body) {
                return Some(prefix.len() + body);
            }
        }
    }
    jwt_at(bytes, at)
}

/// `eyJ….eyJ….signature`: a JSON Web Token's header and payload are base64url JSON objects.
fn jwt_at(bytes: &[u8], at: usize) -> Option<usize> {
    let mut end = at;
    for _ in 0..2 {
        let len = bytes[end..].iter().take_while(|b| url_b64(**b)).count();
        if len < 8 || !bytes[end..].starts_with(b"eyJ") || bytes.get(end + len) != Some(&b'.') {
            return None;
        }
        end += len + 1;
    }
    end += bytes[end..].iter().take_while(|b| url_b64(**b)).count();
    Some(end - at)
}

/// Issued tokens, wherever a word starts with one.
pub(super) fn mask_issued_tokens(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut masked = Masked::new(text);
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !alnum_under(bytes[i - 1]);
        if let Some(len) = starts_word.then(|| issued_at(bytes, i)).flatten() {
            masked.mask(i, i + len);
            i += len;
        } else {
            i += 1;
        }
    }
    masked.finish()
}

/// Bytes that end a bare `user:password@host` word.
pub(super) fn ends_bare_word(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | '<' | '>' | '(' | ')' | ',' | '=' | '/'
        )
}

/// Whether `user`, before the first `:` of a bare word, names a user: a `mailto:` or a time's
/// hour is no user, so what follows its colon is never a password.
pub(super) fn plain_user(user: &[u8]) -> bool {
    !user.is_empty()
        && user.iter().any(u8::is_ascii_alphabetic)
        && user
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'%' | b'+'))
        && !user.eq_ignore_ascii_case(b"mailto")
}

/// `user:SECRET@host` without a scheme (scp, proxies, connection strings) → `user:[redacted]@host`.
/// The user is a plain name, so `mailto:` and times are not mistaken for one.
pub(super) fn mask_bare_userinfo(text: &str) -> Cow<'_, str> {
    let mut masked = Masked::new(text);
    let mut start = 0;
    for (end, _) in text
        .char_indices()
        .filter(|(_, c)| ends_bare_word(*c))
        .chain(std::iter::once((text.len(), ' ')))
    {
        let word = &text[start..end];
        let word_start = start;
        start = end + text[end..].chars().next().map_or(0, char::len_utf8);
        let Some(at) = word.rfind('@') else {
            continue;
        };
        let Some(colon) = word[..at].find(':') else {
            continue;
        };
        let host_ok = word[at + 1..]
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric());
        if host_ok && plain_user(&word.as_bytes()[..colon]) && at > colon + 1 {
            masked.mask(word_start + colon + 1, word_start + at);
        }
    }
    masked.finish()
}

/// The value after each case-blind `word` (ASCII, lower case) that `value` accepts, masked: `value`
/// gets the text, its lower-case copy, where the word starts and where it ends, and answers the
/// span to mask. Scanning resumes after a masked span, so a value is never masked twice.
fn mask_after_word<'t>(
    text: &'t str,
    word: &str,
    value: impl Fn(&str, &str, usize, usize) -> Option<(usize, usize)>,
) -> Cow<'t, str> {
    if !contains_ignore_case(text, word) {
        return Cow::Borrowed(text);
    }
    let lower = text.to_ascii_lowercase();
    let mut masked = Masked::new(text);
    let mut from = 0;
    while let Some(found) = lower[from..].find(word) {
        let at = from + found;
        from = at + word.len();
        if at < masked.copied() {
            continue;
        }
        if let Some((start, end)) = value(text, &lower, at, from).filter(|(s, e)| e > s) {
            masked.mask(start, end);
            from = end;
        }
    }
    masked.finish()
}

/// Where the spaces after `from` end.
fn past_spaces(text: &str, from: usize) -> usize {
    from + text.as_bytes()[from..]
        .iter()
        .take_while(|b| **b == b' ')
        .count()
}

/// `Cookie:` and `Set-Cookie:` header values: a session cookie is a credential whatever it is
/// named. The value runs to the end of the line or a closing quote.
pub(super) fn mask_cookies(text: &str) -> Cow<'_, str> {
    mask_after_word(text, "cookie:", |text, lower, at, after| {
        let bytes = text.as_bytes();
        let named = at == 0 || !is_name_byte(bytes[at - 1]) || lower[..at].ends_with("set-");
        named.then(|| {
            let value = past_spaces(text, after);
            let end = text[value..]
                .find(['\n', '\r', '"', '\''])
                .map_or(text.len(), |n| value + n);
            (value, end)
        })
    })
}

/// `Bearer <credential>` outside an `Authorization` header (`-H "X-Auth: Bearer …"`, a log's
/// "using Bearer …"): the word after it when it reads as a credential, not as prose
/// ("the bearer token").
pub(super) fn mask_bare_bearer(text: &str) -> Cow<'_, str> {
    mask_after_word(text, "bearer ", |text, _, at, after| {
        if at > 0 && is_name_byte(text.as_bytes()[at - 1]) {
            return None;
        }
        let cred = past_spaces(text, after);
        let end = credential_end(text, cred);
        reads_as_credential(&text[cred..end], 8).then_some((cred, end))
    })
}

/// `--password VALUE`, `--api-key 'VALUE'`: a secret-named long flag whose value is the next word.
pub(super) fn mask_secret_flags(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut masked = Masked::new(text);
    let mut from = 0;
    while let Some(found) = text[from..].find("--") {
        let at = from + found;
        from = at + 2;
        if at > 0 && !bytes[at - 1].is_ascii_whitespace() && !matches!(bytes[at - 1], b'"' | b'\'')
        {
            continue;
        }
        let name_end = from
            + bytes[from..]
                .iter()
                .take_while(|b| is_name_byte(**b))
                .count();
        if name_end == from || !is_secret_name(&text[from..name_end]) {
            continue;
        }
        let spaces = bytes[name_end..].iter().take_while(|b| **b == b' ').count();
        let value = name_end + spaces;
        if spaces == 0 || value >= bytes.len() || matches!(bytes[value], b'-' | b'\n' | b'\r') {
            continue;
        }
        let (mask_start, mask_end, resume) = super::redact::shell_word(bytes, value);
        if mask_end > mask_start {
            masked.mask(mask_start, mask_end);
        }
        from = resume.max(from);
    }
    masked.finish()
}

#[cfg(test)]
mod tests {
    use crate::audit::redact_text;

    /// Every shape, through the whole content pass: what goes in, what comes out.
    const MASKED: &[(&str, &str)] = &[
        // Assignments the key list alone missed: a colon, spaces, a quoted JSON key, camelCase.
        ("token: abc123", "token: [redacted]"),
        ("api_key = s3cr3t next", "api_key = [redacted] next"),
        ("Secret=Zz9 ok", "Secret=[redacted] ok"),
        ("PassWD: hunter2", "PassWD: [redacted]"),
        (
            r#"{"password": "hunter 2", "user": "bob"}"#,
            r#"{"password": "[redacted]", "user": "bob"}"#,
        ),
        (
            r#"{\"password\":\"hunter2\",\"n\":1}"#,
            r#"{\"password\":\"[redacted]\",\"n\":1}"#,
        ),
        ("accessToken=abc x", "accessToken=[redacted] x"),
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG",
            "AWS_SECRET_ACCESS_KEY=[redacted]",
        ),
        (
            "ssh_passphrase: open sesame",
            "ssh_passphrase: [redacted] sesame",
        ),
        ("token := abc", "token := [redacted]"),
        (
            "GET /cb?code=1&access_token=eyAbc&x=2",
            "GET /cb?code=1&access_token=[redacted]&x=2",
        ),
        ("X-Api-Key: k3y-v4lue", "X-Api-Key: [redacted]"),
        (
            "DB_PASS=x1 MYSQL_PWD=y2",
            "DB_PASS=[redacted] MYSQL_PWD=[redacted]",
        ),
        (
            "GET /o?X-Amz-Credential=AK%2F1&X-Amz-Signature=ab12&sig=cd34",
            "GET /o?X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&sig=[redacted]",
        ),
        // Flags whose value is the next word.
        (
            "run --password hunter2 --speed 4000",
            "run --password [redacted] --speed 4000",
        ),
        ("--api-key 'a b' x", "--api-key '[redacted]' x"),
        // Authorization schemes beyond Bearer and Basic, and a bare credential.
        (
            "Authorization: token 0123abcdEF",
            "Authorization: token [redacted]",
        ),
        (
            "Authorization: Digest username=\"bob\", response=\"6629fae4\"\nnext",
            "Authorization: Digest [redacted]\nnext",
        ),
        ("authorization: dXNlcjpwYXNz", "authorization: [redacted]"),
        ("Cookie: session=abc; id=2\nx", "Cookie: [redacted]\nx"),
        ("Set-Cookie: sid=abc", "Set-Cookie: [redacted]"),
        (
            "curl -H \"X-Auth: Bearer abc.DEF-123\" url",
            "curl -H \"X-Auth: Bearer [redacted]\" url",
        ),
        // Issued tokens, by their prefix and length.
        ("key AKIAIOSFODNN7EXAMPLE.", "key [redacted]."),
        (
            "gh ghp_0123456789abcdefghijABCDEFGHIJ0123 ok",
            "gh [redacted] ok",
        ),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "[redacted]",
        ),
        ("glpat-0123456789abcdefABCD", "[redacted]"),
        ("xoxb-1234567890-abcdefghij", "[redacted]"),
        ("sk-ant-api03-0123456789abcdefABCDEF", "[redacted]"),
        ("AIzaSyA0123456789abcdefghijABCDEFGHIJ_-x", "[redacted]"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-Nature_1 end",
            "jwt [redacted] end",
        ),
        // Userinfo without a scheme.
        (
            "scp bob:hunter2@host.example:/fw.bin .",
            "scp bob:[redacted]@host.example:/fw.bin .",
        ),
        ("proxy=ci:p@ss@proxy:3128", "proxy=ci:[redacted]@proxy:3128"),
        // A private key block keeps its armour, not its body.
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n[redacted]\n-----END OPENSSH PRIVATE KEY-----\n",
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n[redacted]\n-----END PGP PRIVATE KEY BLOCK-----",
        ),
        ("password:hunter2", "password:[redacted]"),
        // A board's Wi-Fi key, as firmware and wpa_supplicant print it; a tab after a header.
        ("WIFI_PSK=hunter22 ok", "WIFI_PSK=[redacted] ok"),
        ("psk=\"my wifi key\"\n", "psk=\"[redacted]\"\n"),
        ("wifi.sta.psk: s3cret", "wifi.sta.psk: [redacted]"),
        (
            "Authorization:\tBearer abcdefghijkl",
            "Authorization:\tBearer [redacted]",
        ),
        ("Password = 'hunter 2' ok", "Password = '[redacted]' ok"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow (cut)",
            "-----BEGIN RSA PRIVATE KEY-----\n[redacted]",
        ),
        // Near the rules' edges, still masked: a URL's password, a user name that reads as a
        // token, a secret-named value with a letter or a digit, or of four symbols, a credential
        // inside brackets (the bracket stays).
        ("https://u:p@h", "https://u:[redacted]@h"),
        ("ssh://git:pw@host", "ssh://git:[redacted]@host"),
        ("https://x0Token12@host", "https://[redacted]@host"),
        ("token: abc123def", "token: [redacted]"),
        ("token: '}}}}'", "token: '[redacted]'"),
        ("token: 'a'", "token: '[redacted]'"),
        (
            "(Authorization: Bearer abc.def)",
            "(Authorization: Bearer [redacted])",
        ),
        ("[Bearer abc.DEF-123] ok", "[Bearer [redacted]] ok"),
        (
            "{authorization: dXNlcjpwYXNz}",
            "{authorization: [redacted]}",
        ),
    ];

    #[test]
    fn credential_shapes_are_masked_by_content() {
        for (raw, masked) in MASKED {
            assert_eq!(redact_text(raw), *masked, "for {raw:?}");
            assert_eq!(redact_text(masked), *masked, "idempotent for {raw:?}");
        }
    }

    /// Device output and prose that merely look near a credential stay byte for byte.
    const KEPT: &[&str] = &[
        "00000000: 4142 4344 0a0d ffee  ABCD....",
        "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "the token bucket refilled; the next token arrives in 5 ms",
        "Enter password:",
        "password:\n",
        "authorization: required",
        "Authorization: Denied",
        "port /dev/ttyUSB0 at 115200, uart0 ready",
        "mailto:bob@example.com git@github.com:org/repo.git 12:30@noon",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "--token-file fw/token.txt --password-stdin",
        "std::vector a == b, x::y, token_count=3 tokens=4",
        "AKIA is a prefix; AKIAIOSFODNN7EXAMPLEX is too long",
        "cookie jar: empty",
        "Info : Listening on port 3333 for gdb connections",
        "Info : flash size = 1024 KiB; adapter speed: 2000 kHz",
        "0x08000000: 00 20 00 20 c1 01 00 08",
        "key: value, lock_key: com:/dev/ttyACM0, tokens: 12, max_tokens=64",
        "the bearer token expired; Bearer credentials are refreshed",
        "tests pass=3 fail=0; PWD=/work/fw bypass=1 sigma=2",
        // Near the rules' edges, kept: a user name without a password, syntax a diagnostic
        // names after the word `token`, the bracket after a credential.
        "clone ssh://git@github.com/org/repo.git",
        "ftp://anonymous@mirror.example/pub and https://john.smith@host/x",
        "unexpected token: '}'",
        "parse error: unexpected token: ';' at 3:14; token: =>",
    ];

    #[test]
    fn text_that_only_resembles_a_credential_is_kept() {
        for text in KEPT {
            assert_eq!(redact_text(text), *text);
        }
    }
}
