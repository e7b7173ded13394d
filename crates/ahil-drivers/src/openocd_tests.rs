use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::probe_cli::fake;

fn backend(exe: &Path, probe_id: Option<&str>, timeout: Duration) -> OpenOcd {
    OpenOcd::new(
        fake::settings(exe, probe_id, timeout),
        "interface/stlink.cfg",
        "target/stm32f4x.cfg",
    )
}

fn budget() -> Budget {
    Budget::new(Duration::from_secs(30))
}

/// The fake OpenOCD, with no probe id and ten seconds a call.
const FAKE: fake::Fake<OpenOcd> = fake::Fake {
    name: "openocd.py",
    backend: |exe| backend(exe, None, Duration::from_secs(10)),
};

#[test]
fn the_command_line_names_scripts_serial_and_disables_every_server() {
    let probe = backend(
        Path::new("/opt/openocd"),
        Some("0670FF"),
        Duration::from_secs(5),
    );
    assert_eq!(
        fake::strings(&probe.argv("targets")),
        [
            "-f",
            "interface/stlink.cfg",
            "-c",
            "adapter serial 0670FF",
            "-f",
            "target/stm32f4x.cfg",
            "-c",
            "gdb_port disabled",
            "-c",
            "tcl_port disabled",
            "-c",
            "telnet_port disabled",
            "-c",
            "targets"
        ]
    );
}

#[test]
fn image_paths_are_escaped_for_tcl() {
    assert_eq!(
        tcl_quote(Path::new("/s/a \"b\" $c[1].elf")),
        "\"/s/a \\\"b\\\" \\$c\\[1\\].elf\""
    );
}

#[test]
fn an_image_path_that_would_leave_programs_braces_is_refused_before_openocd_runs() {
    let (dir, exe) = fake::install("openocd.py", "ok");
    for image in [
        "/s/a} [exec touch pwned] {b.elf",
        "/s/a{b.elf",
        "/s/a\\}.elf",
        "/s/a\nb.elf",
    ] {
        let failed = fake::classified(
            backend(&exe, None, Duration::from_secs(10))
                .flash(
                    &fake::flash_request(image, ImageFormat::Elf, false),
                    &budget(),
                )
                .expect_err(image),
        );
        assert_eq!(failed.error_type, "invalid_argument", "{image}");
        assert!(matches!(failed.contact, Contact::None { .. }), "{image}");
    }
    assert!(fake::calls(dir.path()).is_empty(), "OpenOCD ran");
}

#[test]
fn a_probe_succeeds_only_with_both_markers_and_sends_the_marker_script() {
    let (dir, exe) = fake::install("openocd.py", "ok");
    let done = backend(&exe, None, Duration::from_secs(10))
        .probe(&budget())
        .expect("probe");
    assert_eq!(
        done.matched_success_text,
        [INIT_MARKER, "AGENTIC_HIL_RESULT:probe_target:ok"]
    );
    assert!(done.warnings.is_empty());
    let calls = fake::calls(dir.path());
    assert_eq!(
        calls[0].last().map(String::as_str),
        Some(
            "init; echo \"AGENTIC_HIL_STAGE:init:ok\"; targets; echo \"AGENTIC_HIL_RESULT:probe_target:ok\"; shutdown"
        )
    );
}

#[test]
fn a_raw_image_is_programmed_at_its_base_with_verify_and_reset() {
    let (dir, exe) = fake::install("openocd.py", "ok");
    backend(&exe, None, Duration::from_secs(10))
        .flash(
            &fake::flash_request("/s/fw.bin", ImageFormat::Bin { base: 0x0800_0000 }, true),
            &budget(),
        )
        .expect("flash");
    let calls = fake::calls(dir.path());
    assert!(
        calls[0]
            .last()
            .expect("script")
            .contains("program \"/s/fw.bin\" verify reset 0x8000000;"),
        "{calls:?}"
    );
}

#[test]
fn failure_words_before_the_result_marker_are_warnings_not_failures() {
    let (_dir, exe) = fake::install("openocd.py", "warnings");
    let done = backend(&exe, None, Duration::from_secs(10))
        .reset(ResetMode::Halt, &budget())
        .expect("reset");
    assert_eq!(
        done.warnings,
        ["Error: auto0.tap: IR capture error; saw 0x0003 not 0x0001"]
    );
}

