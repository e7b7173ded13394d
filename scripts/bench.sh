#!/usr/bin/env bash
# Every benchmark in one run, ours beside the reference 0.25 where it has a counterpart and beside its
# floor (the same work without the gate, `agentic-hil/benches/floors.rs`, measured in the same run);
# the figures in docs/PERFORMANCE.md come from one run of this. Not a test: nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh >/dev/null
export AHIL_REFERENCE_BIN="${AHIL_REFERENCE_BIN:-$PWD/target/reference-venv/bin/agentic-hil}"
cargo build --locked --release -q -p agentic-hil
# Start-up and its memory are measured on this build, the one `cargo install` makes: `cargo bench`
# rebuilds the binary with the dev-dependencies' features, which the start-up order does not match.
mkdir -p target/bench-release
cp target/release/agentic-hil target/bench-release/agentic-hil
export AHIL_RELEASE_BIN="$PWD/target/bench-release/agentic-hil"
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
echo "# $(date -u +%FT%TZ) on $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
benches=("agentic-hil floors" "agentic-hil startup" "agentic-hil can" "agentic-hil flash_cycle"
         "agentic-hil rtt_read" "agentic-hil labgrid_held" "ahil-gate artifacts" "ahil-gate serial_io" "ahil-gate audit_append")
# Arguments name a subset ("agentic-hil rtt_read" ...): those rows alone, e.g. on a shared machine.
if [ "$#" -gt 0 ]; then benches=("$@"); fi
for bench in "${benches[@]}"; do
    set -- $bench
    echo "## $1 / $2"
    cargo bench --locked -q -p "$1" --bench "$2" 2>/dev/null | grep -v '^$' | tee -a "$rows" | grep -v '^row	' || true
done
# One table: the floor, ours, the reference, ours/floor (the gate's cost over the work) and
# reference/ours. For a rate (frames/s) both ratios are taken so that >1 means "slower than".
echo
echo "| what | floor | ours | reference 0.25 | ours/floor | reference/ours |"
echo "|---|---|---|---|---|---|"
awk -F'\t' '
    $1 == "row" { v[$2 "," $3] = $4 }
    END {
        n = split("startup_ms rss_mib gate_call_ms com_write_ms can_send_ms until_ms rtt_read_ms can_reqresp_ms can_read_fps upload_ms upload_new_ms labgrid_held_ms", keys, " ")
        what["startup_ms"] = "process start to the `tools/list` answer over stdio (ms)"
        what["rss_mib"] = "peak resident memory at that moment, VmHWM (MiB)"
        what["gate_call_ms"] = "a gate-only call, `hardware_lease_status` round trip (ms)"
        what["com_write_ms"] = "audited `com_write` round trip (ms)"
        what["can_send_ms"] = "audited `can_send` round trip (ms)"
        what["until_ms"] = "`com_read until` latency, byte arrival to answer (ms)"
        what["rtt_read_ms"] = "`rtt_read until` latency, the firmware'"'"'s write (its WrOff seen) to answer, 10 ms polls (ms)"
        what["can_reqresp_ms"] = "CAN request to ECU answer, `can_send` + `can_read until_id` (ms)"
        what["can_read_fps"] = "CAN read through the process bridge (frames/s)"
        what["upload_ms"] = "`artifact_upload` of a 2 MiB ELF, the same bytes each round (ms)"
        what["upload_new_ms"] = "`artifact_upload` of a 2 MiB ELF, new bytes each round; floor as above (ms)"
        what["labgrid_held_ms"] = "audited `com_write` on a labgrid place the run holds; floor: no `labgrid:` section (ms)"
        for (i = 1; i <= n; i++) {
            k = keys[i]; f = v[k ",floor"]; o = v[k ",ours"]; r = v[k ",reference"]
            rate = (k ~ /_fps$/)
            of = (f == "" || o == "" || o + 0 == 0) ? "-" : sprintf("%.1fx", rate ? f / o : o / f)
            ro = (r == "" || o == "" || o + 0 == 0 || r + 0 == 0) ? "-" : sprintf("%.1fx", rate ? o / r : r / o)
            printf "| %s | %s | %s | %s | %s | %s |\n", what[k], (f == "" ? "-" : f), (o == "" ? "-" : o), (r == "" ? "-" : r), of, ro
        }
    }' "$rows"
