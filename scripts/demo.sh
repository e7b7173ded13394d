#!/usr/bin/env bash
# The demo: the agent workflow that exists today, in a throw-away HOME and workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cargo build --locked --release -p agentic-hil --bin agentic-hil --example mcp_client
bin="$PWD/target/release/agentic-hil"
client="$PWD/target/release/examples/mcp_client"

world=$(mktemp -d)
trap 'rm -rf "$world"' EXIT
export HOME="$world/home" XDG_CONFIG_HOME="$world/home/.config" XDG_STATE_HOME="$world/home/.local/state"
unset AGENTIC_HIL_CONFIG
mkdir -p "$HOME" "$world/firmware-project"
cd "$world/firmware-project"

step() { printf '\n== %s\n$ %s\n' "$1" "$2"; }
step "1. The operator writes the authoritative configuration (outside the workspace)" "agentic-hil init"
"$bin" init || true
step "2. The operator checks it (no hardware is touched)" "agentic-hil doctor"
"$bin" doctor || echo "(doctor exits non-zero: this bench is not bound to hardware yet)"
step "3. An agent connects over MCP, lists the tools and asks what the configuration allows" \
     "mcp_client agentic-hil project_config_describe debugger_info"
"$client" "$bin" project_config_describe debugger_info
cat <<'TXT'

What this demo did: wrote a version 3 configuration for a fresh workspace, checked it with doctor
(which reports the bench as not bound to hardware: the starter debugger names no toolchain), and ran a
real MCP session that listed the tools and described the configuration. debugger_info answers
debugger_not_found because no debugger executable is configured. Flashing, reset, debug sessions and
serial on the emulated board arrive with the issues that build them.
TXT
