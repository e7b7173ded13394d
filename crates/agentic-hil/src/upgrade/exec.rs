//! Running a helper program (cargo, a candidate binary) with a deadline, so a hung one cannot hang
//! the upgrade with the installation lock held.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long output may keep arriving after the child was reaped: a grandchild (rustc under cargo)
/// can hold the pipes open, and we stop reading rather than wait for it.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub enum Ran {
    Finished(Output),
    TimedOut,
}

/// Runs `command` with stdin closed and its output captured, in a process group of its own; at
/// `deadline` the whole group is killed (cargo's rustc and build scripts with it).
pub fn run_with_deadline(command: &mut Command, deadline: Duration) -> std::io::Result<Ran> {
    ahil_gate::child::require_absolute(std::path::Path::new(command.get_program()))?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
    // Both pipes are drained on threads: a chatty child must not block on a full pipe while we wait.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() >= deadline {
            // The leader is not reaped yet, so its group id cannot have been given to anyone else.
            let _ = rustix::process::kill_process_group(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::KILL,
            );
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let grace_end = Instant::now() + DRAIN_GRACE;
    let collect = |rx: mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(grace_end.saturating_duration_since(Instant::now()))
            .unwrap_or_default()
    };
    let stdout = collect(stdout);
    let stderr = collect(stderr);
    Ok(match status {
        Some(status) => Ran::Finished(Output {
            status,
            stdout,
            stderr,
        }),
        None => Ran::TimedOut,
    })
}

/// A command for the pinned `program` with the child environment (nothing of the server's own
/// environment but HOME); what the program needs beyond that is added by the caller.
pub fn pinned(program: &std::path::Path) -> Command {
    let mut command = Command::new(program);
    ahil_gate::child::isolate(&mut command);
    command
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/bin/sh -c script`, killed at `deadline`.
    fn shell(script: &str, deadline: Duration) -> Ran {
        run_with_deadline(
            pinned(std::path::Path::new("/bin/sh")).args(["-c", script]),
            deadline,
        )
        .expect("sh starts")
    }

    fn finished(ran: Ran) -> Output {
        let Ran::Finished(out) = ran else {
            panic!("the shell exits by itself")
        };
        out
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_and_reported_timed_out() {
        let started = Instant::now();
        let ran = run_with_deadline(
            pinned(std::path::Path::new("/bin/sleep")).arg("30"),
            Duration::from_millis(200),
        )
        .expect("sh starts");
        assert!(matches!(ran, Ran::TimedOut));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_child_past_its_deadline_takes_its_grandchildren_with_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid_file = dir.path().join("grandchild.pid");
        let script = format!("sleep 30 & echo $! > '{}'; wait", pid_file.display());
        let ran = shell(&script, Duration::from_millis(500));
        assert!(matches!(ran, Ran::TimedOut));
        let pid = std::fs::read_to_string(&pid_file).expect("the grandchild's pid");
        let stat = format!("/proc/{}/stat", pid.trim());
        let deadline = Instant::now() + Duration::from_secs(5);
        let running = || {
            std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().next())
                    .is_some_and(|state| state != "Z" && state != "X")
            })
        };
        while running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!running(), "the grandchild outlived the deadline");
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_hold_the_answer() {
        let started = Instant::now();
        let out = finished(shell(
            "echo done; sleep 4 & exit 0",
            Duration::from_secs(20),
        ));
        assert!(out.status.success());
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "answered before the grandchild ended"
        );
    }

    #[test]
    fn output_and_status_are_captured() {
        let out = finished(shell(
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(20),
        ));
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }
}
