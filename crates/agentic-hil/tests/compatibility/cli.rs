//! The operator's command lines side by side: each line runs with and without `--json`, each time
//! in a fresh world of its own (HOME, workspace, state) that the implementation's own `init` wrote
//! (or none), and what is compared is the exit status of both runs, whether `--json` printed a
//! document, its `error_type` and the facts named per line. An operator switching implementations
//! keeps their scripts; these are the answers such a script reads.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::driver::{LEASE_STATUS, Observed, field, init, judge};
use crate::support::raw::EchoBoard;
use crate::support::{World, reference};

/// The world a line runs in.
#[derive(Clone, Copy)]
enum Bench {
    /// What `init` wrote, plus the workspace's fixture files.
    Init,
    /// No configuration at all (no `init`), the fixture files only.
    NoConfig,
    /// `init`'s file copied into the workspace and named by `AGENTIC_HIL_CONFIG`.
    ConfigInWorkspace,
    /// `init`'s file with a `uart0` port on a pty that echoes in upper case.
    Serial,
    /// [`Bench::Serial`] after one run of `echo.yaml`.
    SerialAfterRun,
    /// [`Bench::Serial`] with a CAN bus `ecu` on a process bridge (the bridge simulator behind a
    /// `#!/bin/sh` wrapper, as the MCP cases' bus).
    SerialAndCan,
    /// No configuration, and the command runs in HOME, which is no project.
    InHome,
}

/// One command line, run on both implementations.
pub struct Line {
    case: &'static str,
    bench: Bench,
    args: &'static [&'static str],
    /// As in [`crate::driver::Step::fields`].
    fields: &'static [&'static str],
    /// Runs in the test's shared world for its bench although its command may write: a refusal,
    /// a no-op, or a write no later line reads.
    shared: bool,
}

const fn line(
    case: &'static str,
    bench: Bench,
    args: &'static [&'static str],
    fields: &'static [&'static str],
) -> Line {
    Line {
        case,
        bench,
        args,
        fields,
        shared: false,
    }
}

impl Line {
    /// This line's command writes when it succeeds, but this line's does not: a refusal or a no-op.
    const fn writes_nothing(self) -> Self {
        Self {
            shared: true,
            ..self
        }
    }
}

const PLAN: &str = "version: 5\nname: reset\nsteps:\n  - {device: dut, action: reset, mode: run}\n";
const BAD_PLAN: &str = "version: 5\nname: bad\nsteps:\n  - {device: dut, action: self_destruct}\n";
const DUPLICATE_KEY_PLAN: &str = "version: 5\nname: a\nname: b\nsteps: []\n";
const ECHO_PLAN: &str = "version: 5\nname: echo\nsteps:\n  - {device: uart0, action: uart_open}\n  - {device: uart0, action: uart_write, text: \"hello\\n\"}\n  - {device: uart0, action: uart_read, comparator: {pattern: \"HELLO\"}, timeout_s: 3}\n  - {device: uart0, action: uart_close}\n";
const UNMET_PLAN: &str = "version: 5\nname: unmet\nsteps:\n  - {device: uart0, action: uart_open}\n  - {device: uart0, action: uart_write, text: \"hello\\n\"}\n  - {device: uart0, action: uart_read, comparator: {pattern: \"NOPE\"}, timeout_s: 0.5}\n";

/// Files every world's workspace has: plans, a report that is not JSON, one that is JSON but no
/// report, and an existing output file.
fn fixtures(world: &World) {
    for (name, text) in [
        ("plan.yaml", PLAN),
        ("bad.yaml", BAD_PLAN),
        ("dup.yaml", DUPLICATE_KEY_PLAN),
        ("echo.yaml", ECHO_PLAN),
        ("unmet.yaml", UNMET_PLAN),
        ("broken.json", "{"),
        ("there.json", "{\"x\": 1}\n"),
    ] {
        std::fs::write(world.workspace.join(name), text).expect("fixture");
    }
    let outside = world
        .workspace
        .parent()
        .expect("a parent")
        .join("plan.yaml");
    std::fs::write(outside, PLAN).expect("the plan outside");
}

