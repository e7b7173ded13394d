use std::time::{Duration, Instant};

use crate::Bench;
use crate::ErrorType;
use crate::actions::{self, Acted, Dispatch, Plan, Work};
use crate::catalogue::{self, ToolId};
use crate::envelope::{HardwareState, Outcome, SideEffectStatus};
use crate::testkit::{Fixture, NULL_EXECUTABLE, executable_line};
use ahil_core::bench::{settle, with_context};
use ahil_drivers::Contact;
use serde_json::{Value, json};
use std::sync::Arc;

const OPENOCD_BANNER: &str = "echo 'Open On-Chip Debugger 0.12.0' >&2";

fn bench_with(fixture: &Fixture, text: &str) -> Bench {
    fixture.write_config(text);
    Bench::provisioned(fixture.load(), fixture.env.clone())
}

fn bench_with_tool(fixture: &Fixture, kind: &str, body: &str) -> Bench {
    let exe = fixture.tool("fake-debugger", body);
    let text = fixture.starter_with(&[
        ("    type: \"openocd\"", &format!("    type: \"{kind}\"")),
        (NULL_EXECUTABLE, &executable_line(&exe)),
    ]);
    bench_with(fixture, &text)
}

fn unprovisioned_bench(fixture: &Fixture) -> Bench {
    let why = ahil_config::load_authoritative(&fixture.workspace, &fixture.env)
        .expect_err("no config yet");
    Bench::unprovisioned(fixture.workspace.clone(), why)
}

async fn debugger_info(bench: &Bench) -> Value {
    bench.call("debugger_info", json!({})).await.to_value()
}

/// Asserts that each JSON pointer into `value` holds its value; `what` names the call.
fn assert_holds(value: &Value, what: &str, expected: &[(&str, Value)]) {
    for (pointer, want) in expected {
        let got = value.pointer(pointer);
        assert_eq!(got, Some(want), "{what}: {pointer} in {value}");
    }
}

/// Asserts that the text at `pointer` in `value` mentions `part`.
fn assert_mentions(value: &Value, pointer: &str, part: &str) {
    let text = value.pointer(pointer).and_then(Value::as_str);
    assert!(
        text.is_some_and(|t| t.contains(part)),
        "{pointer} names no {part}: {value}"
    );
}

#[tokio::test]
async fn every_listed_tool_refuses_without_a_configuration() {
    let fixture = Fixture::new();
    let bench = unprovisioned_bench(&fixture);
    assert!(!bench.is_provisioned());
    for spec in bench.tools() {
        let value = bench.call(&spec.name, json!({})).await.to_value();
        assert_holds(
            &value,
            &spec.name,
            &[
                ("/error_type", json!("config_file_not_found")),
                ("/side_effect_status", json!("not_started")),
                ("/hardware_state", json!("unchanged")),
                ("/retry_safe", json!(false)),
                ("/side_effect_committed", json!(false)),
            ],
        );
        assert_mentions(&value, "/next_step", "agentic-hil init");
    }
}

#[tokio::test]
async fn an_unknown_tool_is_named_as_such_with_or_without_a_configuration() {
    let fixture = Fixture::new();
    let outcome = unprovisioned_bench(&fixture)
        .call("flash_everything", json!({}))
        .await;
    assert_eq!(outcome.error_type.as_deref(), Some("unknown_tool"));
    let bench = bench_with(&fixture, &fixture.starter());
    let outcome = bench.call("flash_everything", json!({})).await;
    assert_eq!(outcome.error_type.as_deref(), Some("unknown_tool"));
}

#[tokio::test]
async fn unexpected_arguments_are_refused_before_anything_runs() {
    let fixture = Fixture::new();
    let bench = bench_with(&fixture, &fixture.starter());
    let value = bench
        .call("debugger_info", json!({"foo": 1}))
        .await
        .to_value();
    assert_eq!(value["error_type"], "invalid_argument");
    assert_eq!(value["field"], "foo");
    assert_eq!(value["validator"], "additionalProperties");
    let value = bench.call("debugger_info", json!([1])).await.to_value();
    assert_eq!(value["error_type"], "invalid_argument");
}

