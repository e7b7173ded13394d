//! Host serial ports with their USB identity, read from sysfs by the `serialport` crate (no
//! libudev), plus the stable `/dev/serial/by-id` names udev publishes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serialport::SerialPortType;

use super::SerialError;

/// Where udev publishes per-adapter names.
pub const BY_ID_DIR: &str = "/dev/serial/by-id";

/// One serial port the host reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostPort {
    pub device: String,
    /// `usb`, `pci`, `bluetooth` or `other`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable_device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vid: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
}

/// The host's ports, sorted by device. Legacy `/dev/ttyS*` entries with no hardware behind them
/// (the kernel registers a fixed number of 8250 stubs) are collapsed into the returned count.
pub fn enumerate() -> Result<(Vec<HostPort>, usize), SerialError> {
    let found = serialport::available_ports().map_err(|e| SerialError::Discovery {
        detail: e.to_string(),
    })?;
    let stable = stable_names(Path::new(BY_ID_DIR));
    let mut stubs = 0usize;
    let mut ports: Vec<HostPort> = Vec::new();
    for info in found {
        let mut port = HostPort {
            stable_device: stable.get(&canonical(&info.port_name)).cloned(),
            device: info.port_name,
            kind: "other",
            serial_number: None,
            vid: None,
            pid: None,
            manufacturer: None,
            product: None,
        };
        match info.port_type {
            SerialPortType::UsbPort(usb) => {
                port.kind = "usb";
                port.vid = Some(usb.vid);
                port.pid = Some(usb.pid);
                port.serial_number = usb.serial_number;
                port.manufacturer = usb.manufacturer;
                port.product = usb.product;
            }
            SerialPortType::PciPort => port.kind = "pci",
            SerialPortType::BluetoothPort => port.kind = "bluetooth",
            SerialPortType::Unknown => {
                if is_legacy_stub(&port.device) {
                    stubs += 1;
                    continue;
                }
            }
        }
        ports.push(port);
    }
    ports.sort_by(|a, b| a.device.cmp(&b.device));
    ports.dedup_by(|a, b| a.device == b.device);
    Ok((ports, stubs))
}

/// `/dev/ttyS<n>`: the fixed set of 8250 UART slots, nearly all empty on a modern machine.
fn is_legacy_stub(device: &str) -> bool {
    device
        .strip_prefix("/dev/ttyS")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn canonical(device: &str) -> PathBuf {
    std::fs::canonicalize(device).unwrap_or_else(|_| PathBuf::from(device))
}

/// `/dev/serial/by-id` links keyed by the device they resolve to; the first spelling (sorted) wins.
pub fn stable_names(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    let mut map = BTreeMap::new();
    for link in names {
        if let Ok(target) = std::fs::canonicalize(&link) {
            map.entry(target)
                .or_insert_with(|| link.display().to_string());
        }
    }
    map
}

/// Whether two device spellings name the same node (by-id link or kernel name).
pub fn same_device(a: &str, b: &str) -> bool {
    a == b || canonical(a) == canonical(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbered_tty_s_names_are_legacy_stubs() {
        for (name, stub) in [
            ("/dev/ttyS0", true),
            ("/dev/ttyS31", true),
            ("/dev/ttyUSB0", false),
            ("/dev/ttyS", false),
            ("/dev/ttySAC0", false),
        ] {
            assert_eq!(is_legacy_stub(name), stub, "{name}");
        }
    }

    #[test]
    fn stable_names_map_each_target_to_its_first_link() {
        let dir = tempfile::tempdir().expect("dir");
        let dev = tempfile::tempdir().expect("dev");
        let target = dev.path().join("ttyUSB9");
        std::fs::write(&target, b"").expect("node");
        std::os::unix::fs::symlink(&target, dir.path().join("usb-B")).expect("link");
        std::os::unix::fs::symlink(&target, dir.path().join("usb-A")).expect("link");
        let map = stable_names(dir.path());
        let canonical_target = std::fs::canonicalize(&target).expect("canonical");
        assert!(map[&canonical_target].ends_with("usb-A"));
    }

    #[test]
    fn enumeration_runs_on_this_host_without_opening_a_port() {
        let (ports, _stubs) = enumerate().expect("enumeration works without libudev");
        assert!(
            ports
                .iter()
                .all(|p| !is_legacy_stub(&p.device) || p.kind != "other")
        );
    }
}
