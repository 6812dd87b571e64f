"""The agent side's loopback bridge: MCP-over-ACP servers as Streamable-HTTP endpoints, for an
agent whose MCP client only speaks HTTP (most LLM frameworks' clients).

One listener on 127.0.0.1 per bridge (per ACP connection), one endpoint per ``acp`` server:
``POST http://127.0.0.1:PORT/mcp/N`` with ``Authorization: Bearer TOKEN`` (a token per server,
never in the URL). Each POSTed request becomes one ``mcp/message`` (through the ``forward``
callable the caller supplies); the provider's notifications for it (progress) come back as
server-sent events on that POST's response; a client that drops the response cancels the
request. What is refused: a bad or missing token (401), a foreign ``Origin`` (403, against DNS
rebinding), GET and DELETE (405: there is no server-initiated stream), an ``Accept`` without
both ``application/json`` and ``text/event-stream`` (406), a body over the limit (413), more
than ``max_active`` requests at once (429), a JSON array (400, ``-32600``: no batches).

Handshake-era MCP clients open with ``initialize``: with ``legacy_initialize`` (the default) it
is answered here, and the client's capabilities and info are then added to each of its
requests' ``_meta`` (the 2026-07-28 revision's way), so the provider sees what it would from a
current client.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import secrets
import sys
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._extras import require
from .._listen import listening_socket
from .._tasks import TaskSet
from .._version import __version__
from ..errors import AcpError, McpError, RequestError, TransportError, UsageError
from ..mcp import MCP_CLIENT_CAPABILITIES, MCP_CLIENT_INFO, MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSION_KEY
from ..mcp import binding as b
from .mcp import McpCaller

__all__ = ["Forward", "HttpEndpoint", "McpHttpBridge"]

#: sends one inner notification back to the MCP client (method, params)
Notify = Callable[[str, "dict[str, Any] | None"], Awaitable[None]]
#: passes one inner request on (as ``mcp/message``): (method, params, notify) → the inner
#: result, or raises :class:`~acplink.McpError` (an inner error) or another AcpError (the outer one)
Forward = Callable[[str, "dict[str, Any] | None", Notify], Awaitable[Any]]

_SSE = b"text/event-stream"


@dataclass
class HttpEndpoint:
    """Where an HTTP-only MCP client reaches one ``acp`` server: ``url`` with ``headers``."""

    name: str
    url: str
    token: str = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stdio_server(self) -> dict[str, Any]:
        """The same server for an MCP client that only launches stdio servers: a relay command
        (``python -m acplink._mcp_relay URL``, the token in its environment, never on its command
        line), as an ACP stdio declaration: ``{"name", "command", "args", "env": [{name, value}]}``.
        The relay exits when its input ends or the bridge goes away."""
        from .._mcp_relay import TOKEN_VARIABLE

        return {"name": self.name, "command": sys.executable, "args": ["-m", "acplink._mcp_relay", self.url],
                "env": [{"name": TOKEN_VARIABLE, "value": self.token}]}


@dataclass
class _Endpoint:
    endpoint: HttpEndpoint
    forward: Forward
    active: dict[Any, asyncio.Future[Any]] = field(default_factory=dict)
    #: what a handshake-era client said in ``initialize`` (its capabilities, its info)
    legacy: dict[str, Any] | None = None


class McpHttpBridge:
    """A loopback Streamable-HTTP listener whose endpoints forward to MCP-over-ACP servers.

    ``add(name, forward)`` → an :class:`HttpEndpoint` (URL and bearer token) to hand to the
    agent's MCP client; :meth:`aclose` (or leaving ``async with``) stops the listener and
    cancels what is in flight. ``max_body``: the largest request body, in bytes.
    ``max_active``: requests in flight per endpoint. ``port``: the port to listen on (0, the
    default: any free one; one in use is a :class:`~acplink.TransportError` saying so). Needs
    the ``remote`` extra (uvicorn).
    """

    def __init__(self, *, max_body: int = 4 * 1024 * 1024, max_active: int = 64, legacy_initialize: bool = True,
                 server_name: str = "acplink", port: int = 0) -> None:
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise UsageError(f"the MCP HTTP bridge's port must be 0 (any free one) to 65535, not {port!r}")
        self.bind_port = port
        self.max_body = max_body
        self.max_active = max_active
        self.legacy_initialize = legacy_initialize
        self.server_name = server_name
        self.port: int | None = None
        self._endpoints: dict[str, _Endpoint] = {}
        self._keys: dict[Hashable, str] = {}
        self._next = 0
        self._server: Any = None
        self._serving: asyncio.Future[None] | None = None
        self._tasks = TaskSet("acplink-mcp-http")

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> McpHttpBridge:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port: :attr:`port`)."""
        require("the MCP-over-ACP HTTP bridge", "remote", "uvicorn")
        import uvicorn

        if self._serving is not None:
            raise UsageError("the MCP HTTP bridge is already started")
        try:
            sock = listening_socket("127.0.0.1", self.bind_port)  # (TCP_NODELAY: see _listen.py)
        except OSError as exc:
            raise TransportError(f"the MCP HTTP bridge cannot listen on 127.0.0.1:{self.bind_port}: "
                                 f"{exc.strerror or exc}" + (" (another process uses that port; give another, "
                                                             "or 0 for any free one)"
                                                             if exc.errno == errno.EADDRINUSE else "")) from None
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(self._app, interface="asgi3", log_config=None, access_log=False, log_level="warning",
                                lifespan="off",
                                timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]  # (the agent's)
        self._server = server

        async def serve() -> None:
            try:
                await server.serve(sockets=[sock])
            finally:
                # (cancelled before uvicorn's own shutdown: stop serving the socket before closing
                # it, else the loop keeps a selector entry for its fd, which the next listener
                # given that fd number inherits, and never hears a connection)
                for listener in server.servers:
                    listener.close()
                for connection in list(server.server_state.connections):
                    connection.shutdown()
                sock.close()

        self._serving = self._tasks.spawn(serve(), name="acplink-mcp-http-serve")
        while not server.started and not self._serving.done():
            await asyncio.sleep(0.01)
        if self._serving.done():
            self._serving.result()  # (raises what stopped it)
            raise AcpError("the MCP HTTP bridge stopped at once")

    async def aclose(self) -> None:
        """Cancel what is in flight and stop listening."""
        for ep in self._endpoints.values():
            for task in ep.active.values():
                task.cancel()
        if self._server is not None and self._serving is not None:
            # uvicorn's own shutdown: close the listener, then the idle connections (it notices
            # within a tick; what still runs after its grace period is cancelled below)
            self._server.should_exit = True
            await asyncio.wait({self._serving}, timeout=5)
        await self._tasks.aclose()
        self._server = self._serving = None

    # -- endpoints -------------------------------------------------------------------------------

    def add(self, name: str, forward: Forward, *, key: Hashable | None = None) -> HttpEndpoint:
        """An endpoint for the server ``name`` (requests go to ``forward``). ``key`` (default:
        ``name``) identifies it for :meth:`remove`; a key already in use is an error."""
        if self.port is None:
            raise UsageError("start the MCP HTTP bridge before adding endpoints")
        key = name if key is None else key
        if key in self._keys:
            raise UsageError(f"the MCP HTTP bridge already has an endpoint for {key!r}")
        self._next += 1
        path = f"/mcp/{self._next}"
        endpoint = HttpEndpoint(name, f"http://127.0.0.1:{self.port}{path}", secrets.token_urlsafe(24))
        self._endpoints[path] = _Endpoint(endpoint, forward)
        self._keys[key] = path
        return endpoint

    def serve(self, mcp: McpCaller) -> dict[str, HttpEndpoint]:
        """An endpoint for each ``acp`` server of a session (``ctx.mcp``), name → endpoint: hand
        their ``url`` and ``headers`` to the agent's MCP client. A server already served (its
        ``serverId``: each session's servers are its own) keeps its endpoint; each request goes
        to it as ``mcp/message``."""
        out: dict[str, HttpEndpoint] = {}
        for name, server_id in mcp.servers.items():
            path = self._keys.get(("acp", server_id))
            if path is not None:
                out[name] = self._endpoints[path].endpoint
                continue

            async def forward(method: str, params: dict[str, Any] | None, notify: Notify,
                              server_id: str = server_id) -> Any:
                async def note(message: dict[str, Any]) -> None:
                    params = message.get("params")
                    await notify(str(message.get("method")), params if isinstance(params, dict) else None)

                result = await mcp.request(server_id, method, params, on_notification=note)
                if isinstance(result, McpError):
                    raise result
                return result

            out[name] = self.add(name, forward, key=("acp", server_id))
        return out

    def remove(self, key: Hashable) -> None:
        """Retire an endpoint (by its ``key``: its name unless given): later requests get 404,
        those in flight are cancelled."""
        path = self._keys.pop(key, None)
        ep = self._endpoints.pop(path, None) if path is not None else None
        for task in (ep.active.values() if ep is not None else ()):
            task.cancel()

    # -- HTTP ------------------------------------------------------------------------------------

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or ()}
        ep = self._endpoints.get(scope.get("path", ""))
        if ep is None:
            return await _plain(send, 404, "no such MCP endpoint")
        if not secrets.compare_digest(headers.get(b"authorization", b""), f"Bearer {ep.endpoint.token}".encode()):
            return await _plain(send, 401, "a bearer token is required", [(b"www-authenticate", b"Bearer")])
        origin = headers.get(b"origin")
        if origin is not None and origin not in (f"http://127.0.0.1:{self.port}".encode(),
                                                 f"http://localhost:{self.port}".encode()):
            return await _plain(send, 403, "foreign Origin")
        if scope.get("method") != "POST":
            return await _plain(send, 405, "POST only (no server-initiated stream)", [(b"allow", b"POST")])
        accept = headers.get(b"accept", b"")
        if b"application/json" not in accept or _SSE not in accept:
            return await _plain(send, 406, "Accept must include application/json and text/event-stream")
        body = await _body(receive, self.max_body, headers.get(b"content-length"))
        if body is None:
            return await _plain(send, 413, f"the body is over {self.max_body} bytes")
        try:
            msg = orjson.loads(body)
        except orjson.JSONDecodeError:
            return await _json(send, 400, _error(None, -32700, "Parse error: the body is not JSON"))
        if not isinstance(msg, dict):
            return await _json(send, 400, _error(None, -32600, "Invalid Request: one JSON-RPC message per POST "
                                                              "(no batches)"))
        method, rid = msg.get("method"), msg.get("id")
        if not isinstance(method, str):  # a response (to a request the provider never sends here)
            return await _accepted(send)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else None
        if "id" not in msg:
            self._notification(ep, method, params)
            return await _accepted(send)
        if method == "initialize" and self.legacy_initialize:
            return await _json(send, 200, {"jsonrpc": "2.0", "id": rid, "result": self._initialize(ep, params)})
        if len(ep.active) >= self.max_active:
            return await _json(send, 429, _error(rid, b.LIMIT_EXCEEDED, f"more than {self.max_active} requests at once"))
        await self._request(ep, rid, method, self._with_meta(ep, params), receive, send)

    def _initialize(self, ep: _Endpoint, params: dict[str, Any] | None) -> dict[str, Any]:
        params = params or {}
        asked = params.get("protocolVersion")
        ep.legacy = {MCP_CLIENT_CAPABILITIES: params.get("capabilities") or {}}
        if isinstance(params.get("clientInfo"), dict):
            ep.legacy[MCP_CLIENT_INFO] = params["clientInfo"]
        return {"protocolVersion": b.legacy_version(asked),
                "capabilities": {"tools": {}}, "serverInfo": {"name": self.server_name, "version": __version__}}

    def _with_meta(self, ep: _Endpoint, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """A handshake-era client's request, with what its ``initialize`` said in ``_meta``."""
        meta = (params or {}).get("_meta")
        if isinstance(meta, dict) and MCP_PROTOCOL_VERSION_KEY in meta:
            return params
        added = {MCP_PROTOCOL_VERSION_KEY: MCP_PROTOCOL_VERSION, MCP_CLIENT_CAPABILITIES: {}, **(ep.legacy or {})}
        return {**(params or {}), "_meta": {**(meta if isinstance(meta, dict) else {}), **added}}

    def _notification(self, ep: _Endpoint, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/cancelled":
            task = ep.active.get(_key((params or {}).get("requestId")))
            if task is not None:
                task.cancel()
        # (notifications/initialized and the rest: nothing to do)

    async def _request(self, ep: _Endpoint, rid: Any, method: str, params: dict[str, Any] | None,
                       receive: Any, send: Any) -> None:
        streaming = False
        lock = asyncio.Lock()

        async def notify(m: str, p: dict[str, Any] | None) -> None:
            nonlocal streaming
            note: dict[str, Any] = {"jsonrpc": "2.0", "method": m}
            if p is not None:
                note["params"] = p
            async with lock:
                if not streaming:
                    streaming = True
                    await _start(send, 200, [(b"content-type", _SSE), (b"cache-control", b"no-store")])
                await _event(send, note)

        key = _key(rid)
        forwarding = self._tasks.spawn(ep.forward(method, params, notify), name=f"acplink-mcp-http-{method}")
        ep.active[key] = forwarding
        watching = self._tasks.spawn(_disconnected(receive), name="acplink-mcp-http-watch")
        try:
            await asyncio.wait({forwarding, watching}, return_when=asyncio.FIRST_COMPLETED)
            if not forwarding.done():  # the client dropped the response: the request is cancelled
                forwarding.cancel()
                with contextlib.suppress(BaseException):
                    await forwarding
            answer = _answer(rid, forwarding)
        finally:
            watching.cancel()
            if ep.active.get(key) is forwarding:
                del ep.active[key]
        async with lock:
            with contextlib.suppress(OSError):  # (a client that left: uvicorn drops what is sent)
                if streaming:
                    await _event(send, answer, last=True)
                else:
                    await _json(send, 200, answer)


def _answer(rid: Any, done: asyncio.Future[Any]) -> dict[str, Any]:
    if done.cancelled():
        return _error(rid, b.REQUEST_CANCELLED, "cancelled")
    exc = done.exception()
    if exc is None:
        return {"jsonrpc": "2.0", "id": rid, "result": done.result()}
    if isinstance(exc, McpError):
        return {"jsonrpc": "2.0", "id": rid, "error": exc.to_wire()}
    if isinstance(exc, RequestError) and exc.code in b.BINDING_CODES:  # (as the TypeScript SDK's bridge)
        return _error(rid, exc.code, exc.message)
    if isinstance(exc, AcpError):
        return _error(rid, -32603, str(exc))
    return _error(rid, -32603, "internal error")


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _key(rid: Any) -> Any:
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else repr(rid)


async def _disconnected(receive: Any) -> None:
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return


async def _body(receive: Any, limit: int, length: bytes | None) -> bytes | None:
    """The request body, or None past ``limit`` bytes (a declared length is checked first)."""
    if length is not None and length.isdigit() and int(length) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _start(send: Any, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})


async def _plain(send: Any, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await _start(send, status, [(b"content-type", b"text/plain; charset=utf-8"), *(headers or [])])
    await send({"type": "http.response.body", "body": text.encode() + b"\n"})


async def _json(send: Any, status: int, data: dict[str, Any]) -> None:
    await _start(send, status, [(b"content-type", b"application/json")])
    await send({"type": "http.response.body", "body": orjson.dumps(data)})


async def _accepted(send: Any) -> None:
    await _start(send, 202, [])
    await send({"type": "http.response.body", "body": b""})


async def _event(send: Any, data: dict[str, Any], last: bool = False) -> None:
    await send({"type": "http.response.body", "body": b"event: message\ndata: " + orjson.dumps(data) + b"\n\n",
                "more_body": not last})
