//! The floors of `scripts/bench.sh`: the same work as a gate's call without the gate, so each figure
//! can be read beside what the work itself costs on the same machine in the same run. Run as
//! `ahil-floor <mode>`; every mode answers one JSON-RPC line per line read on stdin.
//!
//! - `echo`: answers each request's id at once (start-up and a gate-only call);
//! - `audited <dir>`: first makes, under `<dir>`, the writes an audited call in a session makes, each
//!   once: the lease record before the act, the canonical log line and its chain digest, the
//!   trusted report state, the lease record after the act, the workspace log line and report view.
//!   Records are replaced atomically (temp, fsync, rename, directory fsync), lines appended and
//!   fsynced, the chain digest overwritten in place with one fdatasync (ADR 0028); the workspace
//!   line and view, derived from durable canonical copies (ADR 0011), the lease record of a clean
//!   end (ADR 0018) and that of a lease inside the session's (ADR 0030) are written without fsync:
//!   4 fsyncs;
//! - `pty <device>`: answers one line for every byte the pty device receives (a `com_read until`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::termios::{OptionalActions, tcgetattr, tcsetattr};
use serde_json::{Value, json};

/// Runs `args` (without the program name); answers the exit code.
pub fn main(args: &[String]) -> i32 {
    let result = match args.first().map(String::as_str) {
        Some("echo") => echo(|| Ok(())),
        Some("audited") => match args.get(1) {
            Some(dir) => audited(Path::new(dir)),
            None => usage(),
        },
        Some("pty") => match args.get(1) {
            Some(device) => pty(Path::new(device)),
            None => usage(),
        },
        _ => usage(),
    };
    match result {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("ahil-floor: {err}");
            1
        }
    }
}

fn usage() -> io::Result<()> {
    Err(io::Error::other(
        "usage: ahil-floor echo | audited <dir> | pty <device>",
    ))
}

/// One answer per request line, after `work`.
fn echo(mut work: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id") else {
            continue;
        };
        work()?;
        writeln!(out, "{}", json!({"jsonrpc": "2.0", "id": id, "result": {}}))?;
        out.flush()?;
    }
    Ok(())
}

fn audited(dir: &Path) -> io::Result<()> {
    let dirs: Vec<PathBuf> = [
        "coordination",
        "audit-logs",
        "reports",
        "ws/logs",
        "ws/reports",
    ]
    .iter()
    .map(|d| dir.join(d))
    .collect();
    for d in &dirs {
        fs::create_dir_all(d)?;
    }
    let record = vec![b'x'; 800];
    let report = vec![b'r'; 1800];
    let line = [vec![b'l'; 200], b"\n".to_vec()].concat();
    echo(|| {
        replace_view(&dirs[0].join("lease.json"), &record)?;
        append(&dirs[1].join("log.jsonl"), &line)?;
        overwrite(&dirs[1].join("log.jsonl.digest"), &record[..120])?;
        replace(&dirs[2].join("report-state.json"), &report)?;
        replace_view(&dirs[0].join("lease.json"), &record)?;
        append_view(&dirs[3].join("log.jsonl"), &line)?;
        replace_view(&dirs[4].join("last-report.json"), &report)
    })
}

fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_temp(path, bytes)?.sync_all()?;
    fs::rename(path.with_extension("tmp"), path)?;
    File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()
}

/// A small record overwritten in place and its data synced; created by [`replace`] the first time.
fn overwrite(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    match OpenOptions::new().write(true).open(path) {
        Ok(file) => {
            file.write_all_at(bytes, 0)?;
            file.sync_data()
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => replace(path, bytes),
        Err(err) => Err(err),
    }
}

/// A replace without fsync: a record whose loss a power loss may cause and recovery tolerates.
fn replace_view(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_temp(path, bytes)?;
    fs::rename(path.with_extension("tmp"), path)
}

/// Writes the temp file beside `path`; the caller syncs it (a record) or not (a view), then renames.
fn write_temp(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let temp = path.with_extension("tmp");
    let mut file = File::create(&temp)?;
    file.write_all(bytes)?;
    Ok(file)
}

fn append(path: &Path, bytes: &[u8]) -> io::Result<()> {
    append_view(path, bytes)?.sync_all()
}

fn append_view(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    Ok(file)
}

fn pty(device: &Path) -> io::Result<()> {
    let fd = rustix::fs::open(
        device,
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut termios = tcgetattr(&fd)?;
    termios.make_raw();
    tcsetattr(&fd, OptionalActions::Now, &termios)?;
    let mut port = File::from(fd);
    let mut out = io::stdout().lock();
    let mut byte = [0u8; 64];
    loop {
        let n = port.read(&mut byte)?;
        if n == 0 {
            return Ok(());
        }
        writeln!(
            out,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"bytes": n}})
        )?;
        out.flush()?;
    }
}
