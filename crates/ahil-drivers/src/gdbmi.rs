//! GDB/MI: our own record parser and a small session client for `gdb --interpreter=mi3`.
//!
//! The published MI crates are abandoned, and every byte here comes from gdb, which relays what a
//! debug stub (and so a possibly hostile board) sends. The parser therefore never panics on any input
//! (a property test feeds it arbitrary lines) and bounds its nesting depth.
//!
//! Grammar (gdb manual, "GDB/MI Output Syntax"):
//! ```text
//! output  = ( out-of-band-record )* [ result-record ] "(gdb)"
//! result-record  = [token] "^" result-class ( "," result )*
//! async-record   = [token] ( "*" | "+" | "=" ) async-class ( "," result )*
//! stream-record  = ( "~" | "@" | "&" ) c-string
//! result  = variable "=" value
//! value   = c-string | tuple | list
//! tuple   = "{}" | "{" result ( "," result )* "}"
//! list    = "[]" | "[" value ( "," value )* "]" | "[" result ( "," result )* "]"
//! ```

use std::fmt;

pub mod session;

pub use session::{Reply, Session, SessionError};

/// Deepest nesting of tuples and lists we follow; gdb's deepest real records nest about five levels.
const MAX_DEPTH: usize = 64;

/// One line of MI output.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// `[token]^class,results`: the answer to a command.
    Result {
        /// The command's token, when it had one.
        token: Option<u64>,
        /// `done`, `running`, `connected`, `error` or `exit`.
        class: ResultClass,
        /// The named results.
        results: Vec<(String, Value)>,
    },
    /// `[token]*class` (exec), `+class` (status), `=class` (notify).
    Async {
        /// The command's token, when it had one.
        token: Option<u64>,
        /// Which kind of asynchronous record.
        kind: AsyncKind,
        /// For example `stopped`, `running`, `thread-group-started`, `download`.
        class: String,
        /// The named results.
        results: Vec<(String, Value)>,
    },
    /// `~"…"` (console), `@"…"` (target), `&"…"` (log).
    Stream {
        /// Which stream.
        kind: StreamKind,
        /// The decoded text (invalid UTF-8 replaced).
        text: String,
    },
    /// The `(gdb)` prompt that ends a batch of output.
    Prompt,
}

/// The class of a result record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultClass {
    /// `^done`
    Done,
    /// `^running`
    Running,
    /// `^connected`
    Connected,
    /// `^error`
    Error,
    /// `^exit`
    Exit,
}

/// The kind of an asynchronous record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncKind {
    /// `*`: the target changed state (running, stopped).
    Exec,
    /// `+`: progress of a slow operation (download).
    Status,
    /// `=`: something the client should know (breakpoint changed, thread created).
    Notify,
}

/// The kind of a stream record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// `~`: what gdb's console would print.
    Console,
    /// `@`: output of the target or the remote monitor.
    Target,
    /// `&`: gdb's own log and warnings.
    Log,
}

/// A value in a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A c-string, decoded.
    Const(String),
    /// `{name=value,…}`
    Tuple(Vec<(String, Value)>),
    /// `[value,…]`
    List(Vec<Value>),
    /// `[name=value,…]` (for example `stack=[frame={…},frame={…}]`).
    ResultList(Vec<(String, Value)>),
}

impl Value {
    /// The string, when this is a c-string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Const(text) => Some(text),
            _ => None,
        }
    }

    /// The first field named `key` of a tuple or result list.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Self::Tuple(fields) | Self::ResultList(fields) => find(fields, key),
            _ => None,
        }
    }

    /// The elements of a list (values of a result list).
    pub fn items(&self) -> Vec<&Value> {
        match self {
            Self::List(values) => values.iter().collect(),
            Self::ResultList(fields) => fields.iter().map(|(_, value)| value).collect(),
            _ => Vec::new(),
        }
    }
}

/// The first field named `key`.
pub fn find<'a>(fields: &'a [(String, Value)], key: &str) -> Option<&'a Value> {
    fields
        .iter()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value)
}

/// The bytes of a `-data-read-memory-bytes` answer, its blocks in order; `None` when a block's
/// `contents` is missing or not hex.
pub fn memory_bytes(results: &[(String, Value)]) -> Option<Vec<u8>> {
    let memory = find(results, "memory")?;
    let mut bytes = Vec::new();
    for block in memory.items() {
        let contents = block.get("contents")?.as_str()?;
        if contents.len() % 2 != 0 {
            return None;
        }
        for i in (0..contents.len()).step_by(2) {
            bytes.push(u8::from_str_radix(contents.get(i..i + 2)?, 16).ok()?);
        }
    }
    Some(bytes)
}

impl Record {
    /// The named results of a result or async record (empty for streams and prompts).
    pub fn results(&self) -> &[(String, Value)] {
        match self {
            Self::Result { results, .. } | Self::Async { results, .. } => results,
            _ => &[],
        }
    }

    /// A result's value by name, as a string.
    pub fn field(&self, key: &str) -> Option<&str> {
        find(self.results(), key).and_then(Value::as_str)
    }
}

/// Why a line is not an MI record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset where parsing stopped.
    pub offset: usize,
    /// What was expected there.
    pub expected: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expected {} at byte {}", self.expected, self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parse one line of MI output (without its line terminator; a trailing `\r` is ignored).
