"""The agent side: build an agent from handlers and serve it."""

from .app import HOOKS, Agent, AgentApp, AgentBase
from .context import AgentSession, Context, PermissionAnswer, PromptContext, TerminalHandle, ToolCallHandle
from .serve import run_agent, serve
from .versions import DualAgentConnection

__all__ = [
    "HOOKS",
    "Agent",
    "AgentApp",
    "AgentBase",
    "AgentSession",
    "Context",
    "DualAgentConnection",
    "PermissionAnswer",
    "PromptContext",
    "TerminalHandle",
    "ToolCallHandle",
    "run_agent",
    "serve",
]
