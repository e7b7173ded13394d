//! Bench ownership: who may drive which physical device right now. Machine-wide device locks live
//! here; leases, runs and incidents build on them.

pub mod coordination;
pub mod device_keys;
pub mod device_lock;
pub mod kernel_locks;
pub mod owner;
pub mod places;
pub mod reasons;
pub mod runs;
pub mod session_locks;

pub use device_lock::{Acquired, Busy, DeviceLocks, LockRoot};
pub use kernel_locks::KernelLocks;
pub use owner::Owner;
pub use runs::RunSlot;
pub use session_locks::SessionLocks;

use crate::ErrorType;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::envelope::Outcome;

/// The machine-wide side of a call's claim: either borrowed from the open run, or an implicit
/// single-call run whose devices are released when this is dropped.
pub struct DeviceHold {
    ownership: Option<Arc<Ownership>>,
    /// Every key this hold took (and gives back when dropped).
    keys: Vec<String>,
    /// What the call declared, for people: the configured keys. `None` when the call borrowed its
    /// declared devices from the open run.
    declared: Option<Vec<String>>,
    started_at: String,
}

impl DeviceHold {
    fn none() -> Self {
        Self {
            ownership: None,
            keys: Vec::new(),
            declared: None,
            started_at: String::new(),
        }
    }

    /// The `run` object results carry when the call ran as its own implicit run.
    pub fn implicit_run(&self, tool: &str) -> Option<Value> {
        self.declared.as_ref().map(|declared| {
            json!({
                "implicit": true,
                "declared_devices": declared,
                "run_label": format!("implicit:{tool}"),
                "run_started_at": self.started_at,
                "aborted": false,
            })
        })
    }
}

impl Drop for DeviceHold {
    fn drop(&mut self) {
        if let Some(ownership) = &self.ownership {
            ownership.locks.release(&self.keys);
        }
    }
}

/// What one server owns on the bench: its device locks and its open run.
pub struct Ownership {
    pub locks: DeviceLocks,
    pub runs: RunSlot,
}

impl Ownership {
    /// The ownership of this process, seen by others as `frontend` (`mcp`, `operator-cli`, …): its
    /// locks under the account's home whatever the environment's HOME
    /// ([`ahil_config::Environment::account_home`]), and under that HOME too when it is another
    /// folder, where the reference (which follows HOME) takes the same devices.
    pub fn for_process(env: &ahil_config::Environment, frontend: &str) -> Self {
        Self::in_homes(&env.account_home(), &env.home, frontend)
    }

    /// The ownership of this process with its locks under `account` and under `home` when that is
    /// another folder.
    pub fn in_homes(account: &Path, home: &Path, frontend: &str) -> Self {
        let mut roots = vec![LockRoot::for_home(account)];
        if home != account {
            roots.push(LockRoot::for_home(home));
        }
        Self {
            locks: DeviceLocks::in_roots(roots, Owner::this_process(frontend)),
            runs: RunSlot::default(),
        }
    }

    /// The ownership of this process with its locks under `home` (a test's own home).
    pub fn under_home(home: &Path, frontend: &str) -> Self {
        Self {
            locks: DeviceLocks::new(LockRoot::for_home(home), Owner::this_process(frontend)),
            runs: RunSlot::default(),
        }
    }

    /// Refreshes the holder records of held devices every heartbeat interval for as long as this
    /// ownership lives.
    pub fn start_heartbeat(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let _ = std::thread::Builder::new()
            .name("device-heartbeat".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(30));
                    match weak.upgrade() {
                        Some(ownership) => ownership.locks.heartbeat(),
                        None => break,
                    }
                }
            });
    }

    /// Takes the physical devices a call addresses: `keys` as the configuration derives them, and
    /// `host_keys` as the host names those devices now (see [`device_keys`]). Inside an open run
    /// the call may use only what the run declared (`undeclared_device`), and still takes the host
    /// keys for itself, so a link that moved to another node since the run began cannot reach a
    /// node someone else holds; without a run, the call is its own implicit run and takes both
    /// now, all or none, or answers `device_busy`.
    pub fn claim_for_call(
        self: &Arc<Self>,
        tool: &str,
        keys: &[String],
        host_keys: &[String],
    ) -> Result<DeviceHold, Box<Outcome>> {
        let physical = physical_names(keys);
        if physical.is_empty() {
            return Ok(DeviceHold::none());
        }
        let host: Vec<String> = physical_names(host_keys)
            .into_iter()
            .filter(|k| !physical.contains(k))
            .collect();
        if let Some(run) = self.runs.current() {
            if run.covers(&physical) {
                return self.take(tool, host, None);
            }
            return Err(Box::new(
                Outcome::refused(
                    tool,
                    ErrorType::UndeclaredDevice,
                    "This call addresses a device the open run did not declare.",
                )
                .with("declared_devices", json!(run.keys()))
                .with("requested_devices", json!(physical))
                .with_remediation([
                    "Stop the run and start one that declares every device the sequence uses.",
                ])
                .not_contacted(),
            ));
        }
        let mut all = physical.clone();
        all.extend(host);
        self.take(tool, all, Some(physical))
    }

    fn take(
        self: &Arc<Self>,
        tool: &str,
        keys: Vec<String>,
        declared: Option<Vec<String>>,
    ) -> Result<DeviceHold, Box<Outcome>> {
        if keys.is_empty() {
            return Ok(DeviceHold::none());
        }
        // Inside a run the label stays the run's: a re-entered lock keeps its first holder record.
        let label = format!("implicit:{tool}");
        match self
            .locks
            .acquire_labeled(&keys, Duration::ZERO, Some(&label))
        {
            Ok(_) => Ok(DeviceHold {
                ownership: Some(Arc::clone(self)),
                keys,
                declared,
                started_at: ahil_config::time::now_millis(),
            }),
            Err(busy) => Err(Box::new(busy.into_outcome(tool))),
        }
    }
}

