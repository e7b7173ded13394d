"""What a test holds: calls through the server, with the sessions it opens remembered so the
fixture can end them."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .envelope import failed_success_check, overall_success
from .server import Server

# A start tool, the stop that ends it, and the arguments that name the session.
_SESSIONS = {
    "com_session_start": ("com_session_stop", ("port_id",)),
    "can_session_start": ("can_session_stop", ("bus_id", "participant")),
    "debug_start_session": ("debug_stop_session", ()),
}
_STOPS = {stop: start for start, (stop, _) in _SESSIONS.items()}
# A start that failed with one of these never reached the device, so there is nothing to end.
_NOTHING_STARTED = ("not_started",)


def _session_key(start: str, arguments: Dict[str, Any]) -> Tuple[str, Tuple[Tuple[str, Any], ...]]:
    _, names = _SESSIONS[start]
    return start, tuple((name, arguments[name]) for name in names if name in arguments)


class Bench:
    """`call(tool, **arguments)` returns the envelope; sessions opened here are ended by `end_sessions`."""

    overall_success = staticmethod(overall_success)
    failed_success_check = staticmethod(failed_success_check)

    def __init__(self, server: Server):
        self._server = server
        # Session key -> whether its start was confirmed (ok) rather than only possible.
        self._open: Dict[Tuple[str, Tuple[Tuple[str, Any], ...]], bool] = {}

    def call(self, tool: str, **arguments: Any) -> Dict[str, Any]:
        envelope = self._server.call(tool, arguments)
        if tool in _SESSIONS:
            key = _session_key(tool, arguments)
            if envelope.get("ok") is True:
                self._open[key] = True
            elif envelope.get("side_effect_status") not in _NOTHING_STARTED and key not in self._open:
                # The start may have opened something before it failed: try to end it too.
                self._open[key] = False
        elif tool in _STOPS and envelope.get("ok") is True and envelope.get("cleanup_required") is not True:
            self._open.pop(_session_key(_STOPS[tool], arguments), None)
        return envelope

    def open_sessions(self) -> List[str]:
        """The sessions this test opened and has not ended, as `tool(arguments)` strings."""
        return [_describe(start, names) for (start, names) in self._open]

    def end_sessions(self) -> List[str]:
        """Stops every session still open; one line per stop that was not confirmed."""
        problems = []
        for (start, names), confirmed in list(self._open.items()):
            stop, _ = _SESSIONS[start]
            arguments = dict(names)
            try:
                envelope = self._server.call(stop, arguments)
            except Exception as error:  # the server died or hung: the session's fate is unknown
                problems.append(f"{_describe(stop, names)}: {error}")
                continue
            del self._open[(start, names)]
            if not confirmed and envelope.get("error_type") == "session_not_active":
                continue
            if envelope.get("ok") is not True or envelope.get("cleanup_required") is True:
                reason = envelope.get("error_type") or "cleanup_required"
                problems.append(f"{_describe(stop, names)}: {reason}: {envelope.get('summary')}")
        return problems


def _describe(tool: str, names: Tuple[Tuple[str, Any], ...]) -> str:
    return f"{tool}({', '.join(f'{k}={v!r}' for k, v in names)})"

