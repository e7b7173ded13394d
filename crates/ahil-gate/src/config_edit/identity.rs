//! Which physical device an entry names. The operator granted an entry for the device it named when
//! they granted it; a write that makes the entry name another device must not carry those grants
//! over, or an agent could point a granted port at a device nobody declared.

use std::path::Path;

use serde_json::Value;

/// The fields that say which device an entry of `section` is.
fn identity_fields(section: &str) -> &'static [&'static str] {
    match section {
        "debuggers" => &["type", "probe_id", "resource_id", "machine", "board_dir"],
        "com_ports" => &["device", "serial_number", "vid", "pid", "resource_id"],
        "can_buses" => &["adapter", "channel", "resource_id"],
        "power_supplies" => &["type", "com_port", "idn_serial"],
        _ => &[],
    }
}

/// Whether `after` names another device than `before` (both one entry of `section`, in the same
/// form: two documents, or two serialised configurations).
///
/// A field that was unset and is now set only narrows which device matches, so it keeps the
/// device; a changed or removed one does not. A device path that resolves to the same node (a
/// `/dev/serial/by-id` link for the `/dev/ttyACM0` it points at) is the same device.
pub fn redirected(section: &str, before: &Value, after: &Value) -> bool {
    identity_fields(section).iter().any(|field| {
        let (was, now) = (field_value(before, field), field_value(after, field));
        match (was, now) {
            (None, _) => false,
            (Some(was), Some(now)) if was == now => false,
            (Some(Value::String(was)), Some(Value::String(now))) if *field == "device" => {
                !same_node(was, now)
            }
            _ => true,
        }
    })
}

fn field_value<'v>(entry: &'v Value, field: &str) -> Option<&'v Value> {
    entry.get(field).filter(|v| !v.is_null())
}

/// Two spellings of one device node: both resolve, to the same file.
fn same_node(a: &str, b: &str) -> bool {
    match (Path::new(a).canonicalize(), Path::new(b).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Sets every grant of `entry` (and of its shares) to false.
pub fn close_grants(entry: &mut Value) {
    let close = |block: Option<&mut Value>| {
        for flag in block
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            *flag = Value::Bool(false);
        }
    };
    close(entry.get_mut("permissions"));
    if let Some(shares) = entry.get_mut("shares").and_then(Value::as_object_mut) {
        for share in shares.values_mut() {
            close(share.get_mut("permissions"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_port_pointed_at_another_node_is_another_device() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "").expect("a");
        std::fs::write(&b, "").expect("b");
        let link = dir.path().join("by-id");
        std::os::unix::fs::symlink(&a, &link).expect("link");
        let port = |p: &Path| json!({"device": p.display().to_string(), "baudrate": 115_200});
        assert!(redirected("com_ports", &port(&a), &port(&b)));
        assert!(
            !redirected("com_ports", &port(&a), &port(&link)),
            "a stable link to the same node is the same device"
        );
        let mut faster = port(&a);
        faster["baudrate"] = json!(9600);
        assert!(!redirected("com_ports", &port(&a), &faster));
    }

    #[test]
    fn a_changed_or_dropped_identity_is_another_device_and_a_new_one_narrows() {
        let probe = |id: Value| json!({"type": "openocd", "probe_id": id});
        assert!(redirected(
            "debuggers",
            &probe(json!("A")),
            &probe(json!("B"))
        ));
        assert!(redirected(
            "debuggers",
            &probe(json!("A")),
            &probe(Value::Null)
        ));
        assert!(!redirected(
            "debuggers",
            &probe(Value::Null),
            &probe(json!("A"))
        ));
        let mut emulated = probe(json!("A"));
        emulated["type"] = json!("qemu");
        assert!(redirected("debuggers", &probe(json!("A")), &emulated));
        let bus = |channel: &str| json!({"adapter": "socketcan", "channel": channel});
        assert!(redirected("can_buses", &bus("can0"), &bus("can1")));
    }

    #[test]
    fn closing_an_entry_closes_its_shares_too() {
        let mut bus = json!({"permissions": {"allow_write": true},
            "shares": {"tester": {"permissions": {"allow_write": true}}}});
        close_grants(&mut bus);
        assert_eq!(bus["permissions"]["allow_write"], json!(false));
        assert_eq!(
            bus["shares"]["tester"]["permissions"]["allow_write"],
            json!(false)
        );
    }
}
