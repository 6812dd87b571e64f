"""Any ACP agent as an MCP server: ``acplink mcp-server -- AGENT_CMD`` and :func:`serve_as_mcp`.

An MCP host (a desktop assistant, an IDE assistant, another agent) gets four tools:

- ``prompt(text, session_id?, cwd?)``: one ACP turn; the agent's reply and a summary of its tool
  calls come back (``structuredContent``: ``sessionId``, ``stopReason``, ``reply``, ``toolCalls``),
  and the reply streams as MCP progress notifications when the host asked for progress;
- ``new_session(cwd?)``, ``list_sessions()``, ``cancel(session_id)``.

The agent's permission requests are answered by the ``permission`` mode: ``allow``, ``deny``
(which also confines the agent: no writes, no terminals), or ``elicit`` (the default: the
question goes to the MCP host as an MCP elicitation when the host supports it, and is denied
when it does not). An agent that cannot start or dies makes the call an MCP error result naming
it; the next call starts it again.

This module imports the ``mcp`` package (the ``mcp`` extra): import it after
``acplink._extras.require`` (the CLI does).
"""

import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from .._text import sanitize_for_terminal
from ..errors import AcpError, UsageError
from ..schema import _generated as s
from .agent_holder import AgentGone, AgentHolder, is_agent_failure

__all__ = ["build_mcp_server", "serve_as_mcp"]


class _Approval(BaseModel):
    """The form an MCP host fills in for one permission request."""

    allow: bool = Field(description="allow the agent to do this")


class _Bridge:
    """The tools' state: the agent, and which MCP request is prompting which session (where a
    permission request is elicited)."""

    def __init__(self, command: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: dict[str, str] | None,
                 permission: str, startup_timeout: float) -> None:
        self.agent = AgentHolder(command, cwd=cwd, env=env, permission=permission, ask=self.ask,
                                 startup_timeout=startup_timeout)
        self.prompting: dict[str, Context] = {}

    async def ask(self, params: s.RequestPermissionRequest) -> str | None:
        """A permission request, put to the MCP host whose prompt is running in that session."""
        ctx = self.prompting.get(params.session_id)
        if ctx is None or not _can_elicit(ctx):
            return _option(params, "reject")
        call = params.tool_call
        message = f"The agent {self.agent.name!r} asks to run: {call.title or call.tool_call_id} ({call.kind or 'other'})"
        try:
            answer = await ctx.elicit(sanitize_for_terminal(message), _Approval)
        except Exception:  # the host failed the elicitation: deny
            return _option(params, "reject")
        if answer.action == "accept" and getattr(answer, "data", None) is not None and answer.data.allow:
            return _option(params, "allow")
        return _option(params, "reject")

    async def guarded(self, what: Any) -> Any:
        """Run an agent call: a dead agent → the MCP error result naming it (restarted next time)."""
        try:
            return await what
        except AgentGone as exc:
            raise ToolError(str(exc)) from None
        except UsageError as exc:
            raise ToolError(str(exc)) from None
        except AcpError as exc:
            if is_agent_failure(exc):
                raise ToolError(str(await self.agent.gone(exc))) from None
            raise ToolError(f"the agent {self.agent.name!r} failed: {exc}") from None


def _can_elicit(ctx: Context) -> bool:
    caps = ctx.client_capabilities
    return caps is not None and caps.elicitation is not None


def _option(params: s.RequestPermissionRequest, decision: str) -> str | None:
    """The id of the first ``allow_*`` / ``reject_*`` option offered (once before always)."""
    for kind in (f"{decision}_once", f"{decision}_always"):
        for option in params.options:
            if option.kind == kind:
                return option.option_id
    return None


def build_mcp_server(command: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                     env: dict[str, str] | None = None, permission: str = "elicit",
                     startup_timeout: float = 30.0, name: str | None = None) -> MCPServer:
    """The ``mcp`` package server (an ``MCPServer``) whose tools drive the ACP agent ``command``
    (a list of arguments). The agent starts on the first call and stops with the server."""
    bridge = _Bridge(command, cwd=cwd, env=env, permission=permission, startup_timeout=startup_timeout)
    agent = bridge.agent

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await agent.aclose()

    server: MCPServer = MCPServer(name or "acplink", instructions=(
        f"The ACP agent {agent.name!r} as tools: `prompt` sends it a prompt (give `session_id` to continue a "
        "conversation), `new_session` opens one, `list_sessions` lists them, `cancel` stops a running prompt."),
        lifespan=lifespan)

    @server.tool(name="prompt", description="Send a prompt to the ACP agent and return its reply and a summary "
                                             "of its tool calls. Without session_id a new session is opened "
                                             "(its id is in the result); with it, the conversation continues.")
    async def prompt(text: str, ctx: Context, session_id: str | None = None, cwd: str | None = None) -> CallToolResult:
        session = await bridge.guarded(agent.session(session_id, cwd))
        sid = session.session_id
        streamed = [0]

        async def on_text(piece: str) -> None:
            streamed[0] += len(piece)
            with contextlib.suppress(Exception):  # (progress is best effort: a host may not listen)
                await ctx.report_progress(streamed[0], None, piece)

        bridge.prompting[sid] = ctx
        try:
            report = await bridge.guarded(agent.run_turn(session, text, on_text))
        finally:
            if bridge.prompting.get(sid) is ctx:
                del bridge.prompting[sid]
        return CallToolResult(content=[TextContent(type="text", text=report.summary())],
                              structured_content=report.as_dict(), is_error=False)

    @server.tool(name="new_session", description="Open a new session with the ACP agent (in cwd, default the "
                                                  "server's working directory); returns its id.")
    async def new_session(cwd: str | None = None) -> dict[str, Any]:
        session = await bridge.guarded(agent.session(None, cwd))
        return {"sessionId": session.session_id, "cwd": session.cwd}

    @server.tool(name="list_sessions", description="The sessions opened through this server, and whether a "
                                                    "prompt is running in each.")
    async def list_sessions() -> dict[str, Any]:
        return {"sessions": [{"sessionId": sid, "cwd": sess.cwd, "busy": sid in agent.turns}
                             for sid, sess in agent.sessions.items()]}

    @server.tool(name="cancel", description="Cancel the prompt running in a session (its prompt call then ends "
                                             "with stop reason 'cancelled').")
    async def cancel(session_id: str) -> dict[str, Any]:
        cancelled = await bridge.guarded(agent.cancel(session_id))
        return {"sessionId": session_id, "cancelled": cancelled}

    return server


async def serve_as_mcp(command: Sequence[str], *, http: tuple[str, int] | None = None,
                       cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
                       permission: str = "elicit", startup_timeout: float = 30.0) -> None:
    """Serve the ACP agent ``command`` as an MCP server until the MCP host goes away (stdio,
    the default) or the task is cancelled (``http=(host, port)``: streamable HTTP on
    ``http://host:port/mcp``)."""
    server = build_mcp_server(command, cwd=cwd, env=env, permission=permission, startup_timeout=startup_timeout)
    if http is None:
        await server.run_stdio_async()
    else:
        host, port = http
        await server.run_streamable_http_async(host=host, port=port)
