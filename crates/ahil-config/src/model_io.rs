//! Serial ports, CAN buses and power supplies: the typed entries beside the debuggers.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentitySource {
    ResourceId,
    SerialNumber,
    VidPid,
    Vid,
    Pid,
    Device,
}

impl IdentitySource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ResourceId => "resource_id",
            Self::SerialNumber => "serial_number",
            Self::VidPid => "vid_pid",
            Self::Vid => "vid",
            Self::Pid => "pid",
            Self::Device => "device",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoPermissions {
    /// Version 1 only; refused by name in later versions.
    pub allow_read: bool,
    pub allow_write: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ComPort {
    /// `None` declares the port without binding it to a device yet.
    pub device: Option<String>,
    pub baudrate: u64,
    pub serial_number: Option<String>,
    pub vid: Option<u16>,
    pub pid: Option<u16>,
    pub timeout_s: f64,
    pub write_timeout_s: f64,
    pub encoding: String,
    pub assert_dtr: bool,
    pub assert_rts: bool,
    pub max_buffer_bytes: u64,
    pub max_write_bytes: u64,
    pub resource_id: Option<String>,
    /// What the file declares; [`ComPort::identity_source`] is what the keys imply.
    #[serde(rename = "identity_source")]
    pub declared_identity_source: Option<IdentitySource>,
    pub permissions: IoPermissions,
}

impl Default for ComPort {
    fn default() -> Self {
        Self {
            device: None,
            baudrate: 115_200,
            serial_number: None,
            vid: None,
            pid: None,
            timeout_s: 0.1,
            write_timeout_s: 1.0,
            encoding: "utf-8".into(),
            assert_dtr: true,
            assert_rts: true,
            max_buffer_bytes: 65_536,
            max_write_bytes: 4_096,
            resource_id: None,
            declared_identity_source: None,
            permissions: IoPermissions::default(),
        }
    }
}

/// Prefix of the stable per-adapter names udev publishes on Linux.
pub const SERIAL_BY_ID_PREFIX: &str = "/dev/serial/by-id/";

impl ComPort {
    /// Which key identifies this port: resource_id, then serial number, then USB ids,
    /// else the kernel device name.
    pub fn identity_source(&self) -> IdentitySource {
        if self.resource_id.is_some() {
            IdentitySource::ResourceId
        } else if self.serial_number.is_some() {
            IdentitySource::SerialNumber
        } else {
            match (self.vid.is_some(), self.pid.is_some()) {
                (true, true) => IdentitySource::VidPid,
                (true, false) => IdentitySource::Vid,
                (false, true) => IdentitySource::Pid,
                (false, false) => IdentitySource::Device,
            }
        }
    }

    /// Whether something other than enumeration order says which adapter this is.
    pub fn carries_hardware_identity(&self) -> bool {
        self.resource_id.is_some()
            || self.serial_number.is_some()
            || self.device.as_deref().is_some_and(|d| {
                d.len() > SERIAL_BY_ID_PREFIX.len() && d.starts_with(SERIAL_BY_ID_PREFIX)
            })
    }

    /// Machine-wide lock key of this port; `name` is its entry name.
    pub fn lock_key(&self, name: &str) -> String {
        if let Some(r) = &self.resource_id {
            format!("physical:{}", r.to_lowercase())
        } else if let Some(s) = &self.serial_number {
            format!("com:serial:{}", s.to_lowercase())
        } else if let Some(d) = &self.device {
            format!("com:{d}")
        } else {
            format!("com:unbound:{name}")
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CanAdapter {
    #[default]
    Peak,
    Socketcan,
    Process,
}

impl CanAdapter {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Peak => "peak",
            Self::Socketcan => "socketcan",
            Self::Process => "process",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenOnlyEnforcement {
    #[default]
    Controller,
    Service,
}

/// Marks "absent" until the loader knows whether the bus is FD.
pub(crate) const FRAME_SIZE_UNSET: u8 = u8::MAX;

fn frame_size_unset() -> u8 {
    FRAME_SIZE_UNSET
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanBus {
    pub adapter: CanAdapter,
    pub channel: String,
    pub bitrate: u64,
    pub fd: bool,
    pub data_bitrate: Option<u64>,
    pub pcanbasic_dll: Option<String>,
    pub executable: Option<String>,
    pub timeout_s: f64,
    pub poll_interval_ms: u64,
    pub receive_own_messages: bool,
    pub listen_only: bool,
    pub listen_only_enforcement: ListenOnlyEnforcement,
    pub max_buffer_frames: u64,
    /// 8, or 64 on an FD bus, when the file does not say.
    #[serde(default = "frame_size_unset")]
    pub max_frame_data_bytes: u8,
    pub resource_id: Option<String>,
    pub permissions: IoPermissions,
    /// `None`: a single-owner bus. `Some`: a brokered bus with named participants.
    pub shares: Option<IndexMap<String, CanShare>>,
}

impl Default for CanBus {
    fn default() -> Self {
        Self {
            adapter: CanAdapter::Peak,
            channel: String::new(),
            bitrate: 500_000,
            fd: false,
            data_bitrate: None,
            pcanbasic_dll: None,
            executable: None,
            timeout_s: 10.0,
            poll_interval_ms: 10,
            receive_own_messages: false,
            listen_only: false,
            listen_only_enforcement: ListenOnlyEnforcement::Controller,
            max_buffer_frames: 1024,
            max_frame_data_bytes: FRAME_SIZE_UNSET,
            resource_id: None,
            permissions: IoPermissions::default(),
            shares: None,
        }
    }
}

impl CanBus {
    pub(crate) fn settle_defaults(&mut self) {
        if self.max_frame_data_bytes == FRAME_SIZE_UNSET {
            self.max_frame_data_bytes = if self.fd { 64 } else { 8 };
        }
    }

    pub fn lock_key(&self) -> String {
        match &self.resource_id {
            Some(r) => format!("physical:{}", r.to_lowercase()),
            None => format!(
                "can:{}:{}",
                self.adapter.as_str(),
                self.channel.to_lowercase()
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanShare {
    pub filter: Vec<CanFilter>,
    pub max_frames: u64,
    pub requires_listen_only: bool,
    pub permissions: IoPermissions,
}

impl Default for CanShare {
    fn default() -> Self {
        Self {
            filter: Vec::new(),
            max_frames: 1024,
            requires_listen_only: false,
            permissions: IoPermissions::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CanFilter {
    pub id: u64,
    pub mask: u64,
    pub extended: bool,
}

impl Default for CanFilter {
    fn default() -> Self {
        Self {
            id: 0,
            mask: 0x7FF,
            extended: false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PowerSupplyPermissions {
    pub allow_set: bool,
    pub allow_output: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChannelLimits {
    pub voltage_limit_v: Option<f64>,
    pub current_limit_a: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PowerSupply {
    #[serde(rename = "type")]
    pub kind: String,
    pub com_port: String,
    pub powers: Vec<String>,
    pub voltage_limit_v: Option<f64>,
    pub current_limit_a: Option<f64>,
    pub channels: IndexMap<String, ChannelLimits>,
    /// A serial number; results must mask it.
    pub idn_serial: Option<String>,
    pub timeout_s: f64,
    pub permissions: PowerSupplyPermissions,
}

impl Default for PowerSupply {
    fn default() -> Self {
        Self {
            kind: String::new(),
            com_port: String::new(),
            powers: Vec::new(),
            voltage_limit_v: None,
            current_limit_a: None,
            channels: IndexMap::new(),
            idn_serial: None,
            timeout_s: 1.0,
            permissions: PowerSupplyPermissions::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_source_prefers_resource_id_then_serial_then_usb_ids() {
        let mut p = ComPort {
            device: Some("/dev/ttyUSB0".into()),
            ..ComPort::default()
        };
        assert_eq!(p.identity_source(), IdentitySource::Device);
        p.pid = Some(1);
        assert_eq!(p.identity_source(), IdentitySource::Pid);
        p.vid = Some(1);
        assert_eq!(p.identity_source(), IdentitySource::VidPid);
        p.serial_number = Some("S".into());
        assert_eq!(p.identity_source(), IdentitySource::SerialNumber);
        p.resource_id = Some("r".into());
        assert_eq!(p.identity_source(), IdentitySource::ResourceId);
    }

    #[test]
    fn a_bare_by_id_prefix_is_not_hardware_identity() {
        let mut p = ComPort {
            device: Some(SERIAL_BY_ID_PREFIX.into()),
            ..ComPort::default()
        };
        assert!(!p.carries_hardware_identity());
        p.device = Some(format!("{SERIAL_BY_ID_PREFIX}usb-x"));
        assert!(p.carries_hardware_identity());
    }
}
