"""The provider side of MCP-over-ACP: MCP servers the client serves to the agent over the ACP
connection itself (``mcp/message``), reached as ``client.mcp``.

    async def tools(call: McpCall) -> Any:
        if call.method == "tools/list":
            return {"tools": [...]}
        ...

    server = client.mcp.register("tools", tools)
    session = await client.new_session(".")      # declares {"type": "acp", "name": "tools", ...}

A registration is declared in every session opened after it (``session/new``, ``/load``,
``/resume``, ``/fork``) when the agent advertised ``acp`` MCP servers; ``per_session=True``
gives each session a server of its own (a fresh ``serverId``; the handler's
``call.session_id`` names the session). Each inner request runs its handler in the task of the
``mcp/message`` request (owned by the connection); ``$/cancel_request`` cancels it (``-32800``).
A session's own servers live as long as the session: closing or deleting it, or closing the
connection, withdraws them (later requests ``-33001``, running ones cancelled), so a client that
opens and closes sessions all day keeps only the servers of its open ones. See docs/mcp.md.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..connection.base import RawJSON
from ..errors import InvalidParams, McpError, MethodNotFound, RequestError, UsageError
from ..mcp import McpCall, McpHandler
from ..mcp import binding as b

if TYPE_CHECKING:
    from ..connection.client_side import ClientSideConnection

__all__ = ["DEFAULT_MAX_ACTIVE", "McpProvider", "McpRegistration"]

log = logging.getLogger("acplink.client.mcp")

#: active inner requests per server by default (beyond: outer -33000)
DEFAULT_MAX_ACTIVE = 64


class _Server:
    """One ``serverId`` on the connection: a registration's server (for one session, or for
    all), with its active requests (request id → the task answering it)."""

    __slots__ = ("active", "pending", "registration", "server_id", "session_id")

    def __init__(self, registration: McpRegistration, server_id: str, session_id: str | None) -> None:
        self.registration = registration
        self.server_id = server_id
        self.session_id = session_id
        #: made for a session-opening call that has not succeeded yet (it goes if the call fails)
        self.pending = registration.per_session
        self.active: dict[str, asyncio.Task[Any]] = {}


class McpRegistration:
    """An MCP server registered with :meth:`McpProvider.register`.

    ``name``: its declared name. ``server_id``: its ``serverId`` (a connection-wide server; a
    per-session one has one per session: :meth:`server_id_of`). :meth:`unregister` withdraws
    it: later requests fail ``-33001``, running ones are cancelled."""

    def __init__(self, provider: McpProvider, name: str, handler: McpHandler, *, per_session: bool,
                 max_active: int, meta: dict[str, Any] | None = None) -> None:
        self._provider = provider
        self.name = name
        #: the ``_meta`` of its declaration (None: none)
        self.meta = meta
        self.handler = handler
        self.per_session = per_session
        self.max_active = max_active
        self.registered = True
        self._servers: dict[str | None, _Server] = {}  # session id (None: connection-wide) → server

    @property
    def server_id(self) -> str:
        """The ``serverId`` of a connection-wide server (UsageError for a per-session one)."""
        if self.per_session:
            raise UsageError(f"the MCP server {self.name!r} has one serverId per session: use server_id_of(session)")
        return self._servers[None].server_id

    def server_id_of(self, session_id: str) -> str | None:
        """The ``serverId`` this server has in ``session_id`` (None: not declared there)."""
        server = self._servers.get(None if not self.per_session else session_id)
        return server.server_id if server is not None else None

    @property
    def declaration(self) -> dict[str, Any]:
        """The ``mcpServers`` entry of a connection-wide server."""
        return b.declaration(self.name, self.server_id, self.meta)

    @property
    def active(self) -> int:
        """How many of its inner requests are running now."""
        return sum(len(s.active) for s in self._servers.values())

    async def unregister(self) -> None:
        """Withdraw the server: later requests fail ``-33001``; running ones are cancelled (and
        answered ``-32800``) and have ended when this returns."""
        await self._provider._unregister(self)

    def __repr__(self) -> str:
        return f"McpRegistration({self.name!r}, per_session={self.per_session})"


class McpProvider:
    """The MCP servers a client serves over its ACP connection (``client.mcp``; see the module)."""

    def __init__(self, connection: ClientSideConnection) -> None:
        self._connection = connection
        self._servers: dict[str, _Server] = {}
        self._registrations: list[McpRegistration] = []
        self._ids = itertools.count(1)
        self._salt = secrets.token_hex(3)
        self._closed = False

    def rebind(self, connection: ClientSideConnection) -> None:
        """Serve over ``connection`` from now on (the client's agent was restarted: see
        :class:`acplink.client.AgentRecovery`); the registrations stay."""
        self._connection = connection

    @property
    def registrations(self) -> tuple[McpRegistration, ...]:
        return tuple(self._registrations)

    @property
    def server_ids(self) -> tuple[str, ...]:
        """The ``serverId`` of every server answering now: the connection-wide ones, and the
        per-session ones of the sessions open (and of those being opened)."""
        return tuple(self._servers)

    def register(self, name: str, handler: McpHandler, *, per_session: bool = False,
                 max_active: int = DEFAULT_MAX_ACTIVE, meta: dict[str, Any] | None = None) -> McpRegistration:
        """Serve ``handler`` as the MCP server ``name`` (``async def handler(call: McpCall)``:
        returns the inner result, raises :class:`acplink.McpError` for an inner error). It is
        declared in the sessions opened from now on, when the agent takes ``acp`` servers.
        ``per_session``: a server (and ``serverId``) per session, whose calls know their
        session. ``max_active``: active requests per server (beyond: ``-33000``)."""
        if not isinstance(name, str) or not name:
            raise UsageError(f"an MCP server's name must be a non-empty string, not {name!r}")
        taken = next((r for r in self._registrations if r.name == name), None)
        if taken is not None:
            what = (" (the client's built-in workspace server: connect(..., workspace=False) turns it off)"
                    if taken.meta is not None and b.WORKSPACE_META_KEY in taken.meta else "")
            raise UsageError(f"an MCP server named {name!r} is already registered{what} (names are unique in a "
                             "session)")
        if meta is not None and not isinstance(meta, dict):
            raise UsageError(f"an MCP server's declaration _meta is a dict or None, not {type(meta).__name__}")
        if not asyncio.iscoroutinefunction(handler) and not asyncio.iscoroutinefunction(
                getattr(handler, "__call__", None)):  # noqa: B004  (an object with an async __call__)
            raise UsageError(f"the handler of MCP server {name!r} must be an async function")
        if not isinstance(max_active, int) or isinstance(max_active, bool) or max_active < 1:
            raise UsageError(f"max_active must be a positive integer, not {max_active!r}")
        if self._closed:
            raise UsageError(f"cannot register the MCP server {name!r}: the connection is closed")
        reg = McpRegistration(self, name, handler, per_session=per_session, max_active=max_active, meta=meta)
        if not per_session:
            self._add(reg, None)
        self._registrations.append(reg)
        return reg

    def _add(self, reg: McpRegistration, session_id: str | None) -> _Server:
        # never reused on this connection, with nothing kept per id ever made: the number after
        # the last "-" is new each time, and what precedes it (name, salt) tells the names apart
        server_id = f"{reg.name}-{self._salt}-{next(self._ids)}"
        server = self._servers[server_id] = _Server(reg, server_id, session_id)
        reg._servers[session_id if reg.per_session else None] = server
        return server

    # -- what the client declares ---------------------------------------------------------------

    def declarations(self, session_id: str | None) -> list[dict[str, Any]]:
        """The ``mcpServers`` entries of the servers of ``session_id`` (None: a session about to
        be opened, whose per-session servers are made now and bound by :meth:`opened`)."""
        out = []
        for reg in self._registrations:
            server = reg._servers.get(session_id if reg.per_session else None)
            if server is None or (reg.per_session and session_id is None):
                server = self._add(reg, session_id)
                if session_id is None:
                    reg._servers.pop(None, None)  # (unbound: found by its id until opened)
            out.append(b.declaration(reg.name, server.server_id, reg.meta))
        return out

    def opened(self, session_id: str, declared: list[Any]) -> None:
        """A session was opened with ``declared`` (its ``mcpServers``): the per-session servers
        made for it are its own from now on."""
        for entry in declared:
            server_id = entry.get("serverId") if isinstance(entry, dict) else getattr(entry, "server_id", None)
            server = self._servers.get(server_id) if isinstance(server_id, str) else None
            if server is not None and server.pending:
                server.pending = False
                server.session_id = session_id
                server.registration._servers[session_id] = server

    def discard(self, declared: list[dict[str, Any]]) -> None:
        """The session these were made for was not opened: the per-session ones made for it go
        (those it had before, declared again by a failed load or resume, stay)."""
        for entry in declared:
            server = self._servers.get(entry["serverId"])
            if server is not None and server.pending:
                self._drop(server)

    def session_ended(self, session_id: str) -> None:
        """The session is gone here (closed, deleted): its own servers are withdrawn. Later
        requests to them fail ``-33001``; running ones are cancelled (answered ``-32800``)."""
        for reg in self._registrations:
            server = reg._servers.get(session_id) if reg.per_session else None
            if server is not None:
                _cancel(self._drop(server), "the MCP server's session was closed")

    def close(self) -> None:
        """The connection is closing: every server is withdrawn and its running requests are
        cancelled (the connection, which owns their tasks, waits for them); nothing can be
        registered afterwards."""
        self._closed = True
        tasks: list[asyncio.Task[Any]] = []
        for server in list(self._servers.values()):
            tasks.extend(self._drop(server))
        for reg in self._registrations:
            reg.registered = False
        self._registrations.clear()
        _cancel(tasks, "the ACP connection was closed")

    def _drop(self, server: _Server) -> list[asyncio.Task[Any]]:
        """Forget ``server`` (its id answers -33001 from now on); the tasks of its running
        requests, to cancel."""
        if self._servers.get(server.server_id) is server:
            del self._servers[server.server_id]
        owned = server.registration._servers
        if server.registration.per_session and server.session_id is not None \
                and owned.get(server.session_id) is server:
            del owned[server.session_id]  # (a connection-wide one keeps its id: reg.server_id)
        tasks = list(server.active.values())
        server.active.clear()
        return tasks

    async def _unregister(self, reg: McpRegistration) -> None:
        if not reg.registered:
            return
        reg.registered = False
        self._registrations.remove(reg)
        tasks: list[asyncio.Task[Any]] = []
        for server in list(self._servers.values()):
            if server.registration is reg:
                tasks.extend(self._drop(server))
        await _cancelled(_cancel(tasks, "the MCP server was unregistered"))

    # -- answering ``mcp/message`` ----------------------------------------------------------------

    async def handle(self, params: Any) -> RawJSON:
        """Answer one ``mcp/message`` request (its raw params); outer failures raise."""
        env = b.check_envelope(params)
        server = self._servers.get(env.server_id)
        if server is None:
            raise RequestError("MCP server unavailable: no server is registered under this serverId",
                               {"serverId": env.server_id}, code=b.SERVER_UNAVAILABLE)
        rid, active = env.request_id, server.active
        if rid in active:
            raise InvalidParams("Invalid params: duplicate active MCP request id",
                                {"serverId": env.server_id, "requestId": rid})
        reg = server.registration
        if len(active) >= reg.max_active:
            raise RequestError(f"MCP-over-ACP active request limit exceeded ({reg.max_active} per server)",
                               {"serverId": env.server_id, "limit": reg.max_active}, code=b.LIMIT_EXCEEDED)
        wrong = b.check_inner_meta(env.params)
        if wrong is not None:
            return RawJSON(orjson.dumps(b.error_carrier(wrong)))
        task = asyncio.current_task()
        assert task is not None
        active[rid] = task
        call = McpCall(server.server_id, rid, env.method, env.params, b.mcp_meta_of(env.params), env.meta,
                       server.session_id, reg.name, self._notifier(server, rid, task))
        try:
            try:
                outcome = b.result_carrier(await reg.handler(call))
            except McpError as exc:
                outcome = b.error_carrier(exc)
            return RawJSON(orjson.dumps(outcome))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # (no traceback on the wire: it is in this side's log)
            log.warning("MCP server %r failed on %s: %s: %s", reg.name, env.method, type(exc).__name__, exc,
                        exc_info=True)
            raise RequestError(f"MCP server handler failed: {type(exc).__name__} (details in the client's log)",
                               {"serverId": env.server_id, "requestId": rid, "error": type(exc).__name__},
                               code=b.BACKEND_FAILED) from None
        finally:
            if active.get(rid) is task:
                del active[rid]

    def _notifier(self, server: _Server, rid: str, task: asyncio.Task[Any]) -> Callable[..., Any]:
        peer = self._connection.peer
        wire = self._connection.protocol.wire("mcp_message")

        async def notify(method: str, params: dict[str, Any] | None) -> None:
            if server.active.get(rid) is not task:
                return  # (the request ended: nothing goes out for it any more)
            body: dict[str, Any] = {"serverId": server.server_id, "requestId": rid, "method": method}
            if params is not None:
                body["params"] = params
            await peer.notify(wire, orjson.dumps(body))

        return notify


def _cancel(tasks: list[asyncio.Task[Any]], why: str) -> list[asyncio.Task[Any]]:
    """Cancel the tasks of running requests (not the caller's own: a handler withdrawing its
    own server ends normally); those cancelled."""
    me = asyncio.current_task()
    out = [t for t in tasks if t is not me and not t.done()]
    for task in out:
        task.cancel(msg=why)
    return out


async def _cancelled(tasks: list[asyncio.Task[Any]]) -> None:
    if tasks:
        await asyncio.wait(tasks)


def withdrawn(method: str) -> Callable[[Any], Any]:
    """The handler of v1's withdrawn ``mcp/connect`` / ``mcp/disconnect``: -32601 naming the
    binding that replaced them."""
    async def refuse(_params: Any) -> Any:
        raise MethodNotFound(f"Method not found: {method} was withdrawn; MCP-over-ACP uses the request-scoped "
                             "binding (mcp/message with serverId and requestId, servers declared as "
                             '{"type": "acp"} in mcpServers)', {"method": method})

    # (whatever its params: the same answer)
    refuse.raw_params = True  # type: ignore[attr-defined]
    return refuse
