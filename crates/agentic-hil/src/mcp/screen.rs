//! Screening of one stdin line before rmcp sees it. rmcp drops unparsable lines silently and answers
//! a malformed request without its id, so a client waiting on that id would wait forever. Here every
//! line is classified once: passed on (rmcp answers it), answered here (a JSON-RPC error carrying the
//! id whenever one can be read), or dropped only where JSON-RPC forbids an answer (a notification, a
//! response, a blank line).

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Map, Value, json};

use super::framing::NON_FINITE_MARKER;

/// Deepest nesting of arrays and objects a line may have. Tool arguments nest a handful of levels;
/// the cap keeps a recursive parse and drop far from the stack's end.
pub const MAX_DEPTH: usize = 64;

/// Most values (array elements and object members) one line may hold. A parsed value costs tens of
/// bytes, so without this a short line of `[1,1,1,…]` would cost the server many times its length.
pub const MAX_VALUES: usize = 100_000;

/// Longest number literal accepted. A finite f64 never needs more digits than this to be written.
pub const MAX_NUMBER_CHARS: usize = 100;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// What becomes of one line.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Pass to rmcp: the line itself, or (`Some`) its rewritten form.
    Forward(Option<Vec<u8>>),
    /// Write this answer (one line, newline included) and pass nothing on.
    Answer(Vec<u8>),
    /// Neither answer nor pass on; the reason is logged.
    Drop(&'static str),
}

/// The one fact about the session the screen needs: rmcp ends the whole session if anything but a
/// request reaches it before `initialize`, so a notification or response sent that early is dropped.
#[derive(Debug, Default)]
pub struct Lifecycle {
    initialize_seen: bool,
}

/// Classifies one line (its terminator already removed). `max_line` bounds a rewritten line too.
pub fn screen(line: &[u8], lifecycle: &mut Lifecycle, max_line: usize) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Drop("blank line");
    }
    if std::str::from_utf8(line).is_err() {
        return parse_error("Parse error: the line is not valid UTF-8.", None);
    }
    let tokens = match scan(line) {
        Ok(tokens) => tokens,
        Err(TooBig::Depth) => {
            return parse_error(
                &format!("Parse error: arrays and objects nest deeper than {MAX_DEPTH} levels."),
                Some(json!({"max_depth": MAX_DEPTH})),
            );
        }
        Err(TooBig::Values) => {
            return parse_error(
                &format!("Parse error: the line holds more than {MAX_VALUES} values."),
                Some(json!({"max_values": MAX_VALUES})),
            );
        }
    };
    let rewritten = rewrite(line, &tokens.non_finite);
    let bytes = rewritten.as_deref().unwrap_or(line);
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(err) => return parse_error(&format!("Parse error: {err}."), None),
    };
    let Value::Object(message) = value else {
        return match value {
            Value::Array(items) => batch(&items),
            _ => invalid(Value::Null, "A message must be a JSON object.", None),
        };
    };
    let id = readable_id(&message);
    if let Some(reason) = envelope_fault(&message) {
        return invalid(id, reason, None);
    }
    if tokens.longest_number > MAX_NUMBER_CHARS {
        return invalid(
            id,
            &format!("A number literal is longer than {MAX_NUMBER_CHARS} characters."),
            Some(json!({"max_number_chars": MAX_NUMBER_CHARS})),
        );
    }
    if bytes.len() > max_line {
        return too_large(id, max_line);
    }
    let is_request = message.get("method").is_some() && message.contains_key("id");
    // A line near the limit is held once as bytes and once as rmcp's message, not a third time.
    drop(message);
    if !is_request && !lifecycle.initialize_seen {
        return Verdict::Drop("a notification or response before initialize");
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Err(_) if !is_request => Verdict::Drop("a notification or response rmcp cannot read"),
        Err(err) => answer(id, INVALID_PARAMS, &format!("Invalid params: {err}."), None),
        Ok(ClientJsonRpcMessage::Request(request)) => match &request.request {
            ClientRequest::InitializeRequest(_) => {
                lifecycle.initialize_seen = true;
                Verdict::Forward(rewritten)
            }
            // rmcp reads a known method whose params do not fit as a custom request, and then
            // answers "method not found"; the truth is that the params are wrong.
            ClientRequest::CustomRequest(custom)
                if MCP_METHODS.contains(&custom.method.as_str()) =>
            {
                if custom.method == "tools/call"
                    && let Some(carried) = carry_arguments(bytes).filter(|l| l.len() <= max_line)
                {
                    return Verdict::Forward(Some(carried));
                }
                answer(
                    id,
                    INVALID_PARAMS,
                    &format!("Invalid params: they do not fit {}.", custom.method),
                    None,
                )
            }
            _ => Verdict::Forward(rewritten),
        },
        Ok(_) => Verdict::Forward(rewritten),
    }
}