fn physical_names(keys: &[String]) -> Vec<String> {
    let mut physical: Vec<String> = keys
        .iter()
        .filter(|k| device_lock::is_physical(k))
        .cloned()
        .collect();
    physical.sort();
    physical.dedup();
    physical
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::runs::DeclaredDevice;

    fn device(key: &str) -> DeclaredDevice {
        DeclaredDevice {
            kind: "debugger".into(),
            id: "dut".into(),
            lock_key: key.into(),
            identity_source: "probe_id".into(),
            identity_warning: None,
            lock_keys: vec![key.into()],
            host_keys: Vec::new(),
        }
    }

    fn keys(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Two MCP servers over one HOME's device locks.
    pub(super) fn two_processes() -> (tempfile::TempDir, Arc<Ownership>, Arc<Ownership>) {
        let home = tempfile::tempdir().expect("home");
        let ours = Arc::new(Ownership::under_home(home.path(), "mcp"));
        let theirs = Arc::new(Ownership::under_home(home.path(), "mcp"));
        (home, ours, theirs)
    }

    fn start_run(ours: &Ownership, key: &str) {
        let started = ours.runs.start(
            &ours.locks,
            "bench_run_start",
            vec![device(key)],
            None,
            Duration::ZERO,
            &ahil_job::CancelFlag::default(),
        );
        assert!(started.ok);
    }

    /// `owner` calling `tool` on the devices of `names`, which resolve to the nodes `nodes`.
    fn claim(
        owner: &Arc<Ownership>,
        tool: &str,
        names: &[&str],
        nodes: &[&str],
    ) -> Result<DeviceHold, Box<Outcome>> {
        owner.claim_for_call(tool, &keys(names), &keys(nodes))
    }

    /// The refusal `claimed` must be, of `error_type`, `why` it must.
    fn refused(
        claimed: Result<DeviceHold, Box<Outcome>>,
        error_type: &str,
        why: &str,
    ) -> Box<Outcome> {
        let refusal = claimed.err().expect(why);
        assert_eq!(refusal.error_type.as_deref(), Some(error_type), "{why}");
        refusal
    }

    #[test]
    fn a_call_without_a_run_holds_its_device_only_for_the_call() {
        let (_home, ours, theirs) = two_processes();
        let names = ["debugger-discovery:all", "probe:a"];
        let hold = claim(&ours, "reset_target", &names, &[]).expect("free");
        assert_eq!(
            hold.implicit_run("reset_target").expect("implicit")["declared_devices"],
            json!(["probe:a"])
        );
        let busy = refused(
            claim(&theirs, "reset_target", &["probe:a"], &[]),
            "device_busy",
            "held during the call",
        );
        assert!(
            busy.summary.contains("implicit:reset_target"),
            "{}",
            busy.summary
        );
        drop(hold);
        assert!(claim(&theirs, "reset_target", &["probe:a"], &[]).is_ok());
    }

    #[test]
    fn inside_a_run_a_call_borrows_declared_devices_and_is_refused_others() {
        let (_home, ours, _) = two_processes();
        start_run(&ours, "probe:a");
        let hold = claim(&ours, "reset_target", &["probe:a"], &[]).expect("declared");
        assert!(
            hold.implicit_run("reset_target").is_none(),
            "borrowed from the run"
        );
        drop(hold);
        assert_eq!(
            ours.locks.held(),
            keys(&["probe:a"]),
            "the run still holds it"
        );
        refused(
            claim(&ours, "reset_target", &["probe:b"], &[]),
            "undeclared_device",
            "not declared",
        );
    }

    #[test]
    fn a_call_without_a_run_also_holds_the_node_its_device_name_resolves_to() {
        let (_home, ours, theirs) = two_processes();
        let nodes = ["com:/dev/pts/7"];
        let hold = claim(&ours, "com_write", &["com:/links/uart"], &nodes).expect("free");
        assert_eq!(
            hold.implicit_run("com_write").expect("implicit")["declared_devices"],
            json!(["com:/links/uart"]),
            "people see the configured spelling"
        );
        refused(
            claim(&theirs, "com_write", &["com:/dev/pts/7"], &[]),
            "device_busy",
            "the node is held by the link's claim",
        );
    }

    #[test]
    fn inside_a_run_a_call_still_takes_the_node_its_link_names_now() {
        let (_home, ours, theirs) = two_processes();
        start_run(&ours, "com:/links/uart");
        // The link has moved to a node another owner holds since the run began.
        let _theirs = claim(&theirs, "com_write", &["com:/dev/pts/9"], &[]).expect("free");
        let nodes = ["com:/dev/pts/9"];
        refused(
            claim(&ours, "com_write", &["com:/links/uart"], &nodes),
            "device_busy",
            "the run's declaration does not cover a node someone else holds",
        );
    }
}
