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

This module imports the ``mcp`` package (the ``mcp`` extra): :func:`acplink.serve_as_mcp` checks
that it is installed first.
"""

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import NoBackChannelError
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestFormParams, InputRequiredResult, TextContent
from pydantic import BaseModel, Field

from .._tasks import TaskSet
from .._text import sanitize_for_terminal
from ..client import Session
from ..errors import AcpError, UsageError
from ..protocol.initialize import ProtocolChoice
from ..schema import _generated as s
from .agent_holder import AgentGone, AgentHolder, TurnReport, is_agent_failure

__all__ = ["build_mcp_server", "run_mcp_server"]


class _Approval(BaseModel):
    """The form an MCP host fills in for one permission request."""

    allow: bool = Field(description="allow the agent to do this")


#: how long a permission request waits for the MCP host's answer before it is denied
ANSWER_TIMEOUT = 600.0


class _Question:
    """One permission request of the agent, waiting for the MCP host."""

    def __init__(self, key: str, params: s.RequestPermissionRequest, message: str) -> None:
        self.key = key
        self.params = params
        self.message = message
        self.answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()


class _Held:
    """A prompt turn, running as a task of the bridge: it outlives one MCP request when the host
    answers a permission request by retrying the call (MCP 2026-07-28 ``input_required``)."""

    def __init__(self, token: str, ctx: Context, session_id: str) -> None:
        self.token = token
        self.session_id = session_id
        self.ctx = ctx  # the current round (its progress token)
        self.questions: asyncio.Queue[_Question] = asyncio.Queue()
        self.asked: dict[str, _Question] = {}
        self.task: asyncio.Future[TurnReport] | None = None
        self.streamed = 0

    async def progress(self, piece: str) -> None:
        self.streamed += len(piece)
        with contextlib.suppress(Exception):  # (progress is best effort: a host may not listen)
            await self.ctx.report_progress(self.streamed, None, piece)


class _Bridge:
    """The tools' state: the agent, and the turn running in each session (where a permission
    request is asked)."""

    def __init__(self, command: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: dict[str, str] | None,
                 permission: str, startup_timeout: float, protocol: ProtocolChoice) -> None:
        self.agent = AgentHolder(command, cwd=cwd, env=env, permission=permission, ask=self.ask,
                                 startup_timeout=startup_timeout, protocol=protocol)
        self.tasks = TaskSet("acplink mcp-server turns")
        self.running: dict[str, _Held] = {}  # session id -> its turn
        self.held: dict[str, _Held] = {}  # request state -> a turn waiting for the host's answer

    async def ask(self, params: s.RequestPermissionRequest) -> str | None:
        """A permission request, put to the MCP host whose prompt is running in that session."""
        held = self.running.get(params.session_id)
        if held is None or not _can_elicit(held.ctx):
            return _option(params, "reject")
        call = params.tool_call
        message = sanitize_for_terminal(f"The agent {self.agent.name!r} asks to run: "
                                        f"{call.title or call.tool_call_id} ({call.kind or 'other'})")
        question = _Question(f"permission-{uuid.uuid4().hex[:12]}", params, message)
        held.questions.put_nowait(question)
        try:
            async with asyncio.timeout(ANSWER_TIMEOUT):
                allowed = await question.answer
        except TimeoutError:
            allowed = False
        return _option(params, "allow" if allowed else "reject")

    async def prompt(self, ctx: Context, text: str, session_id: str | None, cwd: str | None) -> Any:
        state = ctx.request_state
        held = self.held.pop(state, None) if state else None
        if held is not None:  # a retry carrying the host's answers
            held.ctx = ctx
            for key, response in (ctx.input_responses or {}).items():
                question = held.asked.pop(key, None)
                if question is not None and not question.answer.done():
                    question.answer.set_result(_allowed(response))
        else:
            session = await self.guarded(self.agent.session(session_id, cwd))
            sid = session.session_id
            if sid in self.running:
                raise ToolError(f"the session {sid!r} is busy with another prompt (cancel it first)")
            held = _Held(uuid.uuid4().hex, ctx, sid)
            self.running[sid] = held
            held.task = self.tasks.spawn(self._turn(held, session, text), name=f"prompt {sid}")
        try:
            return await self._round(held)
        except asyncio.CancelledError:  # the host cancelled its call: the turn is cancelled too
            if held.task is not None and not held.task.done():
                self.tasks.spawn(self._cancel_quietly(held.session_id), name=f"cancel {held.session_id}")
            raise

    async def _cancel_quietly(self, session_id: str) -> None:
        with contextlib.suppress(AcpError):
            await self.agent.cancel(session_id)

    async def _turn(self, held: _Held, session: Session, text: str) -> TurnReport:
        try:
            return cast(TurnReport, await self.guarded(self.agent.run_turn(session, text, held.progress)))
        finally:
            self.running.pop(session.session_id, None)
            for question in held.asked.values():
                if not question.answer.done():
                    question.answer.set_result(False)

    async def _round(self, held: _Held) -> Any:
        """Wait for the turn to end (its result) or for a question the host must answer."""
        task = held.task
        assert task is not None
        while True:
            asking = self.tasks.spawn(held.questions.get(), name="mcp-server question")
            try:
                await asyncio.wait([cast("asyncio.Future[Any]", task), asking], return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not asking.done():
                    asking.cancel()
            if task.done():
                if asking.done() and not asking.cancelled():
                    asking.result().answer.cancel()
                report = task.result()
                return CallToolResult(content=[TextContent(type="text", text=report.summary())],
                                      structured_content=report.as_dict(), is_error=False)
            question = asking.result()
            try:  # a host with a back channel (the handshake-era revisions): ask it now
                answer = await held.ctx.elicit(question.message, _Approval)
            except NoBackChannelError:  # 2026-07-28: answer by retrying the call
                held.asked[question.key] = question
                self.held[held.token] = held
                request = ElicitRequest(params=ElicitRequestFormParams(
                    message=question.message, requested_schema=render_elicitation_schema(_Approval)))
                return InputRequiredResult(input_requests={question.key: request}, request_state=held.token)
            except Exception:  # the host failed the elicitation: deny
                question.answer.set_result(False)
                continue
            question.answer.set_result(answer.action == "accept" and bool(getattr(answer.data, "allow", False)))

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

    async def aclose(self) -> None:
        await self.tasks.aclose()
        await self.agent.aclose()


def _allowed(response: Any) -> bool:
    """Whether an elicitation answer (an ``ElicitResult``) allows the request."""
    content = getattr(response, "content", None)
    return getattr(response, "action", None) == "accept" and isinstance(content, dict) and content.get("allow") is True


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
                     startup_timeout: float = 30.0, name: str | None = None,
                     protocol: ProtocolChoice = 1) -> MCPServer:
    """The ``mcp`` package server (an ``MCPServer``) whose tools drive the ACP agent ``command``
    (a list of arguments) over ACP ``protocol`` (1, 2 or ``"auto"``). The agent starts on the
    first call and stops with the server."""
    bridge = _Bridge(command, cwd=cwd, env=env, permission=permission, startup_timeout=startup_timeout,
                     protocol=protocol)
    agent = bridge.agent

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await bridge.aclose()

    server: MCPServer = MCPServer(name or "acplink", instructions=(
        f"The ACP agent {agent.name!r} as tools: `prompt` sends it a prompt (give `session_id` to continue a "
        "conversation), `new_session` opens one, `list_sessions` lists them, `cancel` stops a running prompt."),
        lifespan=lifespan, log_level="WARNING")  # (a tool's error result is the host's to show, not a log line)

    @server.tool(name="prompt", description="Send a prompt to the ACP agent and return its reply and a summary "
                                             "of its tool calls. Without session_id a new session is opened "
                                             "(its id is in the result); with it, the conversation continues.")
    async def prompt(text: str, ctx: Context, session_id: str | None = None, cwd: str | None = None) -> Any:
        return await bridge.prompt(ctx, text, session_id, cwd)

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


async def run_mcp_server(command: Sequence[str], *, http: tuple[str, int] | None = None,
                       cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
                       permission: str = "elicit", startup_timeout: float = 30.0,
                       protocol: ProtocolChoice = 1) -> None:
    """Serve the ACP agent ``command`` as an MCP server until the MCP host goes away (stdio,
    the default) or the task is cancelled (``http=(host, port)``: streamable HTTP on
    ``http://host:port/mcp``)."""
    server = build_mcp_server(command, cwd=cwd, env=env, permission=permission, startup_timeout=startup_timeout,
                              protocol=protocol)
    if http is None:
        await server.run_stdio_async()
    else:
        host, port = http
        await server.run_streamable_http_async(host=host, port=port)
