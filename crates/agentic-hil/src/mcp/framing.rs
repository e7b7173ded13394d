//! The stdio framing in front of rmcp. One task reads stdin line by line with a hard length limit and
//! one task owns stdout, so that a refusal of a malformed line can be written between the server's
//! own messages without ever splitting one.
//!
//! Every line gets exactly one fate ([`super::screen`]): rmcp answers it, or it is answered here
//! (over the limit, unparsable, not a JSON-RPC request, params rmcp cannot read), or, where
//! JSON-RPC forbids an answer, it is dropped. A number too large for an f64 (`1e400`) is rewritten
//! to a marker string so the gate can refuse that argument as non-finite.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::screen::{self, Lifecycle, Verdict};

/// What an out-of-range number in a request becomes; the gate refuses it as a non-finite argument.
pub use ahil_gate::validate::NON_FINITE_MARKER;

const PIPE_CAPACITY: usize = 256 * 1024;

/// How much of an over-long line is kept to read its id from.
const HEAD_BYTES: usize = 64 * 1024;

/// The line buffer's capacity kept between lines.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// How much of stdin, or of the server's answers, is moved at a time. Each buffer this sizes is
/// resident at the `tools/list` answer (the peak of the process), so it is kept small; a long line
/// only takes more reads.
const CHUNK: usize = 16 * 1024;

/// Answers written here that may wait for stdout before the reader stops reading.
const ANSWER_QUEUE: usize = 64;

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
    // No more than the writer reads at a time: an answer waits in rmcp's buffer, not in a copy here.
    let (server_out, writer_in) = tokio::io::duplex(CHUNK);
    let (refusals_tx, refusals_rx) = mpsc::channel(ANSWER_QUEUE);
    tokio::spawn(pump_requests(input, pump_out, refusals_tx, max_line));
    let writer = tokio::spawn(write_answers(writer_in, refusals_rx, output));
    (server_in, server_out, writer)
}

