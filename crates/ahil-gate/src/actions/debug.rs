//! The typed debug tools on the emulated board: a GDB/MI session held across calls (`debug/`), started
//! halted, driven one MI command at a time, and stopped with the core halted and the stub disconnected
//! (never detached: QEMU resumes a detached core). Other debugger types answer `not_supported`.

use std::sync::Arc;
use std::time::Duration;

use ahil_config::{Debugger, DebuggerType, ExecutableState};
use ahil_drivers::Contact;
use ahil_drivers::gdbmi::{self, Session as Gdb, quote};
use ahil_drivers::probe::{Budget, DebugProbe};
use ahil_drivers::qemu::QemuProbe;
use serde_json::{Value, json};

use super::debug_ops as ops;
use super::debugger_info::bound_debugger;
use super::{Acted, Context, DriverJob, Plan, Work};
use crate::artifacts::{self, ArtifactPolicy, ArtifactRef, Format, Stager};
use crate::debug::{self, Live, Sessions};
use crate::envelope::Outcome;
use crate::ownership::Ownership;
use crate::ownership::runs::debugger_keys;
use crate::policy::{Action, BreakpointAt, Device, SymbolAllowlist};
use crate::snapshot::pinned_debugger_executable;

/// The gate's margin over the session's own waits.
const MARGIN: Duration = Duration::from_secs(5);
/// Each MI step waits 10 s at most.
const STEP_MAX: Duration = Duration::from_secs(10);

/// The tool names this module serves, as `'static` for the blocking jobs.
pub const TOOLS: &[&str] = &[
    "debug_start_session",
    "debug_stop_session",
    "debug_get_session_status",
    "debug_set_breakpoint",
    "debug_list_breakpoints",
    "debug_clear_breakpoints",
    "debug_continue",
    "debug_halt",
    "debug_get_stop_reason",
    "debug_symbol_info",
    "debug_symbol_value",
    "debug_dump_symbol_ihex",
];

pub fn plan<'a>(ctx: &'a Context<'a>) -> Result<Plan<'a>, Box<Outcome>> {
    let (name, debugger) = bound_debugger(ctx)?;
    let tool: &'static str = TOOLS
        .iter()
        .find(|t| **t == ctx.tool)
        .copied()
        .unwrap_or("debug_get_session_status");
    let executable = pinned_debugger_executable(ctx.loaded, name);
    let resources = debugger_keys(debugger, executable.as_deref());
    let settings = &ctx.loaded.config.debug;
    let allowlist = SymbolAllowlist {
        allow_all_symbols: settings.allow_all_symbols,
        allowed_symbols: &settings.allowed_symbols,
    };
    let symbol = ctx.args.get("symbol").and_then(Value::as_str).unwrap_or("");
    let action = match tool {
        "debug_start_session" => Action::DebugSessionStart,
        "debug_get_session_status" | "debug_list_breakpoints" | "debug_get_stop_reason" => {
            Action::DebugInspect
        }
        "debug_set_breakpoint" => Action::DebugBreakpoint {
            at: match location(ctx.args.get("location")) {
                Some((_, true)) => BreakpointAt::Line,
                Some((_, false)) => BreakpointAt::Symbol(symbol_of(ctx.args.get("location"))),
                None => {
                    return Err(invalid(
                        tool,
                        "location names no symbol, function or file and line.",
                    ));
                }
            },
            allowlist,
        },
        "debug_continue" => Action::DebugContinue,
        "debug_symbol_info" | "debug_symbol_value" | "debug_dump_symbol_ihex" => {
            Action::SymbolRead { symbol, allowlist }
        }
        _ => Action::DebugContain,
    };
    let device = Some(Device::Debugger {
        name,
        grants: debugger.permissions,
    });
    let work = if debugger.kind == DebuggerType::Qemu {
        qemu_work(ctx, tool, name, debugger)?
    } else {
        let kind = debugger.kind;
        Work::Local(Box::new(move || {
            super::backend_not_built(
                tool,
                kind,
                format!(
                    "This build runs debug sessions only on the qemu backend, not on {}.",
                    kind.as_str()
                ),
            )
        }))
    };
    Ok(Plan {
        action,
        device,
        resources,
        work,
    })
}

