use super::*;

const LO: &str = include_str!("fixtures/ip-link-lo.json");
const CAN0: &str = include_str!("fixtures/ip-link-can0-listen-only.json");
const CAN1_DOWN: &str = include_str!("fixtures/ip-link-can1-down.json");
const VCAN0: &str = include_str!("fixtures/ip-link-vcan0.json");

#[test]
fn a_controller_with_listen_only_in_its_ctrlmode_is_listen_only() {
    let link = parse("can0", true, CAN0, "").expect("parses");
    assert!(link.is_can() && link.up && link.listen_only());
    assert_eq!(link.ctrlmode, ["LISTEN-ONLY", "FD"]);
}

#[test]
fn a_scalar_ctrlmode_is_read_and_a_missing_up_flag_means_down() {
    let link = parse("can1", true, CAN1_DOWN, "").expect("parses");
    assert!(link.is_can() && !link.up && !link.listen_only());
    assert_eq!(link.ctrlmode, ["ONE-SHOT"]);
}

#[test]
fn a_virtual_bus_is_can_but_never_listen_only() {
    let link = parse("vcan0", true, VCAN0, "").expect("parses");
    assert!(link.is_can() && link.up && !link.listen_only());
}

#[test]
fn a_loopback_report_from_this_kernel_is_not_a_can_interface() {
    let link = parse("lo", true, LO, "").expect("parses");
    assert!(!link.is_can());
}

#[test]
fn a_report_about_another_interface_is_refused() {
    let error = parse("can9", true, CAN0, "").expect_err("refused");
    assert_eq!(error.error_type(), "can_interface_not_found");
}

#[test]
fn ip_is_only_taken_from_fixed_system_paths() {
    assert!(IP_PATHS.iter().all(|p| p.starts_with('/')));
    if let Some(ip) = ip_executable() {
        assert!(IP_PATHS.contains(&ip.to_str().expect("utf-8")));
    }
}

/// Runs the real `ip` against this machine's kernel: a missing interface is refused as not found.
#[test]
fn the_kernel_reports_a_missing_interface_as_not_found() {
    let ip = ip_executable().expect("no `ip` at a fixed path: run scripts/setup-debian.sh");
    let error = read(&ip, "ahilnone0").expect_err("no such interface");
    assert_eq!(error.error_type(), "can_interface_not_found");
    let lo = read(&ip, "lo").expect("the loopback exists");
    assert!(!lo.is_can() && lo.up);
}
