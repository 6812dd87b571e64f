"""Serve a Pydantic AI agent over ACP: :func:`pydantic_ai_app` builds the :class:`AgentApp`,
:func:`serve_pydantic_ai` runs it on stdin/stdout.

A prompt turn is one ``agent.run`` (or several, when tools wait for approval), whose events
become session updates: text deltas → ``agent_message_chunk``, thinking → ``agent_thought_chunk``,
each function tool call → ``tool_call`` (kind and title from the tool's name and arguments,
``rawInput``) then ``tool_call_update`` (``rawOutput``, completed or failed). Tools that need
approval (``requires_approval=True`` / ``ApprovalRequired``) end the run with
``DeferredToolRequests``: each is an ACP permission request with its tool call, and the run
resumes with the answers. The message history is kept per ACP session (a :class:`HistoryStore`);
with a session store (``store=SqliteStore(path)``, given to :class:`AgentApp`) acplink answers
``session/load`` and the other session methods, and a session this process does not hold is
rebuilt from the stored history (``ctx.history``: prompts, replies, thinking, tool calls with
their arguments and results) after a restart. ``session/cancel`` cancels the run; the last
request's tokens go out as ``usage_update``.
Pydantic AI is imported when an app is built, not before."""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._extras import require
from ..agent.app import AgentApp
from ..agent.context import Context, PromptContext, ToolCallHandle
from ..agent.serve import run_agent
from ..agent.store import HistoryStore as SessionHistoryStore
from ..errors import ResourceNotFound, UsageError
from ..schema import _generated as s
from ._common import earlier_turns, error_text, framework_tool, json_safe, run_or_cancel, start_tool
from .history import HistoryStore, MemoryHistory

if TYPE_CHECKING:
    from pydantic_ai import Agent as PydanticAgent

    from ..agent.history import HistoryEntry

__all__ = ["pydantic_ai_app", "serve_pydantic_ai"]

_PERMISSION: list[Literal["allow_once", "reject_once"]] = ["allow_once", "reject_once"]


def _model_name(model: Any) -> str:
    if isinstance(model, str):
        return model
    name = getattr(model, "model_name", None)
    return str(name) if name else type(model).__name__


def _usage_of(result: Any) -> Any:
    usage = result.usage  # a property since Pydantic AI 2 (a method before)
    return usage() if callable(usage) else usage


class _Turn:
    """One prompt turn: the ACP tool calls by Pydantic AI's tool-call id, and the events' mapping."""

    def __init__(self, ctx: PromptContext) -> None:
        self.ctx = ctx
        self.tools: dict[str, ToolCallHandle] = {}
        self.finished: set[str] = set()
        self.streamed_text = False

    async def tool(self, part: Any, *, status: Any = "in_progress") -> ToolCallHandle:
        handle = self.tools.get(part.tool_call_id)
        if handle is None:
            handle = await start_tool(self.ctx, part.tool_name, part.args_as_dict(), status=status)
            self.tools[part.tool_call_id] = handle
        else:  # (announced already: deferred for approval, or resumed once approved)
            await handle.update(status=status)
        return handle

    async def events(self, _run_ctx: Any, events: AsyncIterable[Any]) -> None:
        from pydantic_ai import messages as m

        async for event in events:
            if isinstance(event, m.PartStartEvent):
                await self._part(event.part)
            elif isinstance(event, m.PartDeltaEvent):
                delta = event.delta
                if isinstance(delta, m.TextPartDelta) and delta.content_delta:
                    self.streamed_text = True
                    await self.ctx.send_text(delta.content_delta)
                elif isinstance(delta, m.ThinkingPartDelta) and delta.content_delta:
                    await self.ctx.send_thought(delta.content_delta)
            elif isinstance(event, m.FunctionToolCallEvent):
                if event.part.tool_call_id not in self.finished:  # (a rejected call is settled)
                    await self.tool(event.part)
            elif isinstance(event, m.FunctionToolResultEvent):
                await self._result(getattr(event, "part", None) or getattr(event, "result", None))

    async def _part(self, part: Any) -> None:
        from pydantic_ai import messages as m

        if isinstance(part, m.TextPart) and part.content:
            self.streamed_text = True
            await self.ctx.send_text(part.content)
        elif isinstance(part, m.ThinkingPart) and part.content:
            await self.ctx.send_thought(part.content)

    async def _result(self, part: Any) -> None:
        from pydantic_ai import messages as m

        if part is None or part.tool_call_id not in self.tools or part.tool_call_id in self.finished:
            return  # (not ours, or settled already: a rejected call's denial)
        handle = self.tools[part.tool_call_id]
        self.finished.add(part.tool_call_id)
        if isinstance(part, m.ToolReturnPart):
            content = part.content
            text = content if isinstance(content, str) else part.model_response_str()
            await handle.complete(raw_output=json_safe(content), content=[_text_content(text)])
        else:  # a RetryPromptPart: the tool raised ModelRetry, or its arguments did not validate
            text = part.model_response() if hasattr(part, "model_response") else str(part)
            await handle.fail(raw_output={"error": text}, content=[_text_content(text)])

    async def fail_open(self, text: str) -> None:
        """The run failed: every tool call it left running failed with it."""
        for tcid, handle in self.tools.items():
            if tcid not in self.finished:
                self.finished.add(tcid)
                await handle.fail(raw_output={"error": text}, content=[_text_content(text)])


