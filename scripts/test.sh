#!/usr/bin/env bash
# The test command: installs what the tests need, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
export AHIL_REFERENCE_BIN="$PWD/target/reference-venv/bin/agentic-hil"
cargo test --workspace --locked --all-targets
