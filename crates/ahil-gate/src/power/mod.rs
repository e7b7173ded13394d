//! What the power-supply tools share: the configured supply a call names, its effective limits,
//! the identity a unit must report, and the JSON a reading becomes.
//!
//! Limits belong to the operator alone. A write needs both the supply-wide limit and the
//! channel's own; the effective limit is the lower of the two, and a missing one refuses every
//! write on that channel (the model's range never stands in for it).

pub mod models;

use ahil_config::{Config, PowerSupply};
use ahil_drivers::psu::{Fixed, Identity, Quantity, Reading};
use serde_json::{Map, Value, json};

pub use models::{Model, model_of};

/// The placeholder a unit's serial becomes in every result.
pub const MASKED: &str = crate::audit::redact::MASK;

/// The effective limit of one quantity on one channel: `Ok(limit)` or the keys that are missing.
pub fn effective_limit(
    id: &str,
    entry: &PowerSupply,
    channel: u8,
    quantity: Quantity,
) -> Result<f64, Vec<String>> {
    let own = entry.channels.get(&channel.to_string());
    let (wide, narrow) = match quantity {
        Quantity::Voltage => (entry.voltage_limit_v, own.and_then(|c| c.voltage_limit_v)),
        Quantity::Current => (entry.current_limit_a, own.and_then(|c| c.current_limit_a)),
    };
    let key = match quantity {
        Quantity::Voltage => "voltage_limit_v",
        Quantity::Current => "current_limit_a",
    };
    let mut missing = Vec::new();
    if wide.is_none() {
        missing.push(format!("power_supplies.{id}.{key}"));
    }
    if narrow.is_none() {
        missing.push(format!("power_supplies.{id}.channels.{channel}.{key}"));
    }
    match (wide, narrow) {
        (Some(w), Some(n)) => Ok(w.min(n)),
        _ => Err(missing),
    }
}

/// Every limit key a write on `channel` lacks, sorted; empty when writes may proceed.
pub fn missing_limits(id: &str, entry: &PowerSupply, channel: u8) -> Vec<String> {
    let mut missing: Vec<String> = [Quantity::Voltage, Quantity::Current]
        .into_iter()
        .filter_map(|q| effective_limit(id, entry, channel, q).err())
        .flatten()
        .collect();
    missing.sort();
    missing
}

/// A limit as the operator wrote it (`5.0`, `1.5`).
pub fn render_limit(limit: f64) -> String {
    format!("{limit:?}")
}

/// `{"<channel>": {"voltage_v": "5.0", "current_a": "1.0"}}` with `null` where a limit is missing.
pub fn limits_doc(id: &str, entry: &PowerSupply, channels: &[u8]) -> Value {
    let mut doc = Map::new();
    for &channel in channels {
        let one = |q| {
            effective_limit(id, entry, channel, q)
                .ok()
                .map_or(Value::Null, |l| json!(render_limit(l)))
        };
        doc.insert(
            channel.to_string(),
            json!({"voltage_v": one(Quantity::Voltage), "current_a": one(Quantity::Current)}),
        );
    }
    Value::Object(doc)
}

/// The protection block of a model that cannot arm over-voltage or over-current protection.
pub fn protection_doc(model: &Model, channels: &[u8]) -> Value {
    let mut doc = Map::new();
    let support = if model.capabilities.protection {
        "supported"
    } else {
        "unsupported"
    };
    let one = json!({"support": support, "armed": null, "threshold": null, "threshold_read": null});
    for &channel in channels {
        doc.insert(
            channel.to_string(),
            json!({"ovp": one.clone(), "ocp": one.clone()}),
        );
    }
    Value::Object(doc)
}

/// One channel as read, with the time it was read.
pub fn reading_doc(reading: &Reading, read_at: &str) -> Value {
    json!({
        "channel": reading.channel,
        "set_voltage_v": reading.set_voltage.render(),
        "set_current_a": reading.set_current.render(),
        "measured_voltage_v": reading.measured_voltage.render(),
        "measured_current_a": reading.measured_current.render(),
        "output_on": reading.output_on,
        // The RS-3005P's status bits for regulation and protection are not trusted: its firmware
        // versions disagree on them, so they are reported as unreadable.
        "regulation": null,
        "protection_tripped": null,
        "ovp_threshold_v": null,
        "ocp_threshold_a": null,
        "read_at": read_at,
    })
}

/// The last output state a call read, or nulls when it read none.
pub fn last_known_output(channel: Option<u8>, last: Option<(&Reading, &str)>) -> Value {
    match last {
        Some((reading, at)) => {
            json!({"channel": reading.channel, "output_on": reading.output_on, "read_at": at})
        }
        None => json!({"channel": channel, "output_on": null, "read_at": null}),
    }
}

/// Why a unit is refused before anything but `*IDN?` is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityVerdict {
    Confirmed,
    /// A model or firmware this build has no verified record of.
    Unknown,
    /// Another unit of the model: its serial is not the configured one.
    Mismatch,
}

