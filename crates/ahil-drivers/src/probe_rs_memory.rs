//! RTT on a probe-rs target: the target's memory as an [`rtt::Memory`], reached through a
//! long-lived `probe-rs-worker` child (the `memory` request) that attached once without a reset and
//! then serves one read or write per stdin line while the core runs.
//!
//! Why a memory and not probe-rs's own `probe_rs::rtt`: the control block, its counts, sizes and
//! offsets are then parsed and checked by [`crate::rtt`], the one set of checks every backend's
//! target-supplied pointers pass (the emulated board's too), and the worker stays a dumb proxy
//! that can be killed at any point. What probe-rs adds is the chip's memory map: a read goes only
//! to the chip's RAM or flash (a hostile descriptor aimed at a peripheral would otherwise read its
//! registers, and some clear on read), a write only to the RAM region that holds the control block.
//!
//! The protocol, one JSON object per line: the worker's first answer line (an [`Answer`] with `ok`)
//! says whether it attached and gives the regions; then each [`MemoryOp`] on stdin gets one
//! [`MemoryReply`] on stdout. Lines that are neither (probe-rs's fake probe prints every access) are
//! skipped. Closing stdin ends the worker; the process group is killed on drop in any case.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde::{Deserialize, Serialize};

use crate::probe_rs::{Answer, Request, TargetRef, WORKER_COMMAND};
use crate::process::{self, GroupKeeper};
use crate::rtt::{self, Memory, RttError};

/// The most one [`MemoryOp`] moves (the largest ring [`rtt`] accepts).
pub const OP_MAX: u32 = rtt::MAX_RING_BYTES;

/// One access, as the gate asks the worker for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MemoryOp {
    Read { address: u32, length: u32 },
    Write { address: u32, hex: String },
}

/// The worker's answer to one [`MemoryOp`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MemoryReply {
    Bytes(String),
    Written(u32),
    Failed(String),
}

/// A range of target addresses, `[start, end)`.
pub type Range = (u64, u64);

/// The chip's memory as the worker reports it at attach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regions {
    pub ram: Vec<Range>,
    pub nvm: Vec<Range>,
}

fn within(ranges: &[Range], address: u32, len: usize) -> Option<Range> {
    let start = u64::from(address);
    let end = start + len as u64;
    ranges
        .iter()
        .copied()
        .find(|(from, to)| *from <= start && end <= *to)
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

/// The bytes of `text`, two hex digits each.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What the worker's side needs of a target's memory (probe-rs's core; a vector in tests).
pub trait TargetMemory {
    fn read(&mut self, address: u64, buf: &mut [u8]) -> Result<(), String>;
    fn write(&mut self, address: u64, data: &[u8]) -> Result<(), String>;
}

/// The worker's loop: one reply per request line on `input` until it ends.
pub fn serve(memory: &mut dyn TargetMemory, input: impl BufRead, mut emit: impl FnMut(&str)) {
    for line in input.lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<MemoryOp>(&line) {
            Err(error) => MemoryReply::Failed(format!("the request is not valid: {error}")),
            Ok(MemoryOp::Read { length, .. }) if length > OP_MAX => {
                MemoryReply::Failed(format!("a read is at most {OP_MAX} bytes"))
            }
            Ok(MemoryOp::Read { address, length }) => {
                let mut bytes = vec![0u8; length as usize];
                match memory.read(u64::from(address), &mut bytes) {
                    Ok(()) => MemoryReply::Bytes(to_hex(&bytes)),
                    Err(error) => MemoryReply::Failed(error),
                }
            }
            Ok(MemoryOp::Write { address, hex }) => match from_hex(&hex) {
                None => MemoryReply::Failed("the bytes are not hex".into()),
                Some(bytes) if bytes.len() > OP_MAX as usize => {
                    MemoryReply::Failed(format!("a write is at most {OP_MAX} bytes"))
                }
                Some(bytes) => match memory.write(u64::from(address), &bytes) {
                    Ok(()) => MemoryReply::Written(
                        u32::try_from(bytes.len()).expect("at most OP_MAX bytes"),
                    ),
                    Err(error) => MemoryReply::Failed(error),
                },
            },
        };
        emit(&serde_json::to_string(&reply).expect("a reply serializes"));
    }
}

/// The target's memory through a running worker.
pub struct ProbeRsMemory {
    child: Child,
    pgid: Pid,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    keeper: Option<GroupKeeper>,
    regions: Regions,
    writable: Option<Range>,
    limit: Duration,
}

fn unavailable(address: u32, detail: impl Into<String>) -> RttError {
    RttError::Memory {
        address: u64::from(address),
        detail: detail.into(),
    }
}

impl ProbeRsMemory {
    /// Start the worker (`executable`, this binary) for `target` and wait up to `attach` for it to
    /// attach; each access then takes at most `limit`.
    pub fn open(
        executable: &Path,
        target: &TargetRef,
        attach: Duration,
        limit: Duration,
    ) -> Result<Self, RttError> {
        let request = serde_json::to_string(&Request::Memory {
            target: target.clone(),
        })
        .map_err(|error| unavailable(0, error.to_string()))?;
        let mut command = process::piped_tool(executable, Stdio::piped())
            .map_err(|error| unavailable(0, format!("the probe-rs worker: {error}")))?;
        command.args([WORKER_COMMAND, "--request", &request]);
        // Our own binary: the environment the server runs with decides its configuration.
        process::isolate_own_binary(&mut command);
        let mut child = process::spawn_retrying_busy_text(&mut command).map_err(|error| {
            unavailable(0, format!("the probe-rs worker did not start: {error}"))
        })?;
        let pgid = process::group_of(&mut child)
            .map_err(|_| unavailable(0, "the worker's pid is out of range"))?;
        let keeper = GroupKeeper::spawn(pgid.as_raw_nonzero().get(), "ahil-probe-rs-keeper");
        let (sender, lines) = std::sync::mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if line.trim_start().starts_with('{') && sender.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        if let Some(stderr) = child.stderr.take() {
            // Drained so a chatty library never blocks on a full pipe.
            std::thread::spawn(move || std::io::copy(&mut { stderr }, &mut std::io::sink()));
        }
        let mut memory = Self {
            stdin: child.stdin.take(),
            child,
            pgid,
            lines,
            keeper: None,
            regions: Regions::default(),
            writable: None,
            limit,
        };
        memory.keeper = Some(keeper.map_err(|error| unavailable(0, error.to_string()))?);
        memory.regions = memory.attached(attach)?;
        Ok(memory)
    }

