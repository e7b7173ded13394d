//! The optional `labgrid:` section (ours alone; the reference does not load a file using it): where
//! labgrid's coordinator listens, the labgrid user this gate acts as, and the place each configured
//! device belongs to. A call that touches a device with a place holds that place through the
//! coordinator before it takes the device's lock.

use std::net::IpAddr;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{ConfigError, Refusal};
use crate::model::Config;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Labgrid {
    /// `host:port`: a loopback address or a host name.
    pub coordinator: String,
    /// `host/user` as labgrid shows it; `<host>/agentic-hil` when absent.
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub places: LabgridPlaces,
}

/// The place of each device entry, by the section that names the entry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LabgridPlaces {
    pub debuggers: IndexMap<String, String>,
    pub com_ports: IndexMap<String, String>,
    pub can_buses: IndexMap<String, String>,
    pub power_supplies: IndexMap<String, String>,
}

impl Labgrid {
    /// The place of the entry `name` of `section` (`debuggers`, `com_ports`, `can_buses`,
    /// `power_supplies`), if it has one.
    pub fn place_of(&self, section: &str, name: &str) -> Option<&str> {
        let map = match section {
            "debuggers" => &self.places.debuggers,
            "com_ports" => &self.places.com_ports,
            "can_buses" => &self.places.can_buses,
            "power_supplies" => &self.places.power_supplies,
            _ => return None,
        };
        map.get(name).map(String::as_str)
    }
}

fn refuse(field: impl Into<String>, summary: impl Into<String>) -> Refusal {
    Refusal::new(summary).at(field)
}

/// Why `address` is not `host:port` with a loopback address or a host name, if it is not.
fn address_problem(address: &str) -> Option<&'static str> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Some("it names no port");
    };
    if !port.parse::<u16>().is_ok_and(|p| p != 0) {
        return Some("its port is not a number from 1 to 65535");
    }
    let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    if let Some(ip) = bracketed {
        return match ip.parse::<IpAddr>() {
            Ok(ip) if ip.is_loopback() => None,
            Ok(_) => Some("an IP address other than loopback may be anyone's"),
            Err(_) => Some("the bracketed host is not an IPv6 address"),
        };
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return (!ip.is_loopback()).then_some("an IP address other than loopback may be anyone's");
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let name_ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(label_ok)
        && host.bytes().any(|b| b.is_ascii_alphabetic());
    (!name_ok).then_some("the host is neither a loopback address nor a host name")
}

/// Checks `labgrid`, if present.
pub(crate) fn check(cfg: &Config) -> Result<(), ConfigError> {
    let Some(lab) = &cfg.labgrid else {
        return Ok(());
    };
    if let Some(why) = address_problem(&lab.coordinator) {
        return Err(ConfigError::invalid(
            refuse(
                "labgrid.coordinator",
                format!("`labgrid.coordinator` must be host:port, and {why}."),
            )
            .with("value", lab.coordinator.as_str())
            .fix("Write the coordinator as `127.0.0.1:20408` or `coordinator.lab.example:20408`."),
        ));
    }
    if let Some(user) = &lab.user {
        let part_ok = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'/' && b != b'\\')
        };
        if !user
            .split_once('/')
            .is_some_and(|(h, u)| part_ok(h) && part_ok(u))
        {
            return Err(ConfigError::invalid(
                refuse(
                    "labgrid.user",
                    "`labgrid.user` is the labgrid user as `host/user`, without spaces.",
                )
                .with("value", user.as_str())
                .fix("Write it as `benchhost/agentic-hil`, or leave it out for that default."),
            ));
        }
    }
    let sections: [(&str, &IndexMap<String, String>, Vec<&String>); 4] = [
        (
            "debuggers",
            &lab.places.debuggers,
            cfg.debuggers.keys().collect(),
        ),
        (
            "com_ports",
            &lab.places.com_ports,
            cfg.com_ports.keys().collect(),
        ),
        (
            "can_buses",
            &lab.places.can_buses,
            cfg.can_buses.keys().collect(),
        ),
        (
            "power_supplies",
            &lab.places.power_supplies,
            cfg.power_supplies.keys().collect(),
        ),
    ];
    for (section, places, entries) in sections {
        if let Some(name) = places.keys().find(|name| !entries.contains(name)) {
            return Err(ConfigError::invalid(
                refuse(
                    format!("labgrid.places.{section}.{name}"),
                    format!("`labgrid.places.{section}` gives a place to `{name}`, which `{section}` does not configure."),
                )
                .with("configured", json!(entries))
                .fix("Name an entry of that section, or remove the line."),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coordinator_is_a_loopback_address_or_a_host_name_with_a_port() {
        for ok in [
            "127.0.0.1:20408",
            "127.8.0.1:1",
            "[::1]:20408",
            "localhost:20408",
            "coordinator.lab.example:20408",
            "lab-1:65535",
        ] {
            assert_eq!(address_problem(ok), None, "{ok}");
        }
        for bad in [
            "127.0.0.1",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "10.0.0.5:20408",
            "0.0.0.0:20408",
            "[2001:db8::1]:20408",
            "[nonsense]:20408",
            "http://lab:20408",
            "lab/x:20408",
            "-lab:20408",
            "1.2.3:20408",
            ":20408",
            "lab..example:20408",
        ] {
            assert!(address_problem(bad).is_some(), "{bad}");
        }
    }
}
