#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace and the
# pytest plugin's suite. A failing test binary does not stop the others (--no-fail-fast); the last
# lines give the totals of both suites, and the exit status is non-zero when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
export AHIL_REFERENCE_BIN="$PWD/target/reference-venv/bin/agentic-hil"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

cargo_status=0
cargo test --workspace --locked --all-targets --no-fail-fast 2>&1 | tee "$logs/cargo.log" || cargo_status=$?

# The tests ignored as "needs root" run programs as another account; as root (CI is) they run here,
# so they are counted as passed or failed, not as skipped.
root_status=0
if [[ $(id -u) == 0 ]]; then
  cargo test --locked -p agentic-hil --test reference_error_types -- --ignored 2>&1 \
    | tee "$logs/root.log" || root_status=$?
fi

# The pytest plugin's suite, on the binary `cargo test` just built.
pytest_status=0
AGENTIC_HIL_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/agentic-hil" \
  target/pytest-venv/bin/python -m pytest -q -p no:cacheprovider python/pytest-agentic-hil/tests \
  2>&1 | tee "$logs/pytest.log" || pytest_status=$?

# cargo prints one "test result:" line per test binary: binaries, passed, failed, ignored.
tally() {
  awk '
    /^test result: / {
      n++
      for (i = 1; i <= NF; i++) {
        if ($(i + 1) ~ /^passed;/) p += $i
        if ($(i + 1) ~ /^failed;/) f += $i
        if ($(i + 1) ~ /^ignored;/) g += $i
      }
    }
    END { printf "%d %d %d %d\n", n, p, f, g }' "$1"
}
read -r binaries c_passed c_failed c_ignored < <(tally "$logs/cargo.log")
if [[ -f $logs/root.log ]]; then
  read -r _ r_passed r_failed _ < <(tally "$logs/root.log")
  c_passed=$((c_passed + r_passed)); c_failed=$((c_failed + r_failed))
  c_ignored=$((c_ignored - r_passed - r_failed))
  if ((root_status != 0 && r_failed == 0)); then cargo_status=$root_status; fi
fi
# pytest -q closes with a line such as "2 failed, 30 passed, 1 skipped in 3.2s".
count() { grep -Eo "[0-9]+ $1" "$logs/pytest.log" | tail -n 1 | cut -d' ' -f1 || true; }
p_passed=$(count passed); p_failed=$(count failed); p_errors=$(count 'errors?'); p_skipped=$(count skipped)
p_passed=${p_passed:-0}; p_failed=$((${p_failed:-0} + ${p_errors:-0})); p_skipped=${p_skipped:-0}

failed=$((c_failed + p_failed))
# A binary that did not build, or a suite that stopped early, fails the run even with no failed test.
if ((cargo_status != 0 && c_failed == 0)) || ((pytest_status != 0 && p_failed == 0)); then
  failed=$((failed + 1))
  echo "test: a suite exited non-zero without a failed test (cargo $cargo_status, pytest $pytest_status): see above"
fi
echo
echo "cargo test: $c_passed passed, $c_failed failed, $c_ignored ignored ($binaries test binaries)"
echo "pytest: $p_passed passed, $p_failed failed, $p_skipped skipped"
echo "total: $((c_passed + p_passed)) passed, $failed failed, $((c_ignored + p_skipped)) skipped"
((failed == 0))
