use std::path::Path;
use std::time::Duration;

use super::*;
use crate::probe_cli::fake;

fn backend(exe: &Path, probe_id: Option<&str>, connect: ConnectMode) -> CubeProg {
    CubeProg::new(
        fake::settings(exe, probe_id, Duration::from_secs(20)),
        "SWD",
        connect,
    )
}

fn budget() -> Budget {
    Budget::new(Duration::from_mins(1))
}

/// The fake STM32CubeProgrammer, with no probe id, connecting hot-plug.
const FAKE: fake::Fake<CubeProg> = fake::Fake {
    name: "STM32_Programmer_CLI.py",
    backend: |exe| backend(exe, None, ConnectMode::Hotplug),
};

#[test]
fn serials_are_read_from_the_probe_list() {
    let text = "ST-Link Probe 0 :\n   ST-LINK SN  : 066DFF535254\n   ST-LINK FW  : V2J45\nSTLINK SN: abc\nST-LINK SN  : 066DFF535254\n";
    assert_eq!(parse_serials(text), ["066DFF535254", "abc"]);
}

#[test]
fn every_action_uses_its_connect_mode_and_serial() {
    let (dir, exe) = fake::install("STM32_Programmer_CLI.py", "ok");
    let probe = backend(&exe, Some("STLINK123"), ConnectMode::UnderReset);
    probe.probe(&budget()).expect("probe");
    probe
        .flash(
            &fake::flash_request("/s/fw.bin", ImageFormat::Bin { base: 0x0800_0000 }, true),
            &budget(),
        )
        .expect("flash");
    probe.reset(ResetMode::Run, &budget()).expect("reset");
    let halted = probe.reset(ResetMode::Halt, &budget()).expect("halt");
    assert_eq!(halted.matched_success_text, ["Core halted"]);
    let calls = fake::calls(dir.path());
    assert_eq!(
        calls[0],
        ["-q", "-c", "port=SWD", "mode=HOTPLUG", "sn=STLINK123"]
    );
    assert_eq!(
        calls[1],
        [
            "-q",
            "-c",
            "port=SWD",
            "mode=UR",
            "sn=STLINK123",
            "-w",
            "/s/fw.bin",
            "0x8000000",
            "-v",
            "-rst"
        ]
    );
    assert_eq!(
        calls[2],
        [
            "-q",
            "-c",
            "port=SWD",
            "mode=NORMAL",
            "sn=STLINK123",
            "-rst"
        ]
    );
    assert_eq!(
        calls[3],
        [
            "-q",
            "-c",
            "port=SWD",
            "mode=NORMAL",
            "sn=STLINK123",
            "-halt"
        ]
    );
}

#[test]
fn a_missing_success_sentence_leaves_the_result_unconfirmed() {
    let read = FAKE.failure_on("unconfirmed", |probe| probe.probe(&budget()));
    assert_eq!(read.error_type, "target_state_unconfirmed");
    assert_eq!(
        read.details["operation_result"]["matched_success_text"],
        serde_json::json!(["ST-LINK SN"])
    );
    let reset = FAKE.failure_on("unconfirmed", |probe| {
        probe.reset(ResetMode::Run, &budget())
    });
    assert_eq!(
        (reset.error_type, reset.backend_error_type),
        ("reset_failed", "reset_unconfirmed")
    );
}

#[test]
fn no_st_link_is_adapter_not_found_without_contact() {
    let (_dir, exe) = fake::install("STM32_Programmer_CLI.py", "no-probe");
    let failed = fake::classified(
        fake::flash_elf(&backend(&exe, None, ConnectMode::Hotplug)).expect_err("no probe"),
    );
    assert_eq!(failed.error_type, "adapter_not_found");
    assert!(matches!(failed.contact, Contact::None { .. }));
    let listing = backend(&exe, None, ConnectMode::Hotplug)
        .list_probes(&budget())
        .expect("list");
    assert!(listing.probes.is_empty());
}

#[test]
fn an_absent_target_proves_no_contact_only_for_the_probe() {
    FAKE.assert_absent_target("no-target", |probe| probe.reset(ResetMode::Halt, &budget()));
}

#[test]
fn an_erase_refusal_is_read_for_how_far_the_programmer_got() {
    for (scenario, reading) in [
        ("erase-refused", "erase_refused_effect_unconfirmed"),
        ("erase-underway", "flash_change_underway"),
    ] {
        let failed = FAKE.failure_on(scenario, fake::flash_elf);
        assert_eq!(failed.error_type, "flash_erase_failed", "{scenario}");
        assert_eq!(failed.details["erase_abort_point"]["reading"], reading);
        assert_eq!(failed.details["programmer_output"]["returncode"], 1);
        assert_eq!(
            failed.contact,
            Contact::Possible,
            "an erase refusal never proves no contact"
        );
    }
}

#[test]
fn a_verify_failure_is_classified() {
    assert_eq!(
        FAKE.failure_on("verify-fail", fake::flash_elf).error_type,
        "verify_failed"
    );
}

#[test]
fn a_listing_without_serials_or_a_no_probe_sentence_is_a_discovery_failure() {
    let failed = FAKE.failure_on("bad-list", |probe| probe.list_probes(&budget()));
    assert_eq!(failed.error_type, "probe_discovery_failed");
    let (_dir, exe) = fake::install("STM32_Programmer_CLI.py", "ok");
    let listing = backend(&exe, None, ConnectMode::Hotplug)
        .list_probes(&budget())
        .expect("list");
    assert_eq!(listing.probes[0].id, "066DFF535254887767184038");
}

#[test]
fn a_hung_programmer_is_killed_with_its_grandchild() {
    let (dir, exe) = fake::install("STM32_Programmer_CLI.py", "fork-hang");
    let probe = CubeProg::new(
        fake::settings(&exe, None, Duration::from_secs(3)),
        "SWD",
        ConnectMode::Hotplug,
    );
    let failed = fake::classified(probe.reset(ResetMode::Run, &budget()).expect_err("hang"));
    assert_eq!(failed.error_type, "timeout");
    fake::assert_reaped(dir.path(), &["child.pid", "grandchild.pid"]);
}

#[test]
fn a_memory_read_writes_intel_hex_and_needs_its_success_sentence() {
    let (dir, exe) = fake::install("STM32_Programmer_CLI.py", "ok");
    let out = dir.path().join("read.hex");
    // Whatever mode the entry flashes with, a read connects without a halt or a reset.
    let done = backend(&exe, Some("STLINK123"), ConnectMode::UnderReset)
        .read_memory_hex(0x2000_0000, 4, &out, &budget())
        .expect("read");
    assert_eq!(done.matched_success_text, ["Data read successfully"]);
    let hex = std::fs::read_to_string(&out).expect("hex written");
    assert!(hex.starts_with(":020000042000DA"), "{hex}");
    assert_eq!(
        fake::calls(dir.path())[0][..4],
        ["-q", "-c", "port=SWD", "mode=HOTPLUG"]
    );
    assert_eq!(
        fake::calls(dir.path())[0][4..7],
        [
            "sn=STLINK123".to_owned(),
            "-r".to_owned(),
            "0x20000000".to_owned()
        ]
    );
    let (_dir, exe) = fake::install("STM32_Programmer_CLI.py", "unconfirmed");
    let failed = fake::classified(
        backend(&exe, None, ConnectMode::Hotplug)
            .read_memory_hex(0x2000_0000, 4, &out, &budget())
            .expect_err("unconfirmed"),
    );
    assert_eq!(
        (failed.error_type, failed.backend_error_type),
        ("memory_read_failed", "memory_read_unconfirmed")
    );
}
