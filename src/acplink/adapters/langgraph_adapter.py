"""Serve a compiled LangGraph graph whose state has a ``messages`` list over ACP:
:func:`langgraph_app` builds the :class:`AgentApp`, :func:`serve_langgraph` runs it on
stdin/stdout.

A prompt turn streams the graph (``stream_mode=["messages", "updates"]``) on the thread whose id
is the ACP session id: the model's tokens → ``agent_message_chunk`` (reasoning blocks →
``agent_thought_chunk``), each tool call of an ``AIMessage`` → ``tool_call`` (kind and title from
the tool's name and arguments), its ``ToolMessage`` → ``tool_call_update`` (failed when the tool
node reports an error). An ``interrupt(value)`` pauses the graph: the value is asked of the user
(see :func:`_ask`) and the graph resumed with the answer (``Command(resume=...)``). The
checkpointer keeps each thread, so ``session/load`` replays it (a :class:`MemorySaver` when the
graph has none). With a session store (``store=SqliteStore(path)``, given to :class:`AgentApp`)
acplink answers ``session/load`` from the store, and a session whose thread the checkpointer
does not have (the agent restarted with a ``MemorySaver``; a forked session) starts its thread
with the conversation rebuilt from the stored history (``ctx.history``). LangGraph is imported
when an app is built, not before."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._extras import require
from ..agent.app import AgentApp
from ..agent.context import Context, PromptContext, ToolCallHandle
from ..agent.serve import run_agent
from ..agent.store import HistoryStore
from ..errors import ResourceNotFound
from ..schema import _generated as s
from ._common import (
    earlier_turns,
    error_text,
    framework_tool,
    json_safe,
    run_or_cancel,
    start_tool,
    tool_kind,
    tool_title,
)

if TYPE_CHECKING:
    from ..agent.history import HistoryEntry

__all__ = ["langgraph_app", "serve_langgraph"]

_PERMISSION: list[Literal["allow_once", "reject_once"]] = ["allow_once", "reject_once"]
_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other")


def _text_of(content: Any) -> tuple[str, str]:
    """(text, reasoning) of a LangChain message's content: a string, or a list of blocks."""
    if isinstance(content, str):
        return content, ""
    text, thought = [], []
    for block in content or ():
        if isinstance(block, str):
            text.append(block)
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind == "text":
                text.append(str(block.get("text", "")))
            elif kind in ("reasoning", "thinking"):
                thought.append(str(block.get("reasoning") or block.get("thinking") or block.get("text") or ""))
    return "".join(text), "".join(thought)


class _Turn:
    def __init__(self, ctx: PromptContext) -> None:
        self.ctx = ctx
        self.tools: dict[str, ToolCallHandle] = {}
        self.finished: set[str] = set()
        self.interrupts: list[Any] = []
        self.streamed_text = False

    async def on_message(self, message: Any) -> None:
        from langchain_core.messages import AIMessage, AIMessageChunk

        if isinstance(message, AIMessage | AIMessageChunk):
            text, thought = _text_of(message.content)
            if thought:
                await self.ctx.send_thought(thought)
            if text:
                self.streamed_text = True
                await self.ctx.send_text(text)

    async def on_update(self, update: Mapping[str, Any]) -> None:
        from langchain_core.messages import AIMessage, ToolMessage

        for node, value in update.items():
            if node == "__interrupt__":
                self.interrupts.extend(value)
                continue
            messages = value.get("messages", ()) if isinstance(value, Mapping) else ()
            for message in messages if isinstance(messages, list | tuple) else (messages,):
                if isinstance(message, AIMessage):
                    for call in message.tool_calls:
                        tcid = call.get("id")
                        if tcid and tcid not in self.tools:
                            self.tools[tcid] = await start_tool(self.ctx, call["name"], call.get("args") or {})
                elif isinstance(message, ToolMessage):
                    await self._result(message)

    async def _result(self, message: Any) -> None:
        from ..builders import tool_content

        handle = self.tools.get(message.tool_call_id)
        if handle is None or message.tool_call_id in self.finished:
            return
        self.finished.add(message.tool_call_id)
        text, _ = _text_of(message.content)
        if getattr(message, "status", "success") == "error":
            await handle.fail(raw_output={"error": text}, content=[tool_content(text)])
        else:
            await handle.complete(raw_output=json_safe(message.content), content=[tool_content(text)])

    async def fail_open(self, text: str) -> None:
        from ..builders import tool_content

        for tcid, handle in self.tools.items():
            if tcid not in self.finished:
                self.finished.add(tcid)
                await handle.fail(raw_output={"error": text}, content=[tool_content(text)])


