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

# Seconds since $1 (a `date +%s.%N`), through awk: bc is not on every fresh machine.
since() { awk -v from="$1" -v now="$(date +%s.%N)" 'BEGIN { printf "%.2f", now - from }'; }
# Each step's wall time is printed when the next one starts.
last_step=""; step_started=0
finish_step() {
  if [ -n "$last_step" ]; then
    printf '   (%s took %s s)\n' "$last_step" "$(since "$step_started")"
  fi
}
step() {
  finish_step
  last_step="step ${1%%.*}"; step_started=$(date +%s.%N)
  printf '\n== %s\n$ %s\n' "$1" "$2"
}
step "1. The operator writes the configuration outside the workspace: a qemu board, its UART" \
     "agentic-hil init; (edit: debuggers.board type qemu, com_ports.uart, debug symbols)"
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
    permissions: {allow_flash: true, allow_reset: true, allow_debug_execution: true}
artifacts: {allowed_roots: [fw], allow_upload: true}
debug: {allowed_symbols: [on_tick, counter]}
com_ports:
  uart: {device: "$state/sim/board/uart", resource_id: demo-uart, permissions: {allow_write: true}}
YAML
sed -n '/debuggers:/,$p' "$config" | sed 's|'"$HOME"'|~|g'

step "2. The operator starts the emulated board (it outlives the command)" "agentic-hil sim start --image fw/ahil-fw-v1.elf"
"$bin" sim start --image fw/ahil-fw-v1.elf
"$bin" sim status

# A written test plan in the workspace: the UART opened, then the firmware's tick seen on it.
mkdir -p tests
cat >tests/boot.yaml <<'PLAN'
version: 5
name: boot
steps:
  - {device: uart, action: uart_open, clear_buffer: true}
  - {device: uart, action: uart_expect, text: "tick", timeout_s: 5}
PLAN

step "3. An agent connects over MCP and works the board: flash, serial, debug, a test plan" \
     "mcp_client agentic-hil <calls below>"
export AHIL_SHOW="version,target,core_state,artifact_id,bytes_written,capture.text,mode,text,matched,session.status,breakpoint.gdb_location,stop_reason,stop.frame.function,value_unsigned,status,steps_passed,passed,report.tool,report.canonical_audit,workspace_report_state"
image_id="$(sha256sum fw/ahil-fw-v2.elf | cut -d" " -f1).elf"
"$client" "$bin" --brief \
    '#probe: is the debugger there, is the board there' \
    debugger_info \
    probe_target \
    '#flash: upload the new image, flash it and read the boot log in one call' \
    'artifact_upload={"image_path":"fw/ahil-fw-v2.elf"}' \
    'flash_firmware={"artifact_id":"'"$image_id"'","reset_after_flash":true,"capture":{"port_id":"uart","until":"netduinoplus2"}}' \
    '#serial: ask the firmware for its version and read until it answers' \
    'com_session_start={"port_id":"uart"}' \
    'com_write={"port_id":"uart","text":"version\n"}' \
    'com_read={"port_id":"uart","until":"ahil-fw 2.0","wait_timeout_s":5}' \
    'com_session_stop={"port_id":"uart"}' \
    '#debug: stop at a breakpoint, read a variable, then let the board run again' \
    'debug_start_session={"image_path":"fw/ahil-fw-v2.elf"}' \
    'debug_set_breakpoint={"location":"on_tick"}' \
    'debug_continue={"timeout_s":5}' \
    'debug_symbol_value={"symbol":"counter"}' \
    'debug_stop_session={}' \
    'reset_target={"mode":"run"}' \
    '#test plan: two steps, written in the workspace' \
    'test_reactor_run={"test_config_path":"tests/boot.yaml"}' \
    get_last_report

step "4. CI runs the same plan from the shell and keeps a JUnit file" \
     "agentic-hil test-reactor --test-config tests/boot.yaml --junit-xml out/junit.xml"
"$bin" test-reactor --test-config tests/boot.yaml --junit-xml out/junit.xml
cat out/junit.xml

step "5. The operator stops the board" "agentic-hil sim stop"
"$bin" sim stop

step "6. The audit trail in the workspace (a verified mirror of the canonical copy)" "ls .agentic-hil/reports .agentic-hil/logs"
ls .agentic-hil/reports .agentic-hil/logs
finish_step
printf '\nDemo finished in %s s (after the build).\n' "$(since "$started")"
