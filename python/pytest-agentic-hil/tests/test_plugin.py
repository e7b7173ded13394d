"""The plugin's verdicts, each in an inner pytest session (pytester) with its own HOME."""

from __future__ import annotations

import subprocess

import pytest
from conftest import binary, config_path, private_env

BENCH_TESTS = """
def test_asks_for_the_bench(agentic_hil):
    assert agentic_hil.call("project_config_describe")["ok"] is True

def test_needs_no_bench():
    pass
"""


@pytest.fixture
def home(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    """The inner session's environment: HOME is pytester's directory, nothing from the outer one."""
    # Not pytester's own HOME: the server refuses a workspace that contains the home directory.
    home = tmp_path_factory.mktemp("home")
    monkeypatch.delenv("AGENTIC_HIL_CONFIG", raising=False)
    for key, value in private_env(home).items():
        monkeypatch.setenv(key, value)
    return home


def init(workspace, home) -> None:
    out = subprocess.run(
        [binary(), "init", "--json"], cwd=workspace, env=private_env(home), capture_output=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_tests_asking_for_the_bench_are_skipped_without_a_configuration(pytester, home):
    pytester.makepyfile(BENCH_TESTS)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*agentic-hil: *configuration*"])


def test_an_invalid_configuration_fails_every_test_asking_for_the_bench_with_its_reason(pytester, home):
    init(pytester.path, home)
    path = config_path(home)
    path.write_text(path.read_text() + "bogus_key: 1\n")
    pytester.makepyfile(BENCH_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*agentic-hil refused to start*config_invalid*bogus_key*"])


def test_the_workspace_option_chooses_whose_configuration_the_server_reads(pytester, home):
    configured = pytester.mkdir("configured")
    init(configured, home)
    pytester.makepyfile(BENCH_TESTS)
    result = pytester.runpytest(f"--agentic-hil-workspace={configured}")
    result.assert_outcomes(passed=2)
    # The rootdir itself has no configuration.
    pytester.runpytest().assert_outcomes(passed=1, skipped=1)


def test_a_missing_binary_fails_loudly_rather_than_skipping(pytester, home, monkeypatch):
    monkeypatch.setenv("AGENTIC_HIL_BIN", str(pytester.path / "no-such-binary"))
    pytester.makepyfile(BENCH_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*AGENTIC_HIL_BIN=*no-such-binary is not an executable file*"])


# A server stand-in for the teardown's verdicts: they depend only on what the stop answers.
FAKE_SERVER = """
import pytest

class Server:
    def __init__(self, stop_answer):
        self.stop_answer = stop_answer
        self.calls = []

    def call(self, tool, arguments):
        self.calls.append((tool, arguments))
        if tool.endswith("_start") or tool == "debug_start_session":
            return {"ok": True, "tool": tool, "side_effect_status": "committed"}
        return dict(self.stop_answer, tool=tool)

@pytest.fixture(scope="session")
def agentic_hil_server():
    return Server(STOP_ANSWER)
"""

OPENS_AND_LEAVES = """
def test_opens_and_leaves(agentic_hil, agentic_hil_server):
    agentic_hil.call("com_session_start", port_id="uart")
    agentic_hil.call("debug_start_session", image_path="fw/a.elf")

def test_stops_were_sent(agentic_hil_server):
    assert [tool for tool, _ in agentic_hil_server.calls[2:]] == ["com_session_stop", "debug_stop_session"]
    assert agentic_hil_server.calls[2][1] == {"port_id": "uart"}
"""


@pytest.mark.parametrize(
    "stop_answer",
    [
        {"ok": False, "error_type": "device_busy", "summary": "held elsewhere"},
        {"ok": True, "cleanup_required": True, "summary": "stopped, cleanup pending"},
    ],
)
def test_a_session_left_open_is_stopped_and_an_unconfirmed_stop_fails_the_test(pytester, stop_answer):
    pytester.makeconftest(FAKE_SERVER.replace("STOP_ANSWER", repr(stop_answer)))
    pytester.makepyfile(OPENS_AND_LEAVES)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*cleanup not confirmed: com_session_stop(port_id='uart')*"])


def test_a_confirmed_stop_lets_the_test_pass(pytester):
    pytester.makeconftest(FAKE_SERVER.replace("STOP_ANSWER", repr({"ok": True, "summary": "stopped"})))
    pytester.makepyfile(OPENS_AND_LEAVES)
    pytester.runpytest().assert_outcomes(passed=2)


def test_a_session_the_test_stopped_itself_is_not_stopped_again(pytester):
    pytester.makeconftest(FAKE_SERVER.replace("STOP_ANSWER", repr({"ok": True, "summary": "stopped"})))
    pytester.makepyfile(
        """
def test_stops_its_own(agentic_hil, agentic_hil_server):
    agentic_hil.call("com_session_start", port_id="uart")
    agentic_hil.call("com_session_stop", port_id="uart")
    assert agentic_hil.open_sessions() == []

def test_one_stop_only(agentic_hil_server):
    assert [tool for tool, _ in agentic_hil_server.calls] == ["com_session_start", "com_session_stop"]
"""
    )
    pytester.runpytest().assert_outcomes(passed=2)
