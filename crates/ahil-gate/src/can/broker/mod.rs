//! The broker of a shared CAN bus (`shares:`): one process owns the adapter, each participant its
//! filtered queue.
//!
//! The broker is this binary started again (`agentic-hil can-broker`, hidden), detached in its own
//! process group, so two servers (two agents) can be two participants of one bus. It holds the
//! ordinary bus lock for its life, is the only opener and reader of the adapter, and fans each frame
//! out to every attached participant whose share filter and read grant accept it. Participants reach
//! it over a Unix socket in a private directory beside the lock root (0700); a peer is admitted only
//! when the kernel says it runs as our uid (`SO_PEERCRED`) and it presents the broker's random key
//! (a 0600 file beside the socket). The broker exits when its last participant detaches, or when
//! nobody attaches within [`FIRST_ATTACH_TIMEOUT`].
//!
//! `server.rs` is the broker process, `client.rs` a participant's end, `wire.rs` the framing.

pub mod client;
#[cfg(test)]
pub(crate) mod fake_adapter_tests;
mod requests;
pub mod server;
pub mod wire;

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ahil_config::{CanBus, CanFilter, CanShare};
use ahil_drivers::can::{AdapterSpec, Frame};
use serde::{Deserialize, Serialize};

/// How long a broker nobody attaches to stays up.
pub const FIRST_ATTACH_TIMEOUT: Duration = Duration::from_secs(15);
/// The wire protocol; a peer speaking another is refused.
pub const PROTOCOL_VERSION: u64 = 1;

/// Where the spawning server's audit trail is, so the broker's bus frame log is chained there.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditPlace {
    pub state_root: PathBuf,
    pub config_path: PathBuf,
    pub workspace: PathBuf,
    pub reports_dir: String,
    pub logs_dir: String,
}

/// Everything a broker needs, handed to it on stdin by the server that starts it (already resolved:
/// the bridge executable is the one the loader pinned).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BrokerSpec {
    pub bus_id: String,
    pub bus_key: String,
    pub bus: CanBus,
    /// `Some`: a process bridge at this absolute path; `None`: SocketCAN.
    pub bridge: Option<PathBuf>,
    pub kind: String,
    /// Configuration version: from 2 on, reading needs no grant.
    pub config_version: u64,
    /// The account's home (`Environment::account_home`), below which the broker's rendezvous and
    /// participant locks live.
    pub home: PathBuf,
    pub audit: AuditPlace,
    pub first_attach_timeout_ms: u64,
}

impl BrokerSpec {
    pub fn adapter(&self) -> AdapterSpec {
        match &self.bridge {
            Some(executable) => AdapterSpec::Bridge {
                executable: executable.clone(),
            },
            None => AdapterSpec::SocketCan,
        }
    }

    pub fn share(&self, participant: &str) -> Option<&CanShare> {
        self.bus.shares.as_ref()?.get(participant)
    }
}

/// Whether a participant's share may read the bus (version 1 grants reads separately).
pub fn share_reads(config_version: u64, share: &CanShare) -> bool {
    config_version >= 2 || share.permissions.allow_read
}

/// Whether a participant's share may write: both the bus and the share must grant it.
pub fn share_writes(bus: &CanBus, share: &CanShare) -> bool {
    bus.permissions.allow_write && share.permissions.allow_write
}

/// A filter term matches when its width is the frame's and the masked identifiers agree; an empty
/// filter accepts every frame.
pub fn filter_accepts(filter: &[CanFilter], frame: &Frame) -> bool {
    filter.is_empty()
        || filter.iter().any(|term| {
            term.extended == frame.extended
                && (u64::from(frame.id) & term.mask) == (term.id & term.mask)
        })
}

/// The lock a participant takes before it attaches: one holder per participant, machine-wide.
pub fn participant_lock(bus_key: &str, participant: &str) -> String {
    crate::ownership::runs::participant_key(bus_key, participant)
}

/// The rendezvous of one bus's broker: `<home>/.agentic-hil/can-brokers/<tag>.*`.
#[derive(Debug, Clone)]
pub struct Rendezvous {
    dir: PathBuf,
    tag: String,
}

impl Rendezvous {
    pub fn new(home: &Path, bus_key: &str) -> Self {
        let digest = ahil_config::digest::sha256_hex(bus_key.as_bytes());
        Self {
            dir: home.join(".agentic-hil").join("can-brokers"),
            tag: digest[..20].to_owned(),
        }
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join(format!("{}.sock", self.tag))
    }

    pub fn key(&self) -> PathBuf {
        self.dir.join(format!("{}.authkey", self.tag))
    }

    pub fn descriptor(&self) -> PathBuf {
        self.dir.join(format!("{}.broker.json", self.tag))
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join(format!("{}.broker.log", self.tag))
    }

    /// Creates the directory 0700 if missing, and refuses one that is not a plain directory of ours
    /// closed to everyone else: whoever could write in it could plant a socket of their own.
    pub fn ensure(&self) -> io::Result<()> {
        if let Some(parent) = self.dir.parent() {
            match fs::DirBuilder::new().mode(0o700).create(parent) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err),
            }
        }
        match fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        self.check_private()
    }

    /// The directory is ours, a real directory, and closed to group and others.
    pub fn check_private(&self) -> io::Result<()> {
        let meta = fs::symlink_metadata(&self.dir)?;
        let uid = wire::own_uid();
        if !meta.file_type().is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the broker directory is not a private directory of this user",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: u32, extended: bool) -> Frame {
        Frame::new(u64::from(id), extended, false, Vec::new()).expect("frame")
    }

    #[test]
    fn a_filter_term_matches_the_masked_identifier_of_its_own_width_only() {
        let filter = [CanFilter {
            id: 0x100,
            mask: 0x7F0,
            extended: false,
        }];
        assert!(filter_accepts(&filter, &frame(0x105, false)));
        assert!(!filter_accepts(&filter, &frame(0x205, false)));
        assert!(!filter_accepts(&filter, &frame(0x105, true)));
        assert!(
            filter_accepts(&[], &frame(0x205, true)),
            "empty accepts all"
        );
    }

    #[test]
    fn a_participant_writes_only_when_the_bus_and_its_share_both_grant_it() {
        let mut bus = CanBus::default();
        let mut share = CanShare::default();
        share.permissions.allow_write = true;
        assert!(!share_writes(&bus, &share));
        bus.permissions.allow_write = true;
        assert!(share_writes(&bus, &share));
        share.permissions.allow_write = false;
        assert!(!share_writes(&bus, &share));
    }

    #[test]
    fn a_broker_directory_open_to_others_is_refused() {
        let home = std::env::temp_dir().join(format!("ahil-broker-dir-{}", std::process::id()));
        fs::create_dir_all(&home).expect("home");
        let place = Rendezvous::new(&home, "can:process:x");
        place.ensure().expect("a fresh private directory");
        fs::set_permissions(
            &place.dir,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        assert!(place.check_private().is_err());
        let _ = fs::remove_dir_all(&home);
    }
}
