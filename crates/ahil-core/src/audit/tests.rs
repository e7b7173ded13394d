//! The audit trail's behaviour: layout, chain, mirrors, tamper verdicts, crash safety, redaction.

use crate::ErrorType;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::chain::{GENESIS, chain_next};
use super::*;
use crate::testkit::syncs_during;

struct World {
    _root: tempfile::TempDir,
    state: PathBuf,
    workspace: PathBuf,
    audit: Audit,
}

#[path = "sidecar_tests.rs"]
mod sidecar;

fn world() -> World {
    let root = tempfile::tempdir().expect("temp dir");
    let state = root.path().join("state");
    let workspace = root.path().join("ws");
    let config = root.path().join("config/config.yaml");
    fs::create_dir_all(&workspace).expect("workspace");
    fs::create_dir_all(config.parent().expect("parent")).expect("config dir");
    fs::write(&config, "version: 3\n").expect("config");
    let audit = Audit::new(
        &state,
        &config,
        &workspace,
        ".agentic-hil/reports",
        ".agentic-hil/logs",
    );
    World {
        _root: root,
        state,
        workspace,
        audit,
    }
}

type Edit = Box<dyn FnOnce(&mut Vec<String>)>;

const LOG: &str = "com-20261129T204948254Z-dut_uart.jsonl";

impl World {
    fn canonical(&self) -> PathBuf {
        self.audit.project_dir().join("audit-logs").join(LOG)
    }
    fn sidecar(&self) -> PathBuf {
        self.audit
            .project_dir()
            .join("audit-logs")
            .join(format!("{LOG}.digest"))
    }
    fn mirror(&self) -> PathBuf {
        self.workspace.join(".agentic-hil/logs").join(LOG)
    }
    fn mirror_lines(&self) -> usize {
        let text = fs::read_to_string(self.mirror()).expect("mirror");
        text.lines().count()
    }
    /// `event` appended to the test log as an audited line.
    fn append(&self, event: &Value) -> Result<String, AuditError> {
        self.audit.append_event(LOG, event)
    }
    /// A line the port received, to the mirror alone.
    fn passive_rx(&self) {
        self.audit
            .append_passive(LOG, &json!({"direction": "rx", "text": "boot"}))
            .expect("passive");
    }
    fn three_events(&self) {
        for (i, event) in ["start", "tx", "stop"].into_iter().enumerate() {
            self.append(&json!({"event": event, "n": i, "time": "2026-11-29T20:49:48.254Z"}))
                .expect("append");
        }
    }
    fn evidence(&self) -> Value {
        self.audit
            .log_evidence(&self.audit.log_path(LOG))
            .expect("a canonical log exists")
    }
    fn edit_lines(path: &Path, edit: impl FnOnce(&mut Vec<String>)) {
        let text = fs::read_to_string(path).expect("read");
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        edit(&mut lines);
        let mut out = lines.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        fs::write(path, out).expect("write");
    }
}

#[test]
fn the_project_namespace_is_the_reference_digest_of_config_and_workspace() {
    // Verified against the reference: this pair lands in projects/95dc29a3b7f9e3bb41d1f686.
    let digest = project_digest(
        Path::new("/tmp/refx/home/.config/agentic-hil/projects/ws-e163e5b94f/config.yaml"),
        Path::new("/tmp/refx/ws"),
    );
    assert_eq!(&digest[..24], "95dc29a3b7f9e3bb41d1f686");
    assert_eq!(digest.len(), 64);
}

#[test]
fn configured_directories_are_frozen_to_lexical_workspace_paths() {
    let audit = Audit::new(
        Path::new("/s"),
        Path::new("/c.yaml"),
        Path::new("/w"),
        "/w/a/./b/../reports",
        "logs/",
    );
    assert_eq!(audit.reports_rel(), "a/reports");
    assert_eq!(audit.logs_rel(), "logs");
    assert_eq!(audit.log_path("x y.jsonl"), "logs/x_y.jsonl");
}

