//! A read-only view of one bench for `agentic-hil watch`: who holds which device, the lease record
//! and any incident on it, the last audited call, and the open COM session logs.
//!
//! Nothing here takes a lock, not even for a probe: a watcher that polls twice a second must never be
//! the reason an agent's flash gets `device_busy`. Whether a lock file is held is read from the
//! kernel's lock table (`/proc/locks`), which lists every flock by device and inode; records and
//! reports are read as the atomic renames left them.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::path::Path;

use ahil_config::{Environment, LoadedConfig};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::actions::lease::configured_devices;
use crate::audit::{Audit, safe};
use crate::ownership::coordination::{Coordinator, Dirs};
use crate::ownership::{KernelLocks, LockRoot};

/// One configured device and whoever holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    pub resource: String,
    /// `None` when the kernel's lock table cannot be read.
    pub held: Option<bool>,
    /// `frontend pid N` of the holder record (only while held).
    pub holder: Option<String>,
    pub label: Option<String>,
    pub since: Option<String>,
}

/// This configuration's lease record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Lease {
    pub owner_active: Option<bool>,
    /// The record's `state` (`active`, `released`, `cleanup_required`, `quarantined`, …).
    pub state: Option<String>,
    pub owner: Option<String>,
    pub incident: Option<Incident>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    pub state: String,
    pub quarantine_id: Option<String>,
    pub reasons: Vec<String>,
}

/// An audited call, as its report recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    pub finished_at: String,
    pub tool: String,
    /// `ok`, or the refusal's `error_type`.
    pub verdict: String,
    pub summary: String,
}

/// The end of an open COM session log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub port_id: String,
    /// Workspace-relative.
    pub log: String,
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BenchView {
    pub workspace: String,
    /// Why there is nothing else to show (no configuration, …).
    pub problem: Option<String>,
    pub holds: Vec<Hold>,
    pub lease: Lease,
    /// Newest first: the last report, and the last failure when it is another call.
    pub actions: Vec<Action>,
    pub sessions: Vec<Session>,
    /// Each labgrid place as `lease-status` words it (`bench-1: ours, held for: run`); none without
    /// a `labgrid` section.
    pub places: Vec<String>,
}

/// How many lines of each session log to keep.
pub const SESSION_TAIL_LINES: usize = 6;
/// How much of the end of a log to read for them.
const TAIL_BYTES: u64 = 16 * 1024;

