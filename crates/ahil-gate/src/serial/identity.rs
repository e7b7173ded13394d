//! Which adapter a `com_ports` entry means, checked against what the host reports before anything is
//! opened: a serial number (the entry's own, or the probe_id of the one debugger sharing its
//! resource_id) and USB ids where the entry declares them.

use crate::ErrorType;
use ahil_config::{ComPort, Config};
use ahil_drivers::serial::{HostPort, SerialError, same_device};
use serde_json::{Map, Value, json};

use crate::envelope::Outcome;

/// What the entry says the attached hardware is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub serial: Option<String>,
    pub from: Option<String>,
    pub vid: Option<u16>,
    pub pid: Option<u16>,
}

/// The expectation an entry declares, if any.
pub fn expected(config: &Config, port_id: &str, port: &ComPort) -> Option<Expected> {
    let (serial, from) = if let Some(serial) = &port.serial_number {
        (
            Some(serial.clone()),
            Some(format!("com_ports.{port_id}.serial_number")),
        )
    } else if let Some(resource) = &port.resource_id {
        let resource = resource.to_lowercase();
        let sharing: Vec<(&String, &String)> = config
            .debuggers
            .iter()
            .filter(|(_, d)| {
                d.resource_id.as_deref().map(str::to_lowercase) == Some(resource.clone())
            })
            .filter_map(|(name, d)| d.probe_id.as_ref().map(|p| (name, p)))
            .collect();
        match sharing.as_slice() {
            [(name, probe)] => (
                Some((*probe).clone()),
                Some(format!("debuggers.{name}.probe_id")),
            ),
            _ => (None, None),
        }
    } else {
        (None, None)
    };
    if serial.is_none() && port.vid.is_none() && port.pid.is_none() {
        return None;
    }
    Some(Expected {
        serial,
        from,
        vid: port.vid,
        pid: port.pid,
    })
}

/// [`verify`] against this host's ports as they are now: the check every opener of a configured port
/// (a COM session, a flash capture, esptool's port) makes just before it opens.
pub fn verify_on_host(
    tool: &str,
    port_id: &str,
    device: &str,
    expectation: Option<&Expected>,
) -> Result<Value, Box<Outcome>> {
    verify(tool, port_id, device, expectation, || {
        ahil_drivers::serial::enumerate().map(|(ports, _)| ports)
    })
}

/// The `identity` object for a confirmed or undeclared port, or the refusal for any other verdict.
/// `host` is the enumeration; it is only consulted when the entry declares an expectation.
pub fn verify(
    tool: &str,
    port_id: &str,
    device: &str,
    expectation: Option<&Expected>,
    host: impl FnOnce() -> Result<Vec<HostPort>, SerialError>,
) -> Result<Value, Box<Outcome>> {
    let Some(expected) = expectation else {
        let mut doc = json!({
            "device": device,
            "status": "not_declared",
            "summary": "The entry declares no serial number or USB ids, so the attached adapter was not checked.",
        });
        if !device.starts_with(ahil_config::SERIAL_BY_ID_PREFIX) {
            doc["warning"] = json!(
                "The kernel device name can move to another adapter on replug; prefer a /dev/serial/by-id name or a serial_number."
            );
        }
        return Ok(doc);
    };
    let mut identity = Map::new();
    identity.insert("device".into(), json!(device));
    insert_some(
        &mut identity,
        "expected_serial_number",
        expected.serial.as_ref(),
    );
    insert_some(&mut identity, "expected_from", expected.from.as_ref());
    insert_some(&mut identity, "expected_vid", expected.vid.as_ref());
    insert_some(&mut identity, "expected_pid", expected.pid.as_ref());
    let finding = match host() {
        Ok(ports) => judge(expected, device, &ports, &mut identity),
        Err(err) => {
            // The status leads the error, as it always has (the map keeps insertion order).
            identity.insert("status".into(), json!(Finding::BackendUnavailable.status()));
            identity.insert("backend_error".into(), json!(err.to_string()));
            Some(Finding::BackendUnavailable)
        }
    };
    let Some(finding) = finding else {
        identity.insert("status".into(), json!("confirmed"));
        return Ok(Value::Object(identity));
    };
    identity.insert("status".into(), json!(finding.status()));
    Err(refusal(tool, port_id, finding, identity))
}