/// Where a `tools/call` whose `arguments` is no object (an array, a string, a number) carries them
/// past rmcp, which reads only an object there: in `_meta`, so the gate refuses them as an
/// `invalid_argument` envelope like any other bad argument, instead of a bare JSON-RPC error.
pub const NOT_AN_OBJECT: &str = "io.agentic-hil/arguments-not-an-object";

/// The line with its non-object `arguments` moved to `_meta` ([`NOT_AN_OBJECT`]), if that is all
/// that keeps rmcp from reading it as a `tools/call`.
fn carry_arguments(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let params = message.get_mut("params")?.as_object_mut()?;
    if !params.get("name").is_some_and(Value::is_string) {
        return None;
    }
    let arguments = params.remove("arguments")?;
    if arguments.is_object() || arguments.is_null() {
        return None;
    }
    params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?
        .insert(NOT_AN_OBJECT.into(), arguments);
    let carried = serde_json::to_vec(&message).ok()?;
    matches!(
        serde_json::from_slice::<ClientJsonRpcMessage>(&carried),
        Ok(ClientJsonRpcMessage::Request(request))
            if matches!(request.request, ClientRequest::CallToolRequest(_))
    )
    .then_some(carried)
}

/// The MCP request methods rmcp reads into their own types when the params fit.
const MCP_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "tools/call",
    "tools/list",
];

/// The answer to a line over the length limit; `id` is what [`id_in_prefix`] read from its start.
pub fn too_large(id: Value, max_line: usize) -> Verdict {
    answer(
        id,
        INVALID_REQUEST,
        "Request too large",
        Some(json!({"max_message_bytes": max_line})),
    )
}

/// Why the envelope is not a JSON-RPC 2.0 request, notification or response.
fn envelope_fault(message: &Map<String, Value>) -> Option<&'static str> {
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("Invalid Request: jsonrpc must be \"2.0\".");
    }
    // A response may carry a null id (its sender could not read ours); a request may not.
    let bad_id = message.contains_key("id") && readable_id(message).is_null();
    if bad_id && message.contains_key("method") {
        return Some("Invalid Request: id must be a string or an integer.");
    }
    match message.get("method") {
        Some(Value::String(_)) => {}
        Some(_) => return Some("Invalid Request: method must be a string."),
        None => {
            let result = message.contains_key("result");
            let error = message.contains_key("error");
            if !message.contains_key("id") || result == error {
                return Some(
                    "Invalid Request: a message needs a method, or an id with one of result and error.",
                );
            }
            return None;
        }
    }
    if message.contains_key("result") || message.contains_key("error") {
        return Some("Invalid Request: a request carries no result or error.");
    }
    match message.get("params") {
        None | Some(Value::Object(_)) => None,
        Some(_) => Some("Invalid Request: params must be an object."),
    }
}

/// The id to echo: a string, or an integer rmcp can hold; anything else cannot be echoed.
fn readable_id(message: &Map<String, Value>) -> Value {
    match message.get("id") {
        Some(Value::String(text)) => Value::String(text.clone()),
        Some(Value::Number(n)) if n.as_i64().is_some() => Value::Number(n.clone()),
        _ => Value::Null,
    }
}

/// MCP since 2025-06-18 has no batches, and no version this server speaks needs them, so every
/// request in a batch is refused by its id, in one array as JSON-RPC answers a batch.
fn batch(items: &[Value]) -> Verdict {
    if items.is_empty() {
        return invalid(Value::Null, "Invalid Request: an empty batch.", None);
    }
    let answers: Vec<Value> = items
        .iter()
        .filter(|item| {
            item.as_object().is_none_or(|m| {
                let notification = m.contains_key("method") && !m.contains_key("id");
                let response = !m.contains_key("method")
                    && (m.contains_key("result") || m.contains_key("error"));
                !(notification || response)
            })
        })
        .map(|item| {
            let id = item.as_object().map_or(Value::Null, readable_id);
            error_value(
                id,
                INVALID_REQUEST,
                "Invalid Request: batches are not supported; send one message per line.",
                None,
            )
        })
        .collect();
    if answers.is_empty() {
        return Verdict::Drop("a batch of notifications");
    }
    Verdict::Answer(to_line(&Value::Array(answers)))
}

fn parse_error(message: &str, data: Option<Value>) -> Verdict {
    answer(Value::Null, PARSE_ERROR, message, data)
}