pub fn observe(workspace: &Path, env: &Environment) -> BenchView {
    let shown = workspace.file_name().map_or_else(
        || workspace.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let loaded = match ahil_config::load_authoritative(workspace, env) {
        Ok(loaded) => loaded,
        Err(err) => {
            return BenchView {
                workspace: shown,
                problem: Some(format!("{}: {}", err.error_type(), err.summary())),
                ..BenchView::default()
            };
        }
    };
    let table = KernelLocks::read();
    let locks = LockRoot::for_home(&env.account_home());
    // One row per device, under the name people know it by, held when any of its keys is (a
    // neighbour holding the node a link leads to holds this port too).
    let mut holds: Vec<Hold> = configured_devices(&loaded)
        .into_iter()
        .map(|(shown, keys)| {
            keys.into_iter()
                .map(|key| hold(&locks, &table, key))
                .find(|h| h.held == Some(true))
                .map_or_else(
                    || hold(&locks, &table, shown.clone()),
                    |h| Hold {
                        resource: shown.clone(),
                        ..h
                    },
                )
        })
        .collect();
    // Entries sharing a resource_id are one unit: one row, held if either is.
    holds.sort_by(|a, b| {
        (&a.resource, a.held != Some(true)).cmp(&(&b.resource, b.held != Some(true)))
    });
    holds.dedup_by(|later, first| later.resource == first.resource);
    let audit = Audit::for_config(&loaded);
    // Asked at each redraw, bounded as a claim is; without a `labgrid` section nothing connects.
    let places = crate::ownership::places::Places::for_config(&loaded.config)
        .map(|places| {
            places.status()["places"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["summary"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    BenchView {
        places,
        workspace: shown,
        problem: None,
        lease: lease(&loaded, &table),
        actions: actions(&audit),
        sessions: sessions(&loaded, &audit, &holds),
        holds,
    }
}

fn read_json(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn hold(locks: &LockRoot, table: &KernelLocks, resource: String) -> Hold {
    let held = table.holds(&locks.lock_path(&resource));
    let record = if held == Some(false) {
        None
    } else {
        read_json(&locks.holder_path(&resource))
            .filter(|r| r.get("state").and_then(Value::as_str) == Some("held"))
    };
    let owner = record.as_ref().and_then(|r| r.get("owner"));
    Hold {
        holder: owner.map(|o| {
            format!(
                "{} pid {}",
                o.get("frontend").and_then(Value::as_str).unwrap_or("?"),
                o.get("pid").and_then(Value::as_u64).unwrap_or(0)
            )
        }),
        label: owner.and_then(|o| text(o, "label")),
        since: record.as_ref().and_then(|r| text(r, "acquired_at")),
        resource,
        held,
    }
}

fn lease(loaded: &LoadedConfig, table: &KernelLocks) -> Lease {
    // Building a coordinator touches no file; it only names this configuration's records.
    let coordinator = Coordinator::new(loaded, "watch");
    let resource = coordinator.project_resource();
    let stem = ahil_config::digest::sha256_hex(resource.as_bytes());
    let root = loaded.config.state_root.join("coordination");
    let owner_active = table.holds(&root.join("locks").join(format!("{stem}.lock")));
    let Ok(Some(record)) = Dirs::under(&loaded.config.state_root).read_record(resource) else {
        return Lease {
            owner_active,
            ..Lease::default()
        };
    };
    let state = text(&record, "state");
    let incident = state
        .as_deref()
        .filter(|s| matches!(*s, "cleanup_required" | "quarantined" | "recovery_pending"))
        .map(|s| {
            let mut reasons: Vec<String> = record
                .get("cleanup_reasons")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if let Some(reason) = text(&record, "reason")
                && !reasons.contains(&reason)
            {
                reasons.push(reason);
            }
            Incident {
                state: s.to_owned(),
                quarantine_id: text(&record, "quarantine_id"),
                reasons,
            }
        });
    let owner = (owner_active == Some(true)).then(|| {
        format!(
            "{} pid {}",
            text(&record, "frontend").unwrap_or_else(|| "?".into()),
            record.get("owner_pid").and_then(Value::as_u64).unwrap_or(0)
        )
    });
    Lease {
        owner_active,
        state,
        owner,
        incident,
    }
}

fn action(report: &Value) -> Option<Action> {
    let tool = text(report, "tool")?;
    let ok = crate::envelope::overall_success_value(report);
    Some(Action {
        finished_at: text(report, "finished_at").unwrap_or_default(),
        verdict: if ok {
            "ok".to_owned()
        } else {
            text(report, "error_type").unwrap_or_else(|| "failed".into())
        },
        summary: text(report, "summary").unwrap_or_default(),
        tool,
    })
}

fn actions(audit: &Audit) -> Vec<Action> {
    let state = read_json(
        &audit
            .project_dir()
            .join("reports")
            .join("report-state.json"),
    );
    let Some(state) = state else {
        return Vec::new();
    };
    let mut out: Vec<Action> = ["last_report", "last_failure"]
        .iter()
        .filter_map(|key| state.get(*key).and_then(action))
        .collect();
    out.dedup();
    out.sort_by(|a, b| b.finished_at.cmp(&a.finished_at));
    out
}

/// The last `TAIL_BYTES` of the log `name` in the logs folder `dir`, from its first whole line.
fn tail(dir: &OwnedFd, name: &OsStr) -> Option<String> {
    // The log mirror lies in the agent's workspace: a FIFO put there would hold `watch` forever
    // and a link would show another file's tail, so only a regular file is read, opened
    // non-blocking without following a link, relative to the folder listed.
    let mut file = safe::open_read_at(dir, name)?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Some(if start > 0 {
        text.split_once('\n')
            .map_or(String::new(), |(_, rest)| rest.to_owned())
    } else {
        text
    })
}

/// A session log as a person reads it: received and sent text joined across reads and cut at line
/// ends (`rx boot ok`, `tx ping`), events as `-- start`.
fn session_lines(log: &str) -> Vec<String> {
    let mut lines = Vec::new();
    // The direction and text of a line not yet ended.
    let mut open: Option<(String, String)> = None;
    let flush = |open: &mut Option<(String, String)>, lines: &mut Vec<String>| {
        if let Some((direction, text)) = open.take()
            && !text.trim().is_empty()
        {
            lines.push(format!("{direction} {}", text.trim_end()));
        }
    };
    for raw in log.lines() {
        let Ok(event) = serde_json::from_str::<Value>(raw) else {
            continue;
        };
        if let Some(direction) = event.get("direction").and_then(Value::as_str) {
            if open.as_ref().is_some_and(|(d, _)| d != direction) {
                flush(&mut open, &mut lines);
            }
            let data = event.get("text").and_then(Value::as_str).unwrap_or("");
            for c in data.chars() {
                let (_, text) = open.get_or_insert_with(|| (direction.to_owned(), String::new()));
                match c {
                    '\n' => flush(&mut open, &mut lines),
                    c if c.is_control() => {}
                    c => text.push(c),
                }
            }
        } else if let Some(name) = text(&event, "event") {
            flush(&mut open, &mut lines);
            lines.push(format!("-- {name}"));
        }
    }
    flush(&mut open, &mut lines);
    lines
}

/// The logs folder `logs_rel` of `workspace`, opened, and the names of the COM session logs in it
/// newest first; `None` when it is missing or is (or lies under) a link.
fn session_logs(workspace: &Path, logs_rel: &str) -> Option<(OwnedFd, Vec<String>)> {
    // The agent owns the workspace: a logs folder (or a folder above it) made a link to a folder
    // outside would have `watch` list and tail files there, so the folder is opened from the
    // workspace without following a link, and listed and read through that descriptor only.
    let dir = safe::open_dir(workspace, &workspace.join(logs_rel)).ok()??;
    let mut names: Vec<String> = safe::names(&dir)
        .ok()?
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .filter(|n| n.starts_with("com-") && Path::new(n).extension().is_some_and(|e| e == "jsonl"))
        .collect();
    // `com-<stamp>-<port>.jsonl`: newest first by name.
    names.sort_unstable_by(|a, b| b.cmp(a));
    Some((dir, names))
}

fn sessions(loaded: &LoadedConfig, audit: &Audit, holds: &[Hold]) -> Vec<Session> {
    let logs_rel = audit.logs_rel().to_owned();
    let Some((dir, names)) = session_logs(audit.workspace(), &logs_rel) else {
        return Vec::new();
    };
    let held: HashSet<&str> = holds
        .iter()
        .filter(|h| h.held != Some(false))
        .map(|h| h.resource.as_str())
        .collect();
    let mut out = Vec::new();
    for (port_id, port) in &loaded.config.com_ports {
        if !held.contains(port.lock_key(port_id).as_str()) {
            continue;
        }
        let suffix = format!("-{port_id}.jsonl");
        let Some(name) = names.iter().find(|n| n.ends_with(&suffix)) else {
            continue;
        };
        let Some(text) = tail(&dir, OsStr::new(name)) else {
            continue;
        };
        let lines = session_lines(&text);
        if lines.last().is_some_and(|l| l == "-- stop") {
            continue;
        }
        let start = lines.len().saturating_sub(SESSION_TAIL_LINES);
        out.push(Session {
            port_id: port_id.clone(),
            log: if logs_rel.is_empty() {
                name.clone()
            } else {
                format!("{logs_rel}/{name}")
            },
            lines: lines[start..].to_vec(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_that_is_a_fifo_or_a_link_shows_no_tail_and_never_blocks() {
        let dir = tempfile::tempdir().expect("temp dir");
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "rx private\n").expect("secret");
        let link = dir.path().join("com-9-uart.jsonl");
        std::os::unix::fs::symlink(&secret, &link).expect("link");
        let fifo = dir.path().join("com-8-uart.jsonl");
        let mode = rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR;
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, mode, 0)
            .expect("fifo");
        let logs = safe::open_dir(dir.path(), dir.path())
            .expect("open")
            .expect("the folder");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let link = tail(&logs, OsStr::new("com-9-uart.jsonl"));
            let _ = tx.send((link, tail(&logs, OsStr::new("com-8-uart.jsonl"))));
        });
        let Ok(tails) = rx.recv_timeout(std::time::Duration::from_secs(5)) else {
            drop(std::fs::OpenOptions::new().write(true).open(&fifo));
            panic!("the tail of a FIFO blocked");
        };
        assert_eq!(tails, (None, None));
        std::fs::write(dir.path().join("com-7-uart.jsonl"), "line\n").expect("log");
        let logs = safe::open_dir(dir.path(), dir.path())
            .expect("open")
            .expect("the folder");
        assert_eq!(
            tail(&logs, OsStr::new("com-7-uart.jsonl")).as_deref(),
            Some("line\n")
        );
    }

    #[test]
    fn a_logs_folder_that_is_a_link_out_of_the_workspace_shows_no_sessions() {
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("com-1-uart.jsonl"), "{}\n").expect("a log outside");
        let workspace = tempfile::tempdir().expect("workspace");
        let state = workspace.path().join(".agentic-hil");
        std::fs::create_dir(&state).expect("state folder");
        std::os::unix::fs::symlink(outside.path(), state.join("logs")).expect("link");
        assert!(session_logs(workspace.path(), ".agentic-hil/logs").is_none());
        // A link higher up the way is refused as well.
        std::fs::create_dir(outside.path().join("logs")).expect("logs outside");
        std::fs::write(outside.path().join("logs/com-2-uart.jsonl"), "{}\n").expect("a log");
        let higher = tempfile::tempdir().expect("workspace");
        std::os::unix::fs::symlink(outside.path(), higher.path().join(".agentic-hil"))
            .expect("link");
        assert!(session_logs(higher.path(), ".agentic-hil/logs").is_none());
        // The same folder really in the workspace is listed, newest first.
        std::fs::remove_file(state.join("logs")).expect("unlink");
        std::fs::create_dir(state.join("logs")).expect("logs");
        for name in ["com-1-uart.jsonl", "com-3-uart.jsonl", "notes.txt"] {
            std::fs::write(state.join("logs").join(name), "{}\n").expect("a log");
        }
        let (_, names) = session_logs(workspace.path(), ".agentic-hil/logs").expect("listed");
        assert_eq!(names, ["com-3-uart.jsonl", "com-1-uart.jsonl"]);
    }

    #[test]
    fn session_text_is_joined_across_reads_and_cut_at_line_ends() {
        let log = [
            r#"{"event": "start", "port_id": "uart"}"#,
            r#"{"direction": "rx", "text": "boot o"}"#,
            r#"{"direction": "rx", "text": "k\r\ntick 1\r\nti"}"#,
            r#"{"direction": "tx", "text": "ping\n"}"#,
            r#"{"event": "stop", "reason": "requested"}"#,
        ]
        .join("\n");
        assert_eq!(
            session_lines(&log),
            [
                "-- start",
                "rx boot ok",
                "rx tick 1",
                "rx ti",
                "tx ping",
                "-- stop"
            ]
        );
    }
}
