//! Double-quoted strings: YAML's, GDB/MI's c-strings and JSON's escape `"`, `\`, newline, carriage
//! return and tab the same way and differ only in what they do with every other character.

/// The escapes every format here writes the same way.
const SHARED: [(char, &str); 5] = [
    ('"', "\\\""),
    ('\\', "\\\\"),
    ('\n', "\\n"),
    ('\r', "\\r"),
    ('\t', "\\t"),
];

/// Appends `text` in double quotes to `out`: the shared escapes, and `other` for every character
/// they do not name (it appends the character as its format writes it).
pub fn push_quoted(out: &mut String, text: &str, other: impl Fn(&mut String, char)) {
    out.push('"');
    for c in text.chars() {
        match SHARED.iter().find(|(plain, _)| *plain == c) {
            Some((_, escaped)) => out.push_str(escaped),
            None => other(out, c),
        }
    }
    out.push('"');
}

/// `text` in double quotes (see [`push_quoted`]).
pub fn quoted(text: &str, other: impl Fn(&mut String, char)) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_quoted(&mut out, text, other);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_escapes_are_written_before_the_format_sees_a_character() {
        let seen = std::cell::RefCell::new(String::new());
        let out = quoted("a\"\\\n\r\tb", |out, c| {
            seen.borrow_mut().push(c);
            out.push(c);
        });
        assert_eq!(out, r#""a\"\\\n\r\tb""#);
        assert_eq!(*seen.borrow(), "ab");
    }
}
