"""Remote ACP, server side: an ASGI 3 app serving streamable HTTP and WebSocket on one path,
one agent per remote connection (a command, or an in-process acplink app).

Nothing here imports uvicorn, Starlette or websockets: the app is plain ASGI, and
``acplink serve`` imports uvicorn only when it runs.
"""

from .access import LOOPBACK_HOSTS, AccessPolicy, is_loopback
from .app import AcpServer
from .backends import AgentBackend, AgentChannel, AgentCommand
from .limits import ServerLimits

__all__ = [
    "LOOPBACK_HOSTS",
    "AccessPolicy",
    "AcpServer",
    "AgentBackend",
    "AgentChannel",
    "AgentCommand",
    "ServerLimits",
    "is_loopback",
]