fn invalid(id: Value, message: &str, data: Option<Value>) -> Verdict {
    answer(id, INVALID_REQUEST, message, data)
}

fn answer(id: Value, code: i64, message: &str, data: Option<Value>) -> Verdict {
    Verdict::Answer(to_line(&error_value(id, code, message, data)))
}

fn error_value(id: Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let mut answer = Map::new();
    answer.insert("jsonrpc".into(), "2.0".into());
    answer.insert("id".into(), id);
    answer.insert("error".into(), error);
    Value::Object(answer)
}

fn to_line(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// What one pass over the bytes outside strings found.
struct Tokens {
    /// Number literals an f64 cannot hold (`1e400`).
    non_finite: Vec<(usize, usize)>,
    longest_number: usize,
}

/// Which cap a line is past before it is parsed.
#[derive(Debug)]
enum TooBig {
    Depth,
    Values,
}

/// One pass over the line: nesting depth and value count (refused past [`MAX_DEPTH`] and
/// [`MAX_VALUES`]) and number literals.
fn scan(line: &[u8]) -> Result<Tokens, TooBig> {
    let mut tokens = Tokens {
        non_finite: Vec::new(),
        longest_number: 0,
    };
    let mut depth = 0usize;
    // Every element after a container's first follows a comma, so this bounds the value count.
    let mut values = 0usize;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'"' => i = string_end(line, i).unwrap_or(line.len()),
            b'[' | b'{' | b',' => {
                if line[i] != b',' {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(TooBig::Depth);
                    }
                }
                values += 1;
                if values > MAX_VALUES {
                    return Err(TooBig::Values);
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let end = number_end(line, i);
                tokens.longest_number = tokens.longest_number.max(end - i);
                let finite = std::str::from_utf8(&line[i..end])
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .is_none_or(f64::is_finite);
                if !finite {
                    tokens.non_finite.push((i, end));
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    Ok(tokens)
}

fn number_end(line: &[u8], start: usize) -> usize {
    line[start..]
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .map_or(line.len(), |n| start + n)
}

/// Rewrites the given number literals to the non-finite marker, so the gate refuses that argument
/// by name; `None` when there is nothing to rewrite.
fn rewrite(line: &[u8], spans: &[(usize, usize)]) -> Option<Vec<u8>> {
    if spans.is_empty() {
        return None;
    }
    // The marker's NUL must be escaped to be valid JSON.
    let marker = serde_json::to_vec(NON_FINITE_MARKER).unwrap_or_else(|_| b"null".to_vec());
    let mut out = Vec::with_capacity(line.len() + spans.len() * marker.len());
    let mut copied = 0;
    for &(start, end) in spans {
        out.extend_from_slice(&line[copied..start]);
        out.extend_from_slice(&marker);
        copied = end;
    }
    out.extend_from_slice(&line[copied..]);
    Some(out)
}

/// Index just past the string literal that opens at `start`; `None` if the line ends inside it.
fn string_end(line: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The id of an over-long line, read from the start it kept: the top-level `id` member if it comes
/// complete before the cut, else null.
pub fn id_in_prefix(head: &[u8]) -> Value {
    let skip = |i: usize| {
        head[i.min(head.len())..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map_or(head.len(), |n| i + n)
    };
    let mut i = skip(0);
    if head.get(i) != Some(&b'{') {
        return Value::Null;
    }
    i += 1;
    loop {
        i = skip(i);
        if head.get(i) != Some(&b'"') {
            return Value::Null;
        }
        let Some(key_end) = string_end(head, i) else {
            return Value::Null;
        };
        let key: Option<String> = serde_json::from_slice(&head[i..key_end]).ok();
        i = skip(key_end);
        if head.get(i) != Some(&b':') {
            return Value::Null;
        }
        i = skip(i + 1);
        let Some(value_end) = value_end(head, i) else {
            return Value::Null;
        };
        if key.as_deref() == Some("id") {
            let mut only = Map::new();
            if let Ok(id) = serde_json::from_slice::<Value>(&head[i..value_end]) {
                only.insert("id".into(), id);
            }
            return readable_id(&only);
        }
        i = skip(value_end);
        if head.get(i) != Some(&b',') {
            return Value::Null;
        }
        i += 1;
    }
}

/// End of the complete value starting at `start`, or `None` if the prefix cuts it.
fn value_end(head: &[u8], start: usize) -> Option<usize> {
    match head.get(start)? {
        b'"' => string_end(head, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < head.len() {
                match head[i] {
                    b'"' => {
                        i = string_end(head, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => head[start..]
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
            .map(|n| start + n),
    }
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;