/// Prepares `world` for `program`; what it returns must live while the line runs.
fn prepare(world: &World, program: &Path, bench: Bench) -> Option<EchoBoard> {
    fixtures(world);
    if matches!(bench, Bench::NoConfig | Bench::InHome) {
        return None;
    }
    init(world, program);
    match bench {
        Bench::ConfigInWorkspace => {
            std::fs::copy(world.config_path(), world.workspace.join("config.yaml"))
                .expect("the config is copied into the workspace");
            None
        }
        Bench::Serial | Bench::SerialAfterRun | Bench::SerialAndCan => {
            let board = EchoBoard::start();
            let path = world.config_path();
            let text = std::fs::read_to_string(&path).expect("config");
            let ports = format!(
                "com_ports:\n  uart0:\n    device: \"{}\"\n    identity_source: device\n    permissions:\n      allow_write: true\n",
                board.device
            );
            assert!(text.contains("com_ports: {}"), "init wrote no ports");
            let mut text = text.replacen("com_ports: {}", &ports, 1);
            if matches!(bench, Bench::SerialAndCan) {
                let bridge = world.write_fake_tool(
                    "bridge",
                    &format!(
                        "#!/bin/sh\nexec \"{}\" --mode normal --period-ms 30\n",
                        crate::support::can_bridge_simulator().display()
                    ),
                );
                let bus = format!(
                    "can_buses:\n  ecu:\n    adapter: process\n    channel: sim-ecu\n    executable: \"{}\"\n    timeout_s: 2\n    permissions:\n      allow_write: true",
                    bridge.display()
                );
                assert!(text.contains("can_buses: {}"), "init wrote no buses");
                text = text.replacen("can_buses: {}", &bus, 1);
            }
            std::fs::write(&path, text).expect("config");
            if matches!(bench, Bench::SerialAfterRun) {
                let out = command(world, program, bench)
                    .args(["test-reactor", "--test-config", "echo.yaml"])
                    .output()
                    .expect("the run runs");
                assert!(
                    out.status.success(),
                    "{}: the echo run failed",
                    program.display()
                );
            }
            Some(board)
        }
        Bench::Init | Bench::NoConfig | Bench::InHome => None,
    }
}

fn command(world: &World, program: &Path, bench: Bench) -> Command {
    let mut cmd = Command::new(program);
    world.scrub(&mut cmd);
    if matches!(bench, Bench::ConfigInWorkspace) {
        cmd.env("AGENTIC_HIL_CONFIG", world.workspace.join("config.yaml"));
    }
    if matches!(bench, Bench::InHome) {
        cmd.current_dir(&world.home);
    }
    cmd
}

/// Whether `line` may change what a later command sees (a file, a grant, a run's record): it
/// runs in fresh worlds, one for each of its two runs. Every other line of a test shares one world
/// per bench with the others, and both its runs: `init` is most of a line's time.
fn writes(line: &Line) -> bool {
    const WRITERS: &[&str] = &[
        "init",
        "grant",
        "revoke",
        "recover",
        "test-reactor",
        "run-evidence",
    ];
    !line.shared
        && (line.args.first().is_some_and(|a| WRITERS.contains(a))
            || line.args.contains(&"--output"))
}

/// A prepared world and what must live while it is used.
struct Prepared(
    World,
    #[allow(dead_code, reason = "kept alive while the world is used")] Option<EchoBoard>,
);

fn prepared(program: &Path, line: &Line) -> Prepared {
    let world = World::new();
    let guard = prepare(&world, program, line.bench);
    Prepared(world, guard)
}

/// One run of `line` in `world`: (exit status, stdout).
fn run(world: &Prepared, program: &Path, line: &Line, json: bool) -> (Option<i32>, Vec<u8>) {
    let mut cmd = command(&world.0, program, line.bench);
    cmd.args(line.args);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("the CLI runs");
    (out.status.code(), out.stdout)
}

