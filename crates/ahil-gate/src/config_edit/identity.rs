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
/// `/dev/serial/by-id` link for the `/dev/ttyACM0` it points at) is the same device, unless a link
/// on its way lies in `workspace`: the agent could point that link elsewhere afterwards.
pub fn redirected(section: &str, before: &Value, after: &Value, workspace: &Path) -> bool {
    identity_fields(section).iter().any(|field| {
        let (was, now) = (field_value(before, field), field_value(after, field));
        match (was, now) {
            (None, _) => false,
            (Some(was), Some(now)) if was == now => false,
            (Some(Value::String(was)), Some(Value::String(now))) if *field == "device" => {
                !same_node(was, now, workspace)
            }
            _ => true,
        }
    })
}

fn field_value<'v>(entry: &'v Value, field: &str) -> Option<&'v Value> {
    entry.get(field).filter(|v| !v.is_null())
}

/// Two spellings of one device node: both resolve, to the same file, and the new one does not go
/// through the workspace.
fn same_node(a: &str, b: &str, workspace: &Path) -> bool {
    if through(Path::new(b), workspace) {
        return false;
    }
    match (Path::new(a).canonicalize(), Path::new(b).canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether `path`, or a link it passes through, lies inside `workspace`.
fn through(path: &Path, workspace: &Path) -> bool {
    let ws = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let mut here = path.to_path_buf();
    // The kernel's own bound on a chain of links.
    for _ in 0..40 {
        let (Some(parent), Some(name)) = (here.parent(), here.file_name()) else {
            return false;
        };
        let Ok(parent) = parent.canonicalize() else {
            return false;
        };
        let at = parent.join(name);
        if at.starts_with(&ws) || here.starts_with(workspace) {
            return true;
        }
        match std::fs::read_link(&at) {
            Ok(target) => here = parent.join(target),
            Err(_) => return false,
        }
    }
    true
}

/// The workspace a document binds (`workspace_root`); an empty path if it names none.
pub fn workspace_of(document: &Value) -> std::path::PathBuf {
    document
        .get("workspace_root")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .into()
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

    fn port(p: &Path) -> Value {
        json!({"device": p.display().to_string(), "baudrate": 115_200})
    }

    /// A device node `a`, another `b`, a workspace, and a link to `a` outside it.
    struct Nodes {
        _dir: tempfile::TempDir,
        a: std::path::PathBuf,
        b: std::path::PathBuf,
        ws: std::path::PathBuf,
        link: std::path::PathBuf,
    }

    fn nodes() -> Nodes {
        let dir = tempfile::tempdir().expect("temp dir");
        let (a, b, ws) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("ws"),
        );
        std::fs::write(&a, "").expect("a");
        std::fs::write(&b, "").expect("b");
        std::fs::create_dir(&ws).expect("ws");
        let link = dir.path().join("by-id");
        std::os::unix::fs::symlink(&a, &link).expect("link");
        Nodes {
            _dir: dir,
            a,
            b,
            ws,
            link,
        }
    }

    #[test]
    fn a_port_pointed_at_another_node_is_another_device() {
        let n = nodes();
        assert!(redirected("com_ports", &port(&n.a), &port(&n.b), &n.ws));
        assert!(
            !redirected("com_ports", &port(&n.a), &port(&n.link), &n.ws),
            "a stable link to the same node is the same device"
        );
        let mut faster = port(&n.a);
        faster["baudrate"] = json!(9600);
        assert!(!redirected("com_ports", &port(&n.a), &faster, &n.ws));
    }

    /// The agent writes the workspace: a link there to the declared node could be pointed at
    /// another device after the grant was kept.
    #[test]
    fn a_link_through_the_workspace_is_another_device_even_to_the_same_node() {
        let n = nodes();
        let inside = n.ws.join("uart");
        std::os::unix::fs::symlink(&n.a, &inside).expect("link in the workspace");
        assert!(redirected("com_ports", &port(&n.a), &port(&inside), &n.ws));
        let outside = n.link.with_file_name("via-ws");
        std::os::unix::fs::symlink(&inside, &outside).expect("link to the link");
        assert!(
            redirected("com_ports", &port(&n.a), &port(&outside), &n.ws),
            "a chain that passes through the workspace"
        );
    }

    #[test]
    fn a_changed_or_dropped_identity_is_another_device_and_a_new_one_narrows() {
        let ws = Path::new("/nonexistent-ws");
        let probe = |id: Value| json!({"type": "openocd", "probe_id": id});
        let moved = |a: &Value, b: &Value| redirected("debuggers", a, b, ws);
        assert!(moved(&probe(json!("A")), &probe(json!("B"))));
        assert!(moved(&probe(json!("A")), &probe(Value::Null)));
        assert!(!moved(&probe(Value::Null), &probe(json!("A"))));
        let mut emulated = probe(json!("A"));
        emulated["type"] = json!("qemu");
        assert!(moved(&probe(json!("A")), &emulated));
        let bus = |channel: &str| json!({"adapter": "socketcan", "channel": channel});
        assert!(redirected("can_buses", &bus("can0"), &bus("can1"), ws));
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
