//! GDB debug sessions, held across calls from `debug_start_session` to `debug_stop_session`, on the
//! emulated board (gdb on QEMU's stub) or through OpenOCD (gdb on the loopback port of an OpenOCD this
//! session started). A session owns its gdb child (own process group, killed and reaped on drop), the
//! debug server's process when there is one, the staged ELF it debugs, and the debugger's machine-wide
//! device lock, so probe, flash and reset (here or in another server) wait until it stops. Dropping a
//! session keeps the core halted: it disconnects rather than detaches (the QEMU stub resumes on a
//! detach), and on OpenOCD first turns the gdb-detach and gdb-end events into no-ops.

pub mod elfsym;
pub mod ihex;
pub mod offline;
pub mod output;
pub mod stop;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ahil_drivers::gdbmi::Session as Gdb;
use ahil_drivers::openocd::gdbserver::GdbServer;
use ahil_drivers::qemu::qmp::Qmp;
use serde_json::{Value, json};

use crate::artifacts::StagedArtifact;
use crate::audit::AuditError;
use crate::ownership::SessionLocks;
use crate::session_lifecycle::SessionLog;

/// The one session slot of a gate (one bound debugger).
#[derive(Default)]
pub struct Sessions {
    slot: Mutex<Option<Arc<Mutex<Live>>>>,
}

impl Sessions {
    fn table(&self) -> MutexGuard<'_, Option<Arc<Mutex<Live>>>> {
        // Set and take are single statements, so a poisoned slot is still consistent.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open session, if any.
    pub fn get(&self) -> Option<Arc<Mutex<Live>>> {
        self.table().clone()
    }

    /// Whether a session holds the probe.
    pub fn is_active(&self) -> bool {
        self.table().is_some()
    }

    pub fn take(&self) -> Option<Arc<Mutex<Live>>> {
        self.table().take()
    }
}

impl crate::session_lifecycle::Registry for Sessions {
    type Entry = Live;

    /// One debug session per gate: a second is handed back, never put over the first.
    fn register(&self, live: Live) -> Result<(), Live> {
        let mut slot = self.table();
        if slot.is_some() {
            return Err(live);
        }
        *slot = Some(Arc::new(Mutex::new(live)));
        Ok(())
    }

    fn unregister(&self, _key: &str) {
        drop(self.take());
    }
}

/// Locks one session for one call.
pub fn lock(live: &Mutex<Live>) -> MutexGuard<'_, Live> {
    live.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One breakpoint as the session knows it.
#[derive(Debug, Clone)]
pub struct Breakpoint {
    pub id: u64,
    pub backend_id: String,
    pub location: Value,
    pub gdb_location: String,
}

impl Breakpoint {
    pub fn to_value(&self) -> Value {
        json!({
            "id": self.id,
            "backend_id": self.backend_id,
            "location": self.location,
            "gdb_location": self.gdb_location,
        })
    }
}

/// An open session.
pub struct Live {
    pub session_id: String,
    pub mode: String,
    pub started_at: String,
    /// `halted`, `running` or `error`.
    pub status: &'static str,
    pub gdb: Option<Gdb>,
    /// The staged ELF gdb reads; kept alive as long as gdb may read it.
    pub elf: StagedArtifact,
    pub breakpoints: Vec<Breakpoint>,
    pub next_breakpoint: u64,
    /// The last stop object, once a stop was seen.
    pub stop: Option<Value>,
    /// The chained session log.
    pub log: SessionLog,
    /// gdb's transcript, kept when gdb ends.
    pub gdb_transcript: Vec<String>,
    /// The debug server gdb talks to.
    pub server: Server,
    /// The debugger's device locks; they drop after `Live`'s own drop has stopped gdb and the server.
    pub locks: SessionLocks,
    /// Per-command limit (the debugger's timeout, 10 s at most).
    pub step: Duration,
    /// The debugger's own timeout.
    pub timeout: Duration,
    /// `little` or `big`, from the ELF header, and where that came from.
    pub byte_order: (&'static str, &'static str),
}

impl Live {
    /// The `session` object results carry.
    pub fn describe(&self) -> Value {
        let mut doc = json!({
            "session_id": self.session_id,
            "status": self.status,
            "mode": self.mode,
            "started_at": self.started_at,
            "artifact": {
                "source": "staged",
                "path": self.elf.display_path(),
                "sha256": self.elf.sha256(),
            },
            "breakpoints": self.breakpoints.iter().map(Breakpoint::to_value).collect::<Vec<_>>(),
            "stop_reason": self.stop.as_ref().and_then(|s| s.get("stop_reason")).cloned().unwrap_or(Value::Null),
            "backend": self.server.backend(),
        });
        if let Some(server) = self.server.loopback() {
            doc["gdb_port"] = json!(server.port);
            doc["load_phase"] = json!(server.load_phase);
            doc["firmware_load_status"] = json!(server.firmware_load_status);
        }
        doc
    }