fn observe(program: &Path, lines: &[Line]) -> Observed {
    let mut shared: Vec<(u8, Prepared)> = Vec::new();
    let mut seen = Vec::new();
    for line in lines {
        let (plain, status, stdout, root) = if writes(line) {
            let (plain, _) = run(&prepared(program, line), program, line, false);
            let world = prepared(program, line);
            let (status, stdout) = run(&world, program, line, true);
            (
                plain,
                status,
                stdout,
                world.0.home.parent().map(Path::to_path_buf),
            )
        } else {
            let key = line.bench as u8;
            if !shared.iter().any(|(k, _)| *k == key) {
                shared.push((key, prepared(program, line)));
            }
            let world = &shared.iter().find(|(k, _)| *k == key).expect("prepared").1;
            let (plain, _) = run(world, program, line, false);
            let (status, stdout) = run(world, program, line, true);
            (
                plain,
                status,
                stdout,
                world.0.home.parent().map(Path::to_path_buf),
            )
        };
        let root = root.expect("the world's root");
        let doc: Value = serde_json::from_slice(&stdout).unwrap_or(Value::Null);
        let result = json!({"isError": status != Some(0), "structuredContent": doc});
        seen.push((line.case, "exit".to_owned(), json!(plain)));
        seen.push((line.case, "exit --json".to_owned(), json!(status)));
        seen.push((line.case, "json".to_owned(), json!(doc.is_object())));
        for spec in ["error_type"].iter().chain(line.fields) {
            seen.push((line.case, (*spec).to_owned(), field(&result, spec, &root)));
        }
    }
    seen
}

/// Runs `lines` on both implementations and holds the differences under `scope` to the table.
fn compare(scope: &str, lines: &[Line]) {
    for line in lines {
        assert!(
            line.case.starts_with(scope),
            "{} is outside {scope}",
            line.case
        );
    }
    // The reference's interpreter is most of the time; ours runs beside it.
    let (ours, theirs) = std::thread::scope(|s| {
        let ours = s.spawn(|| observe(Path::new(World::binary()), lines));
        let theirs = observe(&reference(), lines);
        (ours.join().expect("ours observed"), theirs)
    });
    judge(scope, &ours, &theirs);
}

/// What a grant or revoke that wrote answers.
const CHANGED: &[&str] = &[
    "ok",
    "command",
    "restart_required",
    "changed#len",
    "changed.0.key",
    "changed.0.previous_value",
    "changed.0.value",
    "unchanged#len",
    "config_status.state",
    "config_status.reload_required",
    "path#leaks_root",
];
/// What one that found every key already so answers.
const UNCHANGED: &[&str] = &[
    "ok",
    "restart_required",
    "changed#len",
    "unchanged#len",
    "unchanged.0.key",
];
/// What one refused for its keys answers.
const REJECTED: &[&str] = &[
    "field",
    "command",
    "rejected_keys#len",
    "rejected_keys.0.key",
    "permission_keys_here#len",
    "side_effect_status",
    "retry_safe",
];

/// What an `init` that wrote its file answers, the doctor's whole verdict included.
const INIT_WROTE: &[&str] = &[
    "ok",
    "scope",
    "agent",
    "config_path#leaks_root",
    "state_root_changes",
    "permission_changes",
    "rollback",
    "steps.config.ok",
    "steps.config.skipped",
    "steps.config.permissions",
    "steps.config.narrowed_permissions",
    "steps.config.next_steps#type",
    "steps.config.optional_override#leaks_root",
    "steps.config.available_com_ports.ok",
    "steps.config.hardware_discovery.ok",
    "steps.config.hardware_lease.leased",
    "steps.doctor.ok",
    "steps.doctor.tool",
    "steps.doctor.unhealthy",
    "steps.doctor.warnings#len",
    "steps.doctor.standing_incidents",
    "steps.doctor.bench_binding.ok",
    "steps.doctor.state_root.ok",
    "steps.doctor.report_state.ok",
    "steps.doctor.debuggers.dut.permissions",
    "steps.doctor.com_ports",
    "steps.doctor.can_buses",
    "steps.doctor.debugger.skipped",
    "steps.agent_write_restriction.ok",
    "steps.agent_write_restriction.skipped",
];
/// What an `init` that kept the file there answers.
const INIT_KEPT: &[&str] = &[
    "ok",
    "agent",
    "state_root_changes",
    "permission_changes",
    "rollback",
    "steps.config.ok",
    "steps.config.existing",
    "steps.config.skipped",
    "steps.config.path#leaks_root",
    "steps.config.permissions",
    "steps.doctor.ok",
    "steps.doctor.unhealthy",
    "steps.doctor.bench_binding.ok",
    "steps.agent_write_restriction.skipped",
];