fn invalid(tool: &str, summary: &str) -> Box<Outcome> {
    Box::new(
        Outcome::refused(tool, "invalid_argument", summary)
            .with_remediation(["Correct the arguments as the tool's input schema describes."])
            .not_contacted(),
    )
}

/// gdb's location for a breakpoint argument, and whether it is a source line.
pub fn location(arg: Option<&Value>) -> Option<(String, bool)> {
    match arg? {
        Value::String(symbol) => Some((symbol.clone(), false)),
        Value::Object(map) => {
            if let Some(symbol) = map
                .get("symbol")
                .or_else(|| map.get("function"))
                .and_then(Value::as_str)
            {
                return Some((symbol.to_owned(), false));
            }
            let file = map.get("file")?.as_str()?;
            let line = map.get("line")?.as_u64()?;
            Some((format!("{file}:{line}"), true))
        }
        _ => None,
    }
}

fn symbol_of(arg: Option<&Value>) -> &str {
    match arg {
        Some(Value::String(symbol)) => symbol,
        Some(Value::Object(map)) => map
            .get("symbol")
            .or_else(|| map.get("function"))
            .and_then(Value::as_str)
            .unwrap_or(""),
        _ => "",
    }
}

/// The per-call wait: the argument floored at 0.1 s, never above `ceiling`.
fn wait_of(args: &Value, ceiling: Duration) -> Duration {
    match args.get("timeout_s").and_then(Value::as_f64) {
        Some(secs) => Duration::try_from_secs_f64(secs.max(0.1))
            .unwrap_or(ceiling)
            .min(ceiling),
        None => ceiling,
    }
}

fn qemu_work<'a>(
    ctx: &'a Context<'a>,
    tool: &'static str,
    name: &str,
    debugger: &Debugger,
) -> Result<Work<'a>, Box<Outcome>> {
    let timeout = Duration::try_from_secs_f64(debugger.timeout_s).unwrap_or(Duration::from_mins(1));
    let sessions = Arc::clone(ctx.debug);
    let args = ctx.args.clone();
    if tool == "debug_start_session" {
        let config = &ctx.loaded.config;
        let gdb = match &ctx.loaded.executables.gdb {
            Some(ExecutableState::Pinned { path }) => path.clone(),
            _ => {
                return Ok(Work::Local(Box::new(move || {
                    Acted {
                    outcome: Outcome::refused(
                        tool,
                        "debugger_not_found",
                        "The emulated board's debug sessions need gdb-multiarch, and it was not found.",
                    )
                    .with("backend", "qemu")
                    .with_remediation(["Install it with scripts/setup-debian.sh, or name it in `debug.gdb_executable`."])
                    .not_contacted(),
                    contact: Some(Contact::none("nothing was started")),
                }
                })));
            }
        };
        let Some(dir) = config.board_dir(name) else {
            return Err(invalid(tool, "This debugger has no board directory."));
        };
        let mode = args
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("attach")
            .to_owned();
        let grants = debugger.permissions;
        let needs: &[(bool, &str)] = match mode.as_str() {
            "reset_halt" => &[(grants.allow_reset, "allow_reset")],
            "load" => &[
                (grants.allow_reset, "allow_reset"),
                (grants.allow_flash, "allow_flash"),
            ],
            _ => &[],
        };
        if let Some((_, flag)) = needs.iter().find(|(open, _)| !open) {
            let permission = format!("debuggers.{name}.permissions.{flag}");
            return Err(Box::new(
                Outcome::refused(
                    tool,
                    "permission_denied",
                    format!("Mode {mode} needs `{permission}`, which is false."),
                )
                .with("permission", permission)
                .not_contacted(),
            ));
        }
        // The argument may shorten the entry's timeout, never lengthen it.
        let timeout = wait_of(&args, timeout);
        let start = Start {
            probe: QemuProbe::new(dir, gdb, debugger.qemu_machine()),
            policy: ArtifactPolicy::from_config(config),
            args,
            mode,
            timeout,
            lock_keys: debugger_keys(
                debugger,
                pinned_debugger_executable(ctx.loaded, name).as_deref(),
            ),
            label: format!("debug_session:{name}"),
            audit: crate::audit::Audit::for_config(ctx.loaded),
            ownership: Arc::clone(ctx.ownership),
            sessions,
        };
        return Ok(Work::Driver(DriverJob {
            deadline: timeout * 2 + MARGIN,
            if_abandoned: Contact::Possible,
            run: Box::new(move |_cancel| start.run()),
        }));
    }
    let limits = ops::Limits {
        max_dump: ctx.loaded.config.debug.max_dump_size_bytes,
        // Checked now, answered inside the work: policy decides first.
        output: (tool == "debug_dump_symbol_ihex").then(|| {
            debug::output::check(
                tool,
                &ctx.loaded.config,
                args.get("output_path")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            )
        }),
    };
    let deadline = match tool {
        "debug_continue" => wait_of(&args, timeout) + STEP_MAX + MARGIN * 2,
        _ => timeout.min(STEP_MAX) * 3 + MARGIN,
    };
    Ok(Work::Driver(DriverJob {
        deadline,
        if_abandoned: Contact::Possible,
        run: Box::new(move |_cancel| ops::run(tool, &sessions, &args, timeout, &limits)),
    }))
}