#[test]
fn open_failed_is_an_adapter_not_found_with_proof_of_no_contact() {
    let failed = FAKE.failure_on("no-probe", fake::flash_elf);
    assert_eq!(failed.error_type, "adapter_not_found");
    assert!(matches!(failed.contact, Contact::None { .. }));
    assert!(!failed.likely_causes.is_empty());
}

#[test]
fn a_missing_interface_script_is_a_config_error_without_contact() {
    let failed = FAKE.failure_on("bad-interface", |probe| probe.probe(&budget()));
    assert_config_not_found(&failed);
}

/// A missing interface script, as the fake and the real OpenOCD report it.
fn assert_config_not_found(failed: &Classified) {
    assert_eq!(failed.error_type, "debugger_config_not_found");
    assert_eq!(failed.backend_error_type, "interface_config_not_found");
    assert!(matches!(failed.contact, Contact::None { .. }));
}

#[test]
fn a_command_rejected_before_init_is_named() {
    let failed = FAKE.failure_on("rejected", |probe| probe.reset(ResetMode::Init, &budget()));
    assert_eq!(failed.error_type, "debugger_command_rejected");
    assert_eq!(
        failed.details["rejected_commands"],
        serde_json::json!(["reset"])
    );
    assert!(matches!(failed.contact, Contact::None { .. }));
}

#[test]
fn an_absent_target_proves_no_contact_only_for_the_read_only_probe() {
    let write = FAKE.assert_absent_target("target-absent", fake::flash_elf);
    assert_eq!(write.error_type, "target_not_detected");
}

#[test]
fn exit_zero_without_markers_is_unconfirmed() {
    let read = FAKE.failure_on("no-marker", |probe| probe.probe(&budget()));
    assert_eq!(read.error_type, "target_state_unconfirmed");
    assert_eq!(read.details["operation_result"]["confirmed"], false);
    let write = FAKE.failure_on("no-marker", fake::flash_elf);
    assert_eq!(
        (write.error_type, write.backend_error_type),
        ("flash_failed", "flash_unconfirmed")
    );
}

#[test]
fn verify_erase_and_reset_failures_after_init_are_classified_with_contact() {
    for (scenario, expected) in [
        ("verify-fail", "verify_failed"),
        ("flash-fail", "flash_erase_failed"),
        ("write-fail", "flash_failed"),
        ("reset-fail", "reset_failed"),
    ] {
        let (_dir, exe) = fake::install("openocd.py", scenario);
        let probe = backend(&exe, None, Duration::from_secs(10));
        let error = if scenario == "reset-fail" {
            probe.reset(ResetMode::Halt, &budget())
        } else {
            probe.flash(
                &fake::flash_request("/s/fw.elf", ImageFormat::Elf, true),
                &budget(),
            )
        };
        let failed = fake::classified(error.expect_err(scenario));
        assert_eq!(failed.error_type, expected, "{scenario}");
        assert_eq!(failed.contact, Contact::Made, "{scenario}");
    }
}

#[test]
fn an_erase_refusal_keeps_the_whole_capture_and_never_proves_no_contact() {
    let failed = FAKE.failure_on("flash-fail", fake::flash_elf);
    assert_eq!(failed.error_type, "flash_erase_failed");
    assert!(
        failed.details["programmer_output"]["stderr"]
            .as_str()
            .is_some_and(|e| e.contains("failed erasing sectors 0 to 3"))
    );
    assert_eq!(failed.contact, Contact::Made);
}

#[test]
fn a_hang_is_killed_at_the_timeout_with_its_grandchild() {
    let (dir, exe) = fake::install("openocd.py", "fork-hang");
    let clock = Instant::now();
    let failed = fake::classified(
        fake::flash_elf(&backend(&exe, None, Duration::from_secs(3))).expect_err("hang"),
    );
    assert!(clock.elapsed() < Duration::from_secs(10));
    assert_eq!(failed.error_type, "timeout");
    assert_eq!(failed.contact, Contact::Possible);
    assert!(failed.transcripts[0].timed_out);
    fake::assert_reaped(dir.path(), &["child.pid", "grandchild.pid"]);
}

#[test]
fn a_missing_executable_is_debugger_not_found_without_contact() {
    let failed = fake::classified(
        backend(
            Path::new("/nonexistent/openocd"),
            None,
            Duration::from_secs(5),
        )
        .probe(&budget())
        .expect_err("missing"),
    );
    assert_eq!(failed.error_type, "debugger_not_found");
    assert_eq!(failed.backend_error_type, "openocd_not_found");
    assert!(matches!(failed.contact, Contact::None { .. }));
}

