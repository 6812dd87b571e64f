"""Remote ACP, server side: an ASGI 3 app serving streamable HTTP and WebSocket on one path,
one agent per remote connection (a command, or an in-process acplink app).

``InProcessAgent`` (and with it the agent layer) is imported on first use. Nothing here imports uvicorn, Starlette or websockets: the app is plain ASGI, and
``acplink serve`` imports uvicorn only when it runs.
"""

from typing import TYPE_CHECKING, Any

from .access import LOOPBACK_HOSTS, AccessPolicy, is_loopback, principal_of_token
from .app import AcpServer
from .backends import AgentBackend, AgentChannel, AgentCommand
from .limits import ServerLimits

if TYPE_CHECKING:
    from .inprocess import InProcessAgent

__all__ = [
    "LOOPBACK_HOSTS",
    "AccessPolicy",
    "AcpServer",
    "AgentBackend",
    "AgentChannel",
    "AgentCommand",
    "InProcessAgent",
    "ServerLimits",
    "is_loopback",
    "principal_of_token",
]


def __getattr__(name: str) -> Any:
    if name == "InProcessAgent":
        from .inprocess import InProcessAgent

        return InProcessAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