    /// What an RTT link reopens the worker with after a failure (the probe unplugged and back).
    pub fn opener(
        executable: PathBuf,
        target: TargetRef,
        attach: Duration,
        limit: Duration,
    ) -> rtt::link::Opener {
        Box::new(move || {
            Self::open(&executable, &target, attach, limit)
                .map(|memory| Box::new(memory) as Box<dyn Memory + Send>)
        })
    }

    /// The chip's regions as the worker reported them.
    pub fn regions(&self) -> &Regions {
        &self.regions
    }

    fn next_line(&self, deadline: Instant) -> Result<String, RttError> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines.recv_timeout(left).map_err(|error| match error {
            RecvTimeoutError::Timeout => unavailable(
                0,
                format!(
                    "the probe-rs worker did not answer within {} s",
                    self.limit.as_secs_f64()
                ),
            ),
            RecvTimeoutError::Disconnected => unavailable(0, "the probe-rs worker ended"),
        })
    }

    /// The worker's answer to the attach: the regions, or its refusal in probe-rs's words.
    fn attached(&self, limit: Duration) -> Result<Regions, RttError> {
        let deadline = Instant::now() + limit;
        loop {
            let line = self.next_line(deadline)?;
            let Ok(answer) = serde_json::from_str::<Answer>(&line) else {
                continue;
            };
            if !answer.ok {
                return Err(unavailable(
                    0,
                    format!(
                        "probe-rs did not attach ({}): {}",
                        answer.class.as_deref().unwrap_or("unknown"),
                        answer.message
                    ),
                ));
            }
            let regions = answer
                .data
                .get("regions")
                .cloned()
                .and_then(|value| serde_json::from_value::<Regions>(value).ok())
                .ok_or_else(|| unavailable(0, "the worker gave no memory map"))?;
            return Ok(regions);
        }
    }

    fn exchange(&mut self, op: &MemoryOp, address: u32) -> Result<MemoryReply, RttError> {
        let line = serde_json::to_string(op).expect("an op serializes");
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| unavailable(address, "the probe-rs worker was closed"))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|error| unavailable(address, format!("the probe-rs worker: {error}")))?;
        let deadline = Instant::now() + self.limit;
        loop {
            let line = self.next_line(deadline)?;
            if let Ok(reply) = serde_json::from_str::<MemoryReply>(&line) {
                return match reply {
                    MemoryReply::Failed(detail) => Err(unavailable(address, detail)),
                    reply => Ok(reply),
                };
            }
        }
    }
}

impl Memory for ProbeRsMemory {
    fn confine_writes_to(&mut self, address: u32) -> Result<(), RttError> {
        let region = within(&self.regions.ram, address, 1).ok_or_else(|| {
            RttError::Invalid(format!(
                "the control block at {address:#010x} is in none of the chip's RAM regions"
            ))
        })?;
        self.writable = Some(region);
        Ok(())
    }

    fn read(&mut self, address: u32, buf: &mut [u8]) -> Result<(), RttError> {
        let readable = [self.regions.ram.as_slice(), self.regions.nvm.as_slice()].concat();
        if within(&readable, address, buf.len()).is_none() {
            return Err(unavailable(
                address,
                format!(
                    "a read of {} bytes there is refused: RTT reads stay in the chip's RAM and flash",
                    buf.len()
                ),
            ));
        }
        let length = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let reply = self.exchange(&MemoryOp::Read { address, length }, address)?;
        let bytes = match reply {
            MemoryReply::Bytes(hex) => from_hex(&hex),
            _ => None,
        }
        .filter(|bytes| bytes.len() == buf.len())
        .ok_or_else(|| unavailable(address, "the worker's read answer does not fit"))?;
        buf.copy_from_slice(&bytes);
        Ok(())
    }

    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), RttError> {
        if self
            .writable
            .is_none_or(|region| within(&[region], address, data.len()).is_none())
        {
            return Err(unavailable(
                address,
                "a write there is refused: RTT writes stay in the control block's RAM",
            ));
        }
        match self.exchange(
            &MemoryOp::Write {
                address,
                hex: to_hex(data),
            },
            address,
        )? {
            MemoryReply::Written(n) if n as usize == data.len() => Ok(()),
            _ => Err(unavailable(address, "the worker wrote less than asked")),
        }
    }
}

impl Drop for ProbeRsMemory {
    fn drop(&mut self) {
        // EOF on stdin detaches the worker; the group is killed whether or not it listened.
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = kill_process_group(self.pgid, Signal::KILL);
        // The keeper goes before the leader is reaped, so it never kills a recycled group id.
        self.keeper.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
#[path = "probe_rs_memory_tests.rs"]
mod tests;
