"""One inner MCP request as a provider's handler sees it, and the handler type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

__all__ = [
    "MCP_CLIENT_CAPABILITIES",
    "MCP_CLIENT_INFO",
    "MCP_PROTOCOL_VERSION",
    "MCP_PROTOCOL_VERSION_KEY",
    "McpCall",
    "McpHandler",
]

#: the inner protocol's version (MCP 2026-07-28: no ``initialize``; each request says who asks)
MCP_PROTOCOL_VERSION: Final = "2026-07-28"
#: the keys of an inner request's ``params._meta`` that carry what ``initialize`` used to
MCP_PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
MCP_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
MCP_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"

#: sends one inner notification (method, params) for the request being answered
Notify: TypeAlias = Callable[[str, "dict[str, Any] | None"], Awaitable[None]]


async def _no_notify(method: str, params: dict[str, Any] | None) -> None:
    return None


@dataclass(eq=False)
class McpCall:
    """One inner MCP request delivered to a provider's handler.

    ``server_id`` / ``request_id``: the envelope's ids (``request_id`` is the caller's inner
    request id: a string when the call came over ACP; an integer only in a call made in
    process, ``await server(McpCall("tools", 1, "tools/list"))``). ``method`` / ``params``: the
    inner request (``params`` as sent, its ``_meta`` included; None when it had none).
    ``mcp_meta``: the ``io.modelcontextprotocol/*`` entries of ``params._meta`` (protocol
    version, client capabilities, client info). ``meta``: the outer envelope's ``_meta``
    (ACP's), if any. ``session_id``: the ACP session the server was registered for (None for a
    connection-wide server). ``name``: the server's declared name.
    """

    server_id: str
    request_id: str | int
    method: str
    params: dict[str, Any] | None = None
    mcp_meta: Mapping[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] | None = None
    session_id: str | None = None
    name: str = ""
    _notify: Notify = field(default=_no_notify, repr=False)

    @property
    def arguments(self) -> dict[str, Any]:
        """``params["arguments"]`` when it is an object (a ``tools/call``), else ``{}``."""
        args = (self.params or {}).get("arguments")
        return args if isinstance(args, dict) else {}

    @property
    def progress_token(self) -> str | int | None:
        """The caller's ``params._meta.progressToken``, if it asked for progress."""
        meta = (self.params or {}).get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send an inner notification (``mcp/message`` without an id) for this request while it
        is active; after it ended, the caller drops it."""
        await self._notify(method, params)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (``notifications/progress``) when the caller asked for it (a
        ``progressToken``); otherwise nothing is sent."""
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._notify("notifications/progress", params)


#: answers one inner MCP request: returns its result (a JSON value), raises
#: :class:`acplink.McpError` for an inner error
McpHandler: TypeAlias = Callable[[McpCall], Awaitable[Any]]
