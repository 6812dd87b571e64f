"""What an agent's handlers get: a context for the request, with everything a turn needs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args

import orjson

from ..errors import ConnectionClosed, ProtocolError, UsageError
from ..schema import _generated as s
from ..schema._parse import parse

if TYPE_CHECKING:
    from ..connection.agent_side import AgentSideConnection, Turn
    from .app import AgentBase
    from .display_terminal import DisplayTerminal
    from .history import HistoryEntry
    from .mcp import McpCaller

__all__ = [
    "AgentSession",
    "Context",
    "PermissionAnswer",
    "PromptContext",
    "TerminalHandle",
    "ToolCallHandle",
]

P = TypeVar("P")
T = TypeVar("T")


@dataclass
class AgentSession:
    """An agent-side session: what the framework knows about it, plus ``data`` for yours."""

    session_id: str
    cwd: str
    mcp_servers: list[Any] = field(default_factory=list)
    additional_directories: list[str] = field(default_factory=list)
    mode_id: str | None = None
    model_id: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    updated_at: str | None = None
    #: tool calls started in this session (id → last status)
    tool_calls: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    #: the conversation as served over ACP v2 (``{"role", "messageId", "content"}``), replayed by
    #: ``session/resume``; an app that stores sessions keeps it with them
    messages: list[dict[str, Any]] = field(default_factory=list)
    #: tool-call / terminal id → its cancel hook (``start_tool_call(on_cancel=...)``; v2 only)
    cancel_hooks: dict[str, Callable[[], Any]] = field(default_factory=dict)
    #: who created it: :data:`~acplink.agent.store.LOCAL_PRINCIPAL`, or the principal of the
    #: server token its creator connected with (another principal is told it does not exist)
    principal: str = "local"


class Context(Generic[P]):
    """Per-request context: the typed ``params``, the connection, the app, the session."""

    def __init__(self, app: AgentBase, conn: AgentSideConnection, params: P,
                 session: AgentSession | None = None) -> None:
        self.app = app
        self.connection = conn
        self.params = params
        self._session = session

    @property
    def session(self) -> AgentSession | None:
        """The request's session, when it names a known one (``None`` for ``initialize``, ...)."""
        return self._session

    @property
    def mcp(self) -> McpCaller:
        """The MCP servers the client provides over ACP (MCP-over-ACP): ``ctx.mcp.servers``,
        ``await ctx.mcp.request(...)``, ``list_tools``, ``call_tool`` (see docs/mcp.md)."""
        from .mcp import McpCaller

        return McpCaller(self)

    @property
    def client_capabilities(self) -> s.ClientCapabilities | None:
        """What the client advertised at initialize."""
        caps = self.connection.peer_capabilities
        return caps if isinstance(caps, s.ClientCapabilities) else None

    @property
    def session_id(self) -> str:
        if self._session is None:
            raise UsageError("this request has no session")
        return self._session.session_id

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        """Run ``coro`` as a task of the connection: work that goes on after the handler
        returns (e.g. announcing the commands of a session just created: a handler that
        returns right after spawning has its response written before the task takes its
        first step). The connection owns it: closing the connection cancels and awaits it. A
        failure is logged as one warning line; the returned task can also be awaited (or
        cancelled) like any other."""
        try:
            return self.connection.tasks.spawn(coro, name=f"acplink-spawned-{getattr(coro, '__name__', 'task')}",
                                              report=True)
        except RuntimeError:
            raise ConnectionClosed("the connection is closed: nothing can be spawned on it") from None

    async def send_update(self, update: Any) -> None:
        """Send any ``session/update`` for this context's session."""
        await self.connection.session_update(s.SessionNotification(session_id=self.session_id, update=update))

    async def send_text(self, text: str, *, message_id: str | None = None) -> None:
        """Stream a chunk of the agent's reply."""
        await self.connection.notify_json(self.connection.vocabulary.wire("session_update"), self._chunk_json("agent_message_chunk", text, message_id))

    async def send_thought(self, text: str, *, message_id: str | None = None) -> None:
        """Stream a chunk of the agent's reasoning."""
        await self.connection.notify_json(self.connection.vocabulary.wire("session_update"), self._chunk_json("agent_thought_chunk", text, message_id))

    def _chunk_json(self, kind: str, text: str, message_id: str | None) -> bytes:
        # The hot path of every streaming agent: the wire JSON of a text chunk is built
        # directly from checked values (valid by construction), not through three models.
        if type(text) is not str:
            raise UsageError(f"chunk text must be a str, not {type(text).__name__}")
        update: dict[str, Any] = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
        if message_id is not None:
            if type(message_id) is not str:
                raise UsageError(f"message_id must be a str, not {type(message_id).__name__}")
            update["messageId"] = message_id
        return orjson.dumps({"sessionId": self.session_id, "update": update})

    async def send_plan(self, entries: Sequence[s.PlanEntry | str]) -> None:
        """Publish the plan (replaces the previous one). Strings become pending entries."""
        items = [e if isinstance(e, s.PlanEntry) else s.PlanEntry(content=e, priority="medium", status="pending")
                 for e in entries]
        await self.send_update(s.Plan(entries=items))

    async def send_commands(self, commands: Sequence[s.AvailableCommand]) -> None:
        """Announce the slash commands available in this session."""
        await self.send_update(s.AvailableCommandsUpdate(available_commands=list(commands)))

    async def send_mode(self, mode_id: str) -> None:
        """Tell the client the session's mode changed."""
        if self._session is not None:
            self._session.mode_id = mode_id
        await self.send_update(s.CurrentModeUpdate(current_mode_id=mode_id))

    async def send_title(self, title: str) -> None:
        """Update the session's title (``session_info_update``)."""
        if self._session is not None:
            self._session.title = title
        await self.send_update(s.SessionInfoUpdate(title=title))


