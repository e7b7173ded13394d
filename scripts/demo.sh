#!/usr/bin/env bash
# The demo: an agent drives an emulated board through the gate, in a throw-away HOME and workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
for tool in qemu-system-arm gdb-multiarch; do
    command -v "$tool" >/dev/null || scripts/setup-debian.sh
done
cargo build --locked --release -p agentic-hil --bin agentic-hil --example mcp_client
bin="$PWD/target/release/agentic-hil"
client="$PWD/target/release/examples/mcp_client"
started=$(date +%s.%N)

world=$(mktemp -d)
export HOME="$world/home" XDG_CONFIG_HOME="$world/home/.config" XDG_STATE_HOME="$world/home/.local/state"
unset AGENTIC_HIL_CONFIG
mkdir -p "$HOME" "$world/firmware-project/fw"
cd "$world/firmware-project"
trap '"$bin" sim stop >/dev/null 2>&1 || true; rm -rf "$world"' EXIT
cp "$repo"/firmware/build/ahil-fw-v*.{elf,hex,bin} fw/

step() { printf '\n== %s\n$ %s\n' "$1" "$2"; }
step "1. The operator writes the configuration outside the workspace: a qemu board, its UART" \
     "agentic-hil init; (edit: debuggers.board type qemu, com_ports.uart)"
"$bin" init >/dev/null
config=$(ls -d "$HOME"/.config/agentic-hil/projects/*)/config.yaml
state="$HOME/.local/state/agentic-hil"
cat >"$config" <<YAML
workspace_root: "$PWD"
state_root: "$state"
version: 3
target: {name: demo, controller: stm32f405}
debuggers:
  board:
    type: qemu
    machine: netduinoplus2
    timeout_s: 10
    permissions: {allow_flash: true, allow_reset: true}
artifacts: {allowed_roots: [fw], allow_upload: true}
com_ports:
  uart: {device: "$state/sim/board/uart", resource_id: demo-uart}
YAML
sed -n '/debuggers:/,$p' "$config" | sed 's|'"$HOME"'|~|g'

step "2. The operator starts the emulated board (it outlives the command)" "agentic-hil sim start --image fw/ahil-fw-v1.elf"
"$bin" sim start --image fw/ahil-fw-v1.elf
"$bin" sim status

step "3. An agent connects over MCP and works the board" \
     "mcp_client agentic-hil debugger_info probe_target artifact_upload flash_firmware reset_target get_last_report"
export AHIL_SHOW="version,target,core_state,artifact_id,bytes_written,capture.text,mode,log_path,report.tool,report.canonical_audit,workspace_report_state"
"$client" "$bin" --brief \
    debugger_info \
    probe_target \
    'artifact_upload={"image_path":"fw/ahil-fw-v2.elf"}' \
    'flash_firmware={"artifact_id":"'"$(sha256sum fw/ahil-fw-v2.elf | cut -d" " -f1)"'.elf","reset_after_flash":true,"capture":{"port_id":"uart","until":"netduinoplus2"}}' \
    'reset_target={"mode":"halt"}' \
    'reset_target={"mode":"run"}' \
    get_last_report

step "4. The operator stops the board" "agentic-hil sim stop"
"$bin" sim stop

step "5. The audit trail in the workspace (a verified mirror of the canonical copy)" "ls .agentic-hil/reports .agentic-hil/logs"
ls .agentic-hil/reports .agentic-hil/logs
printf '\nDemo finished in %.1f s (after the build).\n' "$(echo "$(date +%s.%N) - $started" | bc)"