#[tokio::test]
async fn the_starter_entry_answers_debugger_not_found_without_contact() {
    let fixture = Fixture::new();
    let bench = bench_with(&fixture, &fixture.starter());
    let outcome = bench.call("debugger_info", json!({})).await;
    let value = outcome.to_value();
    assert_holds(
        &value,
        "debugger_info",
        &[
            ("/error_type", json!("debugger_not_found")),
            ("/backend_error_type", json!("openocd_not_found")),
            ("/target_contacted", json!(false)),
            ("/retry_safe", json!(true)),
            ("/config_status/state", json!("unchanged")),
        ],
    );
    assert!(!outcome.remediation.is_empty());
    assert!(
        value["config_in_force"]["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
}

#[tokio::test]
async fn debugger_info_reports_the_openocd_banner() {
    let fixture = Fixture::new();
    let bench = bench_with_tool(&fixture, "openocd", OPENOCD_BANNER);
    let outcome = bench.call("debugger_info", json!({})).await;
    assert!(crate::overall_success(&outcome), "{:?}", outcome.to_value());
    let value = outcome.to_value();
    assert_holds(
        &value,
        "debugger_info",
        &[
            ("/backend", json!("openocd")),
            ("/version", json!("Open On-Chip Debugger 0.12.0")),
            ("/summary", json!("OpenOCD is available.")),
            ("/target_contacted", json!(false)),
            ("/config_status/state", json!("unchanged")),
        ],
    );
    assert_eq!(value["probe_id"], Value::Null);
    assert!(
        value["executable"]
            .as_str()
            .is_some_and(|e| e.ends_with("fake-debugger"))
    );
    assert!(value.get("target_type").is_none() && value.get("interface").is_none());
}

#[tokio::test]
async fn pyocd_answers_carry_the_target_type_and_stlink_answers_the_interface() {
    let fixture = Fixture::new();
    let value = debugger_info(&bench_with_tool(&fixture, "pyocd", "echo 0.36.0")).await;
    assert_eq!(
        (value["version"].clone(), value["target_type"].clone()),
        (json!("0.36.0"), Value::Null)
    );
    let fixture = Fixture::new();
    let stlink = "echo 'STM32CubeProgrammer version: 2.16.0'";
    let value = debugger_info(&bench_with_tool(&fixture, "stlink", stlink)).await;
    assert_eq!(value["version"], "STM32CubeProgrammer 2.16.0");
    assert_eq!(value["interface"], "SWD");
}

#[tokio::test]
async fn a_hanging_toolchain_times_out_and_is_retry_safe() {
    let fixture = Fixture::new();
    let exe = fixture.tool("openocd-hangs", "sleep 30");
    let text = fixture.starter_with(&[
        (NULL_EXECUTABLE, &executable_line(&exe)),
        ("    timeout_s: 60", "    timeout_s: 0.3"),
    ]);
    let bench = bench_with(&fixture, &text);
    let started = Instant::now();
    let value = debugger_info(&bench).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_holds(
        &value,
        "debugger_info",
        &[
            ("/error_type", json!("timeout")),
            ("/target_contacted", json!(false)),
            ("/retry_safe", json!(true)),
        ],
    );
}

#[tokio::test]
async fn a_failing_version_check_is_a_debugger_error_with_the_backends_words() {
    let fixture = Fixture::new();
    let failing = "echo 'Error: no libusb' >&2\nexit 3";
    let value = debugger_info(&bench_with_tool(&fixture, "openocd", failing)).await;
    assert_eq!(value["error_type"], "debugger_error");
    assert_eq!(value["backend_error_type"], "unknown_debugger_error");
    assert_mentions(&value, "/backend_error", "no libusb");
}

#[tokio::test]
async fn two_debuggers_leave_none_bound() {
    let fixture = Fixture::new();
    let starter = fixture.starter();
    let start = starter.find("  dut:\n").expect("starter has dut");
    let end = starter[start..]
        .find("\ndebug:\n")
        .map(|i| start + i)
        .expect("debug section");
    let second = starter[start..end]
        .replacen("  dut:", "  dut2:", 1)
        .replacen("    probe_id: null", "    probe_id: \"SECOND\"", 1);
    let text = format!(
        "{}{}\n{}",
        &starter[..end],
        second.trim_end(),
        &starter[end..]
    );
    let value = debugger_info(&bench_with(&fixture, &text)).await;
    assert_eq!(value["error_type"], "not_supported");
    assert_eq!(value["configured_debuggers"], json!(["dut", "dut2"]));
    assert_eq!(value["retry_safe"], false);
}

#[tokio::test]
async fn a_version_one_file_needs_allow_probe_for_debugger_info() {
    let fixture = Fixture::new();
    let exe = fixture.tool("openocd", OPENOCD_BANNER);
    let text = fixture.starter_with(&[
        ("version: 3", "version: 1"),
        (NULL_EXECUTABLE, &executable_line(&exe)),
        (
            "      allow_flash: true",
            "      allow_probe: false\n      allow_flash: true",
        ),
    ]);
    let value = debugger_info(&bench_with(&fixture, &text)).await;
    assert_holds(
        &value,
        "debugger_info",
        &[
            ("/error_type", json!("permission_denied")),
            (
                "/permission",
                json!("debuggers.dut.permissions.allow_probe"),
            ),
            ("/config_status/state", json!("unchanged")),
        ],
    );
    assert_mentions(&value, "/next_step", "agentic-hil grant");
}

#[tokio::test]
async fn a_changed_file_marks_every_answer_stale() {
    let fixture = Fixture::new();
    let bench = bench_with(&fixture, &fixture.starter());
    fixture.write_config(
        &fixture.starter_with(&[("  name: \"example-target\"", "  name: \"other\"")]),
    );
    let value = bench
        .call("project_config_describe", json!({}))
        .await
        .to_value();
    assert_eq!(value["config_stale"], true);
    assert_eq!(value["config_status"]["state"], "changed");
    assert_eq!(value["config_in_force"]["diverged_from_file"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_on_one_debugger_run_one_after_the_other() {
    let fixture = Fixture::new();
    let bench = Arc::new(bench_with_tool(
        &fixture,
        "openocd",
        &format!("sleep 0.4\n{OPENOCD_BANNER}"),
    ));
    let started = Instant::now();
    let (a, b) = tokio::join!(
        bench.call("debugger_info", json!({})),
        bench.call("debugger_info", json!({}))
    );
    assert!(a.ok && b.ok);
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_call_kills_its_child() {
    let fixture = Fixture::new();
    let pid_file = fixture.tools.join("pid");
    let body = format!("echo $$ > '{}'\nexec sleep 30", pid_file.display());
    let bench = Arc::new(bench_with_tool(&fixture, "openocd", &body));
    let task = tokio::spawn({
        let bench = Arc::clone(&bench);
        async move { bench.call("debugger_info", json!({})).await }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pid_file.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let pid = std::fs::read_to_string(&pid_file).expect("the fake wrote its pid");
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    let deadline = Instant::now() + Duration::from_secs(3);
    let alive = |dir: &std::path::Path| {
        std::fs::read_to_string(dir.join("stat")).is_ok_and(|stat| !stat.contains(") Z "))
    };
    while alive(&proc_dir) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(&proc_dir), "the child outlived its abandoned call");
}

#[tokio::test]
async fn describe_lists_writable_and_locked_keys_with_their_grants() {
    let fixture = Fixture::new();
    let text = fixture.starter_with(&[(
        "  allow_config_description_write: true",
        "  allow_config_description_write: false",
    )]);
    let value = bench_with(&fixture, &text)
        .call("project_config_describe", json!({}))
        .await
        .to_value();
    assert!(value["ok"].as_bool().unwrap_or(false), "{value}");
    for field in [
        "config_status",
        "document_source",
        "permissions_in_force",
        "path",
        "workspace_root",
        "config_version",
        "rights",
        "writable_keys",
        "locked_keys",
        "new_entry_patterns",
        "open_holds",
        "writes_blocked_by_open_run",
        "next_steps",
    ] {
        assert!(value.get(field).is_some(), "missing {field}");
    }
    assert_eq!(value["config_version"], 3);
    let locked = value["locked_keys"].as_array().expect("array");
    let probe = locked
        .iter()
        .find(|k| k["key"] == "debuggers.dut.probe_id")
        .expect("probe_id is locked behind the description grant");
    assert_eq!(
        probe["unlocked_by"],
        "permissions.allow_config_description_write"
    );
    assert_eq!(probe["current_value"], Value::Null);
    let writable = value["writable_keys"].as_array().expect("array");
    let flash = writable
        .iter()
        .find(|k| k["key"] == "debuggers.dut.permissions.allow_flash")
        .expect("permission keys stay writable");
    assert_eq!(flash["current_value"], true);
    assert_eq!(flash["value_schema"]["type"], "boolean");
    assert_eq!(
        value["permissions_in_force"]["debuggers"]["dut"]["allow_mass_erase"],
        false
    );
    assert_eq!(value["rights"][0]["granted"], false);
}

fn settled(ok: bool, contact: Contact) -> Outcome {
    let outcome = if ok {
        Outcome::ok("flash_firmware", "done")
    } else {
        Outcome::refused("flash_firmware", ErrorType::FlashFailed, "failed")
    };
    settle(Acted {
        outcome,
        contact: Some(contact),
    })
}

#[test]
fn a_failure_after_the_target_answered_leaves_the_hardware_state_unknown() {
    for contact in [Contact::Made, Contact::Possible] {
        let outcome = settled(false, contact);
        assert_eq!(outcome.hardware_state, Some(HardwareState::Unknown));
        assert_eq!(outcome.side_effect_status, Some(SideEffectStatus::Unknown));
        assert_eq!(outcome.retry_safe, Some(false));
    }
}

#[test]
fn only_the_drivers_proof_of_no_contact_makes_a_failure_retry_safe() {
    let outcome = settled(false, Contact::none("the QMP socket was absent"));
    assert_eq!(outcome.target_contacted, Some(false));
    assert_eq!(outcome.retry_safe, Some(true));
    let outcome = settled(true, Contact::Made);
    assert_eq!(outcome.target_contacted, Some(true));
    assert_eq!(
        outcome.side_effect_status,
        Some(SideEffectStatus::Committed)
    );
    assert!(outcome.hardware_state.is_none());
}

#[tokio::test]
async fn probe_tools_on_openocd_need_its_markers_to_succeed() {
    let fixture = Fixture::new();
    // The fake prints OpenOCD's banner and exits 0, but never the stage or result marker.
    let bench = bench_with_tool(&fixture, "openocd", OPENOCD_BANNER);
    let listed = bench.call("debugger_probes_list", json!({})).await;
    assert!(listed.ok, "{listed:?}");
    assert_eq!(listed.detail("complete"), Some(&json!(false)));
    for (tool, args, expected) in [
        ("probe_target", json!({}), "target_state_unconfirmed"),
        ("reset_target", json!({"mode": "run"}), "reset_failed"),
    ] {
        let outcome = bench.call(tool, args).await;
        assert!(!outcome.ok, "{tool}");
        assert_eq!(outcome.error_type.as_deref(), Some(expected), "{tool}");
        assert_eq!(outcome.retry_safe, Some(false), "{tool}");
    }
}

#[tokio::test]
async fn debug_sessions_answer_not_supported_on_backends_without_a_gdb_server() {
    let fixture = Fixture::new();
    let bench = bench_with_tool(&fixture, "pyocd", "echo 0.46.0");
    for (tool, args) in [
        ("debug_start_session", json!({"image_path": "fw.elf"})),
        ("debug_get_session_status", json!({})),
        ("debug_halt", json!({})),
        ("debug_stop_session", json!({})),
    ] {
        let outcome = bench.call(tool, args).await;
        assert!(!outcome.ok, "{tool}");
        assert_eq!(
            outcome.error_type.as_deref(),
            Some("not_supported"),
            "{tool}"
        );
        assert_eq!(outcome.target_contacted, Some(false), "{tool}");
    }
}

/// The outcome a declared tool's plan gives for `{}` on the starter bench: its refusal, or what
/// its local work answers. Driver work is not run (it would start a backend).
fn planned_outcome(bench: &Bench, id: ToolId, plan: actions::PlanFn) -> Option<Outcome> {
    let args = json!({});
    with_context(bench, id, &args, |ctx| match plan(ctx) {
        Err(refusal) => Some(*refusal),
        Ok(Plan {
            work: Work::Local(job),
            ..
        }) => Some(job().outcome),
        Ok(_) => None,
    })
    .expect("the starter configuration loads")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_declared_tool_is_dispatched_to_a_plan_that_answers_under_its_own_name() {
    let fixture = Fixture::new();
    let bench = bench_with(&fixture, &fixture.starter());
    let mut answered = 0;
    for declared in catalogue::declarations() {
        let Dispatch::Plan(plan) = actions::dispatch(declared.id) else {
            continue;
        };
        let Some(outcome) =
            tokio::task::block_in_place(|| planned_outcome(&bench, declared.id, plan))
        else {
            continue;
        };
        answered += 1;
        assert_eq!(outcome.tool, declared.name);
        assert!(
            outcome.detail("misrouted").is_none(),
            "{} is dispatched to a plan that does not serve it",
            declared.name
        );
    }
    assert!(
        answered > 30,
        "most plans answer on the starter bench: {answered}"
    );
}

#[tokio::test]
async fn a_name_that_is_not_declared_is_refused_before_any_plan_or_lease() {
    let fixture = Fixture::new();
    let bench = bench_with(&fixture, &fixture.starter());
    // Names the old prefix rules would have leased (`debug_*`) or a probe plan read as a reset.
    for name in ["debug_anything", "reset_targets", "power_supply_"] {
        let outcome = bench.call(name, json!({})).await;
        assert_eq!(
            outcome.error_type.as_deref(),
            Some("unknown_tool"),
            "{name}"
        );
        assert_eq!(outcome.tool, name);
        assert!(outcome.detail("lease_id").is_none(), "{name}");
        assert!(outcome.lease_state.is_none(), "{name}");
    }
}

/// A plan refuses, as misrouted and before any work, every tool the dispatch binds elsewhere: no
/// plan answers another plan's tool by falling through to one of its own.
#[tokio::test(flavor = "multi_thread")]
async fn every_plan_refuses_each_tool_dispatched_to_another_plan() {
    let fixture = Fixture::new();
    let bench = bench_with(&fixture, &fixture.starter());
    let args = json!({});
    let serves = |plan: actions::PlanFn, tool: ToolId| {
        tokio::task::block_in_place(|| {
            with_context(&bench, tool, &args, |ctx| match plan(ctx) {
                Err(refusal) => refusal.detail("misrouted").is_none(),
                Ok(_) => true,
            })
        })
        .expect("the starter configuration loads")
    };
    let plans: Vec<_> = catalogue::declarations()
        .filter_map(|d| match actions::dispatch(d.id) {
            Dispatch::Plan(plan) => Some((d.id, plan)),
            Dispatch::Reactor => None,
        })
        .collect();
    for &(own, plan) in &plans {
        for &(other, other_plan) in &plans {
            // Two tools share a plan exactly when each one's plan serves the other.
            if serves(plan, other) {
                assert!(
                    serves(other_plan, own),
                    "the plan of {} answers {} as if it were its own",
                    own.name(),
                    other.name()
                );
            }
        }
    }
}