async def _ask(ctx: PromptContext, value: Any) -> Any:
    """What the user answers to ``interrupt(value)``; the graph is resumed with it.

    * ``{"permission": TITLE, "kind": KIND, "raw_input": ...}``: an ACP permission request with a
      tool call of that title and kind; resumed with ``True`` (allowed) or ``False``.
    * ``{"question": TEXT, "schema": JSON_SCHEMA}``: an ACP elicitation (form); resumed with the
      accepted content (a dict), or ``None`` when the user declined or cancelled.
    * anything else: its text asked as a question with one text field (resumed with the answer
      string, or ``None``); a client without elicitation gets a permission request instead.
    """
    caps = ctx.client_capabilities
    can_elicit = caps is not None and getattr(caps, "elicitation", None) is not None
    if isinstance(value, Mapping) and "permission" in value:
        return await _permission(ctx, str(value["permission"]), value.get("kind"), value.get("raw_input"))
    if isinstance(value, Mapping) and "question" in value and can_elicit:
        schema = value.get("schema") or {"type": "object", "properties": {
            "answer": {"type": "string", "title": "Answer"}}, "required": ["answer"]}
        resp = await ctx.elicit(str(value["question"]), dict(schema))
        content = getattr(resp, "content", None) if getattr(resp, "action", None) == "accept" else None
        if content is not None and "schema" not in value:
            return content.get("answer")
        return content
    question = str(value.get("question", value)) if isinstance(value, Mapping) else str(value)
    if not can_elicit:
        return await _permission(ctx, question, None, json_safe(value))
    resp = await ctx.elicit(question, {"type": "object", "properties": {
        "answer": {"type": "string", "title": "Answer"}}, "required": ["answer"]})
    content = getattr(resp, "content", None) if getattr(resp, "action", None) == "accept" else None
    return None if content is None else content.get("answer")


async def _permission(ctx: PromptContext, title: str, kind: Any, raw_input: Any) -> bool:
    fields: dict[str, Any] = {} if raw_input is None else {"raw_input": json_safe(raw_input)}
    handle = await ctx.start_tool_call(title, kind=kind if kind in _KINDS else "other", status="pending", **fields)
    answer = await ctx.request_permission(handle, options=_PERMISSION)
    if answer.allowed:
        await handle.complete()
    else:
        await handle.fail(raw_output={"error": "rejected by the user"})
    return answer.allowed


def langgraph_app(
    graph: Any,
    *,
    name: str | None = None,
    version: str = "0.1.0",
    models: Sequence[str] = (),
    config: Callable[[PromptContext], Mapping[str, Any]] | None = None,
    input_key: str = "messages",
    **app_options: Any,
) -> AgentApp:
    """An :class:`AgentApp` serving the compiled LangGraph ``graph`` (its state holds the
    conversation under ``input_key``, ``"messages"`` by default).

    Each ACP session is a thread (``configurable.thread_id`` = the session id) of the graph's
    checkpointer (a ``MemorySaver`` is given to a graph compiled without one). ``models``: ids the
    user may choose from (a ``category: model`` config option), passed to the graph as
    ``configurable.model``. ``config(ctx)``: more of the run's config (``configurable`` entries are
    merged). Other keywords go to :class:`AgentApp`: with ``store=`` a session store, a thread
    the checkpointer lacks starts from the session's stored history (see the module)."""
    require("the LangGraph adapter", "langgraph", "langgraph", "langchain_core")
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.types import Command

    if not getattr(graph, "checkpointer", None):
        graph = graph.copy(update={"checkpointer": MemorySaver()})
    app = AgentApp(name or getattr(graph, "name", None) or "langgraph-agent", version,
                   models=[s.ModelInfo(model_id=mid, name=mid) for mid in models], **app_options)

    def run_config(ctx: Context[Any], session_id: str) -> dict[str, Any]:
        extra = dict(config(ctx)) if config is not None and isinstance(ctx, PromptContext) else {}
        configurable = {**extra.pop("configurable", {}), "thread_id": session_id}
        sess = ctx.session
        if sess is not None and sess.model_id:
            configurable["model"] = sess.model_id
        return {**extra, "configurable": configurable}

    async def stream(turn: _Turn, graph_input: Any, cfg: dict[str, Any]) -> None:
        async for mode, data in graph.astream(graph_input, cfg, stream_mode=["messages", "updates"]):
            if mode == "messages":
                await turn.on_message(data[0])
            elif mode == "updates" and isinstance(data, Mapping):
                await turn.on_update(data)

    @app.prompt
    async def prompt(ctx: PromptContext) -> str:
        turn = _Turn(ctx)
        cfg = run_config(ctx, ctx.session.session_id)
        graph_input: Any = {input_key: [*await earlier(ctx, cfg), HumanMessage(content=ctx.text)]}
        try:
            while True:
                done, _ = await run_or_cancel(ctx, stream(turn, graph_input, cfg))
                if not done:
                    return "cancelled"
                if not turn.interrupts:
                    return "end_turn"
                pending, turn.interrupts = turn.interrupts, []
                answers = {}
                for intr in pending:
                    answers[intr.id] = await _ask(ctx, intr.value)
                    if ctx.cancelled:
                        return "cancelled"
                graph_input = Command(resume=answers if len(answers) > 1 else next(iter(answers.values())))
        except Exception as exc:  # the framework's error: the turn ends with it shown, the session goes on
            text = error_text(exc)
            await turn.fail_open(text)
            await ctx.send_text(f"\n\n[error] {text}" if turn.streamed_text else f"[error] {text}")
            return "end_turn"

    async def earlier(ctx: PromptContext, cfg: dict[str, Any]) -> list[Any]:
        """The stored conversation to start the thread with, when the checkpointer has none."""
        if not stored:
            return []
        state = await graph.aget_state(cfg)
        if state is not None and (state.values or {}).get(input_key):
            return []
        return _rebuild(earlier_turns(ctx))

    stored = isinstance(app.sessions, HistoryStore)
    if stored:
        return app  # (the session store answers session/load, replaying its own history)

    @app.load_session
    async def load_session(ctx: Context[s.LoadSessionRequest]) -> s.LoadSessionResponse:
        sid = ctx.params.session_id
        state = await graph.aget_state({"configurable": {"thread_id": sid}})
        messages = (state.values or {}).get(input_key) if state is not None else None
        if not messages:
            raise ResourceNotFound(f"no conversation {sid!r} in this agent's checkpointer", {"sessionId": sid})
        sess = app.create_session(ctx.params.cwd, session_id=sid, mcp_servers=ctx.params.mcp_servers)
        await _replay(Context(app, ctx.connection, ctx.params, sess), messages)
        return s.LoadSessionResponse(**app.session_setup(sess))

    return app


