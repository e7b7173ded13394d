//! Shared builders for the artifact tests: a private world per test and images of each format.
#![allow(dead_code, reason = "each test file uses part of the support module")]

use std::fs;
use std::path::{Path, PathBuf};

use ahil_config::Config;
use ahil_gate::artifacts::{ArtifactPolicy, Stager};

/// A workspace with a `build` root, a directory outside it, and a private staging parent.
pub struct World {
    _root: tempfile::TempDir,
    pub workspace: PathBuf,
    pub outside: PathBuf,
    pub stager: Stager,
    pub config: Config,
}

pub const MAX_MB: u64 = 1;

impl World {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let workspace = root.path().join("ws");
        let outside = root.path().join("outside");
        let staging = root.path().join("staging");
        for dir in [&workspace, &outside, &staging] {
            fs::create_dir_all(dir).expect("world dirs");
        }
        fs::create_dir_all(workspace.join("build/a/b")).expect("build dirs");
        fs::write(outside.join("secret.elf"), elf32(40, 256)).expect("outside secret");
        let mut config = Config {
            workspace_root: workspace.clone(),
            ..Config::default()
        };
        config.artifacts.allow_upload = true;
        config.artifacts.max_upload_size_mb = MAX_MB;
        let stager = Stager::new_in(&staging).expect("stager");
        Self {
            _root: root,
            workspace,
            outside,
            stager,
            config,
        }
    }

    pub fn policy(&self) -> ArtifactPolicy {
        ArtifactPolicy::from_config(&self.config)
    }

    /// Writes `bytes` at `relative` inside the workspace, creating parents.
    pub fn put(&self, relative: &str, bytes: &[u8]) -> PathBuf {
        let path = self.workspace.join(relative);
        fs::create_dir_all(path.parent().expect("a file has a parent")).expect("parents");
        fs::write(&path, bytes).expect("write image");
        path
    }

    pub fn ws(&self, relative: &str) -> PathBuf {
        self.workspace.join(relative)
    }

    /// Files left in the staging directory (there must be none after a refusal or a drop).
    pub fn staged_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.stager.root().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).expect("staging is readable") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.push(path);
                }
            }
        }
        out
    }
}

pub fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// A minimal ELF32 little-endian executable for `machine`, one PT_LOAD covering the rest of a file
/// of `size` bytes (at least 84).
pub fn elf32(machine: u16, size: usize) -> Vec<u8> {
    elf(false, false, machine, size)
}

/// An ELF of either class and byte order with one loadable segment and no sections.
pub fn elf(wide: bool, big_endian: bool, machine: u16, size: usize) -> Vec<u8> {
    let (eh, ph) = if wide { (64_usize, 56_usize) } else { (52, 32) };
    let size = size.max(eh + ph);
    let mut out = Vec::with_capacity(size);
    let put16 = |out: &mut Vec<u8>, v: u16| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    };
    let put32 = |out: &mut Vec<u8>, v: u32| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    };
    let put64 = |out: &mut Vec<u8>, v: u64| {
        out.extend_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    };
    let word = |out: &mut Vec<u8>, v: u64| {
        if wide {
            put64(out, v);
        } else {
            put32(out, u32::try_from(v).expect("an ELF32 word"));
        }
    };
    out.extend_from_slice(b"\x7fELF");
    out.extend_from_slice(&[
        if wide { 2 } else { 1 },
        if big_endian { 2 } else { 1 },
        1,
        0,
    ]);
    out.extend_from_slice(&[0; 8]);
    put16(&mut out, 2); // ET_EXEC
    put16(&mut out, machine);
    put32(&mut out, 1);
    word(&mut out, 0x0800_0000); // entry
    word(&mut out, eh as u64); // phoff
    word(&mut out, 0); // shoff
    put32(&mut out, 0); // flags
    put16(&mut out, u16::try_from(eh).expect("small"));
    put16(&mut out, u16::try_from(ph).expect("small"));
    put16(&mut out, 1);
    put16(&mut out, if wide { 64 } else { 40 });
    put16(&mut out, 0);
    put16(&mut out, 0);
    assert_eq!(out.len(), eh);
    let offset = (eh + ph) as u64;
    let filesz = (size - eh - ph) as u64;
    put32(&mut out, 1); // PT_LOAD
    if wide {
        put32(&mut out, 5);
        put64(&mut out, offset);
        put64(&mut out, 0x0800_0000);
        put64(&mut out, 0x0800_0000);
        put64(&mut out, filesz);
        put64(&mut out, filesz);
        put64(&mut out, 4);
    } else {
        for v in [offset, 0x0800_0000, 0x0800_0000, filesz, filesz, 5, 4] {
            put32(&mut out, u32::try_from(v).expect("an ELF32 field"));
        }
    }
    assert_eq!(out.len(), eh + ph);
    out.extend((0..filesz).map(|i| u8::try_from(i % 251).expect("byte")));
    out
}

/// Intel HEX of `data` in 16-byte records from address 0, with an end record.
pub fn ihex(data: &[u8]) -> Vec<u8> {
    let mut text = String::new();
    for (index, chunk) in data.chunks(16).enumerate() {
        let address = u16::try_from(index * 16).expect("under 64 KiB");
        let mut record = vec![u8::try_from(chunk.len()).expect("16 at most")];
        record.extend_from_slice(&address.to_be_bytes());
        record.push(0);
        record.extend_from_slice(chunk);
        let sum = record.iter().fold(0_u8, |s, b| s.wrapping_add(*b));
        record.push(sum.wrapping_neg());
        text.push(':');
        text.push_str(&ahil_gate::artifacts::hex(&record).to_ascii_uppercase());
        text.push('\n');
    }
    text.push_str(":00000001FF\n");
    text.into_bytes()
}