#[test]
fn init_and_grant_answer_as_the_reference_does() {
    use Bench::{ConfigInWorkspace, InHome, Init, NoConfig};
    #[rustfmt::skip]
    let lines = [
        line("cli-grant/init", NoConfig, &["init"], INIT_WROTE),
        line("cli-grant/init again", Init, &["init"], INIT_KEPT).writes_nothing(),
        line("cli-grant/init --force", Init, &["init", "--force"], INIT_WROTE),
        line("cli-grant/init in the home directory", InHome, &["init"], &["ok", "rollback", "steps", "workspace_root#leaks_root", "home#leaks_root"]).writes_nothing(),
        line("cli-grant/init with the configuration in the workspace", ConfigInWorkspace, &["init"], &["ok", "steps"]).writes_nothing(),
        line("cli-grant/grant", Init, &["grant", "debuggers.dut.allow_mass_erase"], CHANGED),
        line("cli-grant/grant two keys, long and short", Init, &["grant", "debuggers.dut.permissions.allow_mass_erase", "debuggers.dut.allow_raw_debugger_commands"], &["ok", "changed#len", "changed.1.key"]),
        line("cli-grant/grant a project permission", Init, &["grant", "artifacts.allow_upload"], UNCHANGED).writes_nothing(),
        line("cli-grant/grant one already held", Init, &["grant", "debuggers.dut.allow_flash"], UNCHANGED).writes_nothing(),
        line("cli-grant/grant an unknown permission", Init, &["grant", "debuggers.dut.allow_nothing"], REJECTED).writes_nothing(),
        line("cli-grant/grant a key that is no permission", Init, &["grant", "debuggers.dut.executable"], REJECTED).writes_nothing(),
        line("cli-grant/grant of an entry the file lacks", Init, &["grant", "debuggers.nope.allow_flash"], &["field", "unknown_entry", "side_effect_status"]).writes_nothing(),
        line("cli-grant/grant a known and an unknown key", Init, &["grant", "debuggers.dut.allow_mass_erase", "nonsense"], &["rejected_keys#len", "rejected_keys.0.key"]).writes_nothing(),
        line("cli-grant/grant no key", Init, &["grant"], &[]).writes_nothing(),
        line("cli-grant/grant without a configuration", NoConfig, &["grant", "debuggers.dut.allow_flash"], &["path#leaks_root"]).writes_nothing(),
    ];
    compare("cli-grant/", &lines);
}

#[test]
fn revoke_answers_as_the_reference_does() {
    use Bench::Init;
    #[rustfmt::skip]
    let lines = [
        line("cli-revoke/revoke", Init, &["revoke", "debuggers.dut.allow_flash"], CHANGED),
        line("cli-revoke/revoke one already closed", Init, &["revoke", "debuggers.dut.allow_mass_erase"], UNCHANGED).writes_nothing(),
        line("cli-revoke/revoke an unknown permission", Init, &["revoke", "debuggers.dut.allow_nothing"], REJECTED).writes_nothing(),
    ];
    compare("cli-revoke/", &lines);
}

#[test]
fn the_configuration_and_probe_commands_answer_as_the_reference_does() {
    use Bench::{Init, NoConfig};
    #[rustfmt::skip]
    let lines = [
        line("cli-config/config-reload", Init, &["config-reload"], &[
            "ok",
            "scope",
            "reloaded",
            "description_changed",
            "description_changes#len",
            "reloaded_sections",
            "not_reloaded_sections#len",
            "not_reloaded_sections.10.section",
            "permissions_reloaded",
            "permission_differences#len",
            "restart_required_for#len",
            "would_reload.debuggers",
            "config_status.state",
            "config_status.reload_required",
            "path#leaks_root",
        ]),
        line("cli-config/debugger-probes", Init, &["debugger-probes"], &["ok", "probes#len", "complete", "discovered_by", "tool"]),
        line("cli-config/debugger-probes without a configuration", NoConfig, &["debugger-probes"], &["ok", "probes#len", "complete", "discovered_by", "tool"]),
        line("cli-config/adopt-hardware --dry-run", Init, &["adopt-hardware", "--dry-run"], &["ok", "tool"]),
        line("cli-config/adopt-hardware --dry-run unknown debugger", Init, &["adopt-hardware", "--dry-run", "--debugger", "nope"], &["field", "side_effect_status"]),
        line("cli-config/com-ports", NoConfig, &["com-ports"], &["ok"]),
    ];
    compare("cli-config/", &lines);
}

