//! The bench the labgrid tests share: a workspace whose debugger (the OpenOCD fake) and UART (a
//! pty) belong to the place `bench-1` of a real coordinator on loopback.

#![allow(dead_code)]

use std::path::PathBuf;

use ahil_sim::labgrid::Lab;

use serde_json::json;

use crate::support::raw::Mcp;
use crate::support::{self, World};

pub const US: &str = "benchhost/agentic-hil";
pub const ALICE: &str = "desk/alice";

/// A coordinator in its own temporary directory that knows the free place `bench-1`.
pub fn lab_with_bench_1() -> (tempfile::TempDir, Lab) {
    let dir = tempfile::tempdir().expect("lab dir");
    let lab = Lab::start(dir.path());
    lab.create_place("bench-1");
    (dir, lab)
}

/// A workspace whose debugger (`probe`, the OpenOCD fake) and UART (`uart0`, a pty) belong to
/// `bench-1` at `coordinator`.
pub struct Bench {
    pub world: World,
    pub tools: PathBuf,
    /// The board's UART (`uart0`, also in `bench-1`), a pty.
    _uart: ahil_sim::PtyPeer,
}

impl Bench {
    pub fn new(coordinator: &str) -> Self {
        Self::with(coordinator, "")
    }

    /// The bench with `sections` (whole top-level sections) after the labgrid one.
    pub fn with(coordinator: &str, sections: &str) -> Self {
        let uart = ahil_sim::PtyPeer::open().expect("a pty for the UART");
        let world = World::new();
        let (_, code) = world.run_json(&["init"]);
        assert_eq!(code, Some(0), "init succeeds");
        let exe = support::fakes::install_probe_cli(&world, "openocd.py", "ok");
        let tools = support::fakes::tools(&world);
        let state = world.home.join(".local/state/agentic-hil");
        let config = format!(
            "workspace_root: \"{ws}\"\nstate_root: \"{state}\"\nversion: 3\n\
             target:\n  name: board\n  controller: stm32f405\n\
             debuggers:\n  probe:\n    type: openocd\n    executable: \"{exe}\"\n\
             \x20   permissions:\n      allow_flash: true\n      allow_reset: true\n\
             com_ports:\n  uart0:\n    device: \"{uart}\"\n    identity_source: device\n\
             labgrid:\n  coordinator: \"{coordinator}\"\n  user: \"{US}\"\n\
             \x20 places:\n    debuggers:\n      probe: bench-1\n    com_ports:\n      uart0: bench-1\n{sections}",
            uart = uart.device(),
            ws = world.workspace.display(),
            state = state.display(),
            exe = exe.display(),
        );
        std::fs::write(world.config_path(), config).expect("the test config is written");
        Self {
            world,
            tools,
            _uart: uart,
        }
    }

    /// Every run of the probe CLI so far.
    pub fn probe_runs(&self) -> usize {
        support::fakes::calls(&self.tools).len()
    }
}

/// `bench_run_start` over the debugger `probe`: the envelope and whether it is an error.
pub async fn start_a_run_on_the_probe(client: &support::Client) -> (serde_json::Value, bool) {
    support::call(
        client,
        "bench_run_start",
        json!({"devices": [{"kind": "debugger", "id": "probe"}]}),
    )
    .await
}

/// `bench-1` allocated to a reservation of `user` (a place tagged `board=f405`).
pub fn reserve_bench_1_for(lab: &Lab, user: &str) {
    lab.ok("lab/admin", &["-p", "bench-1", "set-tags", "board=f405"]);
    lab.ok(user, &["reserve", "--wait", "board=f405"]);
}

/// A server of `bench` that started a run over the probe (holding `bench-1`) and was killed with
/// SIGKILL, leaving the place acquired.
pub fn a_server_killed_holding_bench_1(bench: &Bench) {
    let run = json!({"devices": [{"kind": "debugger", "id": "probe"}]});
    let mut dead = Mcp::ours(&bench.world);
    let started = dead.call("bench_run_start", &run);
    assert_eq!(started["isError"], false, "{started}");
    dead.kill9();
}
