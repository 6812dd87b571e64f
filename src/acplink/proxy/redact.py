"""The redaction proxy (``acplink proxy redact``, ``--proxy acplink:redact``): what the agent
sends upstream reaches the editor with the recorder's redaction rules applied
(:func:`acplink.tools.redact.redact_message`, the rules of ``acplink record --redact``): every
free-text value (message text, diffs, tool input and output, ``_meta`` strings, ...) becomes
``[redacted: N bytes]``; ids, methods, kinds, statuses, names, titles and paths are kept.

Redacted: the agent's notifications (``session/update``, ...), its requests to the editor
(``session/request_permission``, ...) and its results to the editor's requests
(``session/new``, ``session/prompt``, ...). Passed unchanged: ``initialize`` and
``authenticate`` (the agent's description, no session content), and the operations the agent
asks the editor to carry out, ``fs/*``, ``terminal/*`` and ``mcp/message``, whose text is what
they do (a redacted write would write the placeholder). What the editor sends the agent is not
touched.
"""

from __future__ import annotations

from typing import Any

from ..methods import AUTHENTICATE, INITIALIZE, MCP_MESSAGE
from ..tools.redact import redact_message
from .app import ProxyApp, ProxyContext

__all__ = ["redact_proxy"]

#: the editor's operations the agent requests: their text is what they do
_OPERATION_PREFIXES = ("fs/", "terminal/")
_UNTOUCHED = frozenset({INITIALIZE, AUTHENTICATE, MCP_MESSAGE})


def _untouched(method: str) -> bool:
    return method in _UNTOUCHED or method.startswith(_OPERATION_PREFIXES)


def redact_proxy() -> ProxyApp:
    """A proxy redacting what the agent sends upstream (see the module doc)."""
    app = ProxyApp("redact")

    @app.from_agent("*")
    async def from_agent(ctx: ProxyContext, params: Any) -> Any:
        if _untouched(ctx.method):
            return await ctx.forward(params)
        return await ctx.forward(redact_message({"method": ctx.method, "params": params})["params"])

    @app.from_client("*")
    async def from_client(ctx: ProxyContext, params: Any) -> Any:
        result = await ctx.forward(params)
        if not ctx.is_request or _untouched(ctx.method):
            return result
        return redact_message({"result": result}, ctx.method)["result"]

    return app