#[test]
fn the_state_commands_answer_as_the_reference_does() {
    use Bench::{Init, SerialAndCan};
    const HANDLE: &str = "run-0123456789abcdef";
    #[rustfmt::skip]
    let lines = [
        line("cli-state/doctor", Init, &["doctor"], &[
            "ok",
            "unhealthy",
            "bench_binding.ok",
            "bench_binding.field",
            "bench_binding.unbound.0.field",
            "bench_binding.unbound.0.entries",
            "bench_binding.unbound.0.summary#type",
            "bench_binding.placeholders.0.field",
            "bench_binding.placeholders.0.value",
            "bench_binding.next_step#type",
            "state_root.ok",
            "state_root.field",
            "state_root.path#leaks_root",
            "report_state.ok",
            "report_state.path#leaks_root",
            "warnings",
            "standing_incidents",
            "target",
            "debuggers.dut.bound",
            "debuggers.dut.type",
            "debuggers.dut.probe_id",
            "debuggers.dut.permissions",
            "debuggers.dut.scripts",
            "com_ports",
            "can_buses",
            "debugger.ok",
            "debugger.tool",
            "debugger.skipped",
            "installation.version#type",
            "installation.package_path#type",
            "installation.editable",
            "mcp.transport",
            "mcp.args",
            "mcp.persistent",
            "mcp.command#type",
            "config_status.state",
            "config_status.reload_required",
            "config_status.description_reloaded_at",
            "config_status.compare_with_running_server#type",
            "config_path#leaks_root",
        ]),
        line("cli-state/doctor with a port and a bus", SerialAndCan, &["doctor"], &[
            "ok",
            "unhealthy",
            "bench_binding.ok",
            "warnings#len",
            "standing_incidents",
            "com_ports.uart0.device#type",
            "com_ports.uart0.baudrate",
            "com_ports.uart0.encoding",
            "com_ports.uart0.identity_source",
            "com_ports.uart0.identity_warning#type",
            "com_ports.uart0.permissions",
            "com_ports.uart0.device_access.ok",
            "com_ports.uart0.device_access.tool",
            "com_ports.uart0.device_access.mode",
            "com_ports.uart0.device_access.owner",
            "can_buses",
        ]),
        line("cli-state/lease-status", Init, &["lease-status"], LEASE_STATUS),
        line("cli-state/report-state-repair", Init, &["report-state-repair"], &["ok", "repaired"]),
        line("cli-state/recover without confirmation", Init, &["recover"], &[]).writes_nothing(),
        line("cli-state/recover without an incident id", Init, &["recover", "--confirm-safe-state"], &[]).writes_nothing(),
        line("cli-state/recover with nothing standing", Init, &["recover", "--confirm-safe-state", "--quarantine-id", "q-1"], &["ok", "was_quarantined", "nothing_to_recover", "resources#len"]).writes_nothing(),
        line("cli-state/test-reactor-status", Init, &["test-reactor-status"], &["ok", "tool", "runs#len", "active_runs#len"]),
        line("cli-state/test-reactor-status a malformed handle", Init, &["test-reactor-status", "--run", "nope"], &["field"]),
        line("cli-state/test-reactor-status an unknown handle", Init, &["test-reactor-status", "--run", HANDLE], &["run", "side_effect_committed"]),
        line("cli-state/test-reactor-stop a malformed handle", Init, &["test-reactor-stop", "--run", "nope"], &["field"]),
        line("cli-state/test-reactor-stop an unknown handle", Init, &["test-reactor-stop", "--run", HANDLE], &["run", "side_effect_committed"]),
        line("cli-state/test-reactor-stop without a handle", Init, &["test-reactor-stop"], &[]),
    ];
    compare("cli-state/", &lines);
}