pub fn parse_line(line: &str) -> Result<Record, ParseError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim_end() == "(gdb)" {
        return Ok(Record::Prompt);
    }
    let mut parser = Parser {
        bytes: line.as_bytes(),
        pos: 0,
    };
    let record = parser.record()?;
    if parser.pos != parser.bytes.len() {
        return Err(parser.error("end of line"));
    }
    Ok(record)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, expected: &'static str) -> ParseError {
        ParseError {
            offset: self.pos,
            expected,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn record(&mut self) -> Result<Record, ParseError> {
        let token = self.token()?;
        let Some(marker) = self.peek() else {
            return Err(self.error("a record marker"));
        };
        self.pos += 1;
        match marker {
            b'^' => {
                let class = match self.word() {
                    "done" => ResultClass::Done,
                    "running" => ResultClass::Running,
                    "connected" => ResultClass::Connected,
                    "error" => ResultClass::Error,
                    "exit" => ResultClass::Exit,
                    _ => return Err(self.error("a result class")),
                };
                let results = self.trailing_results()?;
                Ok(Record::Result {
                    token,
                    class,
                    results,
                })
            }
            b'*' | b'+' | b'=' => {
                let kind = match marker {
                    b'*' => AsyncKind::Exec,
                    b'+' => AsyncKind::Status,
                    _ => AsyncKind::Notify,
                };
                let class = self.word().to_owned();
                if class.is_empty() {
                    return Err(self.error("an async class"));
                }
                let results = self.trailing_results()?;
                Ok(Record::Async {
                    token,
                    kind,
                    class,
                    results,
                })
            }
            b'~' | b'@' | b'&' if token.is_none() => {
                let kind = match marker {
                    b'~' => StreamKind::Console,
                    b'@' => StreamKind::Target,
                    _ => StreamKind::Log,
                };
                let text = self.c_string()?;
                Ok(Record::Stream { kind, text })
            }
            _ => {
                self.pos -= 1;
                Err(self.error("a record marker"))
            }
        }
    }

    fn token(&mut self) -> Result<Option<u64>, ParseError> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if start == self.pos {
            return Ok(None);
        }
        let digits =
            std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| self.error("a token"))?;
        digits
            .parse()
            .map(Some)
            .map_err(|_| self.error("a token that fits 64 bits"))
    }

    /// A class or variable name: everything up to `,`, `=`, or the end.
    fn word(&mut self) -> &str {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| !matches!(b, b',' | b'=' | b'{' | b'}' | b'[' | b']' | b'"'))
        {
            self.pos += 1;
        }
        // The slice ends before an ASCII delimiter or at the end, so it is valid UTF-8 whenever the
        // line was; the line came in as &str.
        std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or("")
    }

    fn trailing_results(&mut self) -> Result<Vec<(String, Value)>, ParseError> {
        let mut results = Vec::new();
        while self.eat(b',') {
            results.push(self.result(0)?);
        }
        Ok(results)
    }

    fn result(&mut self, depth: usize) -> Result<(String, Value), ParseError> {
        let name = self.word().to_owned();
        if name.is_empty() {
            return Err(self.error("a variable name"));
        }
        if !self.eat(b'=') {
            return Err(self.error("'='"));
        }
        Ok((name, self.value(depth)?))
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth >= MAX_DEPTH {
            return Err(self.error("less nesting"));
        }
        match self.peek() {
            Some(b'"') => Ok(Value::Const(self.c_string()?)),
            Some(b'{') => {
                self.pos += 1;
                let mut fields = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        fields.push(self.result(depth + 1)?);
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return Err(self.error("',' or '}'"));
                        }
                    }
                }
                Ok(Value::Tuple(fields))
            }
            Some(b'[') => {
                self.pos += 1;
                if self.eat(b']') {
                    return Ok(Value::List(Vec::new()));
                }
                // A list holds either values or results; a result starts with a name.
                let holds_results = !matches!(self.peek(), Some(b'"' | b'{' | b'['));
                let mut values = Vec::new();
                let mut fields = Vec::new();
                loop {
                    if holds_results {
                        fields.push(self.result(depth + 1)?);
                    } else {
                        values.push(self.value(depth + 1)?);
                    }
                    if self.eat(b']') {
                        break;
                    }
                    if !self.eat(b',') {
                        return Err(self.error("',' or ']'"));
                    }
                }
                Ok(if holds_results {
                    Value::ResultList(fields)
                } else {
                    Value::List(values)
                })
            }
            _ => Err(self.error("a value")),
        }
    }

    /// A C string: `"`, escapes (`\n \t \r \" \\ \e` and octal `\NNN`, which gdb uses for raw bytes),
    /// `"`. Bytes are decoded as UTF-8 with replacement.
    fn c_string(&mut self) -> Result<String, ParseError> {
        if !self.eat(b'"') {
            return Err(self.error("'\"'"));
        }
        let mut out = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.error("a closing '\"'"));
            };
            self.pos += 1;
            match byte {
                b'"' => break,
                b'\\' => {
                    let Some(escaped) = self.peek() else {
                        return Err(self.error("an escape"));
                    };
                    self.pos += 1;
                    match escaped {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'e' => out.push(0x1b),
                        b'a' => out.push(0x07),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'v' => out.push(0x0b),
                        b'0'..=b'7' => {
                            let mut code = u32::from(escaped - b'0');
                            for _ in 0..2 {
                                match self.peek() {
                                    Some(digit @ b'0'..=b'7') => {
                                        code = code * 8 + u32::from(digit - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            // Three octal digits reach 511; a byte is what gdb meant.
                            out.push(u8::try_from(code & 0xff).unwrap_or(0));
                        }
                        other => out.push(other),
                    }
                }
                other => out.push(other),
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// Quote `text` as an MI c-string argument (for paths and console commands).
pub fn quote(text: &str) -> String {
    // gdb reads any other byte of a c-string as itself.
    ahil_wire::quote::quoted(text, String::push)
}

#[cfg(test)]
#[path = "gdbmi_tests.rs"]
mod tests;