#[test]
fn appends_chain_each_line_onto_the_previous_digest_and_mirror_it() {
    let w = world();
    w.three_events();
    let canonical = fs::read(w.canonical()).expect("canonical");
    let sidecar = Sidecar::parse(&fs::read(w.sidecar()).expect("sidecar")).expect("parses");
    let mut chain = GENESIS.to_owned();
    for line in canonical.split_inclusive(|b| *b == b'\n') {
        chain = chain_next(&chain, line);
    }
    assert_eq!(sidecar.sequence, 3);
    assert_eq!(sidecar.chain_sha256, chain);
    assert_eq!(sidecar.bytes, canonical.len() as u64);
    assert_eq!(fs::read(w.mirror()).expect("mirror"), canonical);
    let first = canonical.split(|b| *b == b'\n').next().expect("a line");
    assert_eq!(
        std::str::from_utf8(first).expect("ascii"),
        r#"{"event": "start", "n": 0, "time": "2026-11-29T20:49:48.254Z"}"#
    );
    let evidence = w.evidence();
    assert_eq!(evidence["workspace_log_verified"], true);
    assert_eq!(evidence["log_sequence"], 3);
    assert_eq!(evidence["canonical_log_name"], LOG);
    assert!(!evidence.to_string().contains(&*w.state.to_string_lossy()));
}

#[test]
fn passive_lines_in_the_mirror_are_tolerated() {
    let w = world();
    w.append(&json!({"event": "start"})).expect("append");
    w.passive_rx();
    w.append(&json!({"event": "stop"})).expect("append");
    assert_eq!(w.evidence()["workspace_log_state"], "verified");
}

#[test]
fn a_passive_line_reaches_the_mirror_without_an_fsync() {
    let w = world();
    w.three_events();
    let ((), syncs) = syncs_during(|| w.passive_rx());
    assert_eq!(syncs, 0);
    assert_eq!(w.mirror_lines(), 4, "the mirror still gets the line");
    assert_eq!(w.evidence()["workspace_log_state"], "verified");
}

fn mirror_verdict_after(edit: impl FnOnce(&mut Vec<String>)) -> Value {
    let w = world();
    w.three_events();
    World::edit_lines(&w.mirror(), edit);
    w.evidence()
}

#[test]
fn each_kind_of_mirror_tampering_fails_verification_with_its_verdict() {
    let cases: [(&str, Edit, &str); 6] = [
        (
            "delete middle",
            Box::new(|l| {
                l.remove(1);
            }),
            "altered",
        ),
        (
            "delete first",
            Box::new(|l| {
                l.remove(0);
            }),
            "altered",
        ),
        (
            "edit",
            Box::new(|l| l[1] = l[1].replace("tx", "TX")),
            "altered",
        ),
        ("reorder", Box::new(|l| l.swap(0, 1)), "altered"),
        (
            "truncate last",
            Box::new(|l| {
                let cut = l[2].len() / 2;
                l[2].truncate(cut);
            }),
            "behind",
        ),
        (
            "delete last",
            Box::new(|l| {
                l.pop();
            }),
            "behind",
        ),
    ];
    for (name, edit, verdict) in cases {
        let evidence = mirror_verdict_after(edit);
        assert_eq!(evidence["workspace_log_verified"], false, "{name}");
        assert_eq!(evidence["workspace_log_state"], verdict, "{name}");
        assert_eq!(evidence["canonical_chain_verified"], true, "{name}");
    }
}

