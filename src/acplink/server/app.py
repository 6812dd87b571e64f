"""The ASGI 3 application: streamable HTTP and WebSocket on one path."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from .access import PRINCIPAL_KEY, AccessPolicy, Refusal
from .asgi import Receive, Scope, Send, answer, header_map
from .backends import AgentBackend, AgentCommand
from .connection import Registry
from .http import handle_http
from .limits import ServerLimits
from .ws import handle_websocket, refuse_upgrade

if TYPE_CHECKING:
    from ..agent.app import AgentBase

__all__ = ["AcpServer"]

log = logging.getLogger("acplink.server")


class AcpServer:
    """An ASGI 3 app that puts an ACP agent on the network: streamable HTTP (POST + SSE) and
    WebSocket on one ``path``, one agent per remote connection.

    ``agent``: an agent command (a list of strings: one process per connection, see
    :class:`AgentCommand`), a factory of acplink agent apps (one app per connection, in this
    process, see :class:`InProcessAgent`), or any :class:`AgentBackend`. ``transports``: which of "http" and "ws" to
    serve. ``token``: require ``Authorization: Bearer <token>`` (a list: any of them, each its
    own principal, whose stored sessions the others cannot see). ``allow_origins``: the
    browser origins allowed (a request with any other ``Origin`` gets 403).
    ``allowed_hosts``: the ``Host`` names answered (None: any; a loopback bind should pass
    :data:`~acplink.server.LOOPBACK_HOSTS`). Mount it in Starlette/FastAPI or run it under
    uvicorn or Hypercorn; call :meth:`aclose` (or let the ASGI lifespan do it) to stop every
    agent.
    """

    def __init__(self, agent: AgentBackend | Sequence[str] | Callable[[], AgentBase], *, path: str = "/acp",
                 transports: Iterable[str] = ("http", "ws"), token: str | Iterable[str] | None = None,
                 allow_origins: Iterable[str] = (), allowed_hosts: Iterable[str] | None = None,
                 limits: ServerLimits | None = None) -> None:
        self.limits = limits or ServerLimits()
        if isinstance(agent, AgentBackend):
            self.backend = agent
        elif callable(agent):
            from .inprocess import InProcessAgent  # (the agent layer only when an app is served)

            self.backend = InProcessAgent(agent, stop_timeout=self.limits.stop_timeout)
        else:
            self.backend = AgentCommand(agent, stop_timeout=self.limits.stop_timeout)
        self.path = "/" + path.strip("/")
        self.transports = frozenset(transports)
        unknown = self.transports - {"http", "ws"}
        if unknown or not self.transports:
            raise ValueError(f"transports must be 'http' and/or 'ws', not {sorted(unknown) or 'none'}")
        self.access = AccessPolicy(token=token, allow_origins=allow_origins, allowed_hosts=allowed_hosts)
        self._registry: Registry | None = None

    @property
    def registry(self) -> Registry:
        """The live connections (made on first use, inside the server's event loop)."""
        if self._registry is None:
            self._registry = Registry(self.limits, self.backend)
        return self._registry

    @property
    def connection_count(self) -> int:
        return len(self._registry.connections) if self._registry is not None else 0

    async def aclose(self) -> None:
        """Close every connection (HTTP streams end, WebSockets close with 1001) and stop
        their agents (each within the shutdown ladder's bound)."""
        if self._registry is not None:
            await self._registry.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind not in ("http", "websocket"):
            return
        if not self._matches(scope):
            if kind == "http":
                await answer(send, 404, "Not Found")
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        headers = header_map(scope)
        refusal = self.access.check(headers)
        if refusal is None and self.access.needs_token:
            headers[PRINCIPAL_KEY] = self.access.principal(headers) or ""
        else:  # (never the client's: no header name can be this one, but a lax parser...)
            headers.pop(PRINCIPAL_KEY, None)
        if kind == "websocket":
            if refusal is None and "ws" not in self.transports:
                refusal = Refusal(426, "Upgrade Required: this server does not serve WebSocket")
            if refusal is not None:
                await refuse_upgrade(scope, send, refusal)
                return
            await handle_websocket(self.registry, scope, receive, send, headers.get(PRINCIPAL_KEY))
            return
        if refusal is not None:
            await answer(send, refusal.status, refusal.reason, headers=refusal.headers)
            return
        if "http" not in self.transports:
            await answer(send, 426, "Upgrade Required: this server speaks WebSocket only",
                         headers=[("upgrade", "websocket")])
            return
        await handle_http(self.registry, scope, receive, send, headers)

    def _matches(self, scope: Scope) -> bool:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        return path.rstrip("/") == self.path.rstrip("/") or (bool(root) and path in ("", "/"))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

