//! Whether this account may open a configured serial port's node, asked of the kernel and opening
//! nothing: an account outside the device's group is otherwise found out by the first hardware
//! call. The reference's `device_access` check, in its shape.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use rustix::fs::Access;
use serde_json::{Value, json};

/// The verdict on `device`'s node; `None` where there is nothing to ask (a relative name, a node
/// that is not there or is not a character device).
pub(crate) fn port_access(device: &str) -> Option<Value> {
    let named = Path::new(device);
    if !named.is_absolute() {
        return None;
    }
    let node = std::fs::canonicalize(named).ok()?;
    let meta = std::fs::metadata(&node).ok()?;
    if !meta.file_type().is_char_device() {
        return None;
    }
    let shown = node.display().to_string();
    let link = (node != named).then(|| device.to_owned());
    let what = match &link {
        Some(link) => format!("the serial port {shown} (the node behind {link})"),
        None => format!("the serial port {shown}"),
    };
    let mode = file_mode(meta.mode());
    let owner = name_of("/etc/passwd", meta.uid()).unwrap_or_else(|| meta.uid().to_string());
    let group = name_of("/etc/group", meta.gid()).unwrap_or_else(|| meta.gid().to_string());
    let may_open = rustix::fs::access(&node, Access::READ_OK | Access::WRITE_OK).is_ok();
    let mut verdict = json!({
        "ok": may_open,
        "tool": "device_access",
        "node": shown,
        "mode": mode,
        "owner": owner,
        "group": group,
    });
    if let Some(link) = link {
        verdict["link"] = json!(link);
    }
    if may_open {
        verdict["summary"] = json!(format!(
            "This account may open {what} for reading and writing ({mode} {owner}:{group})."
        ));
    } else {
        verdict["error_type"] = json!(crate::ErrorType::DeviceAccessDenied.as_str());
        verdict["summary"] = json!(format!(
            "This account may not open {what} for reading and writing: it is {mode} {owner}:{group}. Add this account to group {group} (then log in again), or have the node's udev rule grant it."
        ));
    }
    Some(verdict)
}

/// `ls -l`'s mode string of a character device.
fn file_mode(mode: u32) -> String {
    let mut text = String::from("c");
    for shift in [6u32, 3, 0] {
        let bits = (mode >> shift) & 0o7;
        text.push(if bits & 0o4 != 0 { 'r' } else { '-' });
        text.push(if bits & 0o2 != 0 { 'w' } else { '-' });
        text.push(if bits & 0o1 != 0 { 'x' } else { '-' });
    }
    text
}

/// The name of `id` in a `name:x:id:...` database (`/etc/passwd`, `/etc/group`).
fn name_of(database: &str, id: u32) -> Option<String> {
    let text = std::fs::read_to_string(database).ok()?;
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id_field = fields.nth(1)?;
        (id_field.parse::<u32>().ok()? == id).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_reads_as_ls_prints_it() {
        assert_eq!(file_mode(0o620), "crw--w----");
        assert_eq!(file_mode(0o666), "crw-rw-rw-");
    }

    #[test]
    fn a_name_that_is_not_a_device_node_is_not_asked_about() {
        assert!(port_access("ttyUSB0").is_none());
        assert!(port_access("/nonexistent/ttyUSB9").is_none());
        assert!(port_access("/etc/passwd").is_none());
    }
}
