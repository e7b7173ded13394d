use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::probe_cli::fake;

const PORT: &str = "/dev/ttyUSB3";

fn backend(exe: &Path, chip: Option<&str>, timeout: Duration) -> Esptool {
    Esptool::new(fake::settings(exe, None, timeout), PORT, chip)
}

fn budget() -> Budget {
    Budget::new(Duration::from_mins(1))
}

fn bin(reset: bool) -> FlashRequest {
    fake::flash_request("/s/app.bin", ImageFormat::Bin { base: 0x10000 }, reset)
}

fn fake_with(scenario: &str) -> (tempfile::TempDir, Esptool) {
    let (dir, exe) = fake::install("esptool.py", scenario);
    let probe = backend(&exe, None, Duration::from_secs(20));
    (dir, probe)
}

/// What `act` fails with when it is refused before esptool runs at all.
fn refused_before_esptool_runs<T: std::fmt::Debug>(
    act: impl FnOnce(&Esptool) -> Result<T, DriverError>,
) -> Box<Classified> {
    let (dir, probe) = fake_with("ok");
    let failed = fake::classified(act(&probe).expect_err("refused"));
    assert!(fake::calls(dir.path()).is_empty(), "esptool ran");
    failed
}

#[test]
fn versions_are_read_from_both_spellings_of_the_banner() {
    assert_eq!(
        parse_version("esptool v5.5.0\n5.5.0\n").as_deref(),
        Some("5.5.0")
    );
    assert_eq!(
        parse_version("esptool.py v4.8.1\n").as_deref(),
        Some("4.8.1")
    );
    assert_eq!(parse_version("usage: nothing here\n"), None);
}

#[test]
fn every_command_line_names_the_port_chip_and_reset_sequence() {
    let (dir, exe) = fake::install("esptool.py", "ok");
    let probe = backend(&exe, Some("esp32"), Duration::from_secs(20));
    probe.probe(&budget()).expect("probe");
    probe.flash(&bin(false), &budget()).expect("flash");
    probe.flash(&bin(true), &budget()).expect("flash and reset");
    probe.reset(ResetMode::Run, &budget()).expect("reset");
    let halted = probe.reset(ResetMode::Halt, &budget()).expect("halt");
    assert_eq!(halted.matched_success_text, ["Staying in bootloader."]);
    let calls = fake::calls(dir.path());
    let connect = |after: &str| {
        vec![
            "--chip=esp32".to_owned(),
            format!("--port={PORT}"),
            "--before=default-reset".into(),
            format!("--after={after}"),
        ]
    };
    let with = |mut head: Vec<String>, tail: &[&str]| {
        head.extend(tail.iter().map(|s| (*s).to_owned()));
        head
    };
    let write = |after: &str| {
        let mut line = connect(after);
        line.insert(2, "--baud=460800".into());
        with(
            line,
            &["write-flash", "--no-progress", "0x10000", "/s/app.bin"],
        )
    };
    assert_eq!(calls.len(), 10, "{calls:?}");
    for (at, call) in calls.iter().enumerate() {
        if at % 2 == 0 {
            assert_eq!(call, &["version"]);
        }
    }
    assert_eq!(
        calls[1],
        with(connect("hard-reset"), &["--no-stub", "flash-id"])
    );
    assert_eq!(calls[3], write("no-reset"));
    assert_eq!(calls[5], write("hard-reset"));
    assert_eq!(
        calls[7],
        with(connect("hard-reset"), &["--no-stub", "flash-id"])
    );
    assert_eq!(
        calls[9],
        with(connect("no-reset"), &["--no-stub", "flash-id"])
    );
}

#[test]
fn a_probe_is_confirmed_by_the_chip_the_flash_and_the_reset_lines() {
    let (_dir, probe) = fake_with("ok");
    let done = probe.probe(&budget()).expect("probe");
    assert_eq!(
        done.matched_success_text,
        ["Chip type:", "Detected flash size:", "Hard resetting"]
    );
    assert_eq!(done.transcripts.len(), 2, "version check, then the command");
}

#[test]
fn without_a_target_type_the_chip_is_detected() {
    let (dir, probe) = fake_with("ok");
    probe.probe(&budget()).expect("probe");
    assert_eq!(fake::calls(dir.path())[1][0], "--chip=auto");
}

#[test]
fn a_flash_leaves_the_chip_in_its_bootloader_unless_a_reset_is_asked_for() {
    let (_dir, probe) = fake_with("ok");
    let stayed = probe.flash(&bin(false), &budget()).expect("flash");
    assert_eq!(
        stayed.matched_success_text,
        ["Hash of data verified.", "Staying in bootloader."]
    );
    let reset = probe.flash(&bin(true), &budget()).expect("flash");
    assert_eq!(
        reset.matched_success_text,
        ["Hash of data verified.", "Hard resetting"]
    );
}

#[test]
fn a_hex_image_carries_its_own_addresses() {
    let (dir, probe) = fake_with("ok");
    let request = fake::flash_request("/s/app.hex", ImageFormat::Hex, false);
    probe.flash(&request, &budget()).expect("flash");
    let call = &fake::calls(dir.path())[1];
    assert_eq!(call[call.len() - 2..], ["0x0", "/s/app.hex"]);
}

#[test]
fn a_port_pyserial_would_open_as_a_url_is_refused_before_esptool_runs() {
    for port in [
        "socket://203.0.113.9:4000",
        "rfc2217://h:1",
        "loop://",
        "ttyUSB0",
    ] {
        let (dir, exe) = fake::install("esptool.py", "ok");
        let probe = Esptool::new(
            fake::settings(&exe, None, Duration::from_secs(20)),
            port,
            None,
        );
        let failed = fake::classified(probe.flash(&bin(false), &budget()).expect_err(port));
        assert_eq!(failed.error_type, "invalid_argument", "{port}");
        assert!(matches!(failed.contact, Contact::None { .. }), "{port}");
        assert!(fake::calls(dir.path()).is_empty(), "{port}: esptool ran");
    }
}

#[test]
fn an_elf_image_is_refused_before_esptool_runs() {
    let request = fake::flash_request("/s/app.elf", ImageFormat::Elf, false);
    let failed = refused_before_esptool_runs(|probe| probe.flash(&request, &budget()));
    assert_eq!(failed.error_type, "invalid_argument");
    assert!(matches!(failed.contact, Contact::None { .. }));
}

#[test]
fn an_esptool_that_is_not_version_5_is_not_found_and_opens_no_port() {
    let (dir, probe) = fake_with("old-version");
    let failed = fake::classified(probe.probe(&budget()).expect_err("old"));
    assert_eq!(failed.error_type, "debugger_not_found");
    assert_eq!(failed.backend_error_type, "esptool_version_unsupported");
    assert_eq!(failed.details["version"], "4.8.1");
    assert!(matches!(failed.contact, Contact::None { .. }));
    assert_eq!(fake::calls(dir.path()), [["version"]]);
}

#[test]
fn a_missing_executable_is_debugger_not_found() {
    let probe = backend(
        Path::new("/nonexistent/esptool"),
        None,
        Duration::from_secs(5),
    );
    let failed = fake::classified(probe.probe(&budget()).expect_err("missing"));
    assert_eq!(failed.error_type, "debugger_not_found");
    assert!(matches!(failed.contact, Contact::None { .. }));
}

#[test]
fn each_failure_class_maps_to_its_error_type_and_contact() {
    for (scenario, flashing, class, error_type, no_contact) in [
        (
            "no-port",
            false,
            "port_open_failed",
            "com_port_open_failed",
            true,
        ),
        (
            "no-port",
            true,
            "port_open_failed",
            "com_port_open_failed",
            true,
        ),
        (
            "no-chip",
            false,
            "target_not_detected",
            "target_not_detected",
            false,
        ),
        (
            "wrong-chip",
            true,
            "chip_mismatch",
            "target_type_invalid",
            false,
        ),
        ("verify-fail", true, "verify_failed", "verify_failed", false),
        ("write-fail", true, "flash_failed", "flash_failed", false),
        (
            "garbled",
            false,
            "unknown_debugger_error",
            "debugger_error",
            false,
        ),
        (
            "unconfirmed",
            false,
            "probe_unconfirmed",
            "target_state_unconfirmed",
            false,
        ),
        (
            "unconfirmed",
            true,
            "flash_unconfirmed",
            "flash_failed",
            false,
        ),
    ] {
        let (_dir, probe) = fake_with(scenario);
        let result = if flashing {
            probe.flash(&bin(false), &budget())
        } else {
            probe.probe(&budget())
        };
        let failed = fake::classified(result.expect_err(scenario));
        assert_eq!(failed.backend_error_type, class, "{scenario}");
        assert_eq!(failed.error_type, error_type, "{scenario}");
        assert!(!failed.likely_causes.is_empty(), "{scenario}");
        assert_eq!(
            matches!(failed.contact, Contact::None { .. }),
            no_contact,
            "{scenario}"
        );
    }
}