#[test]
fn each_kind_of_canonical_tampering_is_reported_as_corruption() {
    let cases: [(&str, Edit); 4] = [
        (
            "delete",
            Box::new(|l| {
                l.remove(1);
            }),
        ),
        ("edit", Box::new(|l| l[0] = l[0].replace("start", "begin"))),
        ("reorder", Box::new(|l| l.swap(1, 2))),
        (
            "truncate",
            Box::new(|l| {
                let cut = l[2].len() - 3;
                l[2].truncate(cut);
            }),
        ),
    ];
    for (name, edit) in cases {
        let w = world();
        w.three_events();
        World::edit_lines(&w.canonical(), edit);
        let evidence = w.evidence();
        assert_eq!(evidence["canonical_log_corrupted"], true, "{name}");
        assert_eq!(evidence["workspace_log_verified"], false, "{name}");
    }
}

#[test]
fn a_tampered_canonical_log_refuses_further_appends() {
    let w = world();
    w.three_events();
    World::edit_lines(&w.canonical(), |l| {
        l.pop();
    });
    let err = w.append(&json!({"event": "x"})).expect_err("refused");
    assert_eq!(err.error_type(), ErrorType::CoordinationStateInvalid);
    assert_eq!(w.mirror_lines(), 3);
}

#[test]
fn swapping_any_audit_file_for_a_symlink_is_detected() {
    // Mirror → the mirror is unsafe, never verified.
    let w = world();
    w.three_events();
    let copy = w.workspace.join("copy.jsonl");
    fs::copy(w.mirror(), &copy).expect("copy");
    fs::remove_file(w.mirror()).expect("rm");
    symlink(&copy, w.mirror()).expect("link");
    assert_eq!(w.evidence()["workspace_log_state"], "unsafe");
    assert_eq!(w.evidence()["workspace_log_verified"], false);
    assert_eq!(
        w.append(&json!({"e": 1}))
            .expect_err("refused")
            .error_type(),
        ErrorType::UnsafeConfiguredPath
    );

    // Canonical log and sidecar → corruption.
    for target in ["log", "sidecar"] {
        let w = world();
        w.three_events();
        let path = if target == "log" {
            w.canonical()
        } else {
            w.sidecar()
        };
        let aside = path.with_extension("aside");
        fs::rename(&path, &aside).expect("move");
        symlink(&aside, &path).expect("link");
        let evidence = w.evidence();
        assert_eq!(evidence["canonical_log_corrupted"], true, "{target}");
        assert!(!evidence.to_string().contains(&*w.state.to_string_lossy()));
    }
}

/// A directory no new file can be made in, for as long as it lives: immutable for root (whom
/// permissions do not stop), read-only for anyone else.
struct Sealed(PathBuf);

impl Sealed {
    fn new(dir: &Path) -> Self {
        use rustix::fs::{IFlags, ioctl_getflags, ioctl_setflags};
        use std::os::unix::fs::PermissionsExt;
        if rustix::process::geteuid().is_root() {
            let handle = fs::File::open(dir).expect("open the directory");
            let flags = ioctl_getflags(&handle).expect("this filesystem keeps inode flags");
            ioctl_setflags(&handle, flags | IFlags::IMMUTABLE).expect("set immutable");
        } else {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o500)).expect("read-only");
        }
        Self(dir.to_path_buf())
    }
}

impl Drop for Sealed {
    fn drop(&mut self) {
        use rustix::fs::{IFlags, ioctl_getflags, ioctl_setflags};
        use std::os::unix::fs::PermissionsExt;
        if let Ok(handle) = fs::File::open(&self.0)
            && let Ok(flags) = ioctl_getflags(&handle)
        {
            let _ = ioctl_setflags(&handle, flags - IFlags::IMMUTABLE);
        }
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o700));
    }
}

#[test]
fn readiness_fails_when_a_workspace_directory_takes_no_new_file_and_leaves_nothing_in_it() {
    let w = world();
    w.audit.readiness().expect("ready");
    let reports = w.workspace.join(".agentic-hil/reports");
    let listing = || fs::read_dir(&reports).expect("list").count();
    assert_eq!(listing(), 0, "the probe leaves no file behind");
    let sealed = Sealed::new(&reports);
    let err = w.audit.readiness().expect_err("not ready");
    let outcome = unavailable("flash_firmware", &err);
    assert_eq!(outcome.error_type.as_deref(), Some("audit_unavailable"));
    assert!(
        !err.to_string().contains(&*w.workspace.to_string_lossy()),
        "{err}"
    );
    drop(sealed);
    w.audit.readiness().expect("ready again");
}

