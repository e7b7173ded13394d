use std::path::Path;
use std::time::Duration;

use super::*;
use crate::probe_cli::fake;

fn backend(exe: &Path, probe_id: Option<&str>, target: Option<&str>) -> PyOcd {
    PyOcd::new(
        fake::settings(exe, probe_id, Duration::from_secs(20)),
        target,
    )
}

fn budget() -> Budget {
    Budget::new(Duration::from_mins(1))
}

/// The fake pyOCD, with no probe id or target type.
const FAKE: fake::Fake<PyOcd> = fake::Fake {
    name: "pyocd.py",
    backend: |exe| backend(exe, None, None),
};

#[test]
fn a_probe_id_is_resolved_to_one_full_uid() {
    let uids = vec![
        "0670FF515455827267135939".to_owned(),
        "E6614103E7".to_owned(),
    ];
    assert_eq!(select_uid("stlink:0670ff", &uids), Ok(uids[0].clone()));
    assert!(select_uid("99", &uids).is_err());
    let nested = vec!["0670FF5154".to_owned(), "0670FF5154AA".to_owned()];
    assert!(select_uid("0670FF5154AA", &nested).is_ok());
    assert!(select_uid("0670", &nested).is_err());
    assert!(select_uid("0670FF5154", &nested).is_err(), "ambiguous");
}

