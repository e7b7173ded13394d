//! Whether a lock file is held, read from the kernel's lock table (`/proc/locks`), which lists every
//! flock by device and inode, so a reader that must never take a lock (a watcher, a status) can
//! still tell a live holder from a dead one.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The kernel's table of held file locks, by (device, inode).
pub struct KernelLocks(Option<HashSet<(u32, u32, u64)>>);

impl KernelLocks {
    pub fn read() -> Self {
        let Ok(text) = std::fs::read_to_string("/proc/locks") else {
            return Self(None);
        };
        Self(Some(text.lines().filter_map(parse_proc_lock).collect()))
    }

    pub fn holds(&self, path: &Path) -> Option<bool> {
        let table = self.0.as_ref()?;
        let Ok(meta) = std::fs::metadata(path) else {
            // No lock file: nobody ever took this device.
            return Some(false);
        };
        let dev = meta.dev();
        Some(table.contains(&(dev_major(dev), dev_minor(dev), meta.ino())))
    }
}

/// `1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF` → (0x08, 0x01, 5678). Waiters (`->`) are not
/// holders.
fn parse_proc_lock(line: &str) -> Option<(u32, u32, u64)> {
    let mut fields = line.split_whitespace().skip(1);
    let kind = fields.next()?;
    if kind == "->" {
        return None;
    }
    let id = fields.nth(3)?;
    let mut parts = id.split(':');
    let major = u32::from_str_radix(parts.next()?, 16).ok()?;
    let minor = u32::from_str_radix(parts.next()?, 16).ok()?;
    let inode = parts.next()?.parse().ok()?;
    Some((major, minor, inode))
}

// Linux's encoding of dev_t (glibc `gnu_dev_major`/`gnu_dev_minor`).
#[allow(clippy::cast_possible_truncation)]
fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)) as u32
}

#[allow(clippy::cast_possible_truncation)]
fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proc_locks_line_names_the_device_and_inode_and_a_waiter_is_skipped() {
        assert_eq!(
            parse_proc_lock("1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"),
            Some((8, 1, 5678))
        );
        assert_eq!(
            parse_proc_lock("2: POSIX  ADVISORY  WRITE 99 00:2a:42 0 EOF"),
            Some((0, 0x2a, 42))
        );
        assert_eq!(
            parse_proc_lock("1: -> FLOCK  ADVISORY  WRITE 77 08:01:5678 0 EOF"),
            None
        );
    }

    #[test]
    fn a_file_this_process_flocks_shows_as_held_and_unlocked_it_does_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("x.lock");
        let file = std::fs::File::create(&path).expect("create");
        assert_eq!(KernelLocks::read().holds(&path), Some(false));
        file.lock().expect("flock");
        assert_eq!(KernelLocks::read().holds(&path), Some(true));
        file.unlock().expect("unlock");
        assert_eq!(KernelLocks::read().holds(&path), Some(false));
        assert_eq!(
            KernelLocks::read().holds(&dir.path().join("never.lock")),
            Some(false)
        );
    }
}
