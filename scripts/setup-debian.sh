#!/usr/bin/env bash
# Installs what the demo and the tests need on a fresh Debian machine. Safe to run again: it only
# installs what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
# A C compiler for crates that build C; a machine may already have one without Debian's package.
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
# A machine may bring its own Python (pyenv); Debian's is needed only when venv is absent.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3 python3-venv python3-pip)
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust stable (rustup) and run again" >&2
  exit 1
fi

# The reference implementation (Python, 0.25.0) runs beside ours in the compatibility tests and the
# benchmarks. It lives under target/ so a clean clone gets its own.
ref=target/reference-venv
if [ ! -x "$ref/bin/agentic-hil" ]; then
  echo "setup: installing the reference agentic-hil 0.25.0 into $ref"
  python3 -m venv "$ref"
  "$ref/bin/pip" install -q --disable-pip-version-check agentic-hil==0.25.0
fi
