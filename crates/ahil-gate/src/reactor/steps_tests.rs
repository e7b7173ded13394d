//! Steps run without preflight: the gate itself still refuses what the configuration does not
//! permit, so preflight is a courtesy that fails early, never the only check.

use serde_json::Map;

use super::*;
use crate::reactor::records::{Handle, RunsDir};
use crate::testkit::Fixture;

const UART: &str =
    "com_ports:\n  dut_uart:\n    device: \"/dev/ttyUSB9\"\n    identity_source: device\n";

#[tokio::test]
async fn a_step_the_configuration_does_not_permit_is_refused_by_the_gate_even_without_preflight() {
    let fx = Fixture::new();
    fx.write_config(&fx.starter_with(&[
        ("com_ports: {}\n", UART),
        ("      allow_reset: true", "      allow_reset: false"),
    ]));
    let loaded = fx.load();
    let runs = RunsDir::new(&loaded.config.state_root);
    let bench = Bench::provisioned_as(loaded, fx.env.clone(), "test-reactor");
    let mut reg = runs
        .register(&Handle::mint(), Map::new())
        .expect("the run is registered");
    let plan = ahil_config::plan::parse_plan(
        b"version: 5\nsteps:\n - {action: reset, mode: halt}\n - {device: dut_uart, action: uart_write, text: x}\n",
    )
    .expect("the plan parses");
    let mut exec = Exec::new(&bench, &mut reg, None, plan.steps.len());
    for (i, step) in plan.steps.iter().enumerate() {
        let done = exec.run(step, Position::top(i + 1)).await;
        assert!(!done.ok, "step {}: {}", i + 1, done.result);
        assert_eq!(
            done.error_type.as_deref(),
            Some("permission_denied"),
            "step {}: {}",
            i + 1,
            done.result
        );
    }
}
