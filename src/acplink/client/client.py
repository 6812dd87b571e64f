"""The high-level client: ``connect(...)`` to any agent and drive it from Python.

    async with connect(["my-agent", "--acp"]) as client:
        session = await client.new_session(cwd=".")
        async for update in session.prompt("hello"):
            print(update)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..connection.agent_side import PROTOCOL_VERSION
from ..connection.base import Router, advertises
from ..connection.client_side import ClientSideConnection
from ..connection.peer import PeerLimits
from ..errors import ConnectionClosed, MethodNotFound, ResourceNotFound, TransportError, UsageError
from ..schema import _generated as s
from ..transports.base import Transport
from ..transports.memory import memory_pair
from ..transports.subprocess import SubprocessTransport
from .fs import FileBudget, FileSystemHandler
from .permissions import PermissionPolicy
from .session import Session, session_cwd
from .terminal import TerminalHandler

if TYPE_CHECKING:
    from ..agent.app import AgentBase
    from ..connection.agent_side import AgentSideConnection

__all__ = ["Client", "connect"]

log = logging.getLogger("acplink.client")

UpdateObserver = Callable[[Session, Any], None]
Elicitor = Callable[[Any], Awaitable[Any]]


class Client:
    """A client connected to one agent: sessions, and the handlers that serve the agent."""

    def __init__(
        self,
        transport: Transport,
        *,
        fs: bool = True,
        terminal: bool | TerminalHandler = True,
        permission: PermissionPolicy | None = None,
        elicitation: Elicitor | None = None,
        client_info: s.Implementation | None = None,
        limits: PeerLimits | None = None,
        check_capabilities: bool = True,
        debug: bool = False,
    ) -> None:
        self.transport = transport
        self.fs_enabled = fs
        self.terminals: TerminalHandler | None = (
            terminal if isinstance(terminal, TerminalHandler) else TerminalHandler() if terminal else None)
        self.permission = permission or PermissionPolicy()
        self.elicitation = elicitation
        self.client_info = client_info or s.Implementation(name="acplink", version=__version__)
        self.sessions: dict[str, Session] = {}
        self.observers: list[UpdateObserver] = []
        self._fs: dict[str, FileSystemHandler] = {}
        # one budget for all sessions' file operations; a read waits for earlier answers to drain
        self._fs_budget = FileBudget(drain=transport.drain)
        self._max_read_bytes = (limits or PeerLimits()).max_message_size
        self._owned: list[AgentSideConnection] = []
        self.conn = ClientSideConnection(transport, self._router(), limits=limits,
                                         check_capabilities=check_capabilities, debug=debug)

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.conn.closed

    @property
    def agent_info(self) -> s.Implementation | None:
        return self.conn.agent_info

    @property
    def agent_capabilities(self) -> s.AgentCapabilities | None:
        caps = self.conn.peer_capabilities
        return caps if isinstance(caps, s.AgentCapabilities) else None

    @property
    def auth_methods(self) -> list[Any]:
        return self.conn.auth_methods

    def client_capabilities(self) -> s.ClientCapabilities:
        caps: dict[str, Any] = {
            "fs": {"readTextFile": self.fs_enabled, "writeTextFile": self.fs_enabled},
            "terminal": self.terminals is not None,
        }
        if self.elicitation is not None:
            caps["elicitation"] = {"form": {}}
        return s.ClientCapabilities.model_validate(caps)

    async def start(self, *, initialize: bool = True, protocol_version: int = PROTOCOL_VERSION) -> Client:
        await self.conn.start()
        if initialize:
            await self.initialize(protocol_version=protocol_version)
        return self

    async def initialize(self, *, protocol_version: int = PROTOCOL_VERSION) -> s.InitializeResponse:
        return await self.conn.initialize(protocol_version=protocol_version,
                                          client_capabilities=self.client_capabilities(),
                                          client_info=self.client_info)

    async def aclose(self) -> None:
        """Close the connection (the agent process is shut down) and release everything."""
        for sess in self.sessions.values():
            turn = sess._turn
            if turn is not None:
                await turn.aclose()
        await self.conn.aclose()
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
        """Whether the agent advertised the capability at ``path`` (e.g. "sessionCapabilities.list")."""
        return advertises(self.agent_capabilities, path)

    # -- sessions --------------------------------------------------------------------------------

    def _register(self, session_id: str, cwd: str, additional: Sequence[str], setup: Any) -> Session:
        sess = Session(self, session_id, cwd, additional_directories=additional)
        if setup is not None:
            sess.state.apply_session_setup(setup)
        self.sessions[session_id] = sess
        return sess

    async def authenticate(self, method_id: str) -> s.AuthenticateResponse:
        return await self.conn.authenticate(method_id=method_id)

    async def new_session(self, cwd: str | os.PathLike[str] | None = None, *, mcp_servers: Sequence[Any] = (),
                          additional_directories: Sequence[str] = ()) -> Session:
        path = session_cwd(cwd)
        extra = [session_cwd(d) for d in additional_directories]
        fields: dict[str, Any] = {"cwd": path, "mcp_servers": list(mcp_servers)}
        if extra:
            fields["additional_directories"] = extra
        resp = await self.conn.session_new(**fields)
        return self._register(resp.session_id, path, extra, resp)

    async def load_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None, *,
                           mcp_servers: Sequence[Any] = ()) -> Session:
        """``session/load``: the agent replays the conversation into the new session's state."""
        path = session_cwd(cwd)
        sess = self._register(session_id, path, [], None)
        try:
            resp = await self.conn.session_load(session_id=session_id, cwd=path, mcp_servers=list(mcp_servers))
        except BaseException:
            self.sessions.pop(session_id, None)
            raise
        sess.state.apply_session_setup(resp)
        return sess

    async def resume_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None) -> Session:
        path = session_cwd(cwd)
        resp = await self.conn.session_resume(session_id=session_id, cwd=path)
        return self._register(session_id, path, [], resp)

    async def fork_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None) -> Session:
        path = session_cwd(cwd)
        resp = await self.conn.session_fork(session_id=session_id, cwd=path)
        return self._register(resp.session_id, path, [], resp)

    async def list_sessions(self, cwd: str | os.PathLike[str] | None = None) -> list[s.SessionInfo]:
        """Every session the agent lists (follows ``nextCursor``)."""
        out: list[s.SessionInfo] = []
        cursor: str | None = None
        while True:
            fields: dict[str, Any] = {}
            if cwd is not None:
                fields["cwd"] = session_cwd(cwd)
            if cursor:
                fields["cursor"] = cursor
            resp = await self.conn.session_list(**fields)
            out.extend(resp.sessions)
            cursor = resp.next_cursor
            if not cursor:
                return out

    # -- handlers for the agent's calls ----------------------------------------------------------

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

    def _router(self) -> Router:
        r = Router()

        async def on_update(p: s.SessionNotification) -> None:
            sess = self.sessions.get(p.session_id)
            if sess is None:
                log.warning("session/update for unknown session %r ignored", p.session_id)
                return
            sess._deliver(p.update)
            for obs in self.observers:
                obs(sess, p.update)

        async def on_permission(p: s.RequestPermissionRequest) -> s.RequestPermissionResponse:
            return await self.permission.decide(p)

        async def read(p: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
            return await self._session_fs(p.session_id).read_text_file(p)

        async def write(p: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
            return await self._session_fs(p.session_id).write_text_file(p)

        r.add_notification("session/update", on_update)
        r.add_request("session/request_permission", on_permission)
        if self.fs_enabled:
            r.add_request("fs/read_text_file", read)
            r.add_request("fs/write_text_file", write)
        term = self.terminals
        if term is not None:
            r.add_request("terminal/create", term.create)
            r.add_request("terminal/output", term.output)
            r.add_request("terminal/wait_for_exit", term.wait_for_exit)
            r.add_request("terminal/kill", term.kill)
            r.add_request("terminal/release", term.release)
        if self.elicitation is not None:
            r.add_request("elicitation/create", self.elicitation)
        return r


class connect:
    """Connect to an agent: a command line (spawned), an :class:`AgentApp` (in-process), or
    a ready :class:`Transport`. Use as ``async with connect(...) as client`` or
    ``client = await connect(...)`` (then ``await client.aclose()``).

    ``fs``/``terminal`` turn the default handlers on (file access confined to each
    session's cwd and additional directories; real terminal processes without a shell).
    Permission requests go to ``permission`` (default: deny).
    """

    def __init__(
        self,
        agent: Sequence[str] | str | AgentBase | Transport,
        *,
        env: dict[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Any = "inherit",
        initialize: bool = True,
        protocol_version: int = PROTOCOL_VERSION,
        **client_kw: Any,
    ) -> None:
        self.agent = agent
        self.env = env
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.stderr = stderr
        self.initialize = initialize
        self.protocol_version = protocol_version
        self.client_kw = client_kw
        self.client: Client | None = None

    async def _open(self) -> Client:
        agent = self.agent
        owned: list[AgentSideConnection] = []
        if isinstance(agent, Transport):
            transport: Transport = agent
        elif isinstance(agent, (str, list, tuple)):
            cmd = [agent] if isinstance(agent, str) else list(agent)
            if not cmd:
                raise UsageError("connect() needs an agent command line")
            transport = SubprocessTransport(cmd, env=self.env, inherit_env=self.inherit_env, cwd=self.cwd,
                                            stderr=self.stderr)
        elif hasattr(agent, "connection"):
            ours, theirs = memory_pair()
            agent_conn = agent.connection(theirs)
            await agent_conn.start()
            owned.append(agent_conn)
            transport = ours
        else:
            raise UsageError(f"connect() takes an agent command line, an agent app or a transport, not {agent!r}")
        client = Client(transport, **self.client_kw)
        client._owned.extend(owned)
        try:
            await client.start(initialize=self.initialize, protocol_version=self.protocol_version)
        except (ConnectionClosed, TransportError) as exc:
            await client.aclose()
            raise _agent_failed(transport, exc) from None
        except BaseException:
            await client.aclose()
            raise
        self.client = client
        return client

    async def __aenter__(self) -> Client:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            await self.client.aclose()

    def __await__(self) -> Generator[Any, None, Client]:
        return self._open().__await__()


def _agent_failed(transport: Transport, exc: BaseException) -> TransportError:
    if isinstance(transport, SubprocessTransport):
        tail = "\n".join(transport.stderr_tail[-10:])
        code = transport.returncode
        msg = f"agent {transport.command_line!r} failed during initialize: {exc}"
        if code is not None:
            msg += f" (exit code {code})"
        if tail:
            msg += f"\nlast stderr lines:\n{tail}"
        err: TransportError = ConnectionClosed(msg) if isinstance(exc, ConnectionClosed) else TransportError(msg)
        return err
    return exc if isinstance(exc, TransportError) else ConnectionClosed(str(exc))
