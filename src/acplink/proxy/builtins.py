"""The proxies built into acplink, which ``acplink conduct --proxy acplink:NAME`` runs in process.

* ``passthrough``: forwards everything unchanged (a hop that only costs what a hop costs);
* ``context`` (``acplink:context=TEXT``): adds a text block with TEXT before every prompt;
* ``policy`` (``acplink:policy=allow:read,deny:execute``): answers permission requests by rule
  (:mod:`acplink.proxy.policy`);
* ``redact``: redacts what the agent sends upstream with the recorder's rules
  (:mod:`acplink.proxy.redact`);
* ``mcp-http`` (``acplink:mcp-http``, ``acplink:mcp-http=PORT``): MCP-over-ACP for an agent whose
  MCP client only speaks HTTP (:mod:`acplink.proxy.mcp_http`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import UsageError
from ..methods import SESSION_PROMPT
from .app import ProxyApp, ProxyContext
from .mcp_http import mcp_http_proxy
from .policy import parse_policy_spec, policy_proxy
from .redact import redact_proxy

__all__ = ["BUILTINS", "builtin_proxy", "context_proxy", "passthrough_proxy"]

#: the line the context proxy adds when none is given
DEFAULT_CONTEXT = "Context from the acplink context proxy."


def passthrough_proxy() -> ProxyApp:
    """A proxy that forwards everything unchanged."""
    return ProxyApp("passthrough")


def context_proxy(text: str = DEFAULT_CONTEXT) -> ProxyApp:
    """A proxy that adds a text content block with ``text`` before every prompt."""
    app = ProxyApp("context")

    @app.from_client(SESSION_PROMPT)
    async def prompt(ctx: ProxyContext, params: Any) -> Any:
        if isinstance(params, dict) and isinstance(params.get("prompt"), list):
            params["prompt"].insert(0, {"type": "text", "text": text})
        return await ctx.forward(params)

    return app


#: name -> factory taking the text after ``=`` (None when there is none)
BUILTINS: dict[str, Callable[[str | None], ProxyApp]] = {
    "passthrough": lambda arg: passthrough_proxy(),
    "context": lambda arg: context_proxy(arg if arg else DEFAULT_CONTEXT),
    "policy": lambda arg: _policy(arg),
    "redact": lambda arg: redact_proxy(),
    "mcp-http": lambda arg: _mcp_http(arg),
}


def _mcp_http(port: str | None) -> ProxyApp:
    if port is not None and not port.isdigit():
        raise UsageError(f"acplink:mcp-http=PORT takes a port number (0: any free one), not {port!r}")
    return mcp_http_proxy(port=int(port or 0))


def _policy(spec: str | None) -> ProxyApp:
    if not spec:
        raise UsageError("acplink:policy needs rules: acplink:policy=allow:read,deny:execute")
    rules, default = parse_policy_spec(spec)
    return policy_proxy(rules, default=default)


def builtin_proxy(spec: str) -> ProxyApp:
    """The built-in proxy ``spec`` names (``NAME`` or ``NAME=ARG``, without ``acplink:``)."""
    name, _, arg = spec.partition("=")
    factory = BUILTINS.get(name)
    if factory is None:
        raise UsageError(f"no built-in proxy {name!r}; built-ins: {', '.join(sorted(BUILTINS))}")
    return factory(arg or None)