#[test]
fn the_listing_is_the_usb_inventory_of_probe_vendors_and_never_complete() {
    let sysfs = tempfile::tempdir().expect("dir");
    for (dev, vendor, serial) in [
        ("1-1", "0483", "066DFF"),
        ("1-2", "046d", "MOUSE"),
        ("1-3", "1366", "000123"),
    ] {
        let d = sysfs.path().join(dev);
        std::fs::create_dir(&d).expect("dev");
        std::fs::write(d.join("idVendor"), format!("{vendor}\n")).expect("vendor");
        std::fs::write(d.join("serial"), format!("{serial}\n")).expect("serial");
    }
    let listing = backend(Path::new("/opt/openocd"), None, Duration::from_secs(5))
        .with_sysfs_usb(sysfs.path())
        .list_probes(&budget())
        .expect("list");
    let ids: Vec<&str> = listing.probes.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["000123", "066DFF"]);
    assert!(!listing.complete);
}

/// The real OpenOCD, where installed: its no-hardware paths classify as the fakes do.
mod real {
    use super::*;

    /// Where Debian's package (which scripts/setup-debian.sh installs) puts OpenOCD.
    fn openocd() -> std::path::PathBuf {
        let exe = std::path::PathBuf::from("/usr/bin/openocd");
        assert!(
            exe.is_file(),
            "/usr/bin/openocd is missing: run scripts/setup-debian.sh"
        );
        exe
    }

    fn real(interface: &str, target: &str) -> OpenOcd {
        OpenOcd::new(
            fake::settings(&openocd(), None, Duration::from_secs(20)),
            interface,
            target,
        )
    }

    /// What a probe of the STM32F4 through `interface` fails with.
    fn probe_failure(interface: &str) -> Box<Classified> {
        fake::classified(
            real(interface, "target/stm32f4x.cfg")
                .probe(&budget())
                .expect_err(interface),
        )
    }

    #[test]
    fn real_openocd_reports_its_version() {
        let version = fake::version_of(crate::Backend::OpenOcd, &openocd());
        assert!(version.starts_with("Open On-Chip Debugger"), "{version}");
    }

    #[test]
    fn real_openocd_without_a_probe_is_adapter_not_found_without_contact() {
        let failed = probe_failure("interface/stlink.cfg");
        assert_eq!(failed.error_type, "adapter_not_found");
        assert!(matches!(failed.contact, Contact::None { .. }));
        assert!(failed.transcripts[0].stderr.contains("open failed"));
    }

    #[test]
    fn real_openocd_with_a_missing_script_is_a_config_error() {
        assert_config_not_found(&probe_failure("interface/no-such-adapter.cfg"));
    }

    #[test]
    fn real_openocd_never_evaluates_an_image_path_as_tcl() {
        // `program` evals its file name inside braces once `reset init` passes; the stub target
        // lets it pass on the dummy adapter, as a real board's does.
        let dir = tempfile::tempdir().expect("temp dir");
        let stub = dir.path().join("stub-target.tcl");
        std::fs::write(
            &stub,
            "source [find target/swj-dp.tcl]\nproc reset {args} {}\n",
        )
        .expect("stub");
        let marker = dir.path().join("evaluated");
        let image = format!(
            "{}/a}} [exec touch {}] {{b.elf",
            dir.path().display(),
            marker.display()
        );
        let probe = real("interface/dummy.cfg", &stub.display().to_string());
        let answer = probe.flash(
            &fake::flash_request(&image, ImageFormat::Elf, false),
            &budget(),
        );
        assert!(!marker.exists(), "OpenOCD ran the image path's Tcl");
        assert_eq!(
            fake::classified(answer.expect_err("refused")).error_type,
            "invalid_argument"
        );
    }

    #[test]
    fn real_openocd_runs_the_marker_script_on_the_dummy_adapter() {
        let done = real("interface/dummy.cfg", "target/swj-dp.tcl")
            .probe(&budget())
            .expect("the dummy adapter reaches both markers");
        assert_eq!(done.matched_success_text.len(), 2);
        // The dummy adapter finds no scan chain and says so before the markers.
        assert!(
            done.warnings.iter().any(|w| w.contains("IR capture error")),
            "{:?}",
            done.warnings
        );
    }
}
