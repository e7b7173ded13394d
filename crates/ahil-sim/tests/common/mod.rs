//! Shared fixtures for the simulated-bench tests: a board in its own temp dir, the driver for it, and
//! process-group checks.

#![allow(dead_code)]

use std::fs;
use std::path::Path;
use std::time::Duration;

use ahil_drivers::probe::Budget;
use ahil_drivers::qemu::QemuProbe;
use ahil_sim::{Board, BoardConfig, Uart, firmware};

pub const GDB: &str = "gdb-multiarch";
pub const UART_WAIT: Duration = Duration::from_secs(5);

/// A started (paused) board booting `image`, or blank.
pub struct Bench {
    pub dir: tempfile::TempDir,
    pub board: Board,
    pub machine: &'static str,
}

impl Bench {
    pub fn start(image: Option<(u8, &str)>) -> Self {
        Self::start_on(firmware::MACHINES[0], image)
    }

    /// A started (paused) `machine` booting its own build of `image`, or blank.
    pub fn start_on(machine: &'static str, image: Option<(u8, &str)>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = BoardConfig::new(dir.path().join("sim"));
        machine.clone_into(&mut config.machine);
        if let Some((version, extension)) = image {
            config = config.with_image(firmware::image_for(machine, version, extension));
        }
        let board = Board::start(config).unwrap_or_else(|error| {
            panic!("the board did not start: {error} (install with scripts/setup-debian.sh)")
        });
        Self {
            dir,
            board,
            machine,
        }
    }

    pub fn uart(&self) -> Uart {
        Uart::open(&self.board.paths().uart()).expect("the UART link opens")
    }

    pub fn probe(&self) -> QemuProbe {
        QemuProbe::new(self.board.paths().dir(), GDB, self.machine)
    }
}

pub fn budget() -> Budget {
    Budget::new(Duration::from_secs(30))
}

/// Pids of live (non-zombie) processes whose process group is `pgid`.
pub fn members_of_group(group: i32) -> Vec<i32> {
    let mut members = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return members;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"))
        else {
            continue;
        };
        // Fields after the command (which may hold spaces): state ppid pgrp ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(2).and_then(|p| p.parse().ok()) == Some(group)
        {
            members.push(pid);
        }
    }
    members
}

/// Live children of this test process running `name` (an orphan check for gdb).
pub fn children_named(name: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if head.contains(name)
            && fields.first() != Some(&"Z")
            && fields.get(1) == Some(&me.as_str())
            && let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok())
        {
            found.push(pid);
        }
    }
    found
}
