//! The keys the host gives a configured device, beside the one its entry gives it.
//!
//! One serial port answers to many names: a `/dev/serial/by-id` link, a symlink someone made, the
//! kernel node they lead to. A key taken only from the configured spelling lets two owners that
//! spelled one port two ways each believe they hold it. So a port is also held under what the host
//! resolves its name to (the node, read through every link exactly as the reference's
//! `os.path.realpath` reads it, so both implementations land on one lock file) and under the node's
//! device number, which no spelling changes. These keys are read afresh at every claim and are held,
//! never declared: a run's declaration stays a pure function of the configuration, while what it
//! holds follows the node a link names now.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use ahil_config::{ComPort, Config};

/// Links followed before a name is taken as written: as many as the kernel follows (`ELOOP`).
const MAX_LINK_HOPS: usize = 40;

/// The name the host itself gives a configured device name: an absolute name resolved through its
/// links, not strictly (a link whose end is not there yet resolves as far as it goes, as Python's
/// non-strict `realpath` does); a relative name or a URL handler (`socket://…`) left as written.
pub fn host_device_name(device: &str) -> String {
    let path = Path::new(device);
    if !path.is_absolute() || device.contains('\0') {
        return device.to_owned();
    }
    let resolved = fs::canonicalize(path).unwrap_or_else(|_| resolve_leniently(path));
    resolved.to_string_lossy().into_owned()
}

/// Walks `path` component by component, replacing each link by its target, and keeps a component
/// that cannot be read as a link as written.
fn resolve_leniently(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    let mut pending: VecDeque<OsString> = names(path).into();
    let mut hops = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&name);
        match fs::read_link(&candidate) {
            Ok(target) if hops < MAX_LINK_HOPS => {
                hops += 1;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for part in names(&target).into_iter().rev() {
                    pending.push_front(part);
                }
            }
            _ => out = candidate,
        }
    }
    out
}

fn names(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// The node every bound port's device name leads to, read once: a call's claim and its open use
/// one reading, so a link moved in between cannot make it open a node it did not lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nodes(BTreeMap<String, String>);

impl Nodes {
    /// Resolves every configured port's device name now.
    pub fn resolve(config: &Config) -> Self {
        Self(
            config
                .com_ports
                .values()
                .filter_map(|p| p.device.as_deref())
                .filter(|d| !d.is_empty())
                .map(|d| (d.to_owned(), host_device_name(d)))
                .collect(),
        )
    }

    /// The node `device` led to when these were read (resolved now if it was not among them).
    pub fn of(&self, device: &str) -> String {
        self.0
            .get(device)
            .cloned()
            .unwrap_or_else(|| host_device_name(device))
    }
}

/// The keys of a resolved `node` (what [`host_device_name`] gave): its name, and its device number
/// when it is a character device.
pub fn node_keys(node: &str) -> Vec<String> {
    let mut keys = vec![format!("com:{node}")];
    if Path::new(node).is_absolute()
        && let Ok(meta) = fs::metadata(node)
        && meta.file_type().is_char_device()
    {
        let rdev = meta.rdev();
        keys.push(format!(
            "com:char:{}:{}",
            libc::major(rdev),
            libc::minor(rdev)
        ));
    }
    keys
}

/// The keys `port` (entry `name`) is held under beside its configured `lock_key`: its device as
/// configured (so an entry known by its adapter's serial still collides with one naming the same
/// device), the node that name resolves to, and that node's device number. An unbound entry names
/// no device and has none.
pub fn port_host_keys(port: &ComPort, name: &str, nodes: &Nodes) -> Vec<String> {
    let Some(device) = port.device.as_deref().filter(|d| !d.is_empty()) else {
        return Vec::new();
    };
    let mut keys = vec![format!("com:{device}")];
    keys.extend(node_keys(&nodes.of(device)));
    let primary = port.lock_key(name);
    keys.retain(|k| k != &primary);
    keys.sort();
    keys.dedup();
    keys
}

/// The host keys of every configured device behind `keys` (claimed configured keys), minus those
/// already in `keys`: what a claim takes beyond its declaration.
pub fn host_keys(config: &Config, keys: &[String], nodes: &Nodes) -> Vec<String> {
    let mut extra: Vec<String> = config
        .com_ports
        .iter()
        .filter(|(name, port)| keys.contains(&port.lock_key(name)))
        .flat_map(|(name, port)| port_host_keys(port, name, nodes))
        .filter(|k| !keys.contains(k))
        .collect();
    extra.sort();
    extra.dedup();
    extra
}

/// The configured key a host key stands beside (`com:<link>` for the node it leads to), so a
/// person reading a hold on a node learns which entry it is.
pub fn configured_key_for(config: &Config, key: &str, nodes: &Nodes) -> Option<String> {
    config
        .com_ports
        .iter()
        .find(|(name, port)| port_host_keys(port, name, nodes).iter().any(|k| k == key))
        .map(|(name, port)| port.lock_key(name))
}

/// `keys` and their host keys together, configured ones first.
pub fn with_host_keys(config: &Config, keys: &[String], nodes: &Nodes) -> Vec<String> {
    let mut all = keys.to_vec();
    all.extend(host_keys(config, keys, nodes));
    all
}

#[cfg(test)]
#[path = "device_keys_tests.rs"]
mod tests;