/// Checks what the unit reported against the model's verified records and the configured serial.
pub fn verify_identity(model: &Model, entry: &PowerSupply, identity: &Identity) -> IdentityVerdict {
    let known = identity
        .model
        .as_deref()
        .zip(identity.firmware.as_deref())
        .is_some_and(|(m, f)| model.verified.contains(&(m, f)));
    if !known {
        return IdentityVerdict::Unknown;
    }
    match (&entry.idn_serial, &identity.serial) {
        (Some(expected), Some(reported)) if expected == reported => IdentityVerdict::Confirmed,
        (Some(_), _) => IdentityVerdict::Mismatch,
        // Without an idn_serial the port's own USB serial (checked before opening) names the unit.
        (None, _) => IdentityVerdict::Confirmed,
    }
}

/// The configured unit serials, which no result or log may show.
pub fn configured_serials(config: &Config) -> Vec<String> {
    config
        .power_supplies
        .values()
        .filter_map(|s| s.idn_serial.clone())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `text` with every one of `serials` replaced by the mask.
pub fn mask_serials(text: &str, serials: &[String]) -> String {
    serials
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_owned(), |out, serial| {
            out.replace(serial.as_str(), MASKED)
        })
}

/// The exact value of a requested set point on the model's grid, or `None` when it lies between
/// two steps.
pub fn on_grid(model: &Model, quantity: Quantity, value: f64) -> Option<Fixed> {
    let places = match quantity {
        Quantity::Voltage => model.capabilities.voltage_places,
        Quantity::Current => model.capabilities.current_places,
    };
    Fixed::from_f64(value, places)
}

#[cfg(test)]
mod tests {
    use ahil_config::ChannelLimits;

    use super::*;

    fn entry(wide: Option<f64>, channel: Option<f64>) -> PowerSupply {
        let mut entry = PowerSupply {
            voltage_limit_v: wide,
            current_limit_a: Some(1.0),
            ..PowerSupply::default()
        };
        entry.channels.insert(
            "1".into(),
            ChannelLimits {
                voltage_limit_v: channel,
                current_limit_a: Some(0.5),
            },
        );
        entry
    }

    #[test]
    fn the_effective_limit_is_the_lower_of_the_supply_and_channel_limits() {
        let e = entry(Some(5.5), Some(5.0));
        assert_eq!(effective_limit("b", &e, 1, Quantity::Voltage), Ok(5.0));
        assert_eq!(effective_limit("b", &e, 1, Quantity::Current), Ok(0.5));
        let e = entry(Some(3.3), Some(5.0));
        assert_eq!(effective_limit("b", &e, 1, Quantity::Voltage), Ok(3.3));
    }

    #[test]
    fn a_missing_limit_at_either_level_refuses_writes_and_is_named() {
        let e = entry(None, Some(5.0));
        assert_eq!(
            missing_limits("b", &e, 1),
            ["power_supplies.b.voltage_limit_v"]
        );
        let e = entry(Some(5.0), None);
        assert_eq!(
            missing_limits("b", &e, 1),
            ["power_supplies.b.channels.1.voltage_limit_v"]
        );
        assert!(missing_limits("b", &entry(Some(5.0), Some(5.0)), 1).is_empty());
    }

    #[test]
    fn limits_render_as_the_operator_wrote_them() {
        assert_eq!(render_limit(5.0), "5.0");
        assert_eq!(render_limit(1.5), "1.5");
        assert_eq!(render_limit(0.25), "0.25");
    }

    #[test]
    fn an_unverified_firmware_or_another_serial_is_refused() {
        let model = model_of("rs3005p").expect("a known model");
        let mut e = entry(Some(5.0), Some(5.0));
        e.idn_serial = Some("0001".into());
        let id = |m: &str, f: &str, s: &str| Identity {
            model: Some(m.into()),
            firmware: Some(f.into()),
            serial: Some(s.into()),
        };
        assert_eq!(
            verify_identity(model, &e, &id("RS-3005P", "V6.9", "0001")),
            IdentityVerdict::Confirmed
        );
        assert_eq!(
            verify_identity(model, &e, &id("RS-3005P", "V6.9", "0002")),
            IdentityVerdict::Mismatch
        );
        assert_eq!(
            verify_identity(model, &e, &id("RS-3005P", "V1.0", "0001")),
            IdentityVerdict::Unknown
        );
    }

    #[test]
    fn serials_are_masked_wherever_they_appear() {
        let mut config = Config::default();
        let mut e = entry(None, None);
        e.idn_serial = Some("03682957".into());
        config.power_supplies.insert("b".into(), e);
        let serials = configured_serials(&config);
        assert_eq!(
            mask_serials("SN:03682957 and SN:777", &serials),
            "SN:[redacted] and SN:777"
        );
    }
}
