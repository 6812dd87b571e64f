"""A :class:`~acplink.proxy.app.ProxyApp` in the conductor's process, driven directly.

A proxy served in the conductor's process (``acplink conduct --proxy acplink:NAME``) needs no
connection of its own: the conductor hands it each message unwrapped, as JSON values, and what
it passes on (or sends of its own) goes straight to the conductor's routing. No in-memory
connection pair, no encoding and decoding per message, no task per forwarded request: the
message goes through the proxy's hooks (or, with none for its method, straight on) in the step
that received it. What a hop means does not change: the trace shows the proxy's hops, a
cancelled request cancels the one it caused on the next hop, a hook's error is answered as the
proxy's connection would have answered it, and messages keep their order (each is forwarded
within the step that delivered it, as it would have been written to the proxy's connection).

When OpenTelemetry is configured the conductor serves the proxy over its in-memory connection
instead: each hop of the chain is then a span, the proxy's included.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..connection._failures import failure_answer
from ..errors import AcpError
from ..protocol.proxy import MODERN
from .app import ProxyApp, Side, _ProxyConnection, _wire

if TYPE_CHECKING:
    from .conductor import Conductor

__all__ = ["InProcessProxy", "drivable"]

log = logging.getLogger("acplink.conductor")


def drivable(serve: Any) -> ProxyApp | None:
    """The ProxyApp whose own ``serve`` ``serve`` is (a proxy the conductor can drive
    directly), or None (any other serve function, or a subclass that serves differently)."""
    app = getattr(serve, "__self__", None)
    if isinstance(app, ProxyApp) and getattr(serve, "__func__", None) is ProxyApp.serve \
            and type(app).serve is ProxyApp.serve:
        return app
    return None


class InProcessProxy(_ProxyConnection):
    """The proxy of chain node ``index``, its messages routed by ``conductor``."""

    def __init__(self, app: ProxyApp, conductor: Conductor, index: int) -> None:
        super().__init__(app)
        self.conductor = conductor
        self.index = index
        self.dialect = MODERN  # (its conductor is this process: the names are never written)

    # -- what the conductor hands it -----------------------------------------------------------

    async def call(self, from_predecessor: bool, method: str, params: Any, timeout: float | None) -> Any:
        """A request for the proxy: its result, or its error raised as the proxy's connection
        would have answered it (``timeout``: seconds it may take, as any component)."""
        side: Side = "client" if from_predecessor else "agent"
        handle = self.dispatch if self.app._hooks or self.mcp is not None else self._forward
        scope: asyncio.Timeout | None = None
        try:
            if timeout is None:
                return await handle(side, method, params, True)
            async with asyncio.timeout(timeout) as scope:
                return await handle(side, method, params, True)
        except Exception as exc:
            if isinstance(exc, TimeoutError) and scope is not None and scope.expired():
                raise self.conductor.own_error(self.index, f"did not answer {method} within {timeout:g} s") from None
            raise failure_answer(exc, method, self.app.name, self.conductor.debug, False) from None

    def passes(self, from_predecessor: bool, method: str) -> bool:
        """Whether a request ``method`` from that side goes straight on, as it is (no hook of
        the proxy's and none of its MCP servers' business)."""
        return self.app._passes("client" if from_predecessor else "agent", method, self.mcp is not None)

    async def notify(self, from_predecessor: bool, method: str, params: Any) -> None:
        """A notification for the proxy (a hook that fails is logged, as a connection would)."""
        handle = self.dispatch if self.app._hooks or self.mcp is not None else self._forward
        try:
            await handle("client" if from_predecessor else "agent", method, params, False)
        except Exception as exc:
            if self.conductor.debug or not isinstance(exc, AcpError):
                log.warning("%s: notification handler for %s failed: %s", self.app.name, method, exc, exc_info=True)
            else:
                log.info("%s: notification handler for %s failed: %s", self.app.name, method, exc)

    async def _forward(self, side: Side, method: str, params: Any, request: bool, meta: Any = None) -> Any:
        """:meth:`dispatch` of a proxy with no hook and no MCP server: the message passed on
        (its params are JSON values already)."""
        c, i = self.conductor, self.index
        if side == "client":
            if request:
                return await c.successor_call(i, MODERN.successor, method, params)
            await c.notify(i, i + 1, method, params)
        elif request:
            return await c.call(i, i - 1, method, params)
        else:
            await c.notify(i, i - 1, method, params)
        return None

    # -- what it sends -------------------------------------------------------------------------

    async def to_successor(self, method: str, params: Any, *, request: bool) -> Any:
        c = self.conductor
        if request:
            return await c.successor_call(self.index, MODERN.successor, method, _wire(params))
        await c.notify(self.index, self.index + 1, method, _wire(params))
        return None

    async def to_predecessor(self, method: str, params: Any, *, request: bool) -> Any:
        c = self.conductor
        if request:
            return await c.call(self.index, self.index - 1, method, _wire(params))
        await c.notify(self.index, self.index - 1, method, _wire(params))
        return None
