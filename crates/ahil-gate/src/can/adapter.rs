//! Which adapter a `can_buses` entry opens, decided from the configuration alone.
//!
//! A `peak` bus on Linux is a SocketCAN interface (the kernel's peak_usb / peak_pci drivers name it
//! `can0`, …); PCAN-Basic channel names (`PCAN_USBBUS1`) need the vendor library, which this build
//! does not load. A `process` bus runs the bridge the loader pinned (absolute, outside the workspace).

use crate::ErrorType;
use std::time::Duration;

use ahil_config::{CanAdapter, CanBus, LoadedConfig};
use ahil_drivers::can::{AdapterSpec, OpenRequest};

/// Why a bus cannot be opened as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("can_buses.{0} is a process bridge whose executable was not pinned at load")]
    BridgeNotPinned(String),
    #[error("can_buses.{0}.executable is no longer a file")]
    BridgeMissing(String),
    #[error(
        "can_buses.{bus}.channel `{channel}` is a PCAN-Basic name, and this build loads no PCAN-Basic library: it reaches PEAK adapters only as SocketCAN interfaces (can0, …). Nothing was opened"
    )]
    PcanBasic { bus: String, channel: String },
    #[error(
        "can_buses.{bus}.channel `{channel}` is neither a network interface name nor a PCAN channel"
    )]
    BadChannel { bus: String, channel: String },
}

impl ResolveError {
    pub fn error_type(&self) -> ErrorType {
        match self {
            Self::BridgeNotPinned(_) | Self::BadChannel { .. } => ErrorType::ConfigInvalid,
            Self::BridgeMissing(_) => ErrorType::CanAdapterNotFound,
            // The reference's answer on a host without PCAN-Basic, which this build is everywhere.
            Self::PcanBasic { .. } => ErrorType::CanAdapterLibraryMissing,
        }
    }

    /// Only the missing library is the host's, not the entry's: the same call is safe again once
    /// the bus names the adapter's SocketCAN interface; nothing was opened either way.
    pub fn retry_safe(&self) -> bool {
        matches!(self, Self::PcanBasic { .. })
    }
}

/// `can\d+`, `vcan\d+` or `slcan\d+`: the names the kernel gives CAN interfaces.
pub fn is_netdev_name(channel: &str) -> bool {
    ["can", "vcan", "slcan"].iter().any(|prefix| {
        channel
            .strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The adapter kind as sessions report it: a `peak` bus on a netdev is `socketcan`.
pub fn effective_kind(bus: &CanBus) -> &'static str {
    match bus.adapter {
        CanAdapter::Process => "process",
        CanAdapter::Socketcan => "socketcan",
        CanAdapter::Peak if is_netdev_name(&bus.channel) => "socketcan",
        CanAdapter::Peak => "peak",
    }
}

/// The adapter to open for `bus_id`.
pub fn spec(
    loaded: &LoadedConfig,
    bus_id: &str,
    bus: &CanBus,
) -> Result<AdapterSpec, ResolveError> {
    match bus.adapter {
        CanAdapter::Process => {
            let path = loaded
                .executables
                .can_buses
                .get(bus_id)
                .and_then(|state| state.path())
                .ok_or_else(|| ResolveError::BridgeNotPinned(bus_id.to_owned()))?;
            if !path.is_file() {
                return Err(ResolveError::BridgeMissing(bus_id.to_owned()));
            }
            Ok(AdapterSpec::Bridge {
                executable: path.to_path_buf(),
            })
        }
        CanAdapter::Socketcan => Ok(AdapterSpec::SocketCan),
        CanAdapter::Peak if is_netdev_name(&bus.channel) => Ok(AdapterSpec::SocketCan),
        CanAdapter::Peak if bus.channel.starts_with("PCAN_") || bus.channel.starts_with("0x") => {
            Err(ResolveError::PcanBasic {
                bus: bus_id.to_owned(),
                channel: bus.channel.clone(),
            })
        }
        CanAdapter::Peak => Err(ResolveError::BadChannel {
            bus: bus_id.to_owned(),
            channel: bus.channel.clone(),
        }),
    }
}

/// A bus's `timeout_s` as a duration (at least 100 ms, at most 60 s).
pub fn timeout(bus: &CanBus) -> Duration {
    Duration::try_from_secs_f64(bus.timeout_s.clamp(0.1, 60.0)).unwrap_or(Duration::from_secs(10))
}

/// The open request of a bus.
pub fn request(bus: &CanBus) -> OpenRequest {
    OpenRequest {
        channel: bus.channel.clone(),
        bitrate: bus.bitrate,
        fd: bus.fd,
        data_bitrate: bus.data_bitrate,
        receive_own_messages: bus.receive_own_messages,
        listen_only: bus.listen_only,
        poll_interval: Duration::from_millis(bus.poll_interval_ms.clamp(1, 1000)),
        timeout: timeout(bus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_can_interface_names_are_recognised() {
        for name in ["can0", "vcan12", "slcan1"] {
            assert!(is_netdev_name(name), "{name}");
        }
        for name in ["can", "canX", "PCAN_USBBUS1", "eth0", "vcan0a"] {
            assert!(!is_netdev_name(name), "{name}");
        }
    }

    #[test]
    fn a_peak_bus_on_a_netdev_is_socketcan_and_a_pcan_basic_name_is_not_built() {
        let mut bus = CanBus {
            adapter: CanAdapter::Peak,
            channel: "can0".into(),
            ..CanBus::default()
        };
        assert_eq!(effective_kind(&bus), "socketcan");
        bus.channel = "PCAN_USBBUS1".into();
        assert_eq!(effective_kind(&bus), "peak");
    }
}
