//! The host's USB inventory of debug probes, read from sysfs. OpenOCD cannot list probes itself, so
//! this is the best a listing can do: devices of known probe vendors that report a serial number.

use std::fs;
use std::path::Path;

use crate::probe::ProbeInfo;

/// Vendors whose USB devices are debug probes (or carry one, like an ST Nucleo).
const PROBE_VENDORS: &[(&str, &str)] = &[
    ("0483", "STMicroelectronics"),
    ("1366", "SEGGER"),
    ("0d28", "ARM DAPLink"),
    ("c251", "Keil"),
    ("1fc9", "NXP"),
    ("2e8a", "Raspberry Pi"),
    ("0403", "FTDI"),
    ("15ba", "Olimex"),
];

fn read(dir: &Path, name: &str) -> Option<String> {
    fs::read_to_string(dir.join(name))
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

/// Devices of known probe vendors with a serial number, sorted by serial.
pub fn inventory(root: &Path) -> Vec<ProbeInfo> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut probes: Vec<ProbeInfo> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let dir = entry.path();
            let vendor_id = read(&dir, "idVendor")?.to_lowercase();
            let vendor = PROBE_VENDORS
                .iter()
                .find(|(id, _)| *id == vendor_id)
                .map(|(_, name)| *name)?;
            let serial = read(&dir, "serial")?;
            let product = read(&dir, "product").unwrap_or_else(|| vendor.to_owned());
            Some(ProbeInfo {
                id: serial,
                description: product,
            })
        })
        .collect();
    probes.sort_by(|a, b| a.id.cmp(&b.id));
    probes.dedup_by(|a, b| a.id == b.id);
    probes
}
