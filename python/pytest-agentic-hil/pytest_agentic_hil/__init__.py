"""pytest fixtures for hardware tests that walk the same agentic-hil gate as an agent does."""

from .bench import Bench
from .envelope import failed_success_check, overall_success
from .server import AgenticHilError, Server, ServerExited, find_binary

__all__ = [
    "AgenticHilError",
    "Bench",
    "Server",
    "ServerExited",
    "failed_success_check",
    "find_binary",
    "overall_success",
]
