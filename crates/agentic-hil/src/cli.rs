//! The command line: one subcommand per job, `--json` accepted before or after it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
    },
    /// Check the configuration, the toolchains it names and the state root; touches no hardware.
    Doctor,
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
    /// Move a damaged report state aside (every byte kept) and start a fresh one.
    #[command(name = "report-state-repair")]
    ReportStateRepair,
    /// The emulated board of a `type: qemu` debugger: start, stop or show it.
    #[command(subcommand)]
    Sim(SimCommand),
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