def _text_content(text: str) -> Any:
    from ..builders import tool_content

    return tool_content(text)


def pydantic_ai_app(
    agent: PydanticAgent[Any, Any],
    *,
    name: str | None = None,
    version: str = "0.1.0",
    models: Mapping[str, Any] | Sequence[Any] | None = None,
    deps: Callable[[PromptContext], Any] | None = None,
    history: HistoryStore | None = None,
    context_window: int | None = None,
    **app_options: Any,
) -> AgentApp:
    """An :class:`AgentApp` serving the Pydantic AI ``agent``.

    ``models``: the models the user may choose from (a ``category: model`` config option): a
    mapping of id → model (a Pydantic AI ``Model`` or a model name such as ``"openai:gpt-5"``),
    or a list of them (ids from their names); by default the agent's own model is the one
    choice. ``deps(ctx)`` gives each run its dependencies (``ctx`` is the turn's
    :class:`PromptContext`: the client's files and terminal are there). ``history``: where each
    session's messages are kept (default: in memory; with a session store, ``store=``, a
    session missing there is rebuilt from the store's history). ``context_window``: the context size
    reported in ``usage_update`` (default: the model profile's, when it knows one). Other
    keywords go to :class:`AgentApp`."""
    require("the Pydantic AI adapter", "pydantic-ai", "pydantic_ai")
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

    choices = _choices(agent, models)
    store: HistoryStore = history if history is not None else MemoryHistory()
    app = AgentApp(name or getattr(agent, "name", None) or "pydantic-ai-agent", version,
                   models=[s.ModelInfo(model_id=mid, name=mid) for mid in choices], **app_options)
    output_types = _output_types(agent.output_type, DeferredToolRequests)

    async def ask(turn: _Turn, requests: Any) -> Any:
        results = DeferredToolResults()
        for part in requests.approvals:
            handle = await turn.tool(part, status="pending")
            answer = await turn.ctx.request_permission(handle, options=_PERMISSION)
            if answer.allowed:
                results.approvals[part.tool_call_id] = True
            else:
                turn.finished.add(part.tool_call_id)
                results.approvals[part.tool_call_id] = ToolDenied("The user rejected this tool call.")
                await handle.fail(raw_output={"error": "rejected by the user"})
        for part in requests.calls:  # external tools: nobody on the ACP side runs them
            handle = await turn.tool(part)
            turn.finished.add(part.tool_call_id)
            text = f"the tool {part.tool_name!r} is external: the ACP adapter cannot run it"
            await handle.fail(raw_output={"error": text})
            results.calls[part.tool_call_id] = ToolDenied(text)
        return results

    @app.prompt
    async def prompt(ctx: PromptContext) -> str:
        sid = ctx.session.session_id
        turn = _Turn(ctx)
        options: dict[str, Any] = {"output_type": output_types, "event_stream_handler": turn.events}
        model = choices.get(ctx.session.model_id or "")
        if model is not None:
            options["model"] = model
        if deps is not None:
            options["deps"] = deps(ctx)
        messages = store.get(sid)
        if messages is None:  # (a session this process never ran: a stored one, after a restart)
            messages = _rebuild(earlier_turns(ctx))
        run_args: dict[str, Any] = {"user_prompt": ctx.text}
        try:
            while True:
                done, result = await run_or_cancel(ctx, agent.run(**run_args, message_history=messages, **options))
                if not done or result is None:
                    return "cancelled"
                messages = result.all_messages()
                if not isinstance(result.output, DeferredToolRequests):
                    break
                run_args = {"deferred_tool_results": await ask(turn, result.output)}
                if ctx.cancelled:
                    return "cancelled"
        except Exception as exc:  # the framework's error: the turn ends with it shown, the session goes on
            text = error_text(exc)
            await turn.fail_open(text)
            await ctx.send_text(f"\n\n[error] {text}" if turn.streamed_text else f"[error] {text}")
            return "end_turn"
        store.put(sid, messages)
        if not isinstance(result.output, str) or not turn.streamed_text:
            out = result.output
            await ctx.send_text(out if isinstance(out, str) else _dump(out))
        await _send_usage(ctx, result, model if model is not None else agent.model, context_window)
        return "end_turn"

    if isinstance(app.sessions, SessionHistoryStore):
        return app  # (the session store answers session/load, replaying its own history)

    @app.load_session
    async def load_session(ctx: Context[s.LoadSessionRequest]) -> s.LoadSessionResponse:
        sid = ctx.params.session_id
        messages = store.get(sid)
        if messages is None:
            raise ResourceNotFound(f"no conversation {sid!r} in this agent", {"sessionId": sid})
        sess = app.create_session(ctx.params.cwd, session_id=sid, mcp_servers=ctx.params.mcp_servers)
        await _replay(Context(app, ctx.connection, ctx.params, sess), messages)
        return s.LoadSessionResponse(**app.session_setup(sess))

    return app


