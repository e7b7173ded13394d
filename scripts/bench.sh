#!/usr/bin/env bash
# Every benchmark in one run, ours beside the reference 0.25 where it has a counterpart; the figures
# in docs/PERFORMANCE.md come from one run of this on a quiet machine. Not a test: nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh >/dev/null
export AHIL_REFERENCE_BIN="${AHIL_REFERENCE_BIN:-$PWD/target/reference-venv/bin/agentic-hil}"
cargo build --locked --release -q -p agentic-hil
echo "# $(date -u +%FT%TZ) on $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for bench in "agentic-hil startup" "agentic-hil can" "agentic-hil flash_cycle" \
             "ahil-gate artifacts" "ahil-gate serial_io" "ahil-gate audit_append"; do
    set -- $bench
    echo "## $1 / $2"
    cargo bench --locked -q -p "$1" --bench "$2" 2>/dev/null | grep -v '^$'
done
