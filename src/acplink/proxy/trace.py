"""The conductor's trace: one JSON line per message of each hop (``acplink conduct --trace``).

The lines have the event shape of the Rust SDK's trace viewer: ``type`` (``request``,
``response``, ``notification``), ``ts`` (seconds since the trace started), ``protocol``
(``acp``, or ``mcp`` for MCP-over-ACP), ``from`` and ``to`` (``client``, ``proxy:N``,
``agent``, ``successor`` for a nested conductor's successor), ``id`` (the request's, shared by
its response), ``method`` and ``session`` when known, and ``params`` (requests, notifications)
or ``payload`` and ``is_error`` (responses). Messages are logged unwrapped, once per hop they
cross, as the conductor delivers them.
"""

from __future__ import annotations

import time
from typing import IO, Any

import orjson

from ..methods import MCP_MESSAGE

__all__ = ["TraceWriter"]


def _session(params: Any) -> str | None:
    if isinstance(params, dict):
        sid = params.get("sessionId")
        if isinstance(sid, str):
            return sid
    return None


class TraceWriter:
    """Writes trace events to a binary file, one line each (flushed per line: a trace read
    while the chain runs, or after it crashed, is whole up to the last message)."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file
        self._start = time.monotonic()
        self._next_id = 0

    def new_id(self) -> int:
        """An id correlating one forwarded request with its response in the trace."""
        self._next_id += 1
        return self._next_id

    def _write(self, event: dict[str, Any]) -> None:
        event["ts"] = round(time.monotonic() - self._start, 6)
        try:
            self.file.write(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))
            self.file.flush()
        except (OSError, ValueError, TypeError):
            pass  # (a full disk or a closed file must not stop the chain)

    @staticmethod
    def _protocol(method: str) -> str:
        return "mcp" if method == MCP_MESSAGE else "acp"

    def request(self, src: str, dst: str, tid: int, method: str, params: Any) -> None:
        event: dict[str, Any] = {"type": "request", "protocol": self._protocol(method), "from": src, "to": dst,
                                 "id": tid, "method": method, "params": params}
        if (sid := _session(params)) is not None:
            event["session"] = sid
        self._write(event)

    def response(self, src: str, dst: str, tid: int, payload: Any, is_error: bool) -> None:
        self._write({"type": "response", "from": src, "to": dst, "id": tid, "is_error": is_error,
                     "payload": payload})

    def notification(self, src: str, dst: str, method: str, params: Any) -> None:
        event: dict[str, Any] = {"type": "notification", "protocol": self._protocol(method), "from": src,
                                 "to": dst, "method": method, "params": params}
        if (sid := _session(params)) is not None:
            event["session"] = sid
        self._write(event)

    def close(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass
