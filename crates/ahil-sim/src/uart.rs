//! A small reader/writer for the board's UART pty, for tests and benches (the product reads the pty
//! through `ahil_drivers::serial`, as any other port). Non-blocking reads polled against a deadline, so a silent board
//! cannot hang a test, and raw mode so the line discipline neither echoes nor rewrites bytes.
//!
//! QEMU drops UART output while nobody has the pty open: open it before the board runs or resets.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::termios::{OptionalActions, tcgetattr, tcsetattr};

/// An open UART.
#[derive(Debug)]
pub struct Uart {
    file: File,
    seen: Vec<u8>,
}

impl Uart {
    /// Open the pty behind `path` (the state directory's `uart` link) in raw mode.
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut termios = tcgetattr(&fd)?;
        termios.make_raw();
        tcsetattr(&fd, OptionalActions::Now, &termios)?;
        Ok(Self {
            file: File::from(fd),
            seen: Vec::new(),
        })
    }

    /// Read until `pattern` has appeared in what was received since the last match, or `limit` passes.
    /// Returns the text up to and including the pattern; the rest stays for the next call.
    pub fn read_until(&mut self, pattern: &str, limit: Duration) -> io::Result<String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(at) = find(&self.seen, pattern.as_bytes()) {
                let rest = self.seen.split_off(at + pattern.len());
                let text = String::from_utf8_lossy(&self.seen).into_owned();
                self.seen = rest;
                return Ok(text);
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "`{pattern}` did not arrive within {limit:?}; received: {:?}",
                        String::from_utf8_lossy(&self.seen)
                    ),
                ));
            }
            self.fill()?;
        }
    }

    /// Whatever arrives within `window`, without waiting for a pattern.
    pub fn read_for(&mut self, window: Duration) -> io::Result<String> {
        let deadline = Instant::now() + window;
        while Instant::now() < deadline {
            self.fill()?;
        }
        Ok(String::from_utf8_lossy(&std::mem::take(&mut self.seen)).into_owned())
    }

    /// Send a line terminated by `\r`, as a terminal would.
    pub fn write_line(&mut self, line: &str) -> io::Result<()> {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\r');
        let mut sent = 0;
        while sent < bytes.len() {
            match self.file.write(&bytes[sent..]) {
                Ok(n) => sent += n,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(2));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    fn fill(&mut self) -> io::Result<()> {
        let mut buffer = [0_u8; 4096];
        match self.file.read(&mut buffer) {
            Ok(0) => thread::sleep(Duration::from_millis(2)),
            Ok(n) => self.seen.extend_from_slice(&buffer[..n]),
            // EIO: QEMU has closed the pty's other side (board stopped or restarting); nothing to read.
            Err(error)
                if error.kind() == io::ErrorKind::WouldBlock
                    || error.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) =>
            {
                thread::sleep(Duration::from_millis(2));
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
