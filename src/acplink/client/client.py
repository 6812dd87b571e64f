"""The high-level client: ``connect(...)`` to any agent and drive it from Python.

    async with connect(["my-agent", "--acp"]) as client:
        session = await client.new_session(cwd=".")
        async for update in session.prompt("hello"):
            print(update)
"""

from __future__ import annotations

import asyncio
import collections
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._version import __version__
from ..connection.base import Router, advertises
from ..connection.client_side import ClientSideConnection
from ..connection.peer import PeerLimits
from ..errors import (
    CapabilityError,
    InvalidParams,
    MethodNotFound,
    PeerOutputNotJson,
    ResourceNotFound,
    UsageError,
)
from ..methods import MCP_CONNECT, MCP_DISCONNECT
from ..protocol import PROTOCOL_VERSION, Protocol
from ..protocol.initialize import Handshake, ProtocolChoice, check_choice
from ..protocol.rules import update_session_finding
from ..schema import _generated as s
from ..transports.base import Transport
from ..transports.subprocess import SubprocessTransport
from ._connect import _agent_failed as _agent_failed  # (re-exported: testing/ imports it from here)
from ._connect import connect
from ._offer import offer_workspace
from ._on import ClientOn
from ._questions import Elicitor, QuestionObserver, Questions, elicitation_cancelled
from .fs import FileBudget, FileSystemHandler
from .mcp import McpProvider, McpRegistration, withdrawn
from .permissions import PermissionPolicy, cancelled_answer, with_known
from .session import Session, session_cwd
from .terminal import TerminalHandler

if TYPE_CHECKING:
    from ..connection.agent_side import AgentSideConnection
    from ._recover import AgentRecovery

__all__ = ["Client", "QuestionObserver", "connect"]


F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
UpdateObserver = Callable[[Session, Any], None]


def _wire(value: Any) -> Any:
    return value.to_wire() if hasattr(value, "to_wire") else value


