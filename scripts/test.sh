#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
export AHIL_REFERENCE_BIN="$PWD/target/reference-venv/bin/agentic-hil"
cargo test --workspace --locked --all-targets
# The pytest plugin's suite, on the binary `cargo test` just built.
AGENTIC_HIL_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/agentic-hil" \
  target/pytest-venv/bin/python -m pytest -q python/pytest-agentic-hil/tests