/// Why a declared port was not confirmed: one variant per way the check can end.
#[derive(Clone, Copy)]
enum Finding {
    BackendUnavailable,
    NotEnumerated,
    SerialUnknown,
    OtherSerial,
    UsbIdsUnknown,
    OtherUsbIds,
}

impl Finding {
    /// Whether the host showed another adapter than the entry names (rather than too little to tell).
    fn is_mismatch(self) -> bool {
        matches!(self, Self::OtherSerial | Self::OtherUsbIds)
    }

    /// The identity record's `status`.
    fn status(self) -> &'static str {
        match self {
            Self::BackendUnavailable => "backend_unavailable",
            Self::NotEnumerated => "port_not_enumerated",
            Self::SerialUnknown => "serial_unknown",
            Self::UsbIdsUnknown => "usb_ids_unknown",
            Self::OtherSerial | Self::OtherUsbIds => "mismatch",
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Self::BackendUnavailable => {
                "The host's serial ports could not be listed, so the adapter's identity is unknown."
            }
            Self::NotEnumerated => {
                "The configured device is not among the host's serial ports, so its identity cannot be checked."
            }
            Self::SerialUnknown => {
                "The host reports no serial number for the configured device, so it cannot be matched."
            }
            Self::OtherSerial => {
                "The adapter on the configured device has another serial number than the entry names."
            }
            Self::UsbIdsUnknown => {
                "The host reports no USB ids for the configured device, so they cannot be matched."
            }
            Self::OtherUsbIds => {
                "The adapter on the configured device has other USB ids than the entry names."
            }
        }
    }
}

/// Compares the host's adapter on `device` with the expectation, recording what it found in
/// `identity`; `None` when everything declared matches.
fn judge(
    expected: &Expected,
    device: &str,
    ports: &[HostPort],
    identity: &mut Map<String, Value>,
) -> Option<Finding> {
    let matching: Vec<&HostPort> = ports
        .iter()
        .filter(|p| {
            same_device(&p.device, device)
                || p.stable_device
                    .as_deref()
                    .is_some_and(|s| same_device(s, device))
        })
        .collect();
    let [found] = matching.as_slice() else {
        return Some(Finding::NotEnumerated);
    };
    insert_some(
        identity,
        "found_serial_number",
        found.serial_number.as_ref(),
    );
    insert_some(identity, "found_vid", found.vid.as_ref());
    insert_some(identity, "found_pid", found.pid.as_ref());
    if let Some(want) = &expected.serial {
        let Some(have) = &found.serial_number else {
            return Some(Finding::SerialUnknown);
        };
        if !want.eq_ignore_ascii_case(have) {
            if let Some(elsewhere) = ports.iter().find(|p| {
                p.serial_number
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(want))
            }) {
                identity.insert("expected_device".into(), json!(elsewhere.device));
            }
            return Some(Finding::OtherSerial);
        }
    }
    if expected.vid.is_some() || expected.pid.is_some() {
        if found.vid.is_none() || found.pid.is_none() {
            return Some(Finding::UsbIdsUnknown);
        }
        if expected.vid.is_some_and(|v| Some(v) != found.vid)
            || expected.pid.is_some_and(|p| Some(p) != found.pid)
        {
            return Some(Finding::OtherUsbIds);
        }
    }
    None
}

fn insert_some<T: serde::Serialize>(doc: &mut Map<String, Value>, key: &str, value: Option<&T>) {
    if let Some(value) = value {
        doc.insert(key.into(), json!(value));
    }
}

