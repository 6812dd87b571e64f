"""The client side: connect to any agent, drive sessions, serve its file/terminal/permission calls."""

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
    "Client",
    "FileSystemHandler",
    "McpBridge",
    "McpBridgeError",
    "McpProvider",
    "McpRegistration",
    "PermissionPolicy",
    "PermissionRule",
    "PromptTurn",
    "Session",
    "SessionState",
    "TerminalHandler",
    "WorkspaceServer",
    "connect",
    "workspace_server",
]
