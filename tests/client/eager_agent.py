"""A raw agent that writes a ``session/update`` right behind each session-opening response,
in the same write (what many agents do when they announce their commands at once).

``python tests/client/eager_agent.py`` serves it on stdio (one ``os.write`` per reply);
:class:`EagerSink` serves it on one end of an in-memory pair. Each update is a
``session_info_update`` whose title is ``"title of <sessionId>"``.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

import orjson

_ids = itertools.count(1)


def title(session_id: str) -> str:
    return f"title of {session_id}"


def reply(msg: dict[str, Any]) -> bytes:
    """What the agent writes for one message (response and update together), or nothing."""
    rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if rid is None:
        return b""
    if method == "initialize":
        result: Any = {"protocolVersion": 1, "agentCapabilities": {
            "loadSession": True, "sessionCapabilities": {"resume": {}, "fork": {}}}}
        return orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + b"\n"
    if method in ("session/new", "session/fork"):
        sid = f"sess_{next(_ids)}"
        result = {"sessionId": sid}
    elif method in ("session/load", "session/resume"):
        sid = params["sessionId"]
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + b"\n"
    update = {"sessionId": sid, "update": {"sessionUpdate": "session_info_update", "title": title(sid)}}
    return (orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + b"\n"
            + orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": update}) + b"\n")


class EagerSink:
    """The same agent on the far end of an in-memory transport (one write per reply)."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        *lines, self.buf = (self.buf + data).split(b"\n")
        for line in lines:
            if line.strip():
                out = reply(orjson.loads(line))
                if out:
                    self.transport.write(out)

    def eof_received(self, exc: BaseException | None) -> None:
        pass


def main() -> None:
    for line in sys.stdin.buffer:
        if line.strip():
            out = reply(orjson.loads(line))
            if out:
                os.write(1, out)


if __name__ == "__main__":
    main()
