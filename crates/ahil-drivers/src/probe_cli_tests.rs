use super::*;

fn ran(exit: Exit, stdout: &str) -> Ran {
    Ran {
        transcript: Transcript {
            stdout: stdout.into(),
            ..Transcript::default()
        },
        exit,
    }
}

#[test]
fn a_run_reads_clean_only_on_exit_zero_without_a_class_or_failure_words() {
    let read = |exit, stdout: &str, class| {
        super::read(ran(exit, stdout), stdout, class, false, "proof").expect("no timeout")
    };
    assert!(matches!(
        read(Exit::Code(0), "done", "unknown_debugger_error"),
        Reading::Clean(_)
    ));
    for (exit, stdout, class) in [
        (Exit::Code(1), "done", "unknown_debugger_error"),
        (Exit::Code(0), "Error: no probe", "unknown_debugger_error"),
        (Exit::Code(0), "done", "probe_not_found"),
    ] {
        assert!(
            matches!(
                read(exit, stdout, class),
                Reading::Failed(_, Contact::Possible)
            ),
            "{stdout} / {class}"
        );
    }
}

#[test]
fn every_cli_backend_is_named_as_the_configuration_spells_its_type() {
    let settings = || fake::settings(Path::new("/bin/false"), None, Duration::from_secs(1));
    let backends: [(Box<dyn CliProbe>, &str, &str); 5] = [
        (
            Box::new(crate::openocd::OpenOcd::new(settings(), "i.cfg", "t.cfg")),
            "openocd",
            "OpenOCD",
        ),
        (
            Box::new(crate::pyocd::PyOcd::new(settings(), None)),
            "pyocd",
            "pyOCD",
        ),
        (
            Box::new(crate::cubeprog::CubeProg::new(
                settings(),
                "SWD",
                crate::cubeprog::ConnectMode::Hotplug,
            )),
            "stlink",
            "STM32CubeProgrammer",
        ),
        (
            Box::new(crate::esptool::Esptool::new(settings(), "/dev/null", None)),
            "esptool",
            "esptool",
        ),
        (
            Box::new(crate::probe_rs::ProbeRs::new(settings(), None, "swd")),
            "probe-rs",
            "probe-rs",
        ),
    ];
    for (backend, name, product) in backends {
        assert_eq!((backend.backend(), backend.product()), (name, product));
    }
}

#[test]
fn a_timed_out_run_fails_with_the_contact_the_backend_proved() {
    let Err(DriverError::Classified(failed)) = read(
        ran(Exit::TimedOut, ""),
        "",
        "probe_not_found",
        true,
        "no probe opened",
    ) else {
        panic!("a timeout is a failure");
    };
    assert_eq!(failed.backend_error_type, "timeout");
    assert!(matches!(failed.contact, Contact::None { .. }));
}

#[test]
fn failure_words_are_found_case_insensitively() {
    assert!(contains_failure_text("Error: open failed"));
    assert!(contains_failure_text("Verify MISMATCH at 0x0"));
    assert!(!contains_failure_text("Info : clock speed 2000 kHz"));
}

#[test]
fn the_group_check_sees_a_live_group_and_not_a_reaped_one() {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .expect("sleep runs");
    let pgid = i32::try_from(child.id()).expect("pid");
    assert_eq!(fake::group_members(pgid), [pgid]);
    child.kill().expect("kill");
    child.wait().expect("reap");
    assert!(fake::group_members(pgid).is_empty());
}

#[test]
fn every_backend_class_maps_to_a_public_error_type() {
    for (class, public_type) in [
        ("pyocd_not_found", "debugger_not_found"),
        ("probe_not_found", "adapter_not_found"),
        ("interface_config_not_found", "debugger_config_not_found"),
        ("command_rejected_before_init", "debugger_command_rejected"),
        ("probe_unconfirmed", "target_state_unconfirmed"),
        ("flash_unconfirmed", "flash_failed"),
        ("reset_unconfirmed", "reset_failed"),
        ("memory_read_unconfirmed", "memory_read_failed"),
        ("verify_failed", "verify_failed"),
        ("something_else", "unknown_debugger_error"),
    ] {
        assert_eq!(public(class).0, public_type, "{class}");
    }
}
