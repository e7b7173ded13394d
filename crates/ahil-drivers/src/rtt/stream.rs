//! An RTT [`Source`] that is a debug server's TCP stream per channel (OpenOCD's `rtt server start
//! <port> <channel>`): the server reads up channel N's ring and sends its bytes on the port, and
//! writes what it receives there into down channel N. The control block is parsed by the server,
//! not by [`super::ControlBlock`]; what reaches us is bytes, taken into the same capped ring.
//!
//! Every port is a loopback one the gate reserved and checked (the server's listeners are all on
//! 127.0.0.1, as for its gdb port); this module only ever connects to `127.0.0.1`.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use super::RttError;
use super::link::Source;

/// One connect's limit (the server is on this machine).
const CONNECT: Duration = Duration::from_millis(500);

/// The channel index and its loopback port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelPort {
    pub index: u32,
    pub port: u16,
}

struct Channel {
    at: ChannelPort,
    stream: Option<TcpStream>,
}

impl Channel {
    fn address(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.at.port))
    }

    fn failed(&self, detail: impl std::fmt::Display) -> RttError {
        RttError::Memory {
            address: 0,
            detail: format!(
                "the debug server's RTT stream for channel {} (127.0.0.1:{}) {detail}",
                self.at.index, self.at.port
            ),
        }
    }

    /// The stream ended or failed: it is dropped, so the next call connects again.
    fn lost(&mut self, detail: impl std::fmt::Display) -> RttError {
        self.stream = None;
        self.failed(detail)
    }

    /// The stream, connected again if the last one ended (the server takes a new client).
    fn stream(&mut self) -> Result<&mut TcpStream, RttError> {
        if self.stream.is_none() {
            let stream = TcpStream::connect_timeout(&self.address(), CONNECT)
                .map_err(|error| self.failed(format_args!("could not be reached: {error}")))?;
            stream
                .set_nonblocking(true)
                .map_err(|error| self.failed(error))?;
            let _ = stream.set_nodelay(true);
            self.stream = Some(stream);
        }
        Ok(self.stream.as_mut().expect("connected just above"))
    }
}

/// The streams of one debug server, and the server itself (held so it lives as long as the link;
/// dropping it ends the server's process group).
pub struct StreamSource {
    channels: Vec<Channel>,
    server: Option<Box<dyn Send>>,
}

impl StreamSource {
    /// Connect to every channel's port now, so a server that does not serve one is refused at the
    /// session's start, not at its first read.
    pub fn connect(ports: &[ChannelPort], server: Box<dyn Send>) -> Result<Self, RttError> {
        let mut source = Self {
            channels: ports
                .iter()
                .map(|at| Channel {
                    at: *at,
                    stream: None,
                })
                .collect(),
            server: Some(server),
        };
        for channel in &mut source.channels {
            channel.stream()?;
        }
        Ok(source)
    }

    fn channel(&mut self, index: u32) -> Result<&mut Channel, RttError> {
        self.channels
            .iter_mut()
            .find(|c| c.at.index == index)
            .ok_or_else(|| RttError::Invalid(format!("no RTT stream serves channel {index}")))
    }
}

impl Source for StreamSource {
    fn read_up(&mut self, index: u32, max: usize) -> Result<Vec<u8>, RttError> {
        let channel = self.channel(index)?;
        let mut bytes = Vec::new();
        let mut buffer = [0u8; 4096];
        while bytes.len() < max {
            let want = buffer.len().min(max - bytes.len());
            match channel.stream()?.read(&mut buffer[..want]) {
                Ok(0) if bytes.is_empty() => return Err(channel.lost("was closed by the server")),
                Ok(0) => {
                    channel.stream = None;
                    break;
                }
                Ok(n) => bytes.extend_from_slice(&buffer[..n]),
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error) => return Err(channel.lost(error)),
            }
        }
        Ok(bytes)
    }

    fn write_down(&mut self, index: u32, data: &[u8]) -> Result<usize, RttError> {
        let channel = self.channel(index)?;
        let mut sent = 0;
        while sent < data.len() {
            match channel.stream()?.write(&data[sent..]) {
                Ok(0) => break,
                Ok(n) => sent += n,
                // The socket's buffer is full: what went in is what the answer says.
                Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error) => return Err(channel.lost(error)),
            }
        }
        Ok(sent)
    }

    fn close(&mut self) {
        for channel in &mut self.channels {
            channel.stream = None;
        }
        self.server = None;
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
