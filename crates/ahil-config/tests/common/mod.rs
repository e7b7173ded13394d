//! A private HOME, workspace and PATH for each test; nothing touches the real home.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use ahil_config::{Environment, canonical_config_path};

pub struct Bench {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub workspace: PathBuf,
    pub bin: PathBuf,
}

impl Bench {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        // Canonical, so paths compare equal to what the loader resolves.
        let root = dir.path().canonicalize().expect("canonical temp dir");
        let home = root.join("home");
        let workspace = root.join("ws");
        let bin = root.join("bin");
        for d in [&home, &workspace, &bin] {
            fs::create_dir_all(d).expect("mkdir");
        }
        Self {
            _dir: dir,
            root,
            home,
            workspace,
            bin,
        }
    }

    pub fn env(&self) -> Environment {
        Environment {
            home: self.home.clone(),
            xdg_config_home: None,
            xdg_state_home: None,
            config_override: None,
            path: Some(self.bin.clone().into_os_string()),
        }
    }

    pub fn state(&self) -> PathBuf {
        self.home.join(".local/state/agentic-hil")
    }

    pub fn fill(&self, text: &str) -> String {
        text.replace("{{WORKSPACE}}", &self.workspace.display().to_string())
            .replace("{{STATE}}", &self.state().display().to_string())
    }

    /// Writes bytes to the canonical config path of the workspace and returns that path.
    pub fn write_canonical(&self, bytes: &[u8]) -> PathBuf {
        let path = canonical_config_path(&self.workspace, &self.env());
        fs::create_dir_all(path.parent().expect("config has a parent")).expect("mkdir");
        fs::write(&path, bytes).expect("write config");
        path
    }

    /// A stand-in tool on the private PATH.
    pub fn tool(&self, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.bin.join(name);
        fs::write(&p, "#!/bin/sh\nexit 0\n").expect("write tool");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).expect("chmod");
        p
    }
}

/// Replaces placeholders in raw bytes (some corpus files are deliberately not UTF-8).
pub fn fill_bytes(bench: &Bench, raw: &[u8]) -> Vec<u8> {
    let mut out = raw.to_vec();
    for (from, to) in [
        ("{{WORKSPACE}}", bench.workspace.display().to_string()),
        ("{{STATE}}", bench.state().display().to_string()),
    ] {
        let mut next = Vec::with_capacity(out.len());
        let mut i = 0;
        while i < out.len() {
            if out[i..].starts_with(from.as_bytes()) {
                next.extend_from_slice(to.as_bytes());
                i += from.len();
            } else {
                next.push(out[i]);
                i += 1;
            }
        }
        out = next;
    }
    out
}

pub fn corpus_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(kind)
}