#[test]
fn readiness_fails_when_a_workspace_directory_is_a_link() {
    let w = world();
    w.audit.readiness().expect("ready");
    let elsewhere = w.workspace.join("elsewhere");
    fs::create_dir_all(&elsewhere).expect("dir");
    fs::remove_dir_all(w.workspace.join(".agentic-hil/reports")).expect("rm");
    symlink(&elsewhere, w.workspace.join(".agentic-hil/reports")).expect("link");
    let err = w.audit.readiness().expect_err("not ready");
    assert_eq!(err.error_type(), ErrorType::UnsafeConfiguredPath);
    let outcome = unavailable("flash_firmware", &err);
    assert_eq!(outcome.error_type.as_deref(), Some("audit_unavailable"));
    assert_eq!(outcome.audit_ok, Some(false));
    assert_eq!(outcome.retry_safe, Some(true));
}

fn report(tool: &str, ok: bool, finished: &str) -> Map<String, Value> {
    let mut outcome = if ok {
        crate::Outcome::ok(tool, "done")
    } else {
        crate::Outcome::refused(tool, ErrorType::DebuggerError, "failed")
    };
    outcome.finished_at = Some(finished.into());
    match outcome.to_value() {
        Value::Object(map) => map,
        _ => unreachable!("an envelope is an object"),
    }
}

#[test]
fn a_report_is_committed_canonically_and_mirrored_to_the_workspace() {
    let w = world();
    let mut first = report("flash_firmware", false, "2026-01-01T00:00:01.000Z");
    let written = w
        .audit
        .write_report(&mut first, &json!({"digest": "sha256:x"}))
        .expect("write");
    assert!(written.failure);
    assert_eq!(written.report_path, ".agentic-hil/reports/last-report.json");
    let mut second = report("reset_target", true, "2026-01-01T00:00:02.000Z");
    w.audit
        .write_report(&mut second, &Value::Null)
        .expect("write");
    let state = report::load_state(&w.audit).expect("state");
    assert_eq!(
        state.last_report.as_ref().expect("report")["tool"],
        "reset_target"
    );
    assert_eq!(
        state.last_failure.as_ref().expect("failure")["tool"],
        "flash_firmware"
    );
    assert_eq!(
        state.last_failure.as_ref().expect("failure")["config_in_force"]["digest"],
        "sha256:x"
    );
    let mirror: Value = serde_json::from_slice(
        &fs::read(w.workspace.join(".agentic-hil/reports/last-report.json")).expect("mirror"),
    )
    .expect("json");
    assert_eq!(mirror["tool"], "reset_target");
    assert!(
        w.workspace
            .join(".agentic-hil/reports/last-failure.json")
            .exists()
    );
    assert_eq!(
        w.audit
            .report_mirror_state(state.last_report.as_ref().expect("report")),
        "verified"
    );
}