def serve_pydantic_ai(agent: PydanticAgent[Any, Any], *, debug: bool = False, **options: Any) -> None:
    """Serve ``agent`` over ACP on stdin/stdout until the client goes (what an editor starts):
    ``run_agent(pydantic_ai_app(agent, **options), debug=debug)``. (For type-checked options,
    a ``deps=`` lambda say, call those two yourself.)"""
    run_agent(pydantic_ai_app(agent, **options), debug=debug)


def _choices(agent: Any, models: Mapping[str, Any] | Sequence[Any] | None) -> dict[str, Any]:
    if models is None:
        own = agent.model
        return {} if own is None else {_model_name(own): None}  # (None: the agent's own model)
    if isinstance(models, Mapping):
        out = dict(models)
    else:
        out = {_model_name(model): model for model in models}
    if not out:
        raise UsageError("models= is empty: give at least one model, or leave it out")
    return out


def _output_types(output_type: Any, deferred: type) -> list[Any]:
    types = list(output_type) if isinstance(output_type, list | tuple) else [output_type]
    return types if deferred in types else [*types, deferred]


def _dump(value: Any) -> str:
    import json

    return json.dumps(json_safe(value), indent=2, ensure_ascii=False)


async def _send_usage(ctx: PromptContext, result: Any, model: Any, context_window: int | None) -> None:
    from pydantic_ai import messages as m

    last = next((msg for msg in reversed(result.new_messages()) if isinstance(msg, m.ModelResponse)), None)
    usage = last.usage if last is not None else _usage_of(result)
    used = (usage.input_tokens or 0) + (usage.output_tokens or 0)
    size = context_window if context_window is not None else getattr(model, "context_window", None)
    if isinstance(size, int) and size > 0:
        from ..builders import usage_update

        await ctx.send_update(usage_update(used=used, size=size))


async def _replay(ctx: Context[Any], messages: list[Any]) -> None:
    """Send a loaded session's history as the updates ``session/load`` replays."""
    from pydantic_ai import messages as m

    from ..builders import text, tool_call

    for message in messages:
        for part in message.parts:
            if isinstance(part, m.UserPromptPart):
                content = part.content if isinstance(part.content, str) else " ".join(
                    c for c in part.content if isinstance(c, str))
                await ctx.send_update(s.UserMessageChunk(content=text(content)))
            elif isinstance(part, m.TextPart) and part.content:
                await ctx.send_text(part.content)
            elif isinstance(part, m.ThinkingPart) and part.content:
                await ctx.send_thought(part.content)
            elif isinstance(part, m.ToolCallPart):
                from ._common import tool_kind, tool_title

                args = part.args_as_dict()
                await ctx.send_update(tool_call(part.tool_call_id, title=tool_title(part.tool_name, args),
                                                kind=tool_kind(part.tool_name), status="completed",
                                                raw_input=json_safe(args)))


_NO_RESULT = "(no result: the turn ended before the tool did)"


def _rebuild(history: list[HistoryEntry]) -> list[Any]:
    """Pydantic AI's message list for a stored history: each prompt a ``ModelRequest``, what
    the agent said, thought and called a ``ModelResponse`` (a response ends at a tool call's
    text that follows it), each call's result a ``ToolReturnPart`` in the request after it.
    Calls that are not a tool's (none here) are left out."""
    from pydantic_ai import messages as m

    out: list[Any] = []
    parts: list[Any] = []
    returns: list[Any] = []

    def flush() -> None:
        if parts:
            out.append(m.ModelResponse(parts=list(parts)))
        if returns:
            out.append(m.ModelRequest(parts=list(returns)))
        parts.clear()
        returns.clear()

    for entry in history:
        if entry.kind == "user_message":
            flush()
            out.append(m.ModelRequest(parts=[m.UserPromptPart(content=entry.text)]))
        elif entry.kind in ("agent_message", "agent_thought") and entry.text:
            if returns:
                flush()
            parts.append(m.TextPart(content=entry.text) if entry.kind == "agent_message"
                         else m.ThinkingPart(content=entry.text))
        elif entry.kind == "tool_call" and (call := framework_tool(entry)) is not None:
            tcid, name, args, output, _failed = call
            parts.append(m.ToolCallPart(tool_name=name, args=args, tool_call_id=tcid))
            returns.append(m.ToolReturnPart(tool_name=name, tool_call_id=tcid,
                                            content=_NO_RESULT if output is None else output))
        elif entry.kind == "turn_end":
            flush()
    flush()
    return out
