//! The broker's framing: one JSON object per line over a Unix stream, each line bounded, and the
//! kernel's word on who is at the other end.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

use serde_json::{Map, Value, json};

/// A line longer than this is a broken or hostile peer: the longest honest message is a read of
/// `max_buffer_frames` FD frames, well under it.
const MAX_LINE: u64 = 4 * 1024 * 1024;

/// Writes one message.
pub fn send(stream: &mut UnixStream, message: &Value) -> io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    stream.flush()
}

/// Reads one message; `None` at end of stream. A line that is not a JSON object is an error.
pub fn receive(reader: &mut BufReader<UnixStream>) -> io::Result<Option<Map<String, Value>>> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(MAX_LINE)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if !line.ends_with(b"\n") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "message too long or cut short",
        ));
    }
    match serde_json::from_slice::<Value>(&line) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a message is not a JSON object",
        )),
    }
}

/// The process and user at the other end of `stream`, as the kernel recorded them at connect.
pub fn peer(stream: &UnixStream) -> io::Result<(i32, u32)> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    Ok((cred.pid.as_raw_nonzero().get(), cred.uid.as_raw()))
}

/// This process's effective uid.
pub fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Compares two keys in time independent of where they differ.
pub fn same_key(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A refusal on the wire.
pub fn refusal(error_type: &str, summary: impl Into<String>) -> Value {
    json!({"ok": false, "error_type": error_type, "summary": summary.into()})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_equal_only_when_every_byte_agrees() {
        assert!(same_key("abcd", "abcd"));
        assert!(!same_key("abcd", "abce"));
        assert!(!same_key("abcd", "abc"));
    }

    #[test]
    fn the_kernel_names_our_own_uid_at_the_other_end_of_a_socket_pair() {
        let (a, _b) = UnixStream::pair().expect("pair");
        let (pid, uid) = peer(&a).expect("peer credentials");
        assert_eq!(uid, own_uid());
        assert_eq!(u32::try_from(pid).ok(), Some(std::process::id()));
    }

    #[test]
    fn a_line_that_is_not_an_object_is_refused() {
        let (a, mut b) = UnixStream::pair().expect("pair");
        b.write_all(b"[1,2]\n").expect("write");
        let mut reader = BufReader::new(a);
        assert!(receive(&mut reader).is_err());
    }
}