def serve_langgraph(graph: Any, *, debug: bool = False, **options: Any) -> None:
    """Serve ``graph`` over ACP on stdin/stdout until the client goes (what an editor starts):
    ``run_agent(langgraph_app(graph, **options), debug=debug)``."""
    run_agent(langgraph_app(graph, **options), debug=debug)


async def _replay(ctx: Context[Any], messages: Sequence[Any]) -> None:
    """A thread's messages as the updates ``session/load`` replays."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from ..builders import text, tool_call

    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    for message in messages:
        body, thought = _text_of(message.content)
        if isinstance(message, HumanMessage):
            await ctx.send_update(s.UserMessageChunk(content=text(body)))
        elif isinstance(message, AIMessage):
            if thought:
                await ctx.send_thought(thought)
            if body:
                await ctx.send_text(body)
            for call in message.tool_calls:
                result = results.get(call.get("id") or "")
                status: Literal["failed", "completed"] = (
                    "failed" if result is not None and getattr(result, "status", "") == "error" else "completed")
                args = call.get("args") or {}
                await ctx.send_update(tool_call(call.get("id") or "", title=tool_title(call["name"], args),
                                                kind=tool_kind(call["name"]), status=status,
                                                raw_input=json_safe(args),
                                                raw_output=None if result is None else json_safe(result.content)))


def _rebuild(history: list[HistoryEntry]) -> list[Any]:
    """LangChain messages for a stored history: each prompt a ``HumanMessage``, what the agent
    said and called an ``AIMessage`` (with its ``tool_calls``; a message ends at the text that
    follows a tool call), each call's result a ``ToolMessage`` after it. Thoughts, and calls
    that are not a tool's (an ``interrupt()``'s permission), are left out."""
    import json

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[Any] = []
    said: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[Any] = []

    def flush() -> None:
        if said or calls:
            out.append(AIMessage(content="".join(said), tool_calls=list(calls)))
        out.extend(results)
        said.clear()
        calls.clear()
        results.clear()

    for entry in history:
        if entry.kind == "user_message":
            flush()
            out.append(HumanMessage(content=entry.text))
        elif entry.kind == "agent_message" and entry.text:
            if calls:
                flush()
            said.append(entry.text)
        elif entry.kind == "tool_call" and (call := framework_tool(entry)) is not None:
            tcid, name, args, output, failed = call
            if isinstance(output, Mapping) and failed and "error" in output:
                output = output["error"]
            text = ("(no result: the turn ended before the tool did)" if output is None else
                    output if isinstance(output, str) else json.dumps(output, ensure_ascii=False))
            calls.append({"name": name, "args": args, "id": tcid, "type": "tool_call"})
            results.append(ToolMessage(content=text, tool_call_id=tcid, name=name,
                                       status="error" if failed else "success"))
        elif entry.kind == "turn_end":
            flush()
    flush()
    return out
