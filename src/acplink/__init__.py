"""acplink: the Agent Client Protocol (ACP) for Python.

Build an agent in a few lines (:class:`AgentApp`, :func:`run_agent`), drive any agent from
Python (:func:`connect`), or work one level down with the typed connections and transports.
Every ACP type lives in :mod:`acplink.schema`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import builders, schema
    from .agent import (
        Agent,
        AgentApp,
        AgentBase,
        AgentSession,
        Context,
        PermissionAnswer,
        PromptContext,
        TerminalHandle,
        ToolCallHandle,
        run_agent,
        serve,
    )
    from .client import (
        Client,
        FileSystemHandler,
        PermissionPolicy,
        PermissionRule,
        PromptTurn,
        Session,
        SessionState,
        TerminalHandler,
        connect,
    )
    from .connection import (
        PROTOCOL_VERSION,
        AgentSideConnection,
        ClientSideConnection,
        Connection,
        PeerLimits,
        Router,
    )
    from .errors import (
        AcpError,
        AuthRequired,
        CapabilityError,
        ConnectionClosed,
        InternalError,
        InvalidParams,
        InvalidRequest,
        MessageTooLarge,
        MethodNotFound,
        ParseError,
        PeerOutputNotJson,
        ProtocolError,
        RequestCancelled,
        RequestError,
        RequestTimeout,
        ResourceNotFound,
        SchemaValidationError,
        TransportError,
        UsageError,
    )
    from .runtime import tune_gc
    from .transports import MemoryTransport, StdioTransport, SubprocessTransport, Transport, memory_pair
    from .transports._remote import AuthRejected, CookieJar, RemoteOptions
    from .transports.http import HttpTransport
    from .transports.websocket import WebSocketTransport

from ._version import __version__

#: public name -> the module that defines it; imported on first use, so an agent process
#: does not pay for the client side (and the other way round)
_LAZY: dict[str, str] = {
    'AcpError': '.errors',
    'AuthRejected': '.transports._remote',
    'CookieJar': '.transports._remote',
    'HttpTransport': '.transports.http',
    'RemoteOptions': '.transports._remote',
    'WebSocketTransport': '.transports.websocket',
    'Agent': '.agent',
    'AgentApp': '.agent',
    'AgentBase': '.agent',
    'AgentSession': '.agent',
    'AgentSideConnection': '.connection',
    'AuthRequired': '.errors',
    'CapabilityError': '.errors',
    'Client': '.client',
    'ClientSideConnection': '.connection',
    'Connection': '.connection',
    'ConnectionClosed': '.errors',
    'Context': '.agent',
    'FileSystemHandler': '.client',
    'InternalError': '.errors',
    'InvalidParams': '.errors',
    'InvalidRequest': '.errors',
    'MemoryTransport': '.transports',
    'MessageTooLarge': '.errors',
    'MethodNotFound': '.errors',
    'PROTOCOL_VERSION': '.connection',
    'ParseError': '.errors',
    'PeerLimits': '.connection',
    'PeerOutputNotJson': '.errors',
    'PermissionAnswer': '.agent',
    'PermissionPolicy': '.client',
    'PermissionRule': '.client',
    'PromptContext': '.agent',
    'PromptTurn': '.client',
    'ProtocolError': '.errors',
    'RequestCancelled': '.errors',
    'RequestError': '.errors',
    'RequestTimeout': '.errors',
    'ResourceNotFound': '.errors',
    'Router': '.connection',
    'SchemaValidationError': '.errors',
    'Session': '.client',
    'SessionState': '.client',
    'StdioTransport': '.transports',
    'SubprocessTransport': '.transports',
    'TerminalHandle': '.agent',
    'TerminalHandler': '.client',
    'ToolCallHandle': '.agent',
    'Transport': '.transports',
    'TransportError': '.errors',
    'UsageError': '.errors',
    'builders': '.',
    'connect': '.client',
    'memory_pair': '.transports',
    'run_agent': '.agent',
    'schema': '.',
    'serve': '.agent',
    'tune_gc': '.runtime',
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acplink' has no attribute {name!r}")
    value = importlib.import_module(f"acplink.{name}") if module == "." else getattr(
        importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

__all__ = [
    "PROTOCOL_VERSION",
    "AcpError",
    "Agent",
    "AgentApp",
    "AgentBase",
    "AgentSession",
    "AgentSideConnection",
    "AuthRejected",
    "AuthRequired",
    "CapabilityError",
    "Client",
    "ClientSideConnection",
    "Connection",
    "ConnectionClosed",
    "Context",
    "CookieJar",
    "FileSystemHandler",
    "HttpTransport",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MemoryTransport",
    "MessageTooLarge",
    "MethodNotFound",
    "ParseError",
    "PeerLimits",
    "PeerOutputNotJson",
    "PermissionAnswer",
    "PermissionPolicy",
    "PermissionRule",
    "PromptContext",
    "PromptTurn",
    "ProtocolError",
    "RemoteOptions",
    "RequestCancelled",
    "RequestError",
    "RequestTimeout",
    "ResourceNotFound",
    "Router",
    "SchemaValidationError",
    "Session",
    "SessionState",
    "StdioTransport",
    "SubprocessTransport",
    "TerminalHandle",
    "TerminalHandler",
    "ToolCallHandle",
    "Transport",
    "TransportError",
    "UsageError",
    "WebSocketTransport",
    "__version__",
    "builders",
    "connect",
    "memory_pair",
    "run_agent",
    "schema",
    "serve",
    "tune_gc",
]
