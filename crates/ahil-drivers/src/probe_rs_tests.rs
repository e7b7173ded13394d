use super::*;
use crate::probe_cli::fake;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `chip` over SWD through `probe` (any probe when `None`).
fn swd(chip: &str, probe: Option<&str>) -> TargetRef {
    TargetRef {
        chip: chip.into(),
        probe: probe.map(Into::into),
        protocol: "swd".into(),
    }
}

fn target() -> TargetRef {
    swd("STM32F405RGTx", Some("0669FF"))
}

#[test]
fn every_request_survives_its_own_wire_form() {
    let requests = [
        Request::List,
        Request::Probe { target: target() },
        Request::Reset {
            target: target(),
            mode: "halt".into(),
        },
        Request::Read {
            target: target(),
            address: 0x2000_0000,
            length: 4,
        },
        Request::Flash {
            target: target(),
            image: "/state/staged/fw.bin".into(),
            format: Format::Bin,
            base: Some(0x0800_0000),
            verify: true,
            reset: Some("run".into()),
        },
    ];
    for request in requests {
        let line = serde_json::to_string(&request).expect("encodes");
        assert!(!line.contains('\n'), "one request is one line: {line}");
        let back: Request = serde_json::from_str(&line).expect("decodes");
        assert_eq!(back, request);
    }
}

#[test]
fn a_request_with_an_unknown_field_is_refused_by_the_worker() {
    let args = vec![
        "--request".to_owned(),
        r#"{"op":"probe","chip":"X","protocol":"swd","erase_all":true}"#.to_owned(),
    ];
    assert!(crate::probe_rs_worker::parse_args(&args).is_err());
    assert!(crate::probe_rs_worker::parse_args(&["--request".to_owned()]).is_err());
}

#[test]
fn the_reply_keeps_stages_in_order_and_the_answer_last() {
    let stdout = "{\"stage\":\"attach\"}\nnoise from a library\n{\"stage\":\"erase\"}\n{\"ok\":true,\"message\":\"done\",\"data\":{\"verified\":true}}\n";
    let reply = parse_reply(stdout);
    assert_eq!(reply.stages, ["attach", "erase"]);
    let answer = reply.answer.expect("answer");
    assert!(answer.ok);
    assert_eq!(answer.data["verified"], true);
}

#[test]
fn a_reply_cut_short_has_no_answer() {
    let reply = parse_reply("{\"stage\":\"download\"}\n{\"ok\":tr");
    assert_eq!(reply.stages, ["download"]);
    assert!(reply.answer.is_none());
}

fn backend(worker: &Path, timeout: Duration) -> ProbeRs {
    ProbeRs::new(
        fake::settings(worker, None, timeout),
        Some("STM32F405RGTx"),
        "swd",
    )
}

/// A worker running `body`, and the directory it is alone in.
fn script(body: &str) -> (tempfile::TempDir, PathBuf) {
    fake::install_sh("worker", body)
}

#[test]
fn a_worker_that_finds_no_probe_fails_with_no_contact() {
    let (_dir, worker) = script(
        r#"echo '{"ok":false,"class":"adapter_not_found","reached":"none","message":"no debug probe was found on USB"}'; exit 1"#,
    );
    let error = fake::classified(
        backend(&worker, Duration::from_secs(10))
            .probe(&Budget::new(Duration::from_secs(10)))
            .expect_err("no probe"),
    );
    assert_eq!(error.error_type, "adapter_not_found");
    assert!(matches!(error.contact, Contact::None { .. }));
    assert_eq!(
        error.details["probe_rs_message"],
        "no debug probe was found on USB"
    );
}

