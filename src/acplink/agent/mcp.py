"""The caller side of MCP-over-ACP: an agent calling the MCP servers its client declared with
``{"type": "acp"}`` in a session's ``mcpServers``, over the ACP connection (``mcp/message``).

In any handler: ``ctx.mcp.servers`` (the session's servers, name → ``serverId``),
``await ctx.mcp.request(server, method, params)`` (the inner result, or an :class:`McpError`
value), and the MCP conveniences ``list_tools`` / ``call_tool`` (a tool call made in a prompt
turn shows as an ACP tool call). Outer failures raise (:class:`acplink.RequestError` with one
of the binding's codes, :class:`acplink.RequestTimeout`, ...); cancelling the awaiting task
sends ``$/cancel_request``. See docs/mcp.md.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import McpError, ProtocolError, UsageError
from ..mcp import binding as b

if TYPE_CHECKING:
    from .context import Context
    from .mcp_http import HttpEndpoint

__all__ = ["McpCaller", "McpCalls", "NotificationListener", "ProgressListener"]

log = logging.getLogger("acplink.agent.mcp")

#: gets each inner notification of a request: ``{"method", "params"?, "_meta"?}`` (may be async)
NotificationListener = Callable[[dict[str, Any]], "Awaitable[None] | None"]
#: gets each progress report of a tool call: (progress, total, message) (may be async)
ProgressListener = Callable[[float, "float | None", "str | None"], "Awaitable[None] | None"]


class McpCalls:
    """One connection's inner requests in flight: where the provider's ``mcp/message``
    notifications for each go (owned by the agent's connection)."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], NotificationListener | None] = {}
        self._ids = itertools.count(1)
        self._salt = secrets.token_hex(4)
        self._dropped_logged = False

    def new_id(self) -> str:
        return f"acplink-mcp-{self._salt}-{next(self._ids)}"

    def deliver(self, params: Any) -> Awaitable[None] | None:
        """Route one ``mcp/message`` notification (its wire params or model) to the request it is
        for; one for a request that is not active (finished, or never ours) is dropped."""
        if hasattr(params, "model_dump"):  # (the typed params of a version's model)
            params = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            env = b.check_envelope(params)
        except Exception as exc:
            log.debug("dropped an mcp/message notification: %s", exc)
            return None
        key = (env.server_id, env.request_id)
        if key not in self.routes:
            if not self._dropped_logged:
                self._dropped_logged = True
                log.info("dropped an mcp/message notification for a request that is not active (server %r, "
                         "request %r); later ones are dropped silently", env.server_id, env.request_id)
            return None
        listener = self.routes[key]
        if listener is None:
            return None
        note: dict[str, Any] = {"method": env.method}
        if env.params is not None:
            note["params"] = env.params
        if env.meta is not None:
            note["_meta"] = env.meta
        try:
            out = listener(note)
        except Exception as exc:
            log.warning("an MCP notification listener failed: %s: %s", type(exc).__name__, exc)
            return None
        return _guarded(out) if asyncio.iscoroutine(out) else None


async def _guarded(aw: Awaitable[None]) -> None:
    try:
        await aw
    except Exception as exc:
        log.warning("an MCP notification listener failed: %s: %s", type(exc).__name__, exc)


class McpCaller:
    """``ctx.mcp``: calls the MCP servers the client declared over ACP (see the module)."""

    def __init__(self, ctx: Context[Any]) -> None:
        self._ctx = ctx

    @property
    def servers(self) -> dict[str, str]:
        """The session's ``acp`` MCP servers: declared name → ``serverId`` (empty outside a session)."""
        sess = self._ctx.session
        out: dict[str, str] = {}
        for entry in sess.mcp_servers if sess is not None else ():
            if b.is_acp_declaration(entry):
                name, sid = (entry["name"], entry["serverId"]) if isinstance(entry, dict) else (entry.name, entry.server_id)
                out[name] = sid
        return out

    def _server_id(self, server: str) -> str:
        if not isinstance(server, str):
            raise UsageError(f"an MCP server is named by its declared name or serverId, not {server!r}")
        return self.servers.get(server, server)

    def _calls(self) -> McpCalls:
        conn = self._ctx.connection
        calls: McpCalls | None = getattr(conn, "mcp_calls", None)
        if calls is None:
            calls = McpCalls()
            conn.mcp_calls = calls  # type: ignore[attr-defined]
        return calls

    async def request(self, server: str, method: str, params: Mapping[str, Any] | None = None, *,
                      on_notification: NotificationListener | None = None, timeout: float | None = None,
                      meta: Mapping[str, Any] | None = None) -> Any:
        """Send the inner request ``method`` with ``params`` to ``server`` (a declared name or a
        ``serverId``); returns its inner result, or an :class:`McpError` *value* for an inner
        error. The MCP metadata (protocol version, client capabilities and info) is added to
        ``params._meta``. ``on_notification`` gets the provider's notifications for this
        request while it is active (progress, ...). ``timeout``: seconds, then
        :class:`acplink.RequestTimeout` (and ``$/cancel_request``). ``meta``: the outer
        envelope's ``_meta``. Outer failures raise: :class:`acplink.RequestError` with the
        binding's code (``-33001`` unknown server, ``-33000`` limit, ``-33002`` the server
        failed, ...), :class:`acplink.ProtocolError` for an answer that is not a carrier."""
        if not isinstance(method, str):
            raise UsageError(f"an MCP method is a string, not {method!r}")
        if params is not None and not isinstance(params, Mapping):
            raise UsageError(f"MCP params are a mapping or None, not {type(params).__name__}")
        conn, app = self._ctx.connection, self._ctx.app
        server_id = self._server_id(server)
        calls = self._calls()
        request_id = calls.new_id()
        body: dict[str, Any] = {
            "serverId": server_id, "requestId": request_id, "method": method,
            "params": b.with_inner_meta(params, {}, {"name": app.name, "version": app.version}),
        }
        if meta is not None:
            body["_meta"] = dict(meta)
        key = (server_id, request_id)
        calls.routes[key] = on_notification
        try:
            raw = await conn.peer.request(conn.protocol.wire("mcp_message"), orjson.dumps(body), timeout=timeout)
        finally:
            del calls.routes[key]
        return b.parse_carrier(raw)

    async def http(self) -> dict[str, HttpEndpoint]:
        """The session's ``acp`` servers as loopback Streamable-HTTP endpoints, for an MCP client
        of the agent's own (an LLM framework's) that speaks only HTTP: declared name →
        :class:`~acplink.agent.HttpEndpoint` (``url``, ``headers``; ``stdio_server()`` for a
        client that only launches commands). One listener per connection
        (:class:`~acplink.agent.McpHttpBridge`), started on first use and closed with the
        connection. Needs the ``remote`` extra (uvicorn)."""
        from .mcp_http import McpHttpBridge

        conn: Any = self._ctx.connection
        if not hasattr(conn, "mcp_http_lock"):
            raise UsageError("ctx.mcp.http() needs an AgentApp connection")
        async with conn.mcp_http_lock:
            if conn.mcp_http is None:
                bridge = McpHttpBridge(server_name=self._ctx.app.name)
                await bridge.start()
                conn.mcp_http = bridge
        served: McpHttpBridge = conn.mcp_http
        return served.serve(self)

    async def list_tools(self, server: str, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool of ``server`` (``tools/list``, following ``nextCursor``); an inner error
        raises :class:`McpError`."""
        tools: list[dict[str, Any]] = []
        cursor: Any = None
        while True:
            res = await self.request(server, "tools/list", {"cursor": cursor} if cursor else None, timeout=timeout)
            if isinstance(res, McpError):
                raise res
            if not isinstance(res, dict) or not isinstance(res.get("tools"), list):
                raise ProtocolError(f"invalid tools/list result from MCP server {server!r}: no `tools` list")
            tools.extend(t for t in res["tools"] if isinstance(t, dict))
            cursor = res.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, server: str, name: str, arguments: Mapping[str, Any] | None = None, *,
                        on_progress: ProgressListener | None = None, timeout: float | None = None,
                        show: bool = True) -> dict[str, Any]:
        """Call the tool ``name`` of ``server`` (``tools/call``); returns its result (``content``,
        ``structuredContent``, ``isError``); an inner error raises :class:`McpError`.
        ``on_progress`` gets its progress reports. In a prompt turn (``show``) the call shows as
        an ACP tool call: ``tool_call`` (in progress, ``rawInput``: the arguments), then
        ``tool_call_update`` completed (``rawOutput``: the result, its text as content) or
        failed (an inner error, or a result with ``isError``)."""
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        listener: NotificationListener | None = None
        if on_progress is not None:
            params["_meta"] = {"progressToken": self._calls().new_id()}
            listener = _progress_listener(on_progress)
        handle = await self._show(server, name, params["arguments"]) if show else None
        try:
            res = await self.request(server, "tools/call", params, on_notification=listener, timeout=timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if handle is not None:
                await handle.fail(raw_output={"error": f"{type(exc).__name__}: {exc}"})
            raise
        if isinstance(res, McpError):
            if handle is not None:
                await handle.fail(raw_output={"error": res.to_wire()})
            raise res
        if not isinstance(res, dict):
            raise ProtocolError(f"invalid tools/call result from MCP server {server!r}: not an object")
        if handle is not None:
            content = [{"type": "content", "content": {"type": "text", "text": block["text"]}}
                       for block in res.get("content") or () if isinstance(block, dict)
                       and block.get("type") == "text" and isinstance(block.get("text"), str)]
            done = handle.fail if res.get("isError") is True else handle.complete
            await done(raw_output=res, content=content)
        return res

    async def _show(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        from .context import PromptContext

        ctx = self._ctx
        if not isinstance(ctx, PromptContext):
            return None
        return await ctx.start_tool_call(tool, kind="other", status="in_progress", raw_input=arguments)


def _progress_listener(on_progress: ProgressListener) -> NotificationListener:
    def listener(note: dict[str, Any]) -> Awaitable[None] | None:
        p = note.get("params") or {}
        if note.get("method") != "notifications/progress" or not isinstance(p.get("progress"), (int, float)):
            return None
        total, message = p.get("total"), p.get("message")
        return on_progress(p["progress"], total if isinstance(total, (int, float)) else None,
                           message if isinstance(message, str) else None)

    return listener


def check_declared(connection: Any, servers: Any) -> None:
    """Refuse (``-32602``, with data) a session's ``mcpServers`` that uses a transport this agent
    did not advertise (the protocol's ``mcp_transports``) or names two servers alike."""
    caps = connection.own_capabilities
    if caps is None or not servers:
        return
    from ..errors import InvalidParams
    from ..protocol.rules import advertises

    transports: Mapping[str, str | None] = connection.protocol.mcp_transports
    seen: set[str] = set()
    for i, entry in enumerate(servers):
        get = entry.get if isinstance(entry, dict) else (lambda k, e=entry: getattr(e, k, None))
        kind = get("type") or "stdio"
        name = get("name")
        path = transports.get(kind, "")
        if path == "" or (path is not None and not advertises(caps, path)):
            offered = sorted(t for t, path in transports.items() if path is None or advertises(caps, path))
            raise InvalidParams(f"Invalid params: mcpServers[{i}] uses the {kind!r} transport, which this agent "
                                f"did not advertise (it takes: {', '.join(offered)})",
                                {"path": f"mcpServers[{i}].type", "transport": kind, "supported": offered})
        if isinstance(name, str):
            if name in seen:
                raise InvalidParams(f"Invalid params: two MCP servers are named {name!r} in mcpServers",
                                    {"path": f"mcpServers[{i}].name", "name": name})
            seen.add(name)