    /// Appends an audited event to the session log.
    pub fn log(&self, event: &Value) -> Result<(), AuditError> {
        self.log.append(event)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let second = Duration::from_secs(1);
        if let Server::Stlink(server) = &mut self.server
            && let Some(process) = server.process.take()
        {
            process.stop();
        }
        // The stub resumes the core if gdb just vanishes; a disconnect leaves it halted. OpenOCD runs
        // its gdb-detach handler on any disconnect, so that handler is emptied first.
        if let Some(mut gdb) = self.gdb.take() {
            if matches!(self.server, Server::OpenOcd(_)) {
                let _ = gdb.console(DETACH_GUARD, second);
            }
            let _ = gdb.command("-target-disconnect", second);
            gdb.close(second);
        }
        match &mut self.server {
            // Between calls a session's core is always halted; keep it so when the server goes away.
            Server::Qemu { qmp_socket } => {
                let _ = vm_halted(qmp_socket, second);
            }
            Server::OpenOcd(server) | Server::Stlink(server) => {
                if let Some(process) = server.process.take() {
                    process.stop();
                }
            }
        }
    }
}

/// Empties OpenOCD's gdb-detach and gdb-end handlers, so gdb leaving cannot resume the core.
pub const DETACH_GUARD: &str =
    "monitor $_TARGETNAME configure -event gdb-detach {}; $_TARGETNAME configure -event gdb-end {}";

/// The debug server a session's gdb talks to.
pub enum Server {
    /// The emulated board's stub; its QMP socket proves a halt without gdb.
    Qemu { qmp_socket: std::path::PathBuf },
    /// An OpenOCD this session started.
    OpenOcd(Loopback),
    /// An ST-LINK_gdbserver this session started. It may resume the core when gdb leaves, so a stop
    /// kills it before gdb disconnects.
    Stlink(Loopback),
}

/// A gdb server a session started on a loopback port, and how far the start got with it.
pub struct Loopback {
    pub process: Option<GdbServer>,
    pub port: u16,
    pub load_phase: &'static str,
    pub firmware_load_status: &'static str,
}

impl Server {
    /// The server this session started, if it started one.
    pub fn loopback(&self) -> Option<&Loopback> {
        match self {
            Self::Qemu { .. } => None,
            Self::OpenOcd(server) | Self::Stlink(server) => Some(server),
        }
    }
}

impl Server {
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Qemu { .. } => "qemu",
            Self::OpenOcd(_) => "openocd",
            Self::Stlink(_) => "stlink",
        }
    }
}

/// Whether QEMU reports its CPU stopped, pausing it first if it runs.
pub fn vm_halted(socket: &std::path::Path, limit: Duration) -> bool {
    let Ok(mut qmp) = Qmp::connect(socket, limit) else {
        return false;
    };
    match qmp.status() {
        Ok(status) if !status.running => true,
        Ok(_) => qmp.stop().is_ok() && qmp.status().is_ok_and(|status| !status.running),
        Err(_) => false,
    }
}

/// `little`/`big` from the ELF header's EI_DATA byte, `default` little when it states none.
pub fn byte_order(elf: &[u8]) -> (&'static str, &'static str) {
    match elf.get(5) {
        Some(1) => ("little", "elf_header"),
        Some(2) => ("big", "elf_header"),
        _ => ("little", "default"),
    }
}

/// The hex, byte order and (at 1, 2, 4 or 8 bytes) integer readings of a symbol's bytes.
pub fn decode(bytes: &[u8], order: (&'static str, &'static str)) -> Value {
    let mut doc = json!({
        "hex": crate::artifacts::hex(bytes),
        "byte_order": order.0,
        "byte_order_from": order.1,
    });
    if matches!(bytes.len(), 1 | 2 | 4 | 8) {
        let mut value: u64 = 0;
        let ordered: Vec<u8> = if order.0 == "big" {
            bytes.to_vec()
        } else {
            bytes.iter().rev().copied().collect()
        };
        for byte in ordered {
            value = (value << 8) | u64::from(byte);
        }
        let bits = bytes.len() * 8;
        let signed = if bits == 64 {
            value.cast_signed()
        } else {
            let shift = 64 - bits;
            (value << shift).cast_signed() >> shift
        };
        doc["value_unsigned"] = json!(value);
        doc["value_signed"] = json!(signed);
    } else {
        doc["value_not_decoded"] =
            json!("size_bytes is not 1, 2, 4 or 8, so the bytes carry no single integer reading.");
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn little_endian_bytes_decode_to_unsigned_and_signed_readings() {
        let doc = decode(&[0x2e, 0xfb], ("little", "elf_header"));
        assert_eq!(doc["hex"], "2efb");
        assert_eq!(doc["value_unsigned"], 0xfb2e);
        assert_eq!(doc["value_signed"], -1234);
        let doc = decode(&[0xef, 0xbe, 0xad, 0xde], ("little", "elf_header"));
        assert_eq!(doc["value_unsigned"], 0xdead_beef_u64);
        let doc = decode(&[0xff; 8], ("big", "elf_header"));
        assert_eq!(doc["value_signed"], -1);
    }

    #[test]
    fn odd_sizes_carry_hex_but_no_integer_reading() {
        let doc = decode(&[1, 2, 3], ("little", "default"));
        assert_eq!(doc["hex"], "010203");
        assert!(doc.get("value_unsigned").is_none());
        assert!(doc["value_not_decoded"].is_string());
    }

    #[test]
    fn the_elf_header_names_the_byte_order() {
        assert_eq!(byte_order(b"\x7fELF\x01\x01"), ("little", "elf_header"));
        assert_eq!(byte_order(b"\x7fELF\x01\x02"), ("big", "elf_header"));
        assert_eq!(byte_order(b""), ("little", "default"));
    }
}
