"""A bare MCP client for `agentic-hil mcp-stdio`: newline-delimited JSON-RPC over the child's pipes,
standard library only."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from .schema import first_violation

PROTOCOL_VERSION = "2025-06-18"
BINARY_ENV_VAR = "AGENTIC_HIL_BIN"
# What the server printed on stderr is kept for its refusal document; a chatty server must not
# grow this without bound.
_STDERR_KEEP = 64 * 1024
_CLOSED = object()


class AgenticHilError(Exception):
    """The server could not be started or stopped answering."""


class ServerExited(AgenticHilError):
    """The server ended; `refusal` is the document it printed on stderr, when it printed one."""

    def __init__(self, code: Optional[int], refusal: Optional[Dict[str, Any]], stderr: str):
        self.code = code
        self.refusal = refusal
        self.stderr = stderr
        if refusal:
            detail = f"{refusal.get('error_type')}: {refusal.get('summary')}"
        else:
            detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no message"
        super().__init__(f"agentic-hil mcp-stdio exited with code {code} ({detail})")


def find_binary(env: Mapping[str, str]) -> str:
    """`AGENTIC_HIL_BIN` when set, else `agentic-hil` on PATH."""
    explicit = env.get(BINARY_ENV_VAR)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise AgenticHilError(f"{BINARY_ENV_VAR}={explicit} is not an executable file")
        return explicit
    found = shutil.which("agentic-hil", path=env.get("PATH"))
    if found is None:
        raise AgenticHilError(
            f"agentic-hil is not on PATH; install it or set {BINARY_ENV_VAR} to the binary"
        )
    return found


def parse_refusal(stderr: str) -> Optional[Dict[str, Any]]:
    """The refusal document among stderr's lines (tracing may share the stream), last one first."""
    for line in reversed(stderr.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "error_type" in doc:
            return doc
    return None


class Server:
    """One `agentic-hil mcp-stdio` child, run in `workspace` with exactly `env`."""

    def __init__(
        self,
        program: str,
        workspace: Path,
        env: Mapping[str, str],
        timeout_s: float = 120.0,
        check_results: bool = False,
    ):
        self.program = program
        # Check every result against the outputSchema its tool publishes (read once, from tools/list).
        self.check_results = check_results
        self._output_schemas: Optional[Dict[str, Dict[str, Any]]] = None
        self.workspace = Path(workspace)
        self.env = dict(env)
        self.timeout_s = timeout_s
        self._process: Optional[subprocess.Popen] = None
        self._answers: "queue.Queue[Any]" = queue.Queue()
        self._stderr: List[str] = []
        self._stderr_size = 0
        self._stderr_done = threading.Event()
        self._next_id = 0
        self._lock = threading.Lock()

    def start(self) -> Dict[str, Any]:
        """Starts the child and completes the MCP handshake; the server's `initialize` result."""
        self._process = subprocess.Popen(
            [self.program, "mcp-stdio"],
            cwd=self.workspace,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        result = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "pytest-agentic-hil", "version": "0.1.0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                self._answers.put(json.loads(line))
            except ValueError:
                continue
        self._answers.put(_CLOSED)

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for raw in self._process.stderr:
            text = raw.decode("utf-8", "replace")
            if self._stderr_size < _STDERR_KEEP:
                self._stderr.append(text)
                self._stderr_size += len(text)
        self._stderr_done.set()

    def stderr(self) -> str:
        return "".join(self._stderr)

    def _exited(self) -> ServerExited:
        assert self._process is not None
        try:
            code = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr_done.wait(timeout=5)
        text = self.stderr()
        return ServerExited(code, parse_refusal(text), text)

    def _send(self, message: Dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._exited() from None

    def request(self, method: str, params: Dict[str, Any], timeout_s: Optional[float] = None) -> Dict[str, Any]:
        """Sends one request and waits for its answer; JSON-RPC errors raise."""
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            wait = self.timeout_s if timeout_s is None else timeout_s
            while True:
                try:
                    message = self._answers.get(timeout=wait)
                except queue.Empty:
                    raise AgenticHilError(f"{method}: no answer within {wait:g} s") from None
                if message is _CLOSED:
                    raise self._exited()
                if not isinstance(message, dict) or message.get("id") != request_id:
                    # Notifications (progress, logging) carry no answer for us.
                    continue
                if "error" in message:
                    error = message["error"]
                    raise AgenticHilError(f"{method}: JSON-RPC error {error.get('code')}: {error.get('message')}")
                return message.get("result", {})

    def call(self, tool: str, arguments: Dict[str, Any], timeout_s: Optional[float] = None) -> Dict[str, Any]:
        """`tools/call`: the result envelope (structuredContent)."""
        result = self.request("tools/call", {"name": tool, "arguments": arguments}, timeout_s)
        envelope = result.get("structuredContent")
        if not isinstance(envelope, dict):
            raise AgenticHilError(f"{tool}: the answer carries no result envelope")
        if self.check_results:
            self._check(tool, envelope)
        return envelope

    def _check(self, tool: str, envelope: Dict[str, Any]) -> None:
        """Raises when `envelope` does not match `tool`'s published outputSchema, naming the field."""
        if self._output_schemas is None:
            listed = self.request("tools/list", {}).get("tools", [])
            self._output_schemas = {t.get("name"): t.get("outputSchema") or {} for t in listed}
        found = first_violation(self._output_schemas.get(tool, {}), envelope)
        if found:
            raise AgenticHilError(f"{tool}: the result does not match its outputSchema at {found}")

    def close(self, timeout_s: float = 15.0) -> Optional[int]:
        """Ends stdin (the server closes its sessions and exits); kills it if it does not."""
        process = self._process
        if process is None:
            return None
        if process.stdin is not None and not process.stdin.closed:
            try:
                process.stdin.close()
            except OSError:
                pass
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()
