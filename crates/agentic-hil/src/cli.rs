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
}