#[test]
fn the_file_commands_answer_as_the_reference_does() {
    // Only check-plan reads the configuration; the others run where there is none, as in CI.
    use Bench::{Init, NoConfig};
    #[rustfmt::skip]
    let lines = [
        line("cli-files/schema", NoConfig, &["schema"], &["type", "required", "additionalProperties"]),
        line("cli-files/schema --output", NoConfig, &["schema", "--output", "schema.json"], &["ok", "path"]),
        line("cli-files/schema --output over a file", NoConfig, &["schema", "--output", "there.json"], &["ok"]).writes_nothing(),
        line("cli-files/schema --output --force over a file", NoConfig, &["schema", "--output", "there.json", "--force"], &["ok"]),
        line("cli-files/test-schema", NoConfig, &["test-schema"], &["type", "required"]),
        line("cli-files/test-schema --output outside the workspace", NoConfig, &["test-schema", "--output", "../test-schema.json"], &["ok"]),
        line("cli-files/mcp-config", NoConfig, &["mcp-config"], &["mcpServers.agentic-hil.args", "mcpServers.agentic-hil.type"]),
        line("cli-files/mcp-config --output", NoConfig, &["mcp-config", "--output", ".mcp.json"], &["ok", "path#leaks_root"]),
        line("cli-files/mcp-config --output over a file", NoConfig, &["mcp-config", "--output", "there.json"], &["ok"]).writes_nothing(),
        line("cli-files/check-plan", Init, &["check-plan", "plan.yaml"], &["ok", "strict", "plans#len", "plans.0.ok", "plans.0.plan", "plans.0.name", "plans.0.steps"]),
        line("cli-files/check-plan an unknown action", Init, &["check-plan", "bad.yaml"], &["ok", "plans.0.ok", "plans.0.error_type", "plans.0.plan"]),
        line("cli-files/check-plan a duplicate key", Init, &["check-plan", "dup.yaml"], &["ok", "plans.0.ok", "plans.0.error_type"]),
        line("cli-files/check-plan a missing plan", Init, &["check-plan", "missing.yaml"], &["ok", "plans.0.ok", "plans.0.error_type", "plans.0.plan"]),
        line("cli-files/check-plan a plan outside the workspace", Init, &["check-plan", "plan.yaml", "../plan.yaml"], &["ok", "plans#len", "plans.0.ok", "plans.1.ok", "plans.1.error_type", "plans.1.plan"]),
        line("cli-files/run-evidence a missing report", NoConfig, &["run-evidence", "--report", "none.json", "--out", "evidence"], &["ok"]).writes_nothing(),
        line("cli-files/run-evidence a report that is not JSON", NoConfig, &["run-evidence", "--report", "broken.json", "--out", "evidence"], &["ok"]).writes_nothing(),
        line("cli-files/run-evidence JSON that is no report", NoConfig, &["run-evidence", "--report", "there.json", "--out", "evidence"], &["ok"]),
    ];
    compare("cli-files/", &lines);
}

#[test]
fn a_missing_or_misplaced_configuration_is_refused_as_the_reference_does() {
    use Bench::{ConfigInWorkspace, NoConfig};
    #[rustfmt::skip]
    let lines = [
        line("cli-refused/doctor without a configuration", NoConfig, &["doctor"], &["ok", "path#leaks_root"]),
        line("cli-refused/lease-status without a configuration", NoConfig, &["lease-status"], &["ok"]),
        line("cli-refused/config-reload without a configuration", NoConfig, &["config-reload"], &["ok"]),
        line("cli-refused/report-state-repair without a configuration", NoConfig, &["report-state-repair"], &["ok"]),
        line("cli-refused/test-reactor-status without a configuration", NoConfig, &["test-reactor-status"], &["ok"]),
        line("cli-refused/adopt-hardware without a configuration", NoConfig, &["adopt-hardware", "--dry-run"], &["ok"]),
        line("cli-refused/check-plan without a configuration", NoConfig, &["check-plan", "plan.yaml"], &["ok", "plans.0.ok", "configuration.ok", "configuration.error_type"]),
        line("cli-refused/test-reactor without a configuration", NoConfig, &["test-reactor", "--test-config", "plan.yaml"], &["ok"]).writes_nothing(),
        line("cli-refused/doctor with the configuration in the workspace", ConfigInWorkspace, &["doctor"], &["ok"]),
        line("cli-refused/grant with the configuration in the workspace", ConfigInWorkspace, &["grant", "debuggers.dut.allow_mass_erase"], &["ok"]).writes_nothing(),
        line("cli-refused/lease-status with the configuration in the workspace", ConfigInWorkspace, &["lease-status"], &["ok"]),
        line("cli-refused/check-plan with the configuration in the workspace", ConfigInWorkspace, &["check-plan", "plan.yaml"], &["ok", "configuration.error_type"]),
    ];
    compare("cli-refused/", &lines);
}