fn refusal(
    tool: &str,
    port_id: &str,
    finding: Finding,
    identity: Map<String, Value>,
) -> Box<Outcome> {
    let device = identity.get("device").cloned().unwrap_or(Value::Null);
    let error_type = if finding.is_mismatch() {
        ErrorType::ComPortIdentityMismatch
    } else {
        ErrorType::ComPortIdentityUnverified
    };
    let mut outcome = Outcome::refused(tool, error_type, finding.summary())
        .with("port_id", port_id)
        .with("configured_device", device)
        .with("identity", Value::Object(identity))
        .not_contacted();
    if finding.is_mismatch() {
        outcome.likely_causes = vec![
            "another board's adapter now has this device name".into(),
            "the configured serial number or USB ids are out of date".into(),
        ];
        outcome.remediation = vec![
            "Call com_ports_list to see which adapter carries the expected serial number.".into(),
            "The operator corrects the entry's device (prefer /dev/serial/by-id) or its serial_number."
                .into(),
        ];
        outcome.do_not =
            vec!["Do not open the device another way: it may belong to another bench.".into()];
    } else {
        outcome.remediation = vec![
            "Check that the adapter is plugged in, then call com_ports_list to see what the host reports.".into(),
        ];
    }
    Box::new(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(device: &str, serial: Option<&str>, vid: u16, pid: u16) -> HostPort {
        HostPort {
            device: device.into(),
            kind: "usb",
            stable_device: None,
            serial_number: serial.map(Into::into),
            vid: Some(vid),
            pid: Some(pid),
            manufacturer: None,
            product: None,
        }
    }

    fn expect_serial(serial: &str) -> Expected {
        Expected {
            serial: Some(serial.into()),
            from: Some("com_ports.uart0.serial_number".into()),
            vid: None,
            pid: None,
        }
    }

    #[test]
    fn another_serial_number_on_the_device_is_an_identity_mismatch_naming_where_the_right_one_is() {
        let ports = vec![
            host("/dev/ttyACM0", Some("OTHER"), 0x0483, 0x374b),
            host("/dev/ttyACM1", Some("abc123"), 0x0483, 0x374b),
        ];
        let refused = verify(
            "com_session_start",
            "uart0",
            "/dev/ttyACM0",
            Some(&expect_serial("ABC123")),
            || Ok(ports),
        )
        .expect_err("mismatch");
        assert_eq!(
            refused.error_type.as_deref(),
            Some("com_port_identity_mismatch")
        );
        assert_eq!(
            refused.detail("identity").expect("identity")["expected_device"],
            "/dev/ttyACM1"
        );
        assert_eq!(refused.retry_safe, Some(true));
    }

    #[test]
    fn the_right_serial_number_and_ids_confirm_the_port() {
        let ports = vec![host("/dev/ttyACM0", Some("ABC123"), 0x0483, 0x374b)];
        let mut want = expect_serial("abc123");
        want.vid = Some(0x0483);
        let identity = verify(
            "com_session_start",
            "uart0",
            "/dev/ttyACM0",
            Some(&want),
            || Ok(ports),
        )
        .expect("confirmed");
        assert_eq!(identity["status"], "confirmed");
    }

    #[test]
    fn other_usb_ids_are_a_mismatch_and_a_missing_device_is_unverified() {
        let want = Expected {
            serial: None,
            from: None,
            vid: Some(0x1234),
            pid: None,
        };
        let ports = vec![host("/dev/ttyACM0", None, 0x0483, 0x374b)];
        let refused = verify(
            "com_session_start",
            "uart0",
            "/dev/ttyACM0",
            Some(&want),
            || Ok(ports.clone()),
        )
        .expect_err("ids differ");
        assert_eq!(
            refused.error_type.as_deref(),
            Some("com_port_identity_mismatch")
        );
        let refused = verify(
            "com_session_start",
            "uart0",
            "/dev/ttyACM9",
            Some(&want),
            || Ok(ports),
        )
        .expect_err("absent");
        assert_eq!(
            refused.error_type.as_deref(),
            Some("com_port_identity_unverified")
        );
    }

    #[test]
    fn an_entry_without_expectations_is_not_checked_and_says_so() {
        let identity = verify("com_session_start", "uart0", "/dev/pts/3", None, || {
            panic!("no enumeration without an expectation")
        })
        .expect("not declared");
        assert_eq!(identity["status"], "not_declared");
        assert!(identity.get("warning").is_some());
    }
}
