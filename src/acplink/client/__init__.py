"""The client side: connect to any agent, drive sessions, serve its file/terminal/permission calls."""

from .client import Client, connect
from .fs import FileSystemHandler
from .mcp import McpProvider, McpRegistration
from .permissions import PermissionPolicy, PermissionRule
from .session import PromptTurn, Session
from .state import SessionState
from .terminal import TerminalHandler

__all__ = [
    "Client",
    "FileSystemHandler",
    "McpProvider",
    "McpRegistration",
    "PermissionPolicy",
    "PermissionRule",
    "PromptTurn",
    "Session",
    "SessionState",
    "TerminalHandler",
    "connect",
]
