"""acplink: the Agent Client Protocol (ACP) for Python.

Build an agent in a few lines (:class:`AgentApp`, :func:`run_agent`), drive any agent from
Python (:func:`connect`), or work one level down with the typed connections and transports.
Every ACP type lives in :mod:`acplink.schema`; every method has one name, a constant of
:mod:`acplink.methods` (``SESSION_PROMPT == "session/prompt"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_getattr as _lazy_getattr

# the type checkers' view of the lazy names below ("X as X": an explicit re-export, since
# ``__all__`` is computed); tests/test_public_api.py keeps the two equal
if TYPE_CHECKING:
    from . import (  # noqa: I001
        builders as builders,
        methods as methods,
        schema as schema,
    )
    from .agent import (
        Agent as Agent,
        AgentApp as AgentApp,
        AgentBase as AgentBase,
        AgentSession as AgentSession,
        Context as Context,
        McpCaller as McpCaller,
        PermissionAnswer as PermissionAnswer,
        PromptContext as PromptContext,
        PostgresStore as PostgresStore,
        SqliteStore as SqliteStore,
        TerminalHandle as TerminalHandle,
        ToolCallHandle as ToolCallHandle,
        run_agent as run_agent,
        serve as serve,
    )
    from .client import (
        AgentRecovery as AgentRecovery,
        Client as Client,
        FileSystemHandler as FileSystemHandler,
        McpProvider as McpProvider,
        McpRegistration as McpRegistration,
        PermissionPolicy as PermissionPolicy,
        PermissionRule as PermissionRule,
        LostTurn as LostTurn,
        PromptTurn as PromptTurn,
        RecoveryReport as RecoveryReport,
        Session as Session,
        SessionState as SessionState,
        TerminalHandler as TerminalHandler,
        connect as connect,
    )
    from .connection import (
        PROTOCOL_VERSION as PROTOCOL_VERSION,
        AgentSideConnection as AgentSideConnection,
        ClientSideConnection as ClientSideConnection,
        Connection as Connection,
        PeerLimits as PeerLimits,
        Router as Router,
    )
    from .errors import (
        AcpError as AcpError,
        AuthRequired as AuthRequired,
        CapabilityError as CapabilityError,
        ConnectionClosed as ConnectionClosed,
        InternalError as InternalError,
        InvalidParams as InvalidParams,
        InvalidRequest as InvalidRequest,
        McpError as McpError,
        MessageTooLarge as MessageTooLarge,
        MethodNotFound as MethodNotFound,
        MissingDependency as MissingDependency,
        StreamResumeFailed as StreamResumeFailed,
        ParseError as ParseError,
        PeerOutputNotJson as PeerOutputNotJson,
        ProtocolError as ProtocolError,
        RecoveryFailed as RecoveryFailed,
        RegistryError as RegistryError,
        RequestCancelled as RequestCancelled,
        RequestError as RequestError,
        RequestTimeout as RequestTimeout,
        ResourceNotFound as ResourceNotFound,
        SchemaValidationError as SchemaValidationError,
        StoreError as StoreError,
        TransportError as TransportError,
        UsageError as UsageError,
    )
    from .bridges import serve_as_mcp as serve_as_mcp
    from .mcp import McpCall as McpCall
    from .proxy import (
        Component as Component,
        Conductor as Conductor,
        ProxyApp as ProxyApp,
        ProxyContext as ProxyContext,
    )
    from .registry import Registry as Registry
    from .runtime import tune_gc as tune_gc
    from .schema import (  # the session updates a prompt turn yields, by their public names
        AgentMessageChunk as AgentMessageChunk,
        AgentThoughtChunk as AgentThoughtChunk,
        Plan as Plan,
        ToolCall as ToolCall,
        ToolCallProgress as ToolCallProgress,
        ToolCallUpdate as ToolCallUpdate,
        UserMessageChunk as UserMessageChunk,
    )
    from .transports._remote import AuthRejected as AuthRejected
    from .transports._remote import CookieJar as CookieJar
    from .transports._remote import RemoteOptions as RemoteOptions
    from .transports.http import HttpTransport as HttpTransport
    from .transports.websocket import WebSocketTransport as WebSocketTransport
    from .transports import (
        MemoryTransport as MemoryTransport,
        StdioTransport as StdioTransport,
        SubprocessTransport as SubprocessTransport,
        Transport as Transport,
        memory_pair as memory_pair,
    )

from ._version import __version__ as __version__

#: public name -> the module that defines it; imported on first use, so an agent process
#: does not pay for the client side (and the other way round)
_LAZY: dict[str, str] = {
    'Component': '.proxy',
    'Conductor': '.proxy',
    'ProxyApp': '.proxy',
    'ProxyContext': '.proxy',
    'AgentMessageChunk': '.schema',
    'AgentThoughtChunk': '.schema',
    'Plan': '.schema',
    'ToolCall': '.schema',
    'ToolCallProgress': '.schema',
    'ToolCallUpdate': '.schema',
    'UserMessageChunk': '.schema',
    'AuthRejected': '.transports._remote',
    'CookieJar': '.transports._remote',
    'HttpTransport': '.transports.http',
    'RemoteOptions': '.transports._remote',
    'WebSocketTransport': '.transports.websocket',
    'AcpError': '.errors',
    'RegistryError': '.errors',
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
    'StreamResumeFailed': '.errors',
    'Context': '.agent',
    'FileSystemHandler': '.client',
    'InternalError': '.errors',
    'InvalidParams': '.errors',
    'InvalidRequest': '.errors',
    'MemoryTransport': '.transports',
    'McpCall': '.mcp',
    'Registry': '.registry',
    'McpCaller': '.agent',
    'McpError': '.errors',
    'McpProvider': '.client',
    'McpRegistration': '.client',
    'MessageTooLarge': '.errors',
    'MissingDependency': '.errors',
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
    'AgentRecovery': '.client',
    'LostTurn': '.client',
    'RecoveryReport': '.client',
    'RecoveryFailed': '.errors',
    'ProtocolError': '.errors',
    'RequestCancelled': '.errors',
    'RequestError': '.errors',
    'RequestTimeout': '.errors',
    'ResourceNotFound': '.errors',
    'Router': '.connection',
    'SchemaValidationError': '.errors',
    'Session': '.client',
    'SessionState': '.client',
    'PostgresStore': '.agent',
    'SqliteStore': '.agent',
    'StoreError': '.errors',
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
    'methods': '.',
    'run_agent': '.agent',
    'schema': '.',
    'serve': '.agent',
    'serve_as_mcp': '.bridges',
    'tune_gc': '.runtime',
}


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(__all__)


def _group(name: str) -> tuple[int, str]:
    """ruff/isort order: CONSTANTS, Classes, functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


#: the public names: written once, in ``_LAZY``
__all__ = sorted(["__version__", *_LAZY], key=_group)
