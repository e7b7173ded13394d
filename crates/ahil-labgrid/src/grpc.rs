//! gRPC over one HTTP/2 connection (h2): the coordinator's `ClientStream`, opened once and kept
//! open, and unary calls on the same connection. The coordinator knows a client by its gRPC peer
//! (the TCP connection), so the unary calls act as the user the stream's `StartupDone` named.

use bytes::{Buf, Bytes, BytesMut};
use h2::client::SendRequest;
use http::{HeaderMap, Request};
use tokio::net::TcpStream;

use crate::Error;
use crate::wire;

/// What the coordinator is told our version is; it only logs it.
const CLIENT_VERSION: &str = concat!("agentic-hil ", env!("CARGO_PKG_VERSION"));

/// gRPC's status codes that a claim tells apart.
pub mod code {
    pub const INVALID_ARGUMENT: u32 = 3;
    pub const PERMISSION_DENIED: u32 = 7;
    pub const FAILED_PRECONDITION: u32 = 9;
}

pub struct Connection {
    send: SendRequest<Bytes>,
    address: String,
    /// The request half of `ClientStream`: while it is open the coordinator keeps our session.
    _stream: h2::SendStream<Bytes>,
}

fn request(address: &str, method: &str) -> Request<()> {
    Request::builder()
        .method("POST")
        .uri(format!("http://{address}/labgrid.Coordinator/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("a request built from a checked address and a fixed method name is valid")
}

/// One gRPC message: uncompressed flag, big-endian length, bytes.
fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.extend_from_slice(&[0]);
    out.extend_from_slice(
        &u32::try_from(message.len())
            .expect("our messages are a few bytes")
            .to_be_bytes(),
    );
    out.extend_from_slice(message);
    out.freeze()
}

/// The next whole message at the front of `buf`, removed from it.
fn unframe(buf: &mut BytesMut) -> Result<Option<Bytes>, Error> {
    if buf.len() < 5 {
        return Ok(None);
    }
    if buf[0] != 0 {
        return Err(Error::Malformed(wire::Malformed("a compressed message")));
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if buf.len() < 5 + len {
        return Ok(None);
    }
    buf.advance(5);
    Ok(Some(buf.split_to(len).freeze()))
}

/// `grpc-message` is percent-encoded.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The call's status, if these headers (or trailers) carry one.
fn status(method: &'static str, headers: &HeaderMap) -> Option<Result<(), Error>> {
    let code: u32 = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    if code == 0 {
        return Some(Ok(()));
    }
    let message = headers
        .get("grpc-message")
        .and_then(|m| m.to_str().ok())
        .map(percent_decoded)
        .unwrap_or_default();
    Some(Err(Error::Status {
        method,
        code,
        message,
    }))
}

fn lost(address: &str, e: &h2::Error) -> Error {
    Error::Unreachable {
        address: address.to_owned(),
        reason: format!("the connection failed: {e}"),
    }
}

async fn ready(send: &SendRequest<Bytes>, address: &str) -> Result<SendRequest<Bytes>, Error> {
    send.clone().ready().await.map_err(|e| lost(address, &e))
}

impl Connection {
    /// Connects, opens `ClientStream` as `user`, and waits until the coordinator has taken the
    /// startup (a `Sync` sent after it is answered), so the first unary call acts as `user`.
    pub async fn open(address: &str, user: &str) -> Result<Self, Error> {
        let unreachable = |reason: String| Error::Unreachable {
            address: address.to_owned(),
            reason,
        };
        let lost = |e: h2::Error| lost(address, &e);
        let tcp = TcpStream::connect(address)
            .await
            .map_err(|e| unreachable(format!("connect: {e}")))?;
        // One small request and one small answer per call: do not wait to coalesce them.
        tcp.set_nodelay(true)
            .map_err(|e| unreachable(format!("TCP_NODELAY: {e}")))?;
        let (send, connection) = h2::client::handshake(tcp)
            .await
            .map_err(|e| unreachable(format!("HTTP/2 handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let (answer, mut stream) = ready(&send, address)
            .await?
            .send_request(request(address, "ClientStream"), false)
            .map_err(lost)?;
        stream
            .send_data(frame(&wire::startup(CLIENT_VERSION, user)), false)
            .map_err(lost)?;
        stream
            .send_data(frame(&wire::sync(1)), false)
            .map_err(lost)?;
        let answer = answer.await.map_err(lost)?;
        if let Some(Err(e)) = status("ClientStream", answer.headers()) {
            return Err(e);
        }
        let mut body = answer.into_body();
        let mut buf = BytesMut::new();
        loop {
            while let Some(message) = unframe(&mut buf)? {
                if wire::sync_answered(&message)? == Some(1) {
                    // Nothing is subscribed, so nothing should come; read whatever does so the
                    // stream's window never fills.
                    tokio::spawn(async move {
                        while let Some(Ok(chunk)) = body.data().await {
                            let _ = body.flow_control().release_capacity(chunk.len());
                        }
                    });
                    return Ok(Self {
                        send,
                        address: address.to_owned(),
                        _stream: stream,
                    });
                }
            }
            match body.data().await {
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    buf.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return Err(lost(e)),
                None => {
                    return Err(unreachable(
                        "the coordinator closed the client stream before it answered".into(),
                    ));
                }
            }
        }
    }

    /// One unary call: the answer's message bytes, or the status the coordinator refused it with.
    pub async fn unary(&self, method: &'static str, message: Bytes) -> Result<Bytes, Error> {
        let lost = |e: h2::Error| lost(&self.address, &e);
        let (answer, mut stream) = ready(&self.send, &self.address)
            .await?
            .send_request(request(&self.address, method), false)
            .map_err(lost)?;
        stream.send_data(frame(&message), true).map_err(lost)?;
        let answer = answer.await.map_err(lost)?;
        // A refusal may come as headers alone ("trailers-only").
        if let Some(Err(e)) = status(method, answer.headers()) {
            return Err(e);
        }
        let mut body = answer.into_body();
        let mut buf = BytesMut::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(lost)?;
            let _ = body.flow_control().release_capacity(chunk.len());
            buf.extend_from_slice(&chunk);
        }
        let trailers = body.trailers().await.map_err(lost)?;
        match trailers.as_ref().and_then(|t| status(method, t)) {
            Some(Err(e)) => return Err(e),
            Some(Ok(())) => {}
            None => {
                return Err(Error::Malformed(wire::Malformed(
                    "an answer without a grpc-status",
                )));
            }
        }
        unframe(&mut buf)?.ok_or(Error::Malformed(wire::Malformed(
            "an answer without a message",
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_message_is_percent_decoded() {
        assert_eq!(
            percent_decoded("Place bench-1 is already acquired%21 %zz"),
            "Place bench-1 is already acquired! %zz"
        );
    }

    #[test]
    fn a_frame_comes_back_whole_and_only_when_whole() {
        let framed = frame(b"hello");
        let mut buf = BytesMut::from(&framed[..4]);
        assert_eq!(unframe(&mut buf).expect("short"), None);
        let mut buf = BytesMut::from(&framed[..]);
        assert_eq!(
            unframe(&mut buf).expect("whole").as_deref(),
            Some(&b"hello"[..])
        );
        assert!(buf.is_empty());
    }
}