class Client(ClientOn):
    """A client connected to one agent: sessions, and the handlers that serve the agent."""

    def __init__(
        self,
        transport: Transport,
        *,
        fs: bool | Literal["read"] = True,
        terminal: bool | TerminalHandler = True,
        permission: PermissionPolicy | None = None,
        elicitation: Elicitor | None = None,
        client_info: s.Implementation | None = None,
        limits: PeerLimits | None = None,
        check_capabilities: bool = True,
        debug: bool = False,
        protocol: ProtocolChoice = 1,
        workspace: bool | None = None,
    ) -> None:
        #: the ACP version asked for at initialize: 1, 2 (the v2 draft), another registered
        #: version, or "auto" (2, else 1): see :class:`acplink.protocol.initialize.Handshake`
        self.protocol: ProtocolChoice = check_choice(protocol)
        self.transport = transport
        self.permission = permission or PermissionPolicy()
        # what is advertised is what is served: a confining policy (PermissionPolicy.deny_all)
        # leaves reads only, whatever ``fs``/``terminal`` ask for
        confined = self.permission.confine
        self.fs_enabled = bool(fs)
        self.fs_write = fs is True and not confined
        self.terminals: TerminalHandler | None = None
        if not confined:
            self.terminals = (
                terminal if isinstance(terminal, TerminalHandler) else TerminalHandler() if terminal else None)
        if self.terminals is not None:
            self.terminals.attach(self._session_roots)  # terminals run in the sessions' roots
        self.elicitation = elicitation
        self.client_info = client_info or s.Implementation(name="acplink", version=__version__)
        self.sessions: dict[str, Session] = {}
        #: the ids of the sessions closed here (an update for one breaks another rule than an
        #: update for a session never opened: see protocol.rules.update_session_finding)
        #: (the last 1,024: only the wording of a warning depends on it, memory must not)
        self._closed_sessions: collections.deque[str] = collections.deque(maxlen=1024)
        self.observers: list[UpdateObserver] = []
        self._fs: dict[str, FileSystemHandler] = {}
        # one budget for all sessions' file operations; a read waits for earlier answers to drain
        self._fs_budget = FileBudget(drain=transport.drain)
        self._max_read_bytes = (limits or PeerLimits()).max_message_size
        self._owned: list[AgentSideConnection] = []
        #: handlers registered with :meth:`on`: (wire method, kind) -> handler
        self.handlers: dict[tuple[str, str], Callable[[Any], Awaitable[Any]]] = {}
        self._connection_options: dict[str, Any] = {
            "limits": limits, "check_capabilities": check_capabilities, "debug": debug}
        #: the connection to the agent (``conn`` is the same, its older name)
        self.connection = self._connect(transport)
        #: the MCP servers this client serves to the agent over the connection (MCP-over-ACP):
        #: ``client.mcp.register(name, handler)``, see :class:`acplink.client.mcp.McpProvider`
        self.mcp = McpProvider(self.connection)
        #: ``connect(cmd, resume=ID)``: the session it resumed (see :meth:`reopen_session`)
        self.resumed: Session | None = None
        #: ``connect(cmd, recover=True)``: restarts a crashed agent and reopens its sessions
        #: (:class:`acplink.client.AgentRecovery`; None: a lost agent ends the connection)
        self.recovery: AgentRecovery | None = None
        self._closing = False
        #: offer the built-in workspace server (None: when the protocol has no ``fs/*``; see
        #: :mod:`acplink.client._offer`); its registration once offered
        if workspace is not None and not isinstance(workspace, bool):
            raise UsageError(f"workspace must be True, False or None, not {workspace!r}")
        self.workspace = workspace
        self.workspace_registration: McpRegistration | None = None
        #: the questions the agent asks (permission, elicitation) and their cancellation
        self._questions = Questions(self.connection.tasks)
        #: called when a pending question is answered "cancelled" by a session/cancel
        self.question_observers: list[QuestionObserver] = self._questions.observers

    def _connect(self, transport: Transport) -> ClientSideConnection:
        """A connection to the agent over ``transport``, reporting to this client."""
        conn = ClientSideConnection(transport, self._router, **self._connection_options)
        conn.on_session_opened = self._session_opened
        conn.on_prompt = self._prompt_sent
        conn.on_cancel = self._cancel_sent
        conn.on_invalid_update = self._invalid_update
        return conn

    @property
    def conn(self) -> ClientSideConnection:
        """The connection to the agent: an alias of :attr:`connection` (the older name)."""
        return self.connection

    # -- registration ----------------------------------------------------------------------------

    def _on(self, method: str) -> Callable[[F], F]:
        """``on(method)``: register the handler of a client-side wire method of the method table
        (a constant of :mod:`acplink.methods`: ``ELICITATION_CREATE``, ``MCP_MESSAGE``,
        ``AUTH_STATUS_UPDATE``, ...; also one that has a built-in handler, which it replaces).
        The handler takes the typed params and returns the typed result, a dict or None; the
        capability that gates the method is advertised at ``initialize``. Register before
        :meth:`start`. ``on`` itself is generated (``._on``): one overload per method, which
        types the handler for type checkers."""
        proto = self.connection.protocol
        info = next((m for m in proto.handled_by("client") if m.method == method), None)
        if info is None:
            raise UsageError(f"{method!r} is not a method a client handles in ACP v{proto.version}")
        key = (info.method, info.kind)

        def register(fn: F) -> F:
            if key in self.handlers:
                raise UsageError(f"a handler for {method!r} is already registered")
            is_async: bool = asyncio.iscoroutinefunction(fn)
            if not is_async:
                raise UsageError(f"the {method!r} handler must be an async function")
            self.handlers[key] = fn
            router = self.connection.router
            router.raw_requests.discard(info.method)  # (a handler of the user's takes typed params)
            if info.kind == "request":
                router.add_request(info.method, fn, replace=True)
            else:
                router.add_notification(info.method, fn, replace=True)
            return fn

        return register

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Closed, or the agent is gone (with :attr:`recovery`: once it gave up restarting it)."""
        if self._closing or self.recovery is None or self.recovery.failure is not None:
            return self.connection.closed or self._closing
        return False

    async def _live_connection(self) -> ClientSideConnection:
        """The connection to use now: while :attr:`recovery` restarts the agent, the restarted
        agent's (:class:`RecoveryFailed` when it gives up)."""
        if self.recovery is not None and self.connection.closed and not self._closing:
            await self.recovery.wait()
        return self.connection

    @property
    def protocol_version(self) -> int | None:
        """The ACP version agreed at initialize (None before)."""
        return self.connection.protocol_version

    @property
    def agent_info(self) -> s.Implementation | None:
        """The agent's name and version (from either version's ``initialize`` answer)."""
        return self.connection.agent_info

    @property
    def agent_capabilities(self) -> s.AgentCapabilities | None:
        caps = self.connection.peer_capabilities
        return caps if isinstance(caps, s.AgentCapabilities) else None

    @property
    def auth_methods(self) -> list[Any]:
        return self.connection.auth_methods

    def client_capabilities(self) -> s.ClientCapabilities:
        caps: dict[str, Any] = {
            "fs": {"readTextFile": self.fs_enabled, "writeTextFile": self.fs_write},
            "terminal": self.terminals is not None,
        }
        if self.elicitation is not None:
            caps["elicitation"] = {"form": {}}
        proto = self.connection.protocol
        for method, kind in self.handlers:
            info = proto.info(method, kind)
            if info is not None and info.capability and info.capability.startswith("client:"):
                proto.advertise(caps, info.capability)
        return s.ClientCapabilities.model_validate(caps)

    async def start(self, *, initialize: bool = True, protocol_version: int = PROTOCOL_VERSION) -> Client:
        await self.connection.start()
        if initialize:
            await self.initialize(protocol_version=protocol_version)
        return self

    async def initialize(self, *, protocol_version: int = PROTOCOL_VERSION) -> Any:
        """``initialize`` as :attr:`protocol` chooses (:class:`acplink.protocol.initialize.Handshake`:
        the version asked for, what the agent's answer or error leads to); the typed answer of
        the version agreed. ``protocol_version``: the number a v1 request asks for."""
        handshake = Handshake(self.protocol, info=self.client_info.to_wire(),
                              capabilities=self.client_capabilities().to_wire(), protocol_version=protocol_version)
        return await self.connection.handshake(handshake)

    async def aclose(self) -> None:
        """Close the connection (the agent process is shut down) and release everything."""
        self._closing = True
        if self.recovery is not None:
            await self.recovery.aclose()
        if isinstance(self.connection.peer.close_reason, PeerOutputNotJson) and isinstance(
                self.transport, SubprocessTransport):
            self.transport.close_timeout = 0.1  # (not an agent: no grace for closing its input)
        for sess in self.sessions.values():
            turn = sess._turn
            if turn is not None:
                await turn.aclose()
        self.mcp.close()  # (the MCP servers' running requests are cancelled first)
        await self.connection.aclose()  # (and the questions' callbacks still running: they are its tasks)
        if self.terminals is not None:
            await self.terminals.aclose()
        for agent_conn in self._owned:
            await agent_conn.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- capabilities ----------------------------------------------------------------------------

    def supports(self, path: str) -> bool:
        """Whether the agent advertised the capability at ``path`` of the version's capabilities
        (e.g. "sessionCapabilities.list"; on v2 "session.delete")."""
        return advertises(self.connection.peer_capabilities, path)

    def offers(self, name: str) -> bool:
        """Whether the protocol in use has the method acplink calls ``name`` (``"close_session"``,
        ``"cancel_tool_call"``, ...) and the agent advertised the capability that gates it."""
        proto = self.connection.protocol
        if not proto.has(name):
            return False
        info = proto.info(*proto.names[name])
        cap = info.capability if info is not None else None
        return cap is None or not cap.startswith("agent:") or self.supports(cap.split(":", 1)[1])

    # -- sessions --------------------------------------------------------------------------------

    def _register(self, session_id: str, cwd: str, additional: Sequence[str], setup: Any) -> Session:
        sess = Session(self, session_id, cwd, additional_directories=additional)
        if setup is not None:
            sess._setup(setup)
        self.sessions[session_id] = sess
        return sess

    # -- what the connection reports -------------------------------------------------------------

    def _prompt_sent(self, session_id: str, params: Any) -> None:
        """A prompt goes out (``Session.prompt`` or a direct call on the connection)."""
        sess = self.sessions.get(session_id)
        turn = sess._turn if sess is not None else None
        # (the turn of a Session.prompt started when it was made: a session/cancel since
        # then must stand)
        if turn is None or turn.request is not params:
            self._questions.turn_started(session_id)

    def _cancel_sent(self, session_id: str) -> None:
        """A cancel goes out (however it is sent): the turn's pending questions are answered."""
        self._questions.cancel(session_id)

    def _invalid_update(self, params: Any, exc: InvalidParams) -> None:
        """A ``session/update`` that does not match the schema (it is logged and dropped): in a
        version where an update ends the turn (it may have been that one), the running turn of
        its session fails with the error (it names the path)."""
        sid = params.get("sessionId") if isinstance(params, dict) else None
        sess = self.sessions.get(sid) if isinstance(sid, str) else None
        turn = sess._turn if sess is not None else None
        if turn is not None and not turn.done and self.connection.protocol.turns.receipt:
            turn._fail(exc)

    def _stray_update(self, protocol: Protocol, p: Any) -> None:
        """A ``session/update`` for a session this client has not open: logged and dropped,
        named by the rule it breaks (the state machine's: ``update-unknown-session``, or
        ``update-after-close`` for a session closed here)."""
        sid = p.session_id
        kind = str(getattr(p.update, "session_update", "?"))
        broken = update_session_finding(sid, kind, opened=False, closed=sid in self._closed_sessions, loading=False)
        finding, message = broken or ("update-unknown-session", f"{kind} for unknown session {sid!r}")
        self.connection.peer.warn_bad_input(f"{protocol.wire('session_update')} {message} ignored ({finding})")

    def _session_opened(self, method: str, request: Any, result: Any) -> None:
        """The connection processed the result of a session-opening call (whoever made it):
        the session exists from now on, before any later message (its updates) is handled."""
        if method in self.connection.protocol.wires("load_session", "resume_session"):
            sid = request.session_id
            sess = self.sessions.get(sid)
            if sess is not None:  # registered when the call was made (see _reopen)
                sess._setup(result)
                self.mcp.opened(sid, getattr(request, "mcp_servers", None) or [])
                return
        else:
            sid = result.session_id
        self.mcp.opened(sid, getattr(request, "mcp_servers", None) or [])
        self._register(sid, request.cwd, request.additional_directories or [], result)

    async def authenticate(self, method_id: str) -> Any:
        """``authenticate`` (v1) or ``auth/login`` (v2): the protocol's ``authenticate``."""
        return await self._call("authenticate", method_id=method_id)

    async def _call(self, name: str, **fields: Any) -> Any:
        """The protocol's request ``name`` (UsageError when the version has none)."""
        conn = self.connection
        return await conn.call(conn.protocol.wire(name), **fields)

    def _opened(self, session_id: str) -> Session:
        sess = self.sessions.get(session_id)  # registered by _session_opened
        if sess is None:  # (closed already, e.g. by an observer of its first update)
            raise UsageError(f"session {session_id!r} was closed before it could be used")
        return sess

    def _mcp_declarations(self, session_id: str | None) -> list[dict[str, Any]]:
        """The ``acp`` MCP servers (``client.mcp``, and the workspace server when it is offered)
        to declare in a session being opened: none when the agent did not advertise that it
        takes them."""
        path = self.connection.protocol.mcp_transports.get("acp")
        if path is None or not self.supports(path):
            return []
        offer_workspace(self)
        return self.mcp.declarations(session_id) if self.mcp.registrations else []

    async def _opening(self, session_id: str | None, name: str, fields: dict[str, Any]) -> Any:
        """The session-opening call ``name`` with ``fields``, this client's ``acp`` MCP servers
        added to its ``mcpServers``."""
        declared = self._mcp_declarations(session_id)
        if declared:
            fields["mcp_servers"] = [*fields.get("mcp_servers", ()), *declared]
        try:
            return await self._call(name, **fields)
        except BaseException:
            self.mcp.discard(declared)
            raise

    async def new_session(self, cwd: str | os.PathLike[str] | None = None, *, mcp_servers: Sequence[Any] = (),
                          additional_directories: Sequence[str] = ()) -> Session:
        """``session/new``; the MCP servers registered with :attr:`mcp` are declared in it
        (after ``mcp_servers``) when the agent takes ``acp`` servers."""
        path = session_cwd(cwd)
        extra = [session_cwd(d) for d in additional_directories]
        fields: dict[str, Any] = {"cwd": path, "mcp_servers": [_wire(x) for x in mcp_servers]}
        if extra:
            fields["additional_directories"] = extra
        resp = await self._opening(None, "new_session", fields)
        return self._opened(resp.session_id)

    async def load_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None, *,
                           mcp_servers: Sequence[Any] = ()) -> Session:
        """``session/load``: the agent replays the conversation into the new session's state."""
        path = session_cwd(cwd)
        return await self._reopen(session_id, path, lambda: self._opening(session_id, "load_session", {
            "session_id": session_id, "cwd": path, "mcp_servers": [_wire(x) for x in mcp_servers]}))

    async def resume_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None, *,
                             replay: bool = False) -> Session:
        """``session/resume``; ``replay=True``, in a version whose request has ``replayFrom``
        (v2), has the agent replay the conversation first (``replayFrom: start``) into the
        session's state (elsewhere UsageError)."""
        path = session_cwd(cwd)
        fields: dict[str, Any] = {"session_id": session_id, "cwd": path}
        if replay:
            if not self._resume_replays():
                proto = self.connection.protocol
                raise UsageError(f"ACP v{proto.version}'s session/resume cannot replay the conversation")
            fields["replay_from"] = {"type": "start"}
        return await self._reopen(session_id, path, lambda: self._opening(session_id, "resume_session", fields))

    def _resume_replays(self) -> bool:
        """Whether this version's ``session/resume`` can replay the conversation (``replayFrom``)."""
        proto = self.connection.protocol
        info = proto.info(proto.wire("resume_session"))
        model = info.params_type if info is not None else None
        return "replay_from" in getattr(model, "model_fields", {})

    async def _reopen(self, session_id: str, cwd: str, call: Callable[[], Awaitable[Any]]) -> Session:
        """``session/load`` / ``session/resume`` of a known id: the session is registered before
        the call, since the agent sends its updates (the replayed history, its commands)
        before the response."""
        sess = self._register(session_id, cwd, [], None)
        try:
            await call()
        except BaseException:
            if self.sessions.get(session_id) is sess:
                del self.sessions[session_id]
            raise
        return sess

    async def fork_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None) -> Session:
        path = session_cwd(cwd)
        resp = await self._opening(None, "fork_session", {"session_id": session_id, "cwd": path})
        return self._opened(resp.session_id)

    async def delete_session(self, session_id: str) -> None:
        """``session/delete`` (where the agent advertises it); the session is forgotten here."""
        self._forget(session_id)
        await self._call("delete_session", session_id=session_id)

    def _forget(self, session_id: str) -> None:
        """The session is closed or deleted: what this client kept for it goes (its file-system
        handler, its own MCP servers: their running requests are cancelled)."""
        if self.sessions.pop(session_id, None) is not None:
            self._closed_sessions.append(session_id)
        self._fs.pop(session_id, None)
        self.mcp.session_ended(session_id)

    async def list_sessions(self, cwd: str | os.PathLike[str] | None = None) -> list[s.SessionInfo]:
        """Every session the agent lists (follows ``nextCursor``; the version's ``SessionInfo``)."""
        out: list[s.SessionInfo] = []
        cursor: str | None = None
        while True:
            page, cursor = await self.list_sessions_page(cwd, cursor=cursor)
            out.extend(page)
            if not cursor:
                return out

    async def list_sessions_page(self, cwd: str | os.PathLike[str] | None = None, *,
                                 cursor: str | None = None) -> tuple[list[s.SessionInfo], str | None]:
        """One ``session/list`` page (the agent's order: newest first in acplink's stores) and
        the cursor of the next one (None: the last page). :class:`CapabilityError` when the
        agent does not advertise listing."""
        if not self.offers("list_sessions"):
            raise CapabilityError("the agent cannot list its sessions (it does not advertise session/list)",
                                  capability="agent:sessionCapabilities.list")
        fields: dict[str, Any] = {}
        if cwd is not None:
            fields["cwd"] = session_cwd(cwd)
        if cursor:
            fields["cursor"] = cursor
        resp = await self._call("list_sessions", **fields)
        return list(resp.sessions), resp.next_cursor or None

    async def reopen_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None, *,
                             prefer: Literal["resume", "load"] = "resume") -> Session:
        """Continue the stored session ``session_id``: ``session/resume`` where the agent
        advertises it (``prefer="load"``: ``session/load`` first, which replays the
        conversation into :attr:`Session.state`; and a resume then replays it too where the
        version can, v2's ``replayFrom``), else the other one; :class:`CapabilityError` when
        the agent advertises neither. An unknown id is the agent's error
        (``ResourceNotFound`` from acplink agents)."""
        can = {"resume": self.offers("resume_session"), "load": self.offers("load_session")}
        order = ("resume", "load") if prefer == "resume" else ("load", "resume")
        method = next((m for m in order if can[m]), None)
        if method is None:
            raise CapabilityError("the agent cannot reopen a session (it advertises neither session/resume "
                                  "nor session/load)", capability="agent:sessionCapabilities.resume")
        if method == "load":
            return await self.load_session(session_id, cwd)
        return await self.resume_session(session_id, cwd, replay=prefer == "load" and self._resume_replays())

    # -- handlers for the agent's calls ----------------------------------------------------------

    def _session_roots(self, session_id: str) -> list[str] | None:
        sess = self.sessions.get(session_id)
        return sess.roots if sess is not None else None

    def _session_fs(self, session_id: str) -> FileSystemHandler:
        if not self.fs_enabled:
            raise MethodNotFound("file-system access is turned off in this client")
        sess = self.sessions.get(session_id)
        if sess is None:
            raise ResourceNotFound(f"unknown session {session_id!r}")
        handler = self._fs.get(session_id)
        if handler is None:
            handler = self._fs[session_id] = FileSystemHandler(
                sess.roots, max_read_bytes=self._max_read_bytes, budget=self._fs_budget)
        return handler

    async def _mcp_message(self, params: Any) -> Any:
        # (self.mcp does not exist yet while the connection builds its first router)
        return await self.mcp.handle(params)

    def _router(self, protocol: Protocol) -> Router:
        """The handlers of the agent's calls in ``protocol``: the built-in ones, then those
        registered with :meth:`on`."""
        r = Router()

        async def on_update(p: s.SessionNotification) -> None:
            sess = self.sessions.get(p.session_id)
            if sess is None:
                self._stray_update(protocol, p)
                return
            sess._deliver(p.update)
            for obs in self.observers:
                obs(sess, p.update)

        codec = protocol.client_codec

        async def on_permission(p: Any) -> Any:
            sess = self.sessions.get(p.session_id)  # (what the session knows of the tool call: its diff...)
            known: Callable[[str], Any] = sess.state.tool_calls.get if sess is not None else _nothing
            request: s.RequestPermissionRequest = codec.permission_request(p, known) if codec is not None else p
            q = with_known(request, known(request.tool_call.tool_call_id))
            answer: s.RequestPermissionResponse = await self._questions.ask(
                p.session_id, protocol.wire("request_permission"), p, lambda: self.permission.decide(q),
                cancelled_answer())
            return codec.permission_answer(answer) if codec is not None else answer

        async def read(p: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
            return await self._session_fs(p.session_id).read_text_file(p)

        async def write(p: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
            return await self._session_fs(p.session_id).write_text_file(p)

        builtin: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "session_update": on_update, "request_permission": on_permission}
        if self.fs_enabled:
            builtin["read_text_file"] = read
        if self.fs_write:
            builtin["write_text_file"] = write
        term = self.terminals
        if term is not None:
            builtin.update(create_terminal=term.create, terminal_output=term.output,
                           wait_for_terminal_exit=term.wait_for_exit, kill_terminal=term.kill,
                           release_terminal=term.release)
        elicitor = self.elicitation
        if elicitor is not None:
            async def on_elicitation(p: Any) -> Any:
                return await self._questions.ask(getattr(p, "session_id", None), protocol.wire("create_elicitation"),
                                                 p, lambda: elicitor(p), elicitation_cancelled())

            builtin["create_elicitation"] = on_elicitation
        if protocol.has("mcp_message"):
            builtin["mcp_message"] = self._mcp_message
        handlers = {protocol.names[name]: fn for name, fn in builtin.items() if protocol.has(name)}
        for withdrawn_method in (MCP_CONNECT, MCP_DISCONNECT):
            if protocol.info(withdrawn_method, "request") is not None:
                handlers[(withdrawn_method, "request")] = withdrawn(withdrawn_method)
        raw = {fn for fn in handlers.values() if fn == self._mcp_message or getattr(fn, "raw_params", False)}
        handlers.update((key, fn) for key, fn in self.handlers.items() if protocol.info(*key) is not None)
        for (method, kind), fn in handlers.items():
            if kind == "request":
                r.add_request(method, fn)
                if fn in raw:  # (it checks its params itself)
                    r.raw_requests.add(method)
            else:
                r.add_notification(method, fn)
        for method, hint in (codec.unsupported.items() if codec is not None else ()):
            if method not in r.requests:
                r.add_request(method, _unsupported(method, hint))
        return r


def _nothing(_key: str) -> None:
    return None


def _unsupported(method: str, hint: str) -> Callable[[Any], Awaitable[Any]]:
    """The handler of a method this version's client does not have: -32601 saying where its role went."""
    async def refuse(_params: Any) -> Any:
        raise MethodNotFound(f"Method not found: {method}{hint}", {"method": method})

    return refuse
