//! Pre-flight of written plans: a step whose session, grant or route is missing is refused before
//! any step runs, naming the step.

use super::*;
use crate::testkit::Fixture;

const UART: &str =
    "com_ports:\n  dut_uart:\n    device: \"/dev/ttyUSB9\"\n    identity_source: device\n";

fn loaded(fx: &Fixture) -> LoadedConfig {
    fx.write_config(&fx.starter().replacen("com_ports: {}\n", UART, 1));
    fx.load()
}

fn refused(text: &str) -> Invalid {
    let fx = Fixture::new();
    let plan = ahil_config::plan::parse_plan(text.as_bytes()).expect("the plan loads");
    *check(&loaded(&fx), &plan).expect_err("preflight refuses it")
}

#[test]
fn a_serial_step_before_its_uart_open_is_refused_with_its_path() {
    let invalid = refused(
        "version: 5\nsteps:\n - action: repeat\n   count: 2\n   steps:\n    - {device: dut_uart, action: uart_read}\n",
    );
    assert_eq!(invalid.error_type, "test_config_invalid");
    assert_eq!(invalid.field, "steps[0].steps[0].action");
    assert_eq!(invalid.step, 1);
}

#[test]
fn a_pattern_that_does_not_compile_or_lacks_a_group_for_its_range_is_refused() {
    let open = "version: 5\nsteps:\n - {device: dut_uart, action: uart_open}\n";
    let bad = refused(&format!(
        "{open} - {{device: dut_uart, action: uart_expect, pattern: \"(unclosed\", timeout_s: 1}}\n"
    ));
    assert_eq!(bad.field, "steps[1].pattern");
    let no_group = refused(&format!(
        "{open} - {{device: dut_uart, action: uart_read, comparator: {{pattern: \"t=\\\\d+\", range: {{min: 1, max: 2}}}}, timeout_s: 1}}\n"
    ));
    assert_eq!(no_group.field, "steps[1].comparator.pattern");
}

#[test]
fn a_plan_on_a_shared_bus_declares_the_participants_it_opens_not_the_bus() {
    let fx = Fixture::new();
    let bus = "can_buses:\n  shared:\n    adapter: socketcan\n    channel: can0\n    shares:\n      tester: {}\n";
    fx.write_config(&fx.starter().replacen("can_buses: {}\n", bus, 1));
    let loaded = fx.load();
    let plan = ahil_config::plan::parse_plan(
        b"version: 6\nsteps:\n - {device: shared, action: can_open, participant: tester}\n - {device: shared, action: can_close, participant: tester}\n",
    )
    .expect("the plan loads");
    let prepared = check(&loaded, &plan).expect("preflight passes");
    assert_eq!(
        prepared.selectors,
        vec![json!({"kind": "can", "id": "shared", "participant": "tester"})]
    );
    let devices = crate::ownership::runs::resolve(&loaded, "test_reactor_run", &prepared.selectors)
        .expect("the participant resolves");
    assert_eq!(devices[0].lock_key, "can:socketcan:can0#tester");
}

#[test]
fn a_write_without_its_grant_names_the_permission() {
    let invalid = refused(
        "version: 5\nsteps:\n - {device: dut_uart, action: uart_open}\n - {device: dut_uart, action: uart_write, text: x}\n",
    );
    assert_eq!(invalid.error_type, "permission_denied");
    assert_eq!(
        invalid.permission.as_deref(),
        Some("com_ports.dut_uart.permissions.allow_write")
    );
    assert_eq!(invalid.step, 2);
}
