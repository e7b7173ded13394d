//! `agentic-hil`: the binary. Every command hands its request to the gate (`ahil-gate`) and prints the
//! one result document it gets back; this crate never names a driver.

mod cli;
mod completions;
mod comstdio;
mod config_cli;
mod evidence;
mod files;
mod install;
mod logs;
mod mcp;
mod operator_cli;
mod plans;
mod reactor_cli;
mod render;
mod sim;
mod upgrade;
mod watch;

use std::io::Write;
use std::process::ExitCode;

use ahil_config::Environment;
use clap::Parser;
use serde_json::Value;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version on stdout with exit 0 and usage errors on stderr with exit 2.
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    init_tracing();
    let code = match run(&cli) {
        Ok(code) => code,
        Err(err) => {
            // An error's chain can name a file under HOME or carry a backend's words.
            let shown = ahil_gate::audit::Sink::for_process().scrub_text(&format!("{err:#}"));
            let _ = writeln!(std::io::stderr(), "agentic-hil: {shown}");
            ExitCode::FAILURE
        }
    };
    ahil_gate::artifacts::Stager::release_process();
    code
}

/// `agentic-hil mcp-stdio`, what an agent host launches at every server start, is read without
/// clap: clap's parser builds the whole command tree, every command's arguments and help, about
/// 0.3 MiB of code and data touched before the first request (decision 0026). Any other
/// command line, `mcp-stdio --json` included, goes through clap.
fn parse_command_line() -> Result<Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    server_command_line(&args).map_or_else(Cli::try_parse, Ok)
}

fn server_command_line(args: &[std::ffi::OsString]) -> Option<Cli> {
    (args.len() == 1 && args[0] == "mcp-stdio").then_some(Cli {
        json: false,
        command: Command::McpStdio,
    })
}

/// Logs go to stderr only: stdout belongs to JSON-RPC under `mcp-stdio`. Each line passes the one
/// output step, as results do: a log line can carry a backend's words or a path.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTIC_HIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let sink = workspace_dir().map_or_else(
        |_| ahil_gate::audit::Sink::for_process(),
        |workspace| {
            ahil_gate::audit::Sink::for_environment(&workspace, &Environment::from_process())
        },
    );
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(logs::ScrubbedStderr::new(sink))
        .with_ansi(false)
        .try_init();
}

fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let env = Environment::from_process();
    let workspace = workspace_dir()?;
    if let Some(done) = direct(&cli.command, &workspace, &env) {
        return done;
    }
    let document = match report(&cli.command, &workspace, &env)? {
        Ok(document) => document,
        Err(code) => return Ok(code),
    };
    // The terminal is a sink like any other: the document passes the one output step.
    let document = terminal_sink(&workspace, &env).scrub(&document);
    emit(&document, cli.json)?;
    Ok(
        if ahil_gate::conclusive_success_value(document.as_value()) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        },
    )
}

/// The commands that own the terminal or the process (servers, children, streams): they answer
/// with an exit status, not a document.
fn direct(
    command: &Command,
    workspace: &std::path::Path,
    env: &Environment,
) -> Option<anyhow::Result<ExitCode>> {
    match command {
        Command::McpStdio => Some(mcp::serve(workspace, env)),
        Command::Completions { shell } => {
            completions::completions(*shell, &mut std::io::stdout().lock());
            Some(Ok(ExitCode::SUCCESS))
        }
        Command::Man => Some(
            completions::man(&mut std::io::stdout().lock())
                .map(|()| ExitCode::SUCCESS)
                .map_err(Into::into),
        ),
        Command::Watch {
            once,
            width,
            height,
            interval_ms,
        } => {
            let options = watch::Options {
                once: *once,
                width: *width,
                height: *height,
                refresh: std::time::Duration::from_millis(*interval_ms),
            };
            Some(watch::run(workspace, env, &options))
        }
        Command::CanBroker { args } => {
            let code = ahil_gate::can::broker::server::main(args);
            Some(Ok(ExitCode::from(u8::try_from(code).unwrap_or(1))))
        }
        Command::ProbeRsWorker { args } => {
            let code = ahil_gate::actions::probe_rs::worker(args);
            Some(Ok(ExitCode::from(u8::try_from(code).unwrap_or(1))))
        }
        Command::ComStdio {
            port_id,
            max_read_bytes,
            eof_idle_timeout_s,
        } => {
            let options = comstdio::Options {
                port_id,
                max_read_bytes: *max_read_bytes,
                eof_idle_timeout_s: eof_idle_timeout_s.clamp(0.0, 60.0),
            };
            Some(Ok(comstdio::run(workspace, env, &options)))
        }
        _ => None,
    }
}

/// The commands that answer with one document (rendered, or `--json`), or an exit status when they
/// printed their output raw.
fn report(
    command: &Command,
    workspace: &std::path::Path,
    env: &Environment,
) -> anyhow::Result<Result<Value, ExitCode>> {
    Ok(Ok(match command {
        Command::Init { force, agent } => install::init(workspace, env, *force, *agent),
        Command::Doctor => operator_cli::doctor(workspace, env).to_value(),
        Command::LeaseStatus => ahil_gate::operator::lease_status(workspace, env),
        Command::Recover {
            confirm_safe_state,
            quarantine_id,
            accept_config_change,
            retire_records,
        } => ahil_gate::operator::recover(
            workspace,
            env,
            &ahil_gate::operator::RecoverOptions {
                confirm_safe_state: *confirm_safe_state,
                quarantine_id: quarantine_id.clone(),
                accept_config_change: *accept_config_change,
                retire_records: *retire_records,
            },
        ),
        Command::Grant { keys } => config_cli::set_permissions(workspace, env, keys, true),
        Command::Revoke { keys } => config_cli::set_permissions(workspace, env, keys, false),
        Command::ConfigReload => config_cli::preview_reload(workspace, env),
        Command::ComPorts => config_cli::com_ports(),
        Command::DebuggerProbes => config_cli::debugger_probes(workspace, env)?,
        Command::AdoptHardware {
            debugger,
            com_port,
            probe_id,
            dry_run,
        } => config_cli::adopt_hardware(
            workspace,
            env,
            debugger.as_deref(),
            com_port.as_deref(),
            probe_id.as_deref(),
            *dry_run,
        )?,
        Command::AgentInstall(registration) => install::agent_install(workspace, env, registration),
        Command::SkillInstall {
            agent,
            target,
            force,
        } => install::skill_install(env, *agent, target.as_deref(), *force),
        Command::Uninstall { agent } => install::uninstall(env, agent),
        Command::Setup(registration) => install::setup(workspace, env, registration),
        Command::Upgrade { dry_run, from } => upgrade::run(workspace, *dry_run, from.as_deref()),
        Command::ReportStateRepair => evidence::report_state_repair(workspace, env),
        Command::TestReactor {
            test_config,
            wait_s,
            detach,
            junit_xml,
            run_handle,
        } => reactor_cli::run(
            workspace,
            env,
            &reactor_cli::RunOptions {
                test_config: test_config.as_deref(),
                wait_s: *wait_s,
                detach: *detach,
                junit_xml: junit_xml.as_deref(),
                run_handle: run_handle.as_deref(),
            },
        )?,
        Command::TestReactorStatus { run } => {
            reactor_cli::lifecycle(workspace, env, "test_reactor_status", run.as_deref())?
        }
        Command::TestReactorStop { run } => {
            reactor_cli::lifecycle(workspace, env, "test_reactor_stop", Some(run))?
        }
        Command::RunEvidence { report, out } => evidence::run_evidence(workspace, report, out),
        Command::Sim(command) => sim::run(workspace, env, command)?,
        Command::Schema { output, force } => {
            let schema = ahil_config::config_json_schema();
            match output {
                None => return print_raw_json(&schema).map(|()| Err(ExitCode::SUCCESS)),
                Some(path) => files::write_output(workspace, path, &schema, *force, "schema")?,
            }
        }
        Command::CheckPlan { plans, strict } => plans::check(workspace, env, plans, *strict),
        Command::TestSchema { output, force } => {
            let schema = ahil_config::plan::plan_json_schema();
            match output {
                None => return print_raw_json(&schema).map(|()| Err(ExitCode::SUCCESS)),
                // The reference answers `schema_exists` for both schema commands.
                Some(path) => files::write_output(workspace, path, &schema, *force, "schema")?,
            }
        }
        Command::McpConfig { output, force } => match files::mcp_config_snippet(workspace) {
            Err(refusal) => refusal,
            Ok(snippet) => match output {
                None => {
                    print_raw_json(&snippet)?;
                    return Ok(Err(ExitCode::SUCCESS));
                }
                Some(path) => files::write_output(workspace, path, &snippet, *force, "mcp_config")?,
            },
        },
        Command::McpStdio
        | Command::Completions { .. }
        | Command::Man
        | Command::Watch { .. }
        | Command::CanBroker { .. }
        | Command::ProbeRsWorker { .. }
        | Command::ComStdio { .. } => unreachable!("run() hands these to direct()"),
    }))
}

/// The workspace is always the directory the command runs in, resolved, as the reference defines it.
fn workspace_dir() -> anyhow::Result<std::path::PathBuf> {
    let cwd = std::env::current_dir()?;
    Ok(std::fs::canonicalize(&cwd).unwrap_or(cwd))
}

fn print_raw_json(value: &Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// HOME, and the state root and configuration directory in force (the defaults when no
/// configuration loads), as the terminal must not show them.
fn terminal_sink(workspace: &std::path::Path, env: &Environment) -> ahil_gate::audit::Sink {
    let sink = ahil_gate::audit::Sink::for_environment(workspace, env);
    match crate::logs::load_config(workspace, env) {
        Ok(loaded) => sink.with_config(&loaded),
        Err(_) => sink,
    }
}

/// A command's result on stdout; it takes nothing but a scrubbed document. (`print_raw_json`
/// alone writes the static schemas and the MCP snippet, which carry no tool output.)
fn emit(document: &ahil_gate::audit::Scrubbed, json: bool) -> anyhow::Result<()> {
    if json {
        print_raw_json(document.as_value())
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(render::human(document.as_value()).as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<std::ffi::OsString> {
        words.iter().map(Into::into).collect()
    }

    #[test]
    fn the_server_command_line_is_read_without_clap_as_clap_reads_it() {
        let fast = server_command_line(&args(&["mcp-stdio"])).expect("read without clap");
        let clap = Cli::try_parse_from(["agentic-hil", "mcp-stdio"]).expect("clap reads it");
        assert_eq!(format!("{fast:?}"), format!("{clap:?}"));
    }

    #[test]
    fn every_other_command_line_goes_through_clap() {
        for words in [
            &["mcp-stdio", "--json"][..],
            &["--json", "mcp-stdio"],
            &["mcp-stdio", "--help"],
            &["mcp-stdio", "extra"],
            &["doctor"],
            &[],
        ] {
            assert!(server_command_line(&args(words)).is_none(), "{words:?}");
        }
    }
}
