"""The agent side: build an agent from handlers and serve it."""

from typing import TYPE_CHECKING, Any

from .app import HOOKS, Agent, AgentApp, AgentBase
from .context import AgentSession, Context, PermissionAnswer, PromptContext, TerminalHandle, ToolCallHandle
from .history import HistoryEntry
from .mcp import McpCaller
from .serve import run_agent, serve
from .store import LOCAL_PRINCIPAL, HistoryStore, MemoryStore, SessionRecord, SessionStore

if TYPE_CHECKING:
    from ._conn import DualAgentConnection
    from .mcp_http import HttpEndpoint, McpHttpBridge
    from .store_postgres import PostgresStore
    from .store_sqlite import SqliteStore
    from .workspace import WorkspaceTerminal

__all__ = [
    "HOOKS",
    "LOCAL_PRINCIPAL",
    "Agent",
    "AgentApp",
    "AgentBase",
    "AgentSession",
    "Context",
    "DualAgentConnection",
    "HistoryEntry",
    "HistoryStore",
    "HttpEndpoint",
    "McpCaller",
    "McpHttpBridge",
    "MemoryStore",
    "PermissionAnswer",
    "PromptContext",
    "SessionRecord",
    "SessionStore",
    "PostgresStore",
    "SqliteStore",
    "TerminalHandle",
    "ToolCallHandle",
    "WorkspaceTerminal",
    "run_agent",
    "serve",
]


def __getattr__(name: str) -> Any:
    # imported on first use: the v2 version router is not on an agent's way to answering
    # initialize (start-up time)
    if name == "DualAgentConnection":
        from ._conn import DualAgentConnection

        return DualAgentConnection
    if name == "SqliteStore":  # (sqlite3 is imported by the apps that use it)
        from .store_sqlite import SqliteStore

        return SqliteStore
    if name == "PostgresStore":  # (psycopg: the extra acplink[postgres])
        from .._extras import require as _require

        _require("PostgresStore", "postgres", "psycopg")
        from .store_postgres import PostgresStore

        return PostgresStore
    if name == "HttpEndpoint":  # (MCP-over-ACP for HTTP-only MCP clients: imported on first use)
        from .mcp_http import HttpEndpoint

        return HttpEndpoint
    if name == "WorkspaceTerminal":  # (the client's terminals on v2: imported on first use)
        from .workspace import WorkspaceTerminal

        return WorkspaceTerminal
    if name == "McpHttpBridge":
        from .mcp_http import McpHttpBridge

        return McpHttpBridge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
