"""The stdio relay of MCP-over-ACP, for an agent whose MCP client only launches stdio servers.

``python -m acplink._mcp_relay URL`` (the bearer token in ``$ACPLINK_MCP_TOKEN``, never on the
command line) reads JSON-RPC messages from stdin, one per line, POSTs each to an endpoint of the
agent's :class:`~acplink.agent.McpHttpBridge` (which passes it on as ``mcp/message``), and writes
what comes back (the answer, and the notifications sent for it before) to stdout, one per line.
Requests run concurrently; their answers are written as they come.

It exits when its input ends (once the requests in flight are answered), and when the bridge
goes away (the ACP connection closed): it checks every :data:`_POLL` seconds, so no relay
outlives its connection for long. Standard library only: it starts fast and needs no extra.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import sys
import threading
import urllib.parse
from typing import IO, Any

__all__ = ["TOKEN_VARIABLE", "main"]

#: the environment variable that carries the endpoint's bearer token
TOKEN_VARIABLE = "ACPLINK_MCP_TOKEN"
#: seconds between two checks that the bridge is still there
_POLL = 1.0
#: the longest line (one JSON-RPC message) read from stdin
_MAX_LINE = 64 * 1024 * 1024


class _Relay:
    def __init__(self, url: str, token: str, out: IO[bytes]) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or parts.port is None:
            raise ValueError(f"not an http://HOST:PORT/PATH URL: {url!r}")
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path or "/"
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream"}
        self.out = out
        self.lock = threading.Lock()
        self.gone = threading.Event()

    def write(self, message: bytes) -> None:
        with self.lock:
            try:
                self.out.write(message.rstrip(b"\r\n") + b"\n")
                self.out.flush()
            except (OSError, ValueError):  # (our reader left)
                self.gone.set()

    def post(self, line: bytes) -> None:
        """One message: POST it, relay the answer (JSON, or the events of a stream)."""
        rid = _request_id(line)
        try:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=None)
            try:
                conn.request("POST", self.path, body=line, headers=self.headers)
                resp = conn.getresponse()
                kind = resp.getheader("Content-Type", "")
                if kind.startswith("text/event-stream"):
                    for data in _events(resp):
                        self.write(data)
                elif kind.startswith("application/json"):
                    self.write(resp.read())
                else:
                    body = resp.read()
                    if resp.status >= 400 and rid is not None:
                        self.write(_error(rid, -32603, f"the MCP bridge refused the request: HTTP {resp.status} "
                                                      f"{body.decode('utf-8', 'replace').strip()}"))
            finally:
                conn.close()
        except OSError as exc:  # the bridge is gone: the connection closed
            if rid is not None:
                self.write(_error(rid, -32000, f"the ACP connection behind this MCP server is gone ({exc})"))
            self.gone.set()

    def alive(self) -> bool:
        try:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
            try:
                conn.request("GET", self.path, headers={"Authorization": self.headers["Authorization"]})
                return conn.getresponse().status in (405, 401, 404)  # (anything that answers: the bridge)
            finally:
                conn.close()
        except OSError:
            return False

    def watch(self) -> None:
        while not self.gone.wait(_POLL):
            if not self.alive():
                self.gone.set()


def _request_id(line: bytes) -> Any:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg.get("id") if isinstance(msg, dict) and "method" in msg else None


def _error(rid: Any, code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode()


def _events(resp: http.client.HTTPResponse) -> list[bytes]:
    """The ``data`` of each server-sent event of ``resp`` (read to its end)."""
    out: list[bytes] = []
    data: list[bytes] = []
    while True:
        raw = resp.readline(_MAX_LINE)
        if not raw:
            break
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                out.append(b"\n".join(data))
                data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].lstrip(b" "))
    if data:
        out.append(b"\n".join(data))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    token = os.environ.get(TOKEN_VARIABLE, "")
    if len(args) != 1 or not token:
        print(f"usage: {TOKEN_VARIABLE}=TOKEN python -m acplink._mcp_relay URL (an endpoint of the agent's "
              "McpHttpBridge; its HttpEndpoint.stdio_server() builds this command)", file=sys.stderr)
        return 2
    try:
        relay = _Relay(args[0], token, sys.stdout.buffer)
    except ValueError as exc:
        print(f"acplink MCP relay: {exc}", file=sys.stderr)
        return 2
    threading.Thread(target=relay.watch, name="acplink-mcp-relay-watch", daemon=True).start()
    workers: list[threading.Thread] = []

    def read() -> None:
        for line in sys.stdin.buffer:
            if relay.gone.is_set():
                break
            if line.strip():
                workers[:] = [w for w in workers if w.is_alive()]
                worker = threading.Thread(target=relay.post, args=(line,), daemon=True)
                worker.start()
                workers.append(worker)
        for worker in workers:  # (input ended: the requests in flight are answered first)
            worker.join()
        relay.gone.set()

    threading.Thread(target=read, name="acplink-mcp-relay-read", daemon=True).start()
    relay.gone.wait()
    return 0


if __name__ == "__main__":
    code = main()
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    # (not sys.exit: the reader thread may be blocked on stdin, which the interpreter's shutdown
    # would wait to lock, and abort)
    os._exit(code)
