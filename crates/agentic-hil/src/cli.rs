//! The command line: one subcommand per job, `--json` accepted before or after it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::install::Agent;

#[derive(Debug, Parser)]
#[command(
    name = "agentic-hil",
    version,
    about = "The bench gate between an AI coding agent and embedded hardware.",
    propagate_version = true
)]
pub struct Cli {
    /// Print the result document as JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdin/stdout (what an agent host launches).
    #[command(name = "mcp-stdio")]
    McpStdio,
    /// Write this workspace's authoritative configuration (version 3) outside the workspace.
    Init {
        /// Rewrite an existing configuration at the generated defaults.
        #[arg(long)]
        force: bool,
        /// Also settle this agent host's write refusals on the configuration and state root
        /// (Claude Code: `permissions.deny` rules; the others need or take none).
        #[arg(long, value_enum)]
        agent: Option<Agent>,
    },
    /// Check the configuration, the toolchains it names and the state root; touches no hardware.
    Doctor,
    /// Say who holds this workspace's bench and whether an incident is open or stands on it.
    #[command(name = "lease-status")]
    LeaseStatus,
    /// Release a quarantined bench after checking it by hand (the operator's confirmation).
    Recover {
        /// Confirm that you checked the board and it is in a safe state.
        #[arg(long)]
        confirm_safe_state: bool,
        /// The incident to recover, as lease-status names it.
        #[arg(long)]
        quarantine_id: Option<String>,
        /// Accept that the configuration changed since the incident was recorded.
        #[arg(long)]
        accept_config_change: bool,
        /// Set unreadable lease records aside under coordination/records/retired instead.
        #[arg(long)]
        retire_records: bool,
    },
    /// Open permissions in the configuration (operator only; never reachable over MCP).
    Grant {
        /// Keys like `debuggers.dut.allow_flash`, `com_ports.uart.permissions.allow_write`,
        /// `permissions.allow_recover`, `artifacts.allow_upload`.
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Close permissions in the configuration.
    Revoke {
        /// Keys, as for `grant`.
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Preview what a running server's project_config_reload_description would take; writes nothing.
    #[command(name = "config-reload")]
    ConfigReload,
    /// List this host's serial ports, with their USB identity and stable by-id names.
    #[command(name = "com-ports")]
    ComPorts,
    /// List the probes the configured debugger sees (the emulated board answers `qemu:<entry>`); before `init`, what this host shows (STM32CubeProgrammer's ST-LINK list, else the USB inventory)
    #[command(name = "debugger-probes")]
    DebuggerProbes,
    /// Fill the configuration's unset keys from the attached board; never touches a permission.
    #[command(name = "adopt-hardware")]
    AdoptHardware {
        /// The debuggers entry that receives the values (only needed with several).
        #[arg(long)]
        debugger: Option<String>,
        /// The com_ports entry for the board's UART (created with every permission false).
        #[arg(long = "com-port")]
        com_port: Option<String>,
        /// The attached probe this is about.
        #[arg(long = "probe-id")]
        probe_id: Option<String>,
        /// Report what would be filled in and write nothing.
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
    /// Replace this installation with a newer build: by cargo when cargo installed it, or from a
    /// built binary given with --from. Checks first; an installation already current is left alone.
    Upgrade {
        /// Say what would be installed and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// A built agentic-hil binary, a source directory, or a git URL to upgrade from.
        #[arg(long, value_name = "PATH_OR_SOURCE")]
        from: Option<String>,
    },
    /// Print (or write) the JSON schema of the configuration file.
    Schema {
        /// Write the schema to this file inside the workspace instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Replace an existing output file.
        #[arg(long)]
        force: bool,
    },
    /// Load test plans with the reactor's own loader and say whether each is usable; no hardware.
    #[command(name = "check-plan")]
    CheckPlan {
        /// Plan files, relative to the workspace (default `.agentic-hil/testconfig.yaml`).
        plans: Vec<PathBuf>,
        /// Fail for a plan naming a device this workspace's configuration does not declare, instead
        /// of reporting it as a finding.
        #[arg(long)]
        strict: bool,
    },
    /// Print (or write) the JSON schema of test plans (`.agentic-hil/testconfig.yaml`).
    #[command(name = "test-schema")]
    TestSchema {
        /// Write the schema to this file inside the workspace instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Replace an existing output file.
        #[arg(long)]
        force: bool,
    },
    /// Print (or write) the snippet an MCP host needs to launch this server.
    #[command(name = "mcp-config")]
    McpConfig {
        /// Write the snippet to this file inside the workspace instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Replace an existing output file.
        #[arg(long)]
        force: bool,
    },
    /// Register the MCP server with an agent host for this user, and give the host the skill.
    #[command(name = "agent-install")]
    AgentInstall(Registration),
    /// Write the skill document where an agent host finds it (or to --target).
    #[command(name = "skill-install")]
    SkillInstall {
        #[arg(long, value_enum, default_value = "opencode")]
        agent: Agent,
        /// The skill file to write instead of the host's own skills directory.
        #[arg(long)]
        target: Option<PathBuf>,
        /// Replace a file that agentic-hil did not write.
        #[arg(long)]
        force: bool,
    },
    /// Take back what agent-install and skill-install wrote (every host, or those named); never
    /// touches project configurations, state roots, or entries the operator wrote.
    Uninstall {
        #[arg(long, value_enum)]
        agent: Vec<Agent>,
    },
    /// agent-install, then init in this workspace: from a fresh clone to a registered server
    /// (--force never rewrites the project configuration).
    Setup(Registration),
    /// A live view of this workspace's bench: device holds, the lease and incidents, recent audited
    /// calls, open COM sessions. Read-only; takes no lock. q quits.
    Watch {
        /// Print one frame as text and exit (for scripts and tests).
        #[arg(long)]
        once: bool,
        /// Frame width for --once (default: the terminal's, else 100).
        #[arg(long, requires = "once")]
        width: Option<u16>,
        /// Frame height for --once (default: the terminal's, else 30).
        #[arg(long, requires = "once")]
        height: Option<u16>,
        /// Milliseconds between refreshes (50 to 5000).
        #[arg(long = "interval-ms", default_value_t = 500, value_parser = clap::value_parser!(u64).range(50..=5000))]
        interval_ms: u64,
    },
    /// Print the completion script for a shell (e.g. `agentic-hil completions bash >
    /// ~/.local/share/bash-completion/completions/agentic-hil`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `agentic-hil man | man -l -`.
    Man,
    /// Move a damaged report state aside (every byte kept) and start a fresh one.
    #[command(name = "report-state-repair")]
    ReportStateRepair,
    /// The emulated board of a `type: qemu` debugger: start, stop or show it.
    #[command(subcommand)]
    Sim(SimCommand),
    /// The broker of a shared CAN bus, started by a server whose agent attaches as a participant:
    /// reads its spec on stdin, owns the adapter, serves participants over a private socket.
    #[command(name = "can-broker", hide = true)]
    CanBroker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// One probe-rs action in a child of the server: `--request <json>`, progress and one answer as
    /// JSON lines on stdout (so a USB hang or a library panic ends this child, not the server).
    #[command(name = "probe-rs-worker", hide = true)]
    ProbeRsWorker {
        /// `--request <json>`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Bind this terminal's stdin and stdout to a configured serial port (for a person, not MCP).
    #[command(name = "com-stdio")]
    ComStdio {
        /// The com_ports entry to open.
        #[arg(long = "port-id", alias = "port")]
        port_id: String,
        /// Most bytes written to stdout per read (default the port's max_buffer_bytes).
        #[arg(long)]
        max_read_bytes: Option<u64>,
        /// After stdin ends, stop once the port has been quiet this long.
        #[arg(long, default_value_t = 0.5)]
        eof_idle_timeout_s: f64,
    },
    /// Run a test plan through the gate and print its report; exit 1 unless every step passed.
    #[command(name = "test-reactor")]
    TestReactor {
        /// The plan, relative to the workspace (default `.agentic-hil/testconfig.yaml`).
        #[arg(long = "test-config")]
        test_config: Option<PathBuf>,
        /// Seconds to wait for devices another owner holds (0 to 900).
        #[arg(long = "wait-s", default_value_t = 0.0)]
        wait_s: f64,
        /// Run in a worker process and answer once it holds the devices.
        #[arg(long)]
        detach: bool,
        /// Also write the result as JUnit XML to this path inside the workspace.
        #[arg(long = "junit-xml")]
        junit_xml: Option<PathBuf>,
        /// The handle a detached run's worker runs under (internal).
        #[arg(long = "run-handle", hide = true)]
        run_handle: Option<String>,
    },
    /// Show a test run by handle, or list this bench's runs.
    #[command(name = "test-reactor-status")]
    TestReactorStatus {
        #[arg(long)]
        run: Option<String>,
    },
    /// Ask a test run to stop after its current step.
    #[command(name = "test-reactor-stop")]
    TestReactorStop {
        #[arg(long)]
        run: String,
    },
    /// Turn a run report into run-summary.json, job-summary.md and copies of its logs (for CI).
    #[command(name = "run-evidence")]
    RunEvidence {
        /// The run report (workspace-relative or absolute).
        #[arg(long)]
        report: PathBuf,
        /// The directory to write the evidence into.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Start the board detached (it outlives this command), booting `--image` or
    /// firmware/build/ahil-fw-v1.elf, and wait until it answers.
    Start {
        /// The `type: qemu` debugger entry (default: the only one).
        #[arg(long)]
        debugger: Option<String>,
        /// The image to boot (workspace-relative or absolute).
        #[arg(long)]
        image: Option<PathBuf>,
    },
    /// Stop the board, from any process.
    Stop {
        /// The `type: qemu` debugger entry (default: the only one).
        #[arg(long)]
        debugger: Option<String>,
    },
    /// Say whether the board runs.
    Status {
        /// The `type: qemu` debugger entry (default: the only one).
        #[arg(long)]
        debugger: Option<String>,
    },
    /// The supervisor `start` leaves running (internal).
    #[command(hide = true)]
    Supervise {
        #[arg(long)]
        debugger: Option<String>,
        #[arg(long)]
        image: Option<PathBuf>,
    },
}

/// What registering the server with an agent host takes (agent-install, and setup before init).
#[derive(Args, Debug, Clone)]
pub struct Registration {
    #[arg(long, value_enum, default_value = "claude-code")]
    pub agent: Agent,
    /// Replace an agentic-hil entry or skill that agentic-hil did not write.
    #[arg(long)]
    pub force: bool,
    /// Register this binary instead of the running one (absolute path).
    #[arg(long, hide = true)]
    pub launcher: Option<PathBuf>,
}
