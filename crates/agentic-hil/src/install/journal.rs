//! Writes to the operator's files, remembered so that a command that fails half-way can put every
//! file back as it found it.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One file as it was before we touched it (`None`: it did not exist).
struct Before {
    path: PathBuf,
    bytes: Option<Vec<u8>>,
    mode: u32,
}

#[derive(Default)]
pub struct Journal {
    before: Vec<Before>,
    /// Directories a write created, outermost first: rollback and the install record both need them.
    dirs: Vec<PathBuf>,
}

/// The ancestors of `dir` (itself included) that do not exist yet, outermost first.
pub(super) fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && d.symlink_metadata().is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    missing
}

/// Host files can hold API tokens, so a file we create is private to the user; an existing file
/// keeps its mode.
const NEW_FILE_MODE: u32 = 0o600;

impl Journal {
    /// Replaces `path` atomically with `bytes`, creating its directory if needed.
    pub fn write(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let (previous, mode) = match std::fs::read(path) {
            Ok(previous) => {
                let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
                (Some(previous), mode)
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => (None, NEW_FILE_MODE),
            Err(err) => return Err(err),
        };
        if let Some(dir) = path.parent() {
            let missing = missing_dirs(dir);
            std::fs::create_dir_all(dir)?;
            self.dirs.extend(missing);
        }
        ahil_gate::fsio::write_atomic(path, bytes, mode)?;
        self.remember(path, previous, mode);
        Ok(())
    }

    /// Removes `path`, and its directory if that leaves it empty.
    pub fn remove(&mut self, path: &Path) -> io::Result<()> {
        let previous = std::fs::read(path)?;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o7777;
        std::fs::remove_file(path)?;
        self.remember(path, Some(previous), mode);
        if let Some(dir) = path.parent() {
            // Fails harmlessly when something else lives beside the file.
            let _ = std::fs::remove_dir(dir);
        }
        Ok(())
    }

    fn remember(&mut self, path: &Path, bytes: Option<Vec<u8>>, mode: u32) {
        // The first state seen is the one to restore.
        if !self.before.iter().any(|b| b.path == path) {
            self.before.push(Before {
                path: path.to_path_buf(),
                bytes,
                mode,
            });
        }
    }

    /// Puts every file back, newest change first; returns what could not be restored.
    pub fn roll_back(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        while let Some(before) = self.before.pop() {
            let result = match &before.bytes {
                Some(bytes) => {
                    if let Some(dir) = before.path.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    ahil_gate::fsio::write_atomic(&before.path, bytes, before.mode)
                }
                None => std::fs::remove_file(&before.path).or_else(|err| {
                    if err.kind() == io::ErrorKind::NotFound {
                        Ok(())
                    } else {
                        Err(err)
                    }
                }),
            };
            if let Err(err) = result {
                errors.push(format!("{}: {err}", before.path.display()));
            }
        }
        // Only empty ones go: a directory something else was put into meanwhile stays.
        while let Some(dir) = self.dirs.pop() {
            let _ = std::fs::remove_dir(&dir);
        }
        errors
    }

    pub fn is_empty(&self) -> bool {
        self.before.is_empty()
    }

    /// Every file touched, with its content before the first touch (`None`: it did not exist).
    pub fn touched(&self) -> impl Iterator<Item = (&Path, Option<&[u8]>)> {
        self.before
            .iter()
            .map(|b| (b.path.as_path(), b.bytes.as_deref()))
    }

    /// The directories the writes created, outermost first.
    pub fn created_dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_back_restores_a_changed_file_and_removes_a_created_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kept = dir.path().join("kept.json");
        std::fs::write(&kept, b"{\"a\": 1}").expect("seed");
        let created = dir.path().join("sub/new.json");
        let mut journal = Journal::default();
        journal.write(&kept, b"{}").expect("write");
        journal.write(&kept, b"{\"b\": 2}").expect("write again");
        journal.write(&created, b"{}").expect("create");
        assert_eq!(journal.created_dirs(), [dir.path().join("sub")]);
        assert!(journal.roll_back().is_empty());
        assert_eq!(std::fs::read(&kept).expect("kept"), b"{\"a\": 1}");
        assert!(!created.exists());
        assert!(
            !dir.path().join("sub").exists(),
            "the directory it made went too"
        );
    }
}
