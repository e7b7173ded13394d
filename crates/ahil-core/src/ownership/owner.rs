//! The identity a process shows other processes when it holds a device.

use std::io::Read;

use serde::Serialize;

/// Who holds a device: written into the holder record beside each lock so a refused caller can be
/// told exactly whom it is waiting for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Owner {
    /// 16 hex characters, random per process (per coordinator).
    pub owner_id: String,
    pub pid: u32,
    pub host: String,
    /// `mcp`, `operator-cli`, `reactor`, `doctor`: which frontend of which program holds it.
    pub frontend: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Owner {
    pub fn this_process(frontend: &str) -> Self {
        Self {
            owner_id: random_hex(8),
            pid: std::process::id(),
            host: hostname(),
            frontend: frontend.to_owned(),
            label: None,
        }
    }

    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// Hex of `bytes` random bytes from the kernel. A failed read falls back to time and pid, which is
/// still unique enough for an advisory owner id (the lock itself is the kernel's).
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok();
    if !filled {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            ^ u128::from(std::process::id());
        for (i, b) in buf.iter_mut().enumerate() {
            *b = seed.to_le_bytes()[i % 16];
        }
    }
    ahil_config::digest::hex(&buf)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_ids_are_sixteen_hex_characters_and_differ() {
        let a = Owner::this_process("mcp");
        let b = Owner::this_process("mcp");
        assert_eq!(a.owner_id.len(), 16);
        assert!(a.owner_id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.owner_id, b.owner_id);
    }
}