#[test]
fn a_reset_without_its_line_is_reset_failed() {
    let (_dir, probe) = fake_with("unconfirmed");
    let failed = fake::classified(probe.reset(ResetMode::Run, &budget()).expect_err("reset"));
    assert_eq!(failed.error_type, "reset_failed");
    assert_eq!(
        failed.details["operation_result"]["expected_success_text"],
        json!(["Hard resetting"])
    );
}

#[test]
fn reset_init_is_not_supported() {
    let failed = refused_before_esptool_runs(|probe| probe.reset(ResetMode::Init, &budget()));
    assert_eq!(failed.error_type, "not_supported");
}

#[test]
fn listing_probes_is_not_supported_and_names_the_port() {
    let failed = refused_before_esptool_runs(|probe| probe.list_probes(&budget()));
    assert_eq!(failed.error_type, "not_supported");
    assert_eq!(failed.details["com_port_device"], PORT);
}

#[test]
fn a_hung_connect_times_out_and_its_process_group_is_gone() {
    let (dir, exe) = fake::install("esptool.py", "connect-hang");
    let probe = backend(&exe, None, Duration::from_secs(2));
    let failed = fake::classified(probe.probe(&budget()).expect_err("hang"));
    assert_eq!(failed.error_type, "timeout");
    assert_eq!(failed.contact, Contact::Possible);
    fake::assert_reaped(dir.path(), &["child.pid"]);
}

#[test]
fn every_esptool_class_has_causes_and_a_distinct_summary() {
    // A missing esptool is worded as every CLI backend's missing executable.
    for class in CLASSES
        .into_iter()
        .filter(|&class| class != "esptool_not_found")
    {
        let (_, summary, causes) = public(class);
        assert!(
            summary.contains("esptool") || summary.contains("chip"),
            "{class}"
        );
        assert!(!causes.is_empty(), "{class}");
    }
}

/// The real esptool from `target/esptool-venv`, where installed (CI installs it).
mod real {
    use super::*;

    fn esptool() -> PathBuf {
        let exe =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/esptool-venv/bin/esptool");
        assert!(
            exe.is_file(),
            "esptool is missing from target/esptool-venv: run scripts/setup-debian.sh"
        );
        exe
    }

    #[test]
    fn real_esptool_is_the_tested_version_5() {
        let exe = esptool();
        let probe = backend(&exe, None, Duration::from_secs(30));
        let transcript = probe.check_version(&budget()).expect("version 5");
        assert_eq!(
            parse_version(&transcript.stdout).as_deref(),
            Some(TESTED_VERSION)
        );
    }

    #[test]
    fn real_esptool_on_a_port_that_does_not_exist_is_com_port_open_failed_without_contact() {
        let exe = esptool();
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("ttyUSB-gone");
        let probe = Esptool::new(
            fake::settings(&exe, None, Duration::from_secs(30)),
            &missing.display().to_string(),
            None,
        );
        let failed = fake::classified(probe.probe(&budget()).expect_err("no port"));
        assert_eq!(failed.error_type, "com_port_open_failed");
        assert_eq!(failed.backend_error_type, "port_open_failed");
        assert!(matches!(failed.contact, Contact::None { .. }));
    }

    #[test]
    fn real_esptool_on_a_pty_with_nothing_behind_it_is_target_not_detected() {
        let exe = esptool();
        let (master, slave) = open_pty();
        let probe = Esptool::new(
            fake::settings(&exe, None, Duration::from_mins(1)),
            &slave,
            None,
        );
        let failed = fake::classified(probe.reset(ResetMode::Run, &budget()).expect_err("silence"));
        drop(master);
        assert_eq!(failed.error_type, "target_not_detected");
        assert_eq!(failed.contact, Contact::Possible, "the port was opened");
    }

    /// A pseudo-terminal whose master end is held open by a helper and never answers.
    fn open_pty() -> (PtyHolder, String) {
        use std::io::BufRead;
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                "import os, time; m, s = os.openpty(); print(os.ttyname(s), flush=True); time.sleep(300)",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("pty name");
        (PtyHolder(child), line.trim().to_owned())
    }

    /// Kills and reaps the pty's holder when the test ends, however it ends.
    struct PtyHolder(std::process::Child);

    impl Drop for PtyHolder {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
