"""The client side: connect to any agent, drive sessions, serve its file/terminal/permission calls."""

from ._recover import AgentRecovery, LostTurn, RecoveryReport
from .client import Client, connect
from .fs import FileSystemHandler
from .mcp import McpProvider, McpRegistration
from .mcp_bridge import McpBridge, McpBridgeError
from .permissions import PermissionPolicy, PermissionRule
from .session import PromptTurn, Session
from .state import SessionState
from .terminal import TerminalHandler
from .workspace import WorkspaceServer, workspace_server

__all__ = [
    "AgentRecovery",
    "Client",
    "FileSystemHandler",
    "LostTurn",
    "McpBridge",
    "McpBridgeError",
    "McpProvider",
    "McpRegistration",
    "PermissionPolicy",
    "PermissionRule",
    "PromptTurn",
    "RecoveryReport",
    "Session",
    "SessionState",
    "TerminalHandler",
    "WorkspaceServer",
    "connect",
    "workspace_server",
]