async fn pump_requests<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: tokio::io::DuplexStream,
    refusals: mpsc::Sender<Vec<u8>>,
    max_line: usize,
) {
    let mut input = BufReader::with_capacity(CHUNK, input);
    let mut line = Vec::new();
    let mut lifecycle = Lifecycle::default();
    loop {
        line.clear();
        // A long line's buffer is not kept for the lines after it.
        if line.capacity() > KEEP_CAPACITY {
            line.shrink_to(KEEP_CAPACITY);
        }
        let verdict = match read_bounded_line(&mut input, &mut line, max_line).await {
            Ok(LineRead::Eof) | Err(_) => break,
            Ok(LineRead::TooLong) => screen::too_large(screen::id_in_prefix(&line), max_line),
            Ok(LineRead::Line) => screen::screen(&line, &mut lifecycle, max_line),
        };
        match verdict {
            Verdict::Forward(rewritten) => {
                let bytes = rewritten.as_deref().unwrap_or(&line);
                if to_server.write_all(bytes).await.is_err()
                    || to_server.write_all(b"\n").await.is_err()
                {
                    break;
                }
            }
            // A client that stops reading stdout stalls here rather than queueing answers without end.
            Verdict::Answer(answer) => {
                if refusals.send(answer).await.is_err() {
                    break;
                }
            }
            Verdict::Drop(reason) => tracing::debug!(reason, "stdin line dropped unanswered"),
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

/// Reads one line without its terminator, never holding more than `max` bytes of it. An over-long
/// line keeps only its first [`HEAD_BYTES`] (where its id is read from), is consumed to its end and
/// reported.
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
                let room = HEAD_BYTES.saturating_sub(line.len()).min(chunk.len());
                line.extend_from_slice(&chunk[..room]);
                line.truncate(HEAD_BYTES);
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

/// Copies the server's answers to stdout as they arrive, a piece at a time, so no answer is ever
/// held whole here (the largest, `tools/list`, is over 100 KB and was copied twice more before it
/// reached stdout). A refusal is written only between two lines, never inside one.
async fn write_answers<W: AsyncWrite + Unpin>(
    mut from_server: tokio::io::DuplexStream,
    mut refusals: mpsc::Receiver<Vec<u8>>,
    mut output: W,
) {
    let mut chunk = vec![0u8; CHUNK];
    // What of `chunk` is read and not yet written.
    let mut held = 0..0;
    let mut at_line_start = true;
    let mut refusals_open = true;
    loop {
        // Refusals first: each was queued before the lines after it reached rmcp, so it reaches
        // stdout before their answers.
        while at_line_start && refusals_open {
            match refusals.try_recv() {
                Ok(line) => {
                    if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                        return;
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => refusals_open = false,
            }
        }
        if held.is_empty() {
            tokio::select! {
                biased;
                refusal = refusals.recv(), if refusals_open && at_line_start => match refusal {
                    Some(line) => {
                        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                            return;
                        }
                    }
                    None => refusals_open = false,
                },
                read = from_server.read(&mut chunk) => match read.unwrap_or_default() {
                    0 => break,
                    n => held = 0..n,
                },
            }
            continue;
        }
        // Up to the end of the line being written, so the refusals are looked at again between lines.
        let rest = &chunk[held.clone()];
        let end = rest
            .iter()
            .position(|b| *b == b'\n')
            .map_or(rest.len(), |at| at + 1);
        if output.write_all(&rest[..end]).await.is_err() {
            return;
        }
        at_line_start = rest[end - 1] == b'\n';
        if at_line_start && output.flush().await.is_err() {
            return;
        }
        held.start += end;
    }
    // A server that stopped inside a line: the refusals after it still arrive as lines of their own.
    if !at_line_start {
        let _ = output.write_all(b"\n").await;
    }
    while let Ok(line) = refusals.try_recv() {
        let _ = output.write_all(&line).await;
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_over_long_line_is_answered_and_the_next_line_still_arrives() {
        let (mut client, server_side) = tokio::io::duplex(1024);
        let (mut answers, sink) = tokio::io::duplex(1024);
        let (mut requests, _server_out, _writer) = start(server_side, sink, 64);
        let ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        let long = format!("{{\"id\":\"long\",\"pad\":\"{}\"}}\n", "x".repeat(100));
        client
            .write_all(format!("{long}{ping}").as_bytes())
            .await
            .expect("write");
        drop(client);
        let mut got = String::new();
        requests
            .read_to_string(&mut got)
            .await
            .expect("requests reach the server");
        assert_eq!(got, ping);
        let mut refusal = vec![0u8; 200];
        let n = answers.read(&mut refusal).await.expect("refusal written");
        let text = String::from_utf8_lossy(&refusal[..n]);
        assert!(text.contains("Request too large"), "{text}");
        assert!(
            text.contains("\"id\":\"long\""),
            "the id read from its start: {text}"
        );
    }

    #[tokio::test]
    async fn a_refusal_queued_inside_an_answer_waits_for_its_end_and_precedes_the_next() {
        let (mut server, from_server) = tokio::io::duplex(1024);
        let (refusals, queued) = mpsc::channel(4);
        let (mut stdout, to_stdout) = tokio::io::duplex(1024);
        let writer = tokio::spawn(write_answers(from_server, queued, to_stdout));
        server.write_all(b"{\"id\":1,").await.expect("write");
        let mut head = [0u8; 8];
        stdout
            .read_exact(&mut head)
            .await
            .expect("the answer's start");
        refusals
            .send(b"{\"id\":\"refused\"}\n".to_vec())
            .await
            .expect("queued");
        server
            .write_all(b"\"x\":0}\n{\"id\":2}\n")
            .await
            .expect("write");
        drop((server, refusals));
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).await.expect("read");
        writer.await.expect("writer");
        assert_eq!(
            format!("{}{rest}", String::from_utf8_lossy(&head)),
            "{\"id\":1,\"x\":0}\n{\"id\":\"refused\"}\n{\"id\":2}\n"
        );
    }
}
