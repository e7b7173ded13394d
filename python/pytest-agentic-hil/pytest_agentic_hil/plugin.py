"""The pytest plugin: a session-wide `agentic-hil mcp-stdio` for the project and the `agentic_hil`
fixture tests call the bench through."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterator

import pytest

from .bench import Bench
from .server import AgenticHilError, Server, ServerExited, find_binary


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentic-hil", "the bench through agentic-hil")
    group.addoption(
        "--agentic-hil-workspace",
        metavar="DIR",
        help="the workspace whose configuration the server uses (default: the rootdir)",
    )
    group.addoption(
        "--agentic-hil-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="longest wait for one answer from the server (default 120)",
    )
    group.addoption(
        "--agentic-hil-check-results",
        action="store_true",
        default=os.environ.get("AGENTIC_HIL_CHECK_RESULTS") == "1",
        help="fail a call whose result does not match its tool's published outputSchema "
        "(default: AGENTIC_HIL_CHECK_RESULTS=1)",
    )


@pytest.fixture(scope="session")
def agentic_hil_workspace(pytestconfig: pytest.Config) -> Path:
    """The workspace the server runs in; override this fixture to choose another."""
    chosen = pytestconfig.getoption("agentic_hil_workspace")
    return Path(chosen).resolve() if chosen else Path(pytestconfig.rootpath)


@pytest.fixture(scope="session")
def agentic_hil_env() -> Dict[str, str]:
    """The server's environment (HOME decides where its configuration is found); override to change."""
    return dict(os.environ)


@pytest.fixture(scope="session")
def agentic_hil_server(
    pytestconfig: pytest.Config, agentic_hil_workspace: Path, agentic_hil_env: Dict[str, str]
) -> Iterator[Server]:
    """One server for the whole session; tests without a configuration are skipped, a configuration
    the server refuses fails every test that asks for the bench."""
    try:
        program = find_binary(agentic_hil_env)
    except AgenticHilError as error:
        pytest.fail(str(error), pytrace=False)
    server = Server(
        program,
        agentic_hil_workspace,
        agentic_hil_env,
        pytestconfig.getoption("agentic_hil_timeout"),
        check_results=pytestconfig.getoption("agentic_hil_check_results"),
    )
    refused = None
    try:
        server.start()
        described = server.call("project_config_describe", {})
    except ServerExited as exited:
        refused = exited
    except AgenticHilError as error:
        server.close()
        pytest.fail(f"agentic-hil: {error}", pytrace=False)
    if refused is not None:
        # Raised outside the except block: the refusal is the whole story, not a chained traceback.
        server.close()
        refusal = refused.refusal or {}
        if refusal.get("error_type") == "config_file_not_found":
            pytest.skip(f"agentic-hil: {refusal.get('summary')}")
        pytest.fail(f"agentic-hil refused to start: {refused}", pytrace=False)
    error_type = described.get("error_type")
    if error_type == "config_file_not_found":
        server.close()
        pytest.skip(f"agentic-hil: {described.get('summary')}")
    if described.get("ok") is not True:
        server.close()
        pytest.fail(f"agentic-hil: {error_type}: {described.get('summary')}", pytrace=False)
    yield server
    server.close()


@pytest.fixture
def agentic_hil(agentic_hil_server: Server) -> Iterator[Bench]:
    """`agentic_hil.call(tool, **arguments)` returns the result envelope; sessions the test leaves
    open are stopped afterwards, and a stop that is not confirmed fails the test."""
    bench = Bench(agentic_hil_server)
    yield bench
    problems = bench.end_sessions()
    if problems:
        pytest.fail("agentic-hil: cleanup not confirmed: " + "; ".join(problems), pytrace=False)