#[test]
fn a_worker_that_dies_without_an_answer_is_a_crash_with_possible_contact() {
    let (_dir, worker) = script(r#"echo '{"stage":"attach"}'; kill -ABRT $$"#);
    let error = fake::classified(
        backend(&worker, Duration::from_secs(10))
            .reset(ResetMode::Run, &Budget::new(Duration::from_secs(10)))
            .expect_err("crash"),
    );
    assert_eq!(error.backend_error_type, "worker_crashed");
    assert_eq!(error.error_type, "unknown_debugger_error");
    assert_eq!(error.contact, Contact::Possible);
}

#[test]
fn a_worker_past_its_deadline_is_killed_and_reported_as_a_timeout() {
    let (_dir, worker) = script("sleep 30");
    let started = std::time::Instant::now();
    let error = fake::classified(
        backend(&worker, Duration::from_millis(300))
            .probe(&Budget::new(Duration::from_secs(10)))
            .expect_err("timeout"),
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(error.error_type, "timeout");
    assert_eq!(error.contact, Contact::Possible);
}

#[test]
fn an_entry_without_a_chip_is_refused_before_the_worker_starts() {
    let probe = ProbeRs::new(
        fake::settings(
            Path::new("/nonexistent/worker"),
            None,
            Duration::from_secs(1),
        ),
        None,
        "swd",
    );
    let error = fake::classified(
        probe
            .probe(&Budget::new(Duration::from_secs(1)))
            .expect_err("no chip"),
    );
    assert_eq!(error.error_type, "target_type_invalid");
    assert!(matches!(error.contact, Contact::None { .. }));
}

#[test]
fn listing_through_the_worker_reports_serials() {
    let (_dir, worker) = script(
        r#"echo '{"ok":true,"message":"1 probe(s) found","data":{"complete":true,"probes":[{"serial":"0669FF","description":"STLink V2-1"}]}}'"#,
    );
    let listing = backend(&worker, Duration::from_secs(10))
        .list_probes(&Budget::new(Duration::from_secs(10)))
        .expect("listing");
    assert_eq!(listing.probes.len(), 1);
    assert_eq!(listing.probes[0].id, "0669FF");
    assert!(listing.complete);
    assert!(listing.note.is_none());
}

#[cfg(feature = "probe-rs")]
mod native {
    use super::*;

    fn run(request: &Request) -> Answer {
        let line = serde_json::to_string(request).expect("encodes");
        // The worker's entry point without its exit code: what it would print last.
        crate::probe_rs_worker::run_for_test(&line)
    }

    #[test]
    fn an_unknown_chip_is_refused_before_any_probe_is_opened() {
        let answer = run(&Request::Probe {
            target: swd("NOT_A_CHIP_9000", None),
        });
        assert!(!answer.ok);
        assert_eq!(answer.class.as_deref(), Some("target_type_invalid"));
        assert_eq!(answer.reached, Some(Reached::None));
    }

    #[test]
    fn a_probe_serial_that_is_absent_is_adapter_not_found_with_no_contact() {
        let answer = run(&Request::Reset {
            target: swd("STM32F405RGTx", Some("NO-SUCH-SERIAL")),
            mode: "run".into(),
        });
        assert!(!answer.ok);
        assert_eq!(answer.class.as_deref(), Some("adapter_not_found"));
        assert_eq!(answer.reached, Some(Reached::None));
    }

    #[test]
    fn listing_opens_nothing_and_succeeds_without_probes() {
        let answer = run(&Request::List);
        assert!(answer.ok);
        assert!(answer.data["probes"].is_array());
    }

    fn nrf51() -> TargetRef {
        swd("nrf51822_xxAC", None)
    }

    #[test]
    fn a_dry_run_flash_lays_an_image_out_over_the_chips_flash() {
        let dir = tempfile::tempdir().expect("tempdir");
        let image = dir.path().join("fw.bin");
        std::fs::write(&image, vec![0xA5_u8; 2048]).expect("image");
        let path = image.to_str().expect("utf-8 path");
        let inside = crate::probe_rs_worker::dry_run_flash_on_fake_probe(
            &nrf51(),
            path,
            Format::Bin,
            Some(0),
        );
        assert!(inside.ok, "{inside:?}");
        // Nothing of the nRF51's memory map lives at the STM32 flash base.
        let outside = crate::probe_rs_worker::dry_run_flash_on_fake_probe(
            &nrf51(),
            path,
            Format::Bin,
            Some(0x0800_0000),
        );
        assert!(!outside.ok);
        assert_eq!(outside.class.as_deref(), Some("flash_failed"));
    }

    #[test]
    fn an_unreadable_image_fails_before_anything_is_programmed() {
        let answer = crate::probe_rs_worker::dry_run_flash_on_fake_probe(
            &nrf51(),
            "/nonexistent/fw.elf",
            Format::Elf,
            None,
        );
        assert!(!answer.ok);
        assert_eq!(answer.class.as_deref(), Some("flash_failed"));
        assert_eq!(answer.reached, Some(Reached::Possible));
    }

    #[test]
    fn the_fake_probe_attaches_and_reports_the_core_state() {
        let answer = crate::probe_rs_worker::with_fake_probe(&nrf51());
        assert!(answer.ok, "{answer:?}");
        assert!(answer.data["core_state"].is_string());
    }
}

#[test]
fn the_workers_stages_are_heard_while_it_runs_and_once_each() {
    let (_dir, worker) = script(
        r#"echo '{"stage":"attach"}'; sleep 1; echo '{"ok":true,"message":"halted","data":{"core":"halted"}}'"#,
    );
    let started = std::time::Instant::now();
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let budget = Budget::new(Duration::from_secs(10)).with_progress({
        let heard = std::sync::Arc::clone(&heard);
        std::sync::Arc::new(move |stage: &str| {
            heard
                .lock()
                .expect("heard")
                .push((stage.to_owned(), started.elapsed()));
        })
    });
    backend(&worker, Duration::from_secs(10))
        .probe(&budget)
        .expect("the scripted worker answers");
    let heard = heard.lock().expect("heard").clone();
    let stages: Vec<&str> = heard.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stages, ["connect", "attach"], "{heard:?}");
    assert!(
        heard[1].1 < Duration::from_millis(900),
        "the stage came only when the worker ended: {heard:?}"
    );
}

#[test]
fn a_memory_read_returns_exactly_the_bytes_asked_for() {
    let (_dir, worker) = script(
        r#"echo '{"ok":true,"message":"read 4 byte(s)","data":{"address":536870912,"bytes":[1,2,3,4]}}'"#,
    );
    let probe = backend(&worker, Duration::from_secs(10));
    let budget = Budget::new(Duration::from_secs(10));
    assert_eq!(
        probe.read_memory(0x2000_0000, 4, &budget).expect("read"),
        [1, 2, 3, 4]
    );
    let short = fake::classified(
        probe
            .read_memory(0x2000_0000, 8, &budget)
            .expect_err("short"),
    );
    assert_eq!(short.error_type, "memory_read_failed");
}