#[test]
fn test_reactor_runs_over_a_serial_port_answer_as_the_reference_does() {
    use Bench::{Serial, SerialAfterRun};
    #[rustfmt::skip]
    let lines = [
        line("cli-run/test-reactor", Serial, &["test-reactor", "--test-config", "echo.yaml"], &[
            "ok",
            "name",
            "steps#len",
            "steps.2.ok",
            "failed_step",
            "cleanup_ok",
            "test_config_path#leaks_root",
            "canonical_report_path#leaks_root",
        ]),
        line("cli-run/test-reactor a comparator unmet", Serial, &["test-reactor", "--test-config", "unmet.yaml"], &[
            "ok",
            "step_error_type",
            "failed_step",
            "steps#len",
            "cleanup_ok",
            "recovery.attempted",
            "recovery.outcome",
        ]),
        line("cli-run/test-reactor an unknown action", Serial, &["test-reactor", "--test-config", "bad.yaml"], &["ok", "field"]).writes_nothing(),
        line("cli-run/test-reactor a missing plan", Serial, &["test-reactor", "--test-config", "missing.yaml"], &["ok"]).writes_nothing(),
        line("cli-run/test-reactor a plan outside the workspace", Serial, &["test-reactor", "--test-config", "../plan.yaml"], &["ok"]).writes_nothing(),
        line("cli-run/test-reactor-status after a run", SerialAfterRun, &["test-reactor-status"], &["ok", "runs#len", "runs.0.state|runs.0.status", "active_runs#len"]),
        Line {
            shared: true,
            ..line("cli-run/run-evidence of the last run", SerialAfterRun, &["run-evidence", "--report", ".agentic-hil/reports/last-report.json", "--out", "evidence"], &["ok", "outcome", "logs_copied#len"])
        },
    ];
    compare("cli-run/", &lines);
}

/// `init` in `world` by `program`, then a `uart0` on `device` (the pty both projects share).
fn init_with_uart(world: &World, program: &Path, device: &str) {
    init(world, program);
    let ports = format!(
        "com_ports:\n  uart0:\n    device: \"{device}\"\n    identity_source: device\n    permissions:\n      allow_write: true\n"
    );
    crate::driver::edit_config(world, "com_ports: {}", &ports);
}

/// One project's server killed while its session holds the shared port, the incident its own
/// `lease-status` records, then `doctor` in a second project on the same port; what it says.
fn observe_a_standing_incident(program: &Path) -> Observed {
    let world = World::new();
    let board = EchoBoard::start();
    init_with_uart(&world, program, &board.device);
    let mut dead = crate::support::raw::Mcp::start(&world, program);
    let started = dead.call("com_session_start", &json!({"port_id": "uart0"}));
    assert_eq!(
        started["isError"],
        false,
        "{}: {started}",
        program.display()
    );
    dead.kill9();
    let status = crate::driver::run_cli(&world, program, &["lease-status"]);
    let other = world.another_workspace("other-fw");
    init_with_uart(&other, program, &board.device);
    let doctor = crate::driver::run_cli(&other, program, &["doctor"]);
    let root = other.workspace.parent().expect("a parent").to_path_buf();
    let case = "cli-incident/doctor in another project on the port";
    let mut seen = vec![(
        "cli-incident/lease-status of the project that held it",
        "blocked".to_owned(),
        field(&status, "blocked", &root),
    )];
    for spec in [
        "isError",
        "ok",
        "unhealthy",
        "standing_incidents#len",
        "standing_incidents.0.cleanup_reasons",
        "standing_incidents.0.quarantine_id#type",
        "standing_incidents.0.project_resource#type",
        "standing_incidents.0.resource#type",
        "standing_incidents.0.state",
        "standing_incidents.0.auto_recoverable",
        "summary#type",
    ] {
        seen.push((case, spec.to_owned(), field(&doctor, spec, &root)));
    }
    seen
}

#[test]
fn doctor_names_another_projects_incident_as_the_reference_does() {
    let (ours, theirs) = std::thread::scope(|s| {
        let ours = s.spawn(|| observe_a_standing_incident(Path::new(World::binary())));
        let theirs = observe_a_standing_incident(&reference());
        (ours.join().expect("ours observed"), theirs)
    });
    judge("cli-incident/", &ours, &theirs);
}