/// What `debug_start_session` needs, owned for the blocking job.
struct Start {
    probe: QemuProbe,
    policy: ArtifactPolicy,
    args: Value,
    mode: String,
    timeout: Duration,
    lock_keys: Vec<String>,
    label: String,
    audit: crate::audit::Audit,
    ownership: Arc<Ownership>,
    sessions: Arc<Sessions>,
}

impl Start {
    fn run(self) -> Acted {
        const TOOL: &str = "debug_start_session";
        let refused = |outcome: Outcome, why: &'static str| Acted {
            outcome,
            contact: Some(Contact::none(why)),
        };
        if let Some(live) = self.sessions.get() {
            let session = debug::lock(&live).describe();
            return refused(
                Outcome::refused(
                    TOOL,
                    "session_already_active",
                    "A debug session is already active.",
                )
                .with("session", session)
                .with_next_step("Use the open session, or call debug_stop_session first."),
                "the open session was left as it was",
            );
        }
        let request = match (
            self.args.get("image_path").and_then(Value::as_str),
            self.args.get("artifact_id").and_then(Value::as_str),
        ) {
            (Some(path), None) => ArtifactRef::Path(path),
            (None, Some(id)) => ArtifactRef::Id(id),
            _ => {
                return refused(
                    *invalid(TOOL, "Give exactly one of image_path or artifact_id."),
                    "refused before anything started",
                );
            }
        };
        let staged = match Stager::process()
            .and_then(|stager| artifacts::resolve(&self.policy, stager, request))
        {
            Ok(staged) => staged,
            Err(refusal) => {
                return refused(
                    refusal.to_outcome(TOOL),
                    "the image was refused before anything started",
                );
            }
        };
        if staged.format() != Some(Format::Elf) {
            return refused(
                Outcome::refused(
                    TOOL,
                    "artifact_validation_failed",
                    "Debug sessions require an ELF artifact with debug symbols.",
                )
                .with("artifact", staged.report().clone()),
                "the image was refused before anything started",
            );
        }
        let header = std::fs::read(staged.path())
            .map(|bytes| bytes.into_iter().take(8).collect::<Vec<u8>>())
            .unwrap_or_default();
        let budget = Budget::new(self.timeout);
        let target = match self.probe.open_gdb(&budget) {
            Ok(target) => target,
            Err(error) => {
                return Acted {
                    outcome: Outcome::refused(
                        TOOL,
                        "target_not_detected",
                        "No emulated board answers, so no debug session was started.",
                    )
                    .with("backend", "qemu")
                    .with_remediation(["The operator starts the board with `agentic-hil sim start`, then call this tool again."]),
                    contact: Some(error.contact()),
                };
            }
        };
        if target.remote.is_empty()
            || target
                .remote
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '"' | '\\' | '\''))
        {
            return refused(
                Outcome::refused(
                    TOOL,
                    "not_supported",
                    "The board's socket path has characters gdb cannot take as a remote; move its board_dir.",
                )
                .with("backend", "qemu"),
                "refused before gdb started",
            );
        }
        if let Err(busy) =
            self.ownership
                .locks
                .acquire_labeled(&self.lock_keys, Duration::ZERO, Some(&self.label))
        {
            return refused(
                busy.into_outcome(TOOL),
                "the device lock was refused before gdb started",
            );
        }
        let release = || self.ownership.locks.release(&self.lock_keys);
        let session_id = format!("debug-{}", crate::serial::log_stamp());
        let log_name = format!("gdb-{session_id}.jsonl");
        let log_path = self.audit.log_path(&log_name);
        if let Err(err) = self.audit.append_event(
            &log_name,
            &json!({
                "event": "start",
                "session_id": session_id,
                "mode": self.mode,
                "artifact": {"path": staged.display_path(), "sha256": staged.sha256()},
            }),
        ) {
            release();
            return refused(
                crate::audit::unavailable(TOOL, &err),
                "the session log could not be written, so gdb was not started",
            );
        }
        let mut gdb = match Gdb::spawn(&target.gdb) {
            Ok(gdb) => gdb,
            Err(error) => {
                release();
                return refused(
                    Outcome::refused(
                        TOOL,
                        "debugger_not_found",
                        format!("gdb could not be started: {error}."),
                    )
                    .with("backend", "qemu"),
                    "gdb did not start",
                );
            }
        };
        let step = self.timeout.min(STEP_MAX);
        let mut commands = vec![
            "-gdb-set mi-async on".to_owned(),
            "-gdb-set pagination off".to_owned(),
            "-gdb-set confirm off".to_owned(),
            format!(
                "-file-exec-and-symbols {}",
                quote(&staged.path().display().to_string())
            ),
            // gdb keeps quotes as part of a remote's name, so the socket path goes bare (checked above).
            format!("-target-select extended-remote {}", target.remote),
        ];
        // Reset into halt, and for `load` write the ELF and reset into halt again; gdb's register
        // cache is flushed after each reset, which gdb does not see happen.
        let mut reset_halt = target
            .reset_halt
            .iter()
            .map(|reset| format!("-interpreter-exec console {}", quote(reset)))
            .collect::<Vec<_>>();
        reset_halt.push(format!(
            "-interpreter-exec console {}",
            quote("maintenance flush register-cache")
        ));
        match self.mode.as_str() {
            "reset_halt" => commands.extend(reset_halt),
            "load" => {
                commands.extend(reset_halt.iter().cloned());
                commands.push("-target-download".to_owned());
                commands.extend(reset_halt);
            }
            _ => {}
        }
        let mut connected = false;
        for command in &commands {
            let failed = match gdb.command(command, step) {
                Ok(reply) if reply.ok() => None,
                Ok(reply) => Some(reply.message()),
                Err(error) => Some(error.to_string()),
            };
            if let Some(message) = failed {
                if connected {
                    let _ = gdb.command("-target-disconnect", step);
                }
                drop(gdb);
                release();
                let outcome = Outcome::refused(
                    TOOL,
                    "debugger_error",
                    format!(
                        "gdb refused a start step: {}.",
                        message.lines().next().unwrap_or_default()
                    ),
                )
                .with("backend", "qemu")
                .with("command", command.split(' ').next().unwrap_or_default());
                return Acted {
                    outcome,
                    contact: Some(if connected {
                        Contact::Made
                    } else {
                        Contact::Possible
                    }),
                };
            }
            if command.starts_with("-target-select") {
                connected = true;
            }
        }
        let live = Live {
            session_id,
            audit: self.audit.clone(),
            log_name,
            log_path,
            gdb_transcript: Vec::new(),
            mode: self.mode.clone(),
            started_at: ahil_config::time::now_millis(),
            status: "halted",
            gdb: Some(gdb),
            byte_order: debug::byte_order(&header),
            elf: staged,
            breakpoints: Vec::new(),
            next_breakpoint: 1,
            stop: None,
            lock_keys: self.lock_keys.clone(),
            qmp_socket: self.probe.paths().qmp_socket(),
            ownership: Arc::clone(&self.ownership),
            step,
            timeout: self.timeout,
        };
        let mut outcome = Outcome::ok(TOOL, "Debug session started and target is halted.")
            .with("backend", "qemu")
            .with("mode", self.mode.as_str())
            .with("artifact", live.elf.report().clone())
            .with("session", live.describe())
            .with("target_state", "halted");
        outcome.log_path = Some(live.log_path.clone());
        self.sessions.insert(live);
        Acted {
            outcome,
            contact: Some(Contact::Made),
        }
    }
}

/// The `value` of a `-data-evaluate-expression` answer.
pub fn evaluated(results: &[(String, gdbmi::Value)]) -> Option<String> {
    gdbmi::find(results, "value")
        .and_then(gdbmi::Value::as_str)
        .map(str::to_owned)
}
