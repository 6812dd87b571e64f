"""ACP proxy chains: the proxy API (:class:`ProxyApp`) and the conductor that runs a chain.

See docs/proxies.md. The wire codec of the ``proxy/successor`` envelope is
:mod:`acplink.protocol.proxy`.
"""

from .app import ProxyApp, ProxyContext
from .builtins import builtin_proxy, context_proxy, passthrough_proxy
from .conductor import Component, Conductor
from .mcp_http import mcp_http_proxy
from .policy import policy_proxy
from .redact import redact_proxy

__all__ = [
    "Component",
    "Conductor",
    "ProxyApp",
    "ProxyContext",
    "builtin_proxy",
    "context_proxy",
    "mcp_http_proxy",
    "passthrough_proxy",
    "policy_proxy",
    "redact_proxy",
]