#[test]
fn credentials_planted_in_output_arguments_and_values_reach_no_file() {
    const SECRET: &str = "pl4nted-s3cret";
    let w = world();
    let mut doc = report("flash_firmware", false, "2026-01-01T00:00:01.000Z");
    doc.insert("backend".into(), json!({
        "stdout": format!("fetch https://ci:{SECRET}@git.example/x\nAuthorization: Bearer {SECRET}"),
        "stderr": [format!("export API_TOKEN={SECRET}"), format!("GET /x?password={SECRET}&a=1")],
    }));
    doc.insert(
        "arguments".into(),
        json!({"auth_key": SECRET, "env": {"GITHUB_TOKEN": SECRET}}),
    );
    w.audit
        .write_report(&mut doc, &json!({"secret": SECRET}))
        .expect("write");
    w.audit
        .append_event(
            LOG,
            &json!({"event": "start", "password": SECRET, "stderr": format!("token={SECRET}")}),
        )
        .expect("append");
    let mut seen = Vec::new();
    for dir in [&w.state, &w.workspace] {
        collect(dir, &mut seen);
    }
    assert!(seen.len() >= 5, "{seen:?}");
    for file in seen {
        let text = fs::read_to_string(&file).unwrap_or_default();
        assert!(
            !text.contains(SECRET),
            "{} leaks the secret",
            file.display()
        );
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("list").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn a_damaged_report_state_is_moved_aside_with_every_byte_kept() {
    let w = world();
    let mut doc = report("flash_firmware", true, "2026-01-01T00:00:01.000Z");
    w.audit.write_report(&mut doc, &Value::Null).expect("write");
    let state = w.audit.project_dir().join("reports/report-state.json");
    let damaged = b"{\"version\": 2, \"half\": ".to_vec();
    fs::write(&state, &damaged).expect("damage");
    assert_eq!(
        report::load_state(&w.audit)
            .expect_err("damaged")
            .error_type(),
        ErrorType::ReportStateDamaged
    );
    let repaired = w.audit.repair_report_state().expect("repair");
    assert_eq!(repaired["repaired"], true);
    let name = repaired["moved_to"].as_str().expect("name");
    assert!(
        name.starts_with("report-state.damaged-")
            && Path::new(name).extension().is_some_and(|e| e == "json"),
        "{name}"
    );
    assert_eq!(
        fs::read(w.audit.project_dir().join("reports").join(name)).expect("aside"),
        damaged
    );
    assert_eq!(
        report::load_state(&w.audit).expect("fresh"),
        report::ReportState::default()
    );
    assert_eq!(
        w.audit.repair_report_state().expect("again")["repaired"],
        false
    );
}

#[test]
fn a_report_that_cannot_be_written_after_the_action_marks_the_audit_broken() {
    let w = world();
    fs::create_dir_all(w.audit.project_dir().join("reports")).expect("dir");
    fs::write(
        w.audit.project_dir().join("reports/report-state.json"),
        "[]",
    )
    .expect("damage");
    let mut outcome = crate::Outcome::ok("flash_firmware", "flashed");
    outcome.target_contacted = Some(true);
    record(&w.audit, &mut outcome, &json!({"image_path": "fw.elf"}));
    assert_eq!(outcome.audit_ok, Some(false));
    assert_eq!(outcome.cleanup_required, Some(true));
    assert_eq!(
        outcome.error_type.as_deref(),
        Some("audit_failed_after_action")
    );
    assert!(!crate::overall_success(&outcome));
    assert_eq!(
        outcome.detail("audit_error").expect("error")["error_type"],
        "report_state_damaged"
    );
}

/// Runs this test binary again as a child that performs one more write and aborts at `point`.
fn crash_child(w: &World, point: &str, job: &str) {
    let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "audit::tests::a_child_asked_to_crash_dies_between_the_two_writes",
            "--nocapture",
        ])
        .env("AHIL_AUDIT_CRASH", point)
        .env("AHIL_AUDIT_CRASH_JOB", job)
        .env("AHIL_AUDIT_CRASH_STATE", &w.state)
        .env("AHIL_AUDIT_CRASH_WS", &w.workspace)
        .env(
            "AHIL_AUDIT_CRASH_CONFIG",
            w.workspace.join("../config/config.yaml"),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("child runs");
    assert!(!status.success(), "the child was meant to die at {point}");
}

#[test]
fn a_child_asked_to_crash_dies_between_the_two_writes() {
    let (Some(state), Some(ws), Some(config), Some(job)) = (
        std::env::var_os("AHIL_AUDIT_CRASH_STATE"),
        std::env::var_os("AHIL_AUDIT_CRASH_WS"),
        std::env::var_os("AHIL_AUDIT_CRASH_CONFIG"),
        std::env::var_os("AHIL_AUDIT_CRASH_JOB"),
    ) else {
        return; // Only meaningful as the child of the crash tests.
    };
    let audit = Audit::new(
        Path::new(&state),
        Path::new(&config),
        Path::new(&ws),
        ".agentic-hil/reports",
        ".agentic-hil/logs",
    );
    if job == "log" {
        let _ = audit.append_event(LOG, &json!({"event": "tx", "n": 99}));
    } else {
        let mut doc = report("flash_firmware", true, "2026-01-01T00:00:09.000Z");
        let _ = audit.write_report(&mut doc, &Value::Null);
    }
}

#[test]
fn a_kill_between_canonical_and_mirror_log_writes_loses_no_record_and_shows_the_mirror_behind() {
    let w = world();
    w.three_events();
    crash_child(&w, "after_canonical_log", "log");
    let evidence = w.evidence();
    assert_eq!(evidence["log_sequence"], 4, "the canonical record survived");
    assert_eq!(evidence["canonical_chain_verified"], true);
    assert_eq!(evidence["workspace_log_state"], "behind");
    assert_eq!(evidence["workspace_log_verified"], false);
    // The trail goes on: the next append chains onto the surviving record.
    w.append(&json!({"event": "stop"})).expect("append");
    assert_eq!(w.evidence()["log_sequence"], 5);
}

#[test]
fn a_kill_mid_append_between_the_line_and_its_sidecar_is_refused_on_restart_not_passed_over() {
    let w = world();
    w.three_events();
    crash_child(&w, "after_canonical_line", "log");
    // The restarted server: a fresh trail over the same files.
    let restarted = Audit::new(
        &w.state,
        &w.workspace.join("../config/config.yaml"),
        &w.workspace,
        ".agentic-hil/reports",
        ".agentic-hil/logs",
    );
    let evidence = restarted
        .log_evidence(&restarted.log_path(LOG))
        .expect("canonical");
    assert_eq!(evidence["canonical_log_corrupted"], true, "{evidence}");
    assert!(
        evidence["canonical_fault"]
            .as_str()
            .is_some_and(|why| why.contains("sidecar records")),
        "{evidence}"
    );
    let err = restarted
        .append_event(LOG, &json!({"event": "after"}))
        .expect_err("no record chains onto an unsealed line");
    assert_eq!(err.error_type(), ErrorType::CoordinationStateInvalid);
    assert_eq!(w.mirror_lines(), 3, "nothing reached the mirror");
}

#[test]
fn a_kill_between_canonical_and_mirror_report_writes_keeps_the_report_and_shows_the_mirror_behind()
{
    let w = reported_once();
    crash_child(&w, "after_canonical_report", "report");
    let state = report::load_state(&w.audit).expect("state");
    let last = state.last_report.expect("the canonical report survived");
    assert_eq!(last["tool"], "flash_firmware");
    assert_eq!(w.audit.report_mirror_state(&last), "behind");
}

#[test]
fn a_run_report_gets_its_own_canonical_copy_that_later_reports_never_overwrite() {
    let w = world();
    let mut first = report("test_reactor", true, "2026-01-01T00:00:01.000Z");
    first.insert("run".into(), json!({"handle": "run-0123456789abcdef"}));
    w.audit
        .write_report(&mut first, &Value::Null)
        .expect("write");
    let shown = first["canonical_report_path"]
        .as_str()
        .expect("path")
        .to_owned();
    assert!(shown.starts_with("<state_root>/projects/"), "{shown}");
    let copy = w
        .audit
        .project_dir()
        .join("reports/runs/run-0123456789abcdef.json");
    let kept: Value = serde_json::from_slice(&fs::read(&copy).expect("copy")).expect("json");
    assert_eq!(kept["audit_ok"], true);
    assert!(kept.get("canonical_write_pending").is_none());
    let mut second = report("test_reactor", false, "2026-01-01T00:00:02.000Z");
    second.insert("run".into(), json!({"handle": "run-0123456789abcdef"}));
    w.audit
        .write_report(&mut second, &Value::Null)
        .expect("write");
    let still: Value = serde_json::from_slice(&fs::read(&copy).expect("copy")).expect("json");
    assert_eq!(still, kept);
}

#[test]
fn a_snapshot_written_whole_verifies_and_an_edited_copy_does_not() {
    let w = world();
    let name = "gdb-debug-20261129T204948254Z.json";
    w.audit
        .write_full_file(name, b"{\"state\": \"halted\"}\n")
        .expect("first");
    w.audit
        .write_full_file(name, b"{\"state\": \"running\"}\n")
        .expect("second");
    let evidence = w
        .audit
        .log_evidence(&w.audit.log_path(name))
        .expect("canonical");
    assert_eq!(evidence["log_sequence"], 2);
    assert_eq!(evidence["workspace_log_verified"], true, "{evidence}");
    let mirror = w.workspace.join(".agentic-hil/logs").join(name);
    fs::write(&mirror, b"{\"state\": \"halted\"}\n").expect("edit");
    let evidence = w
        .audit
        .log_evidence(&w.audit.log_path(name))
        .expect("canonical");
    assert_eq!(evidence["workspace_log_state"], "altered");
    let canonical = w.audit.project_dir().join("audit-logs").join(name);
    fs::write(&canonical, b"{\"state\": \"forged\"}\n").expect("forge");
    let evidence = w
        .audit
        .log_evidence(&w.audit.log_path(name))
        .expect("canonical");
    assert_eq!(evidence["canonical_log_corrupted"], true);
}

#[test]
fn an_audited_line_syncs_its_canonical_copy_and_sidecar_but_not_its_workspace_mirror() {
    let w = world();
    w.three_events();
    let (appended, syncs) = syncs_during(|| w.append(&json!({"event": "tx", "n": 3})));
    appended.expect("append");
    // The canonical line (1), its sidecar overwritten in place (1, ADR 0028); the mirror none.
    assert_eq!(syncs, 2);
    assert_eq!(w.mirror_lines(), 4, "the mirror still gets the line");
    assert_eq!(w.evidence()["workspace_log_state"], "verified");
}

fn reported_once() -> World {
    let w = world();
    let mut first = report("reset_target", true, "2026-01-01T00:00:01.000Z");
    w.audit
        .write_report(&mut first, &Value::Null)
        .expect("write");
    w
}

#[test]
fn a_report_syncs_its_canonical_state_but_not_the_workspace_views() {
    let w = reported_once();
    let mut second = report("reset_target", true, "2026-01-01T00:00:02.000Z");
    let (written, syncs) = syncs_during(|| w.audit.write_report(&mut second, &Value::Null));
    written.expect("write");
    // report-state.json replaced (file and directory); last-report.json without fsync.
    assert_eq!(syncs, 2);
    let state = report::load_state(&w.audit).expect("state");
    assert_eq!(
        w.audit
            .report_mirror_state(state.last_report.as_ref().expect("report")),
        "verified"
    );
}

#[test]
fn an_empty_report_view_such_as_a_power_loss_can_leave_reads_behind_not_altered() {
    let w = reported_once();
    fs::write(
        w.workspace.join(".agentic-hil/reports/last-report.json"),
        b"",
    )
    .expect("truncate the view");
    let state = report::load_state(&w.audit).expect("state");
    let trusted = state.last_report.as_ref().expect("report");
    assert_eq!(w.audit.report_mirror_state(trusted), "behind");
    fs::write(
        w.workspace.join(".agentic-hil/reports/last-report.json"),
        b"{\"tool\": \"x\"",
    )
    .expect("tear the view");
    assert_eq!(w.audit.report_mirror_state(trusted), "altered");
}
