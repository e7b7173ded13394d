"""The suite's own bench: a private HOME and workspace with a `type: qemu` configuration and the
emulated board running, for the plugin's fixtures to use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Iterator

import pytest

pytest_plugins = ["pytester"]

# This suite checks every result against its tool's published outputSchema, in the sessions pytester
# starts too.
os.environ["AGENTIC_HIL_CHECK_RESULTS"] = "1"


def pytest_configure(config: pytest.Config) -> None:
    config.option.agentic_hil_check_results = True

REPO = Path(__file__).resolve().parents[3]
FIRMWARE = REPO / "firmware" / "build"


def binary() -> str:
    """The binary under test: AGENTIC_HIL_BIN, else the one `cargo test` built."""
    chosen = os.environ.get("AGENTIC_HIL_BIN") or str(REPO / "target" / "debug" / "agentic-hil")
    if not os.access(chosen, os.X_OK):
        pytest.fail(f"no agentic-hil binary at {chosen}: run `cargo build` or set AGENTIC_HIL_BIN", pytrace=False)
    return chosen


def private_env(home: Path) -> Dict[str, str]:
    """Only what the server needs, with HOME and the XDG roots inside `home`."""
    return {
        "HOME": str(home),
        # The account's home as a debug build reads it: this test's, not the machine's.
        "AHIL_TEST_ACCOUNT_HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "LANG": "C.UTF-8",
        "AGENTIC_HIL_BIN": binary(),
    }


def run_json(env: Dict[str, str], workspace: Path, *args: str) -> dict:
    out = subprocess.run(
        [env["AGENTIC_HIL_BIN"], *args, "--json"], cwd=workspace, env=env, capture_output=True, timeout=120
    )
    try:
        doc = json.loads(out.stdout)
    except ValueError:
        pytest.fail(f"agentic-hil {' '.join(args)}: not JSON: {out.stdout!r} {out.stderr!r}", pytrace=False)
    if out.returncode != 0:
        pytest.fail(f"agentic-hil {' '.join(args)} exited {out.returncode}: {doc}", pytrace=False)
    return doc


def config_path(home: Path) -> Path:
    found = list((home / ".config" / "agentic-hil" / "projects").glob("*/config.yaml"))
    assert len(found) == 1, f"init wrote one configuration: {found}"
    return found[0]


@pytest.fixture(scope="session")
def bench_root() -> Iterator[Path]:
    # mkdtemp rather than tmp_path_factory: QEMU's unix sockets live under HOME and their paths must
    # stay short.
    root = Path(tempfile.mkdtemp(prefix="ahil-py-")).resolve()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def agentic_hil_workspace(bench_root: Path) -> Path:
    workspace = bench_root / "work" / "board-fw"
    workspace.mkdir(parents=True)
    return workspace


@pytest.fixture(scope="session")
def agentic_hil_env(bench_root: Path) -> Dict[str, str]:
    home = bench_root / "home"
    home.mkdir()
    return private_env(home)


@pytest.fixture(scope="session")
def emulated_board(agentic_hil_workspace: Path, agentic_hil_env: Dict[str, str]) -> Iterator[Path]:
    """Writes the configuration, copies the firmware into `fw/` and starts the board; stops it after
    the session whatever happened."""
    workspace, env = agentic_hil_workspace, agentic_hil_env
    home = Path(env["HOME"])
    run_json(env, workspace, "init")
    state = home / ".local" / "state" / "agentic-hil"
    config_path(home).write_text(
        f'workspace_root: "{workspace}"\nstate_root: "{state}"\nversion: 3\n'
        "target:\n  name: sim\n  controller: stm32f405\n"
        "debuggers:\n  board:\n    type: qemu\n    timeout_s: 10\n    permissions:\n"
        "      allow_flash: true\n      allow_reset: true\n      allow_debug_execution: true\n"
        "artifacts:\n  allowed_roots: [fw]\n"
        f'com_ports:\n  uart:\n    device: "{state / "sim" / "board" / "uart"}"\n    resource_id: sim-uart\n'
        "debug:\n  allowed_symbols: [g_u32]\n"
    )
    fw = workspace / "fw"
    fw.mkdir()
    for name in ("ahil-fw-v1.elf", "ahil-fw-v2.elf"):
        shutil.copy(FIRMWARE / name, fw / name)
    started = run_json(env, workspace, "sim", "start", "--image", "fw/ahil-fw-v1.elf")
    assert started["running"] is True, started
    yield workspace
    subprocess.run([env["AGENTIC_HIL_BIN"], "sim", "stop"], cwd=workspace, env=env, capture_output=True, timeout=60)
