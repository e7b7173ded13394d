//! Shared fixtures for the simulated-bench tests: a board in its own temp dir, the driver for it, and
//! process-group checks.

#![allow(dead_code)]

use std::fs;
use std::path::Path;
use std::time::Duration;

use ahil_drivers::probe::Budget;
use ahil_drivers::qemu::QemuProbe;
use ahil_sim::{Board, BoardConfig, Uart, firmware};

/// Where `scripts/setup-debian.sh` installs gdb-multiarch (Debian's package).
pub const GDB: &str = "/usr/bin/gdb-multiarch";
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

    /// A driver whose gdb is this bench's own link to gdb-multiarch, so the gdbs it starts are told
    /// apart from those of other tests running at the same moment (by argv[0], see [`processes_started_as`]).
    pub fn probe(&self) -> QemuProbe {
        QemuProbe::new(self.board.paths().dir(), self.gdb(), self.machine)
    }

    /// This bench's gdb: a link in its own temp dir to the installed gdb-multiarch.
    pub fn gdb(&self) -> std::path::PathBuf {
        let link = self.dir.path().join("gdb-multiarch");
        if !link.exists() {
            assert!(
                Path::new(GDB).is_file(),
                "{GDB} is missing: run scripts/setup-debian.sh"
            );
            std::os::unix::fs::symlink(GDB, &link).expect("link to gdb-multiarch");
        }
        link
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

/// Live processes whose argv[0] is exactly `program`.
pub fn processes_started_as(program: &Path) -> Vec<i32> {
    let wanted = program.as_os_str().as_encoded_bytes();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            argv0 == wanted && !zombie
        })
        .collect()
}