@dataclass
class PermissionAnswer:
    """The client's answer to a permission request."""

    outcome: Literal["selected", "cancelled", "timeout"]
    option: s.PermissionOption | None = None

    @property
    def option_id(self) -> str | None:
        return self.option.option_id if self.option else None

    @property
    def allowed(self) -> bool:
        """True when the user picked an allow option."""
        return self.option is not None and str(self.option.kind).startswith("allow")


DEFAULT_PERMISSION_OPTIONS: tuple[tuple[str, str, s.PermissionOptionKind], ...] = (
    ("allow", "Allow", "allow_once"),
    ("allow_always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
)

#: the name of an option given by its kind alone (a kind not listed: its words)
_KIND_NAMES = {"allow_once": "Allow", "allow_always": "Always allow", "reject_once": "Reject",
               "reject_always": "Always reject"}


def _permission_options(
    options: Sequence[s.PermissionOption | s.PermissionOptionKind | tuple[s.PermissionOptionKind, str]],
) -> list[s.PermissionOption]:
    """Options from kinds (``"allow_once"``: id ``allow_once``, name "Allow"), ``(kind, name)``
    pairs and ready :class:`PermissionOption` objects (order kept); ids are unique."""
    kinds: tuple[str, ...] = get_args(s.PermissionOptionKind)
    taken = {o.option_id for o in options if isinstance(o, s.PermissionOption)}
    out: list[s.PermissionOption] = []
    kind: str
    for item in options:
        if isinstance(item, s.PermissionOption):
            out.append(item)
            continue
        if isinstance(item, str):
            kind, name = item, _KIND_NAMES.get(item) or item.replace("_", " ").capitalize()
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
            kind, name = item
        else:
            raise UsageError(f"a permission option is a kind, a (kind, name) pair or a PermissionOption, not {item!r}")
        if kind not in kinds:
            raise UsageError(f"unknown permission option kind {kind!r} (kinds: {', '.join(kinds)})")
        option_id: str = kind
        n = 2
        while option_id in taken:  # the same kind twice: allow_once, allow_once_2, ...
            option_id, n = f"{kind}_{n}", n + 1
        taken.add(option_id)
        out.append(s.PermissionOption(option_id=option_id, name=name, kind=kind))
    if not out:
        raise UsageError("request_permission needs at least one option")
    ids = [o.option_id for o in out]
    if len(set(ids)) != len(ids):
        raise UsageError(f"permission option ids must be unique (got {ids})")
    return out


class ToolCallHandle:
    """A tool call started by :meth:`PromptContext.start_tool_call`."""

    def __init__(self, ctx: PromptContext, tool_call_id: str, *, title: str | None = None,
                 kind: s.ToolKind | None = None) -> None:
        self.ctx = ctx
        self.tool_call_id = tool_call_id
        self.title = title
        self.kind = kind

    async def update(self, **fields: Any) -> None:
        """Send a ``tool_call_update`` (status, title, content, locations, raw_output, ...)."""
        await self.ctx.update_tool_call(self.tool_call_id, **fields)

    async def complete(self, **fields: Any) -> None:
        await self.update(status="completed", **fields)

    async def fail(self, **fields: Any) -> None:
        await self.update(status="failed", **fields)


class TerminalHandle:
    """A command running in the client's terminal (``terminal/*``). Released automatically
    at the end of the turn; ``async with`` releases it at the end of the block."""

    def __init__(self, ctx: PromptContext, terminal_id: str) -> None:
        self.ctx = ctx
        self.terminal_id = terminal_id
        self.released = False

    def _ids(self) -> dict[str, Any]:
        return {"session_id": self.ctx.session_id, "terminal_id": self.terminal_id}

    async def output(self) -> s.TerminalOutputResponse:
        return await self.ctx.connection.terminal_output(**self._ids())

    async def wait(self) -> s.WaitForTerminalExitResponse:
        return await self.ctx.connection.terminal_wait_for_exit(**self._ids())

    async def kill(self) -> None:
        await self.ctx.connection.terminal_kill(**self._ids())

    async def release(self) -> None:
        if self.released:
            return
        self.released = True
        self.ctx._terminals.discard(self)
        await self.ctx.connection.terminal_release(**self._ids())

    async def __aenter__(self) -> TerminalHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class PromptContext(Context["s.PromptRequest"]):  # (quoted: the model is defined on first use)
    """Everything a prompt turn can do: stream, tool calls, plans, permission, files,
    terminals, elicitation, and whether the turn was cancelled."""

    def __init__(self, app: AgentBase, conn: AgentSideConnection, params: s.PromptRequest,
                 session: AgentSession, turn: Turn | None) -> None:
        super().__init__(app, conn, params, session)
        self._prompt_session = session
        self.turn = turn
        self._terminals: set[TerminalHandle] = set()

    @property
    def session(self) -> AgentSession:
        """The turn's session (always there in a prompt handler)."""
        return self._prompt_session

    @property
    def text(self) -> str:
        """The prompt's text blocks joined."""
        return "".join(b.text for b in self.params.prompt if isinstance(b, s.TextContent))

    @property
    def history(self) -> list[HistoryEntry]:
        """The session's history so far (this turn's prompt last), when the app's store keeps
        one (``AgentApp(store=SqliteStore(...))``); empty otherwise. See docs/sessions.md."""
        from .store import HistoryStore

        store = self.app.sessions
        return store.history(self.session.session_id) if isinstance(store, HistoryStore) else []

    @property
    def cancelled(self) -> bool:
        """True once the client sent ``session/cancel`` for this turn."""
        return self.turn is not None and self.turn.cancelled

    async def wait_cancelled(self) -> None:
        """Wait until the turn is cancelled."""
        if self.turn is None:
            await asyncio.Event().wait()
        else:
            await self.turn.cancel_event.wait()

    # -- tool calls --------------------------------------------------------------------------

    async def start_tool_call(self, title: str, *, kind: s.ToolKind = "other",
                              status: s.ToolCallStatus = "pending", tool_call_id: str | None = None,
                              on_cancel: Callable[[], Any] | None = None, **fields: Any) -> ToolCallHandle:
        """Announce a tool call; returns a handle to update it. ``on_cancel`` (sync or async,
        no arguments) makes the call cancellable by the client on ACP v2 (``tool_call/cancel``)."""
        tcid = tool_call_id or f"call_{uuid.uuid4().hex[:12]}"
        if on_cancel is not None:
            self.session.cancel_hooks[tcid] = on_cancel
        await self.send_update(s.ToolCall(tool_call_id=tcid, title=title, kind=kind, status=status, **fields))
        self.session.tool_calls[tcid] = status
        return ToolCallHandle(self, tcid, title=title, kind=kind)

    async def update_tool_call(self, tool_call_id: str, **fields: Any) -> None:
        """Send a ``tool_call_update``; the id must be one this session started."""
        if tool_call_id not in self.session.tool_calls:
            raise UsageError(f"tool-call update for unknown id {tool_call_id!r}: start it with start_tool_call first")
        await self.send_update(s.ToolCallProgress(tool_call_id=tool_call_id, **fields))
        if "status" in fields:
            self.session.tool_calls[tool_call_id] = fields["status"]

    # -- permission --------------------------------------------------------------------------

    async def request_permission(
        self,
        tool_call: ToolCallHandle | s.ToolCallUpdate | str,
        options: Sequence[s.PermissionOption | s.PermissionOptionKind | tuple[s.PermissionOptionKind, str]]
        | None = None,
        *,
        accepts_timeout: bool = False,
        timeout: float | None = None,
    ) -> PermissionAnswer:
        """Ask the user; returns which option they picked (or cancelled / timeout).

        ``options``: kinds (``["allow_once", "reject_once"]``: each kind is the option's id,
        with a name derived from it), ``(kind, name)`` pairs, and :class:`PermissionOption`
        objects, mixed as you like. Default: allow, always allow, reject.
        ``accepts_timeout`` opts in to the seed-era ``timeout`` outcome (acplink extension).
        """
        if isinstance(tool_call, ToolCallHandle):
            # title and kind let the client show the call and match its rules (e.g. by kind)
            tc = s.ToolCallUpdate(tool_call_id=tool_call.tool_call_id, title=tool_call.title, kind=tool_call.kind)
        elif isinstance(tool_call, str):
            tc = s.ToolCallUpdate(tool_call_id=tool_call)
        else:
            tc = tool_call
        opts = _permission_options(options) if options is not None else [
            s.PermissionOption(option_id=i, name=n, kind=k) for i, n, k in DEFAULT_PERMISSION_OPTIONS]
        meta = {"acplink": {"acceptsTimeout": True}} if accepts_timeout else None
        req = s.RequestPermissionRequest(session_id=self.session_id, tool_call=tc, options=opts, meta=meta)
        resp = await self.connection.call(self.connection.vocabulary.wire("request_permission"), req, timeout=timeout)
        outcome = resp.outcome
        tag = getattr(outcome, "outcome", None)
        if isinstance(outcome, s.SelectedPermissionOutcome):
            chosen = next((o for o in opts if o.option_id == outcome.option_id), None)
            if chosen is None:
                raise ProtocolError(f"the client selected option {outcome.option_id!r}, which was not offered "
                                    f"(offered: {[o.option_id for o in opts]})")
            return PermissionAnswer("selected", chosen)
        if tag == "timeout":
            return PermissionAnswer("timeout")
        if tag == "cancelled":
            return PermissionAnswer("cancelled")
        raise ProtocolError(f"unknown permission outcome from the client: {outcome!r}")

    # -- files and terminals -----------------------------------------------------------------

    async def read_file(self, path: str, *, line: int | None = None, limit: int | None = None) -> str:
        """Read a text file through the client: ``fs/read_text_file``, or the ``read_text_file``
        tool of the client's workspace MCP server where the protocol has no ``fs/*`` (ACP v2;
        see :mod:`acplink.agent.workspace`)."""
        # a hot path of tool-using agents: the params are built from checked values directly
        if type(path) is not str:
            raise UsageError(f"path must be a str, not {type(path).__name__}")
        params: dict[str, Any] = {"sessionId": self.session_id, "path": path}
        for key, value in (("line", line), ("limit", limit)):
            if value is not None:
                if type(value) is not int or value < 0:
                    raise UsageError(f"{key} must be a non-negative int, not {value!r}")
                params[key] = value
        conn = self.connection
        if conn.protocol.agent_codec is not None or conn.peer_capabilities is None or not _reads(self):
            from . import workspace

            server = workspace.workspace_route(self, "read")
            if server is not None:
                return await workspace.read_file(self, server, path, line, limit)
        resp = await conn.request_json(conn.vocabulary.wire("read_text_file"), orjson.dumps(params))
        return str(resp.content)

    async def write_file(self, path: str, content: str) -> None:
        """Write a text file through the client: ``fs/write_text_file``, or the workspace
        server's ``write_text_file`` tool (as :meth:`read_file`)."""
        from . import workspace

        server = workspace.workspace_route(self, "write")
        if server is not None:
            if type(path) is not str or type(content) is not str:
                raise UsageError("path and content must be str")
            await workspace.write_file(self, server, path, content)
            return
        await self.connection.fs_write_text_file(session_id=self.session_id, path=path, content=content)

    async def run(self, command: str, *args: str, cwd: str | None = None, env: dict[str, str] | None = None,
                  output_byte_limit: int | None = None) -> TerminalHandle:
        """Start a command in a client terminal: ``terminal/create``, or the workspace server's
        ``run`` tool (a :class:`~acplink.agent.workspace.WorkspaceTerminal`, whose output comes
        when the command ends; see :mod:`acplink.agent.workspace`)."""
        from . import workspace

        server = workspace.workspace_route(self, "run")
        if server is not None:
            declared = workspace.declared_workspace(self.session)
            term = await workspace.run(self, server, declared[1] if declared else [], command, list(args), cwd,
                                       env, output_byte_limit)
            self._terminals.add(term)
            return term
        env_list = [s.EnvVariable(name=k, value=v) for k, v in (env or {}).items()]
        resp = await self.connection.terminal_create(
            session_id=self.session_id, command=command, args=list(args), cwd=cwd or self.session.cwd,
            env=env_list, output_byte_limit=output_byte_limit)
        handle = TerminalHandle(self, resp.terminal_id)
        self._terminals.add(handle)
        return handle

    async def display_terminal(self, command: str, *, cwd: str | None = None, terminal_id: str | None = None,
                               on_cancel: Callable[[], Any] | None = None) -> DisplayTerminal:
        """Show a command the agent runs itself (ACP v2 only: ``terminal_update`` and
        ``terminal_output_chunk``); ``on_cancel`` lets the client stop it (``terminal/cancel``)."""
        from .display_terminal import open_display_terminal

        return await open_display_terminal(self.connection, self.session, command, cwd=cwd,
                                           terminal_id=terminal_id, on_cancel=on_cancel)

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> Any:
        """Ask the user for structured input (``elicitation/create``, form mode)."""
        req = parse(s.CreateElicitationRequest, {
            "mode": "form", "message": message, "sessionId": self.session_id, "requestedSchema": requested_schema})
        return await self.connection.elicitation_create(req)

    async def _finish(self) -> None:
        """End of turn: release the terminals the handler left open."""
        for term in list(self._terminals):
            try:
                await term.release()
            except ConnectionClosed:  # (a cancellation propagates: the turn is being torn down)
                break
            except Exception:  # best effort: the turn's result matters more
                continue


def _reads(ctx: PromptContext) -> bool:
    """Whether the client advertised ``fs.readTextFile`` (the fast path of v1's reads)."""
    caps = ctx.connection.peer_capabilities
    fs = getattr(caps, "fs", None)
    return bool(getattr(fs, "read_text_file", False))