#[test]
fn the_probe_listing_must_be_pyocd_json() {
    assert_eq!(
        parse_probes(
            r#"{"status":0,"boards":[{"unique_id":"A"},{"unique_id":"A"},{"unique_id":"B"}]}"#
        ),
        Some(vec!["A".to_owned(), "B".to_owned()])
    );
    assert_eq!(parse_probes(r#"{"status":1,"boards":[]}"#), None);
    assert_eq!(parse_probes("No available debug probes"), None);
}

#[test]
fn flashing_resolves_the_uid_passes_no_wait_and_resets_afterwards() {
    let (dir, exe) = fake::install("pyocd.py", "ok");
    let done = backend(&exe, Some("0670ff"), Some("stm32f405rg"))
        .flash(
            &fake::flash_request("/s/fw.bin", ImageFormat::Bin { base: 0x0800_0000 }, true),
            &budget(),
        )
        .expect("flash");
    assert_eq!(done.transcripts.len(), 2);
    let calls = fake::calls(dir.path());
    let uid = "0670FF515455827267135939";
    assert_eq!(calls[0], ["json", "--probes", "--no-config"]);
    assert_eq!(
        calls[1],
        [
            "flash",
            "-W",
            "--no-reset",
            "--uid",
            uid,
            "--target",
            "stm32f405rg",
            "--base-address",
            "0x8000000",
            "/s/fw.bin"
        ]
    );
    assert_eq!(
        calls[2],
        [
            "commander",
            "-W",
            "--command",
            "reset",
            "--uid",
            uid,
            "--target",
            "stm32f405rg"
        ]
    );
}

#[test]
fn no_probe_is_adapter_not_found_without_contact() {
    let (_dir, exe) = fake::install("pyocd.py", "no-probe");
    let failed = fake::classified(
        backend(&exe, None, None)
            .probe(&budget())
            .expect_err("no probe"),
    );
    assert_eq!(
        (failed.error_type, failed.backend_error_type),
        ("adapter_not_found", "probe_not_found")
    );
    assert!(matches!(failed.contact, Contact::None { .. }));
    let listing = backend(&exe, None, None)
        .list_probes(&budget())
        .expect("empty list");
    assert!(listing.probes.is_empty() && listing.complete);
}

#[test]
fn an_ambiguous_probe_id_is_refused_before_any_target_is_opened() {
    let (dir, exe) = fake::install("pyocd.py", "two-probes");
    let failed = fake::classified(
        backend(&exe, Some("0670FF5154"), None)
            .reset(ResetMode::Halt, &budget())
            .expect_err("ambiguous"),
    );
    assert_eq!(failed.error_type, "adapter_not_found");
    assert_eq!(
        failed.details["candidate_probe_ids"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(fake::calls(dir.path()).len(), 1, "only the listing ran");
}

#[test]
fn a_probe_another_debugger_also_selects_is_refused() {
    let (_dir, exe) = fake::install("pyocd.py", "ok");
    let other = |probe_id: &str, by_substring| OtherSelector {
        debugger: "second".into(),
        probe_id: probe_id.into(),
        by_substring,
    };
    let failed = fake::classified(
        backend(&exe, Some("0670FF51"), None)
            .with_others(vec![other("5939", true)])
            .probe(&budget())
            .expect_err("collision"),
    );
    assert_eq!(failed.error_type, "adapter_not_found");
    assert_eq!(failed.details["other_debugger"], "second");
    backend(&exe, Some("0670FF51"), None)
        .with_others(vec![other("5939", false), other("E6614103E7", true)])
        .probe(&budget())
        .expect("an exact selector elsewhere names another probe");
}

#[test]
fn an_unknown_target_type_carries_pack_install_commands() {
    let (_dir, exe) = fake::install("pyocd.py", "target-invalid");
    let failed = fake::classified(
        fake::flash_elf(&backend(&exe, None, Some("nosuchchip"))).expect_err("target type"),
    );
    assert_eq!(failed.error_type, "target_type_invalid");
    assert!(matches!(failed.contact, Contact::None { .. }));
    assert_eq!(
        failed.details["install_commands"][1],
        "pyocd pack install nosuchchip"
    );
}

#[test]
fn an_unexplained_failure_checks_the_target_type_against_pyocds_list() {
    let (dir, exe) = fake::install("pyocd.py", "odd-failure");
    let failed = fake::classified(
        backend(&exe, None, Some("STM32F405RG"))
            .probe(&budget())
            .expect_err("odd"),
    );
    assert_eq!(failed.error_type, "target_type_invalid");
    assert!(matches!(failed.contact, Contact::None { .. }));
    assert_eq!(
        fake::calls(dir.path())[1],
        ["json", "--targets", "--no-config"]
    );
    let failed = fake::classified(
        backend(&exe, None, Some("STM32F439XI"))
            .probe(&budget())
            .expect_err("odd"),
    );
    assert_eq!(
        failed.error_type, "unknown_debugger_error",
        "a known target stays unexplained"
    );
    assert_eq!(normalise_target("STM32F4-39 xi"), "stm32f4_39_xi");
}

#[test]
fn an_unresponsive_target_proves_no_contact_only_for_the_probe() {
    FAKE.assert_absent_target("not-connected", |probe| {
        probe.reset(ResetMode::Run, &budget())
    });
}

#[test]
fn a_failed_post_flash_reset_says_the_image_was_written() {
    let failed = FAKE.failure_on("reset-fail", |probe| {
        probe.flash(
            &fake::flash_request("/s/fw.elf", ImageFormat::Elf, true),
            &budget(),
        )
    });
    assert_eq!(failed.error_type, "reset_failed");
    assert_eq!(failed.contact, Contact::Made);
    assert_eq!(failed.details["image_written"], true);
    assert_eq!(failed.transcripts.len(), 2);
}

#[test]
fn verify_failure_and_failure_words_on_exit_zero_fail_the_flash() {
    for (scenario, expected) in [("verify-fail", "verify_failed"), ("noisy", "flash_failed")] {
        let failed = FAKE.failure_on(scenario, fake::flash_elf);
        assert_eq!(failed.error_type, expected, "{scenario}");
    }
}

#[test]
fn a_listing_that_is_not_json_is_a_discovery_failure() {
    let failed = FAKE.failure_on("bad-json", |probe| probe.list_probes(&budget()));
    assert_eq!(failed.error_type, "probe_discovery_failed");
}

#[test]
fn reset_init_is_not_supported() {
    let failed = fake::classified(
        backend(Path::new("/nonexistent/pyocd"), None, None)
            .reset(ResetMode::Init, &budget())
            .expect_err("init"),
    );
    assert_eq!(failed.error_type, "not_supported");
    assert_eq!(
        failed.details["supported_modes"],
        serde_json::json!(["run", "halt"])
    );
}

#[test]
fn a_hung_pyocd_is_killed_with_its_grandchild() {
    let (dir, exe) = fake::install("pyocd.py", "fork-hang");
    let probe = PyOcd::new(fake::settings(&exe, None, Duration::from_secs(3)), None);
    let failed = fake::classified(probe.probe(&budget()).expect_err("hang"));
    assert_eq!(failed.error_type, "timeout");
    fake::assert_reaped(dir.path(), &["child.pid", "grandchild.pid"]);
}

/// The real pyOCD from `target/pyocd-venv`, where installed.
mod real {
    use super::*;

    fn pyocd() -> std::path::PathBuf {
        let exe = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyocd-venv/bin/pyocd");
        assert!(
            exe.is_file(),
            "pyocd is missing from target/pyocd-venv: run scripts/setup-debian.sh"
        );
        exe
    }

    #[test]
    fn real_pyocd_reports_its_version() {
        assert_eq!(fake::version_of(crate::Backend::PyOcd, &pyocd()), "0.46.0");
    }

    #[test]
    fn real_pyocd_lists_no_probes_here() {
        let exe = pyocd();
        let listing = backend(&exe, None, None)
            .list_probes(&budget())
            .expect("list");
        assert!(listing.probes.is_empty());
    }

    #[test]
    fn real_pyocd_without_a_probe_fails_at_once_as_adapter_not_found() {
        let exe = pyocd();
        let clock = std::time::Instant::now();
        let failed = fake::classified(
            backend(&exe, None, Some("stm32f439xi"))
                .reset(ResetMode::Halt, &budget())
                .expect_err("no probe"),
        );
        assert_eq!(failed.error_type, "adapter_not_found");
        assert!(matches!(failed.contact, Contact::None { .. }));
        assert!(
            clock.elapsed() < Duration::from_secs(15),
            "-W must stop pyOCD waiting"
        );
    }

    #[test]
    fn real_pyocd_knows_a_builtin_part_and_not_a_pack_only_one() {
        let exe = pyocd();
        let known = backend(&exe, None, Some("stm32f103rc")).target_support(&budget());
        let TargetSupport::Supported { entry, .. } = &known else {
            panic!("{known:?}");
        };
        assert_eq!(entry.source, "builtin");
        // The emulated board's STM32F405 needs a pack, which this machine does not have.
        let unknown = backend(&exe, None, Some("stm32f405rg")).target_support(&budget());
        let TargetSupport::Unsupported {
            close_matches,
            known,
            ..
        } = &unknown
        else {
            panic!("{unknown:?}");
        };
        assert!(*known > 100, "{known}");
        assert!(
            close_matches.iter().all(|m| m.starts_with("stm32")),
            "{close_matches:?}"
        );
    }
}
