//! What the kernel says about a CAN interface, read from `ip -details -json link show dev <name>`.
//!
//! `ip` is taken from fixed system paths only: a `PATH` entry planted in the workspace must not be
//! able to answer "listen-only" for an interface that is not. The parse is a pure function so it is
//! tested on captured reports on machines whose kernel has no CAN support.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::CanError;
use crate::process::{Command, run};

/// Where `ip` may be; the first that exists is used.
pub const IP_PATHS: [&str; 4] = ["/sbin/ip", "/usr/sbin/ip", "/bin/ip", "/usr/bin/ip"];
const IP_DEADLINE: Duration = Duration::from_secs(5);

/// One interface as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkState {
    pub name: String,
    /// `linkinfo.info_kind`: `can` for a controller, `vcan` for a virtual bus.
    pub kind: Option<String>,
    /// The administrative UP flag.
    pub up: bool,
    pub operstate: Option<String>,
    /// `linkinfo.info_data.ctrlmode`, upper-cased (`LISTEN-ONLY`, `FD`, …).
    pub ctrlmode: Vec<String>,
}

impl LinkState {
    /// A CAN controller or a virtual CAN bus.
    pub fn is_can(&self) -> bool {
        matches!(self.kind.as_deref(), Some("can" | "vcan"))
    }

    /// A controller whose kernel driver has listen-only switched on (virtual buses have no controller,
    /// so they never qualify).
    pub fn listen_only(&self) -> bool {
        self.kind.as_deref() == Some("can") && self.ctrlmode.iter().any(|m| m == "LISTEN-ONLY")
    }

    /// The `link_state` detail of refusals.
    pub fn to_json(&self) -> Value {
        json!({
            "interface": self.name,
            "info_kind": self.kind,
            "up": self.up,
            "operstate": self.operstate,
            "ctrlmode": self.ctrlmode,
        })
    }
}

/// The first `ip` on the fixed list that exists.
pub fn ip_executable() -> Option<PathBuf> {
    IP_PATHS.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// Ask the kernel (through `ip`) about `name`.
pub fn read(ip: &Path, name: &str) -> Result<LinkState, CanError> {
    let finished = run(&Command::new(ip)
        .args(["-details", "-json", "link", "show", "dev", name])
        .deadline(IP_DEADLINE))
    .map_err(|e| CanError::BackendNotAvailable(format!("`ip` could not be run: {e}")))?;
    parse(
        name,
        finished.success(),
        &finished.stdout_text(),
        &finished.stderr_text(),
    )
}

/// The state of `name` from `ip`'s exit status and output.
pub fn parse(name: &str, success: bool, stdout: &str, stderr: &str) -> Result<LinkState, CanError> {
    if !success {
        if stderr.contains("does not exist") || stderr.contains("Cannot find device") {
            return Err(CanError::InterfaceNotFound(format!(
                "The kernel has no network interface `{name}`."
            )));
        }
        return Err(CanError::BackendNotAvailable(format!(
            "`ip link show` failed for `{name}`: {}",
            stderr.trim()
        )));
    }
    let report: Value = serde_json::from_str(stdout).map_err(|e| {
        CanError::BackendNotAvailable(format!("`ip` printed no JSON link report: {e}"))
    })?;
    let links = report.as_array().map(Vec::as_slice).unwrap_or_default();
    let [link] = links else {
        return Err(CanError::InterfaceNotFound(format!(
            "The kernel reported {} links for `{name}`, not one.",
            links.len()
        )));
    };
    if link.get("ifname").and_then(Value::as_str) != Some(name) {
        return Err(CanError::InterfaceNotFound(format!(
            "The kernel's report is not about `{name}`."
        )));
    }
    let info = link.get("linkinfo");
    let strings = |value: Option<&Value>| -> Vec<String> {
        match value {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_ascii_uppercase)
                .collect(),
            Some(Value::String(one)) => vec![one.to_ascii_uppercase()],
            _ => Vec::new(),
        }
    };
    Ok(LinkState {
        name: name.to_owned(),
        kind: info
            .and_then(|i| i.get("info_kind"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        up: strings(link.get("flags")).iter().any(|f| f == "UP"),
        operstate: link
            .get("operstate")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ctrlmode: strings(
            info.and_then(|i| i.get("info_data"))
                .and_then(|d| d.get("ctrlmode")),
        ),
    })
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
