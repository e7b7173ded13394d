//! The stdio framing in front of rmcp. One task reads stdin line by line with a hard length limit and
//! one task owns stdout, so that a refusal of a malformed line can be written between the server's
//! own messages without ever splitting one.
//!
//! Two faults are answered here because rmcp would drop them silently and leave the client waiting:
//! a line over the limit (`-32600 Request too large`), and a number too large for an f64 (`1e400`),
//! which is rewritten to a marker string so the gate can refuse that argument as non-finite.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// What an out-of-range number in a request becomes; the gate refuses it as a non-finite argument.
pub use ahil_gate::validate::NON_FINITE_MARKER;

const PIPE_CAPACITY: usize = 256 * 1024;

/// Starts the two framing tasks. Returns the ends rmcp reads requests from and writes answers to,
/// and a handle that completes once every answer has reached stdout.
pub fn start<R, W>(
    input: R,
    output: W,
    max_line: usize,
) -> (
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<()>,
)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (server_in, pump_out) = tokio::io::duplex(PIPE_CAPACITY);
    let (server_out, writer_in) = tokio::io::duplex(PIPE_CAPACITY);
    let (refusals_tx, refusals_rx) = mpsc::unbounded_channel();
    tokio::spawn(pump_requests(input, pump_out, refusals_tx, max_line));
    let writer = tokio::spawn(write_answers(writer_in, refusals_rx, output));
    (server_in, server_out, writer)
}

async fn pump_requests<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: tokio::io::DuplexStream,
    refusals: mpsc::UnboundedSender<Vec<u8>>,
    max_line: usize,
) {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded_line(&mut input, &mut line, max_line).await {
            Ok(LineRead::Eof) | Err(_) => break,
            Ok(LineRead::TooLong) => {
                let _ = refusals.send(too_large(max_line));
            }
            Ok(LineRead::Line) => {
                let message = sanitize(&line);
                let bytes = message.as_deref().unwrap_or(&line);
                if to_server.write_all(bytes).await.is_err()
                    || to_server.write_all(b"\n").await.is_err()
                {
                    break;
                }
            }
        }
    }
    // Dropping the pipe is the server's EOF.
    let _ = to_server.shutdown().await;
}

enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Reads one line without its terminator, never holding more than `max` bytes of it; an over-long
/// line is consumed to its end and reported.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if too_long {
                LineRead::TooLong
            } else if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (chunk, found) = match buf.iter().position(|b| *b == b'\n') {
            Some(pos) => (&buf[..pos], Some(pos)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = found.map_or(chunk.len(), |pos| pos + 1);
        input.consume(consumed);
        if found.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

fn too_large(max_line: usize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": "Request too large", "data": {"max_message_bytes": max_line}},
    }))
    .unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Rewrites numbers an f64 cannot hold (`1e400`) to the non-finite marker. Lines without such a
/// number come back as `None`, untouched and without a copy.
fn sanitize(line: &[u8]) -> Option<Vec<u8>> {
    let bad = out_of_range_numbers(line);
    if bad.is_empty() {
        return None;
    }
    let marker = marker_literal();
    let mut out = Vec::with_capacity(line.len() + bad.len() * marker.len());
    let mut copied = 0;
    for (start, end) in bad {
        out.extend_from_slice(&line[copied..start]);
        out.extend_from_slice(&marker);
        copied = end;
    }
    out.extend_from_slice(&line[copied..]);
    Some(out)
}

/// Byte ranges of number tokens (outside strings) that do not parse to a finite f64.
fn out_of_range_numbers(line: &[u8]) -> Vec<(usize, usize)> {
    let mut bad = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let byte = line[i];
        if byte == b'"' {
            i = string_end(line, i);
        } else if byte == b'-' || byte.is_ascii_digit() {
            let end = line[i..]
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .map_or(line.len(), |n| i + n);
            let finite = std::str::from_utf8(&line[i..end])
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .is_none_or(f64::is_finite);
            if !finite {
                bad.push((i, end));
            }
            i = end;
        } else {
            i += 1;
        }
    }
    bad
}

/// The marker as a JSON string literal (its NUL must be escaped to be valid JSON).
fn marker_literal() -> Vec<u8> {
    serde_json::to_vec(NON_FINITE_MARKER).unwrap_or_else(|_| b"null".to_vec())
}

/// Index just past the string literal that opens at `start`.
fn string_end(line: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    line.len()
}

async fn write_answers<W: AsyncWrite + Unpin>(
    mut from_server: tokio::io::DuplexStream,
    mut refusals: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut refusals_open = true;
    loop {
        tokio::select! {
            read = from_server.read(&mut chunk) => {
                let n = read.unwrap_or_default();
                if n == 0 {
                    break;
                }
                pending.extend_from_slice(&chunk[..n]);
                if let Some(last) = pending.iter().rposition(|b| *b == b'\n') {
                    let rest = pending.split_off(last + 1);
                    if output.write_all(&pending).await.is_err() || output.flush().await.is_err() {
                        return;
                    }
                    pending = rest;
                }
            }
            refusal = refusals.recv(), if refusals_open => match refusal {
                Some(line) => {
                    if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                        return;
                    }
                }
                None => refusals_open = false,
            },
        }
    }
    while let Ok(line) = refusals.try_recv() {
        let _ = output.write_all(&line).await;
    }
    if !pending.is_empty() {
        let _ = output.write_all(&pending).await;
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_too_large_for_a_float_becomes_the_marker() {
        let line = br#"{"id":2,"params":{"arguments":{"wait_s":1e400,"label":"1e400"}}}"#;
        let fixed = sanitize(line).expect("the line is rewritten");
        let value: serde_json::Value = serde_json::from_slice(&fixed).expect("now parses");
        assert_eq!(value["params"]["arguments"]["wait_s"], NON_FINITE_MARKER);
        assert_eq!(
            value["params"]["arguments"]["label"], "1e400",
            "strings are left alone"
        );
        assert_eq!(value["id"], 2);
    }

    #[test]
    fn a_line_that_parses_is_passed_through_untouched() {
        assert!(sanitize(br#"{"a":1.5e10,"b":"\"1e400\""}"#).is_none());
    }

    #[test]
    fn an_escaped_quote_does_not_end_a_string() {
        let line = br#"{"s":"x\"1e999","n":-1e999}"#;
        let fixed = sanitize(line).expect("rewritten");
        let value: serde_json::Value = serde_json::from_slice(&fixed).expect("parses");
        assert_eq!(value["s"], "x\"1e999");
        assert_eq!(value["n"], NON_FINITE_MARKER);
    }

    #[tokio::test]
    async fn an_over_long_line_is_answered_and_the_next_line_still_arrives() {
        let (mut client, server_side) = tokio::io::duplex(1024);
        let (mut answers, sink) = tokio::io::duplex(1024);
        let (mut requests, _server_out, _writer) = start(server_side, sink, 16);
        client
            .write_all(b"0123456789abcdefXYZ\n{\"ok\":1}\n")
            .await
            .expect("write");
        drop(client);
        let mut got = String::new();
        requests
            .read_to_string(&mut got)
            .await
            .expect("requests reach the server");
        assert_eq!(got, "{\"ok\":1}\n");
        let mut refusal = vec![0u8; 200];
        let n = answers.read(&mut refusal).await.expect("refusal written");
        let text = String::from_utf8_lossy(&refusal[..n]);
        assert!(text.contains("Request too large"), "{text}");
    }
}
