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
