"""``connect(...)``: a :class:`~acplink.client.Client` connected to an agent given as a command
line (spawned), a remote agent's URL (WebSocket or streamable HTTP, with its options), an agent
app (in-process) or a ready transport; and the one-line error of an agent that fails during
``initialize``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..connection.peer import PeerLimits
from ..errors import AcpError, ConnectionClosed, PeerOutputNotJson, ProtocolError, TransportError, UsageError
from ..protocol import PROTOCOL_VERSION
from ..protocol.initialize import ProtocolChoice
from ..schema import _generated as s
from ..transports._remote import CookieJar, RemoteOptions, is_remote_url, remote_transport, require_libraries
from ..transports.base import Transport
from ..transports.memory import memory_pair
from ..transports.subprocess import SubprocessTransport
from ._questions import Elicitor
from .permissions import PermissionPolicy
from .terminal import TerminalHandler

if TYPE_CHECKING:
    from ..agent.app import AgentBase
    from ..connection.agent_side import AgentSideConnection
    from ..registry import Registry
    from .client import Client

__all__ = ["connect"]

#: how long an agent whose start-up was abandoned may take to exit after its stdin closes
_ABANDONED_GRACE = 0.1


class connect:
    """Connect to an agent: a command line (spawned), a remote agent's URL (``ws://``,
    ``wss://``: WebSocket; ``http://``, ``https://``: streamable HTTP), an :class:`AgentApp`
    (in-process), or a ready :class:`Transport`. Use as ``async with connect(...) as client``
    or ``client = await connect(...)`` (then ``await client.aclose()``).

    A URL's requests carry ``headers`` and, with ``token``, ``Authorization: Bearer``; the
    cookies the server sets are kept in ``cookies`` (pass the same :class:`CookieJar` to a
    later ``connect`` to reconnect to the same instance behind a load balancer). A remote
    agent is offered no file access and no terminals unless ``fs``/``terminal`` are given.
    ``reconnect``: a stream that drops mid-turn is resumed from the last message it delivered
    (streamable HTTP: ``Last-Event-ID``; WebSocket: a new socket and ``stream/resume``), so
    nothing is lost or repeated, where the server advertises resumable streams; when the
    server no longer holds what was missed, the connection ends with
    :class:`~acplink.errors.StreamResumeFailed` (reopen the session with ``session/resume``
    or ``session/load`` on a new connection). See ``docs/remote.md``.

    ``fs``/``terminal`` turn the default handlers on (file access confined to each
    session's cwd and additional directories, ``fs="read"``: reads only; real terminal
    processes without a shell). Permission requests go to ``permission`` (default: deny);
    a confining policy (``PermissionPolicy.deny_all()``) also turns writes and terminals off.
    ``workspace``: offer the client's files and terminals as the built-in MCP server
    ``workspace`` over the connection (MCP-over-ACP): None (default) when the protocol has no
    ``fs/*`` (v2), True on v1 too, False never; only to an agent that advertises ``acp`` MCP
    servers, and only what ``fs``/``terminal`` serve (see ``docs/mcp.md``).
    ``protocol``: the ACP version: 1 (default), 2 (the v2 draft, which has no ``fs/*`` or
    ``terminal/*``: the agent reaches the client's files through the workspace server; the agent
    must answer 2) or "auto" (asks for 2, goes on with v1 when the
    agent answers 1, refuses 2 or echoes 2 with a v1 answer); see ``docs/v2.md``.
    (``protocol_version`` is the number a v1 ``initialize`` carries, for testing an agent's
    version negotiation; it does not choose the protocol.) The other keyword arguments are
    those of :class:`Client`.

    ``resume``: after ``initialize``, continue the agent's stored session of that id
    (:meth:`Client.reopen_session`: ``session/resume`` where the agent advertises it, else
    ``session/load``, else :class:`~acplink.errors.CapabilityError`) in ``cwd`` (default: the
    current directory); the session is ``client.resumed``. ``recover`` (an agent command line):
    when the agent process ends while the client runs (a crash, a kill), start it again,
    ``initialize``, and reopen the open sessions (``session/load``, else ``session/resume``);
    the turn that was running fails and is never sent again; ``client.recovery``
    (:class:`~acplink.client.AgentRecovery`) reports what was lost. ``True``: at most 3
    restarts within 60 s, an int: that many; past it, :class:`~acplink.errors.RecoveryFailed`.
    See ``docs/client.md``.

    ``agent_id``: instead of ``agent``, an agent of the ACP registry, started as the registry
    says (a binary installed into the per-user cache first when needed, or its ``npx`` / ``uvx``
    package; the agent's environment variables added where ``env`` and this process's do not
    set them); ``registry``: a :class:`~acplink.registry.Registry` (its source, cache and
    ``offline`` / ``insecure`` choices) or the URL or file of a ``registry.json`` (default
    ``$ACPLINK_REGISTRY``, else the official registry). See ``docs/registry.md``.
    """

    def __init__(
        self,
        agent: Sequence[str] | str | AgentBase | Transport | None = None,
        *,
        agent_id: str | None = None,
        registry: Registry | str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Any = "inherit",
        initialize: bool = True,
        protocol_version: int = PROTOCOL_VERSION,
        fs: bool | Literal["read"] | None = None,
        terminal: bool | TerminalHandler | None = None,
        permission: PermissionPolicy | None = None,
        elicitation: Elicitor | None = None,
        client_info: s.Implementation | None = None,
        limits: PeerLimits | None = None,
        check_capabilities: bool = True,
        debug: bool = False,
        headers: dict[str, str] | Sequence[tuple[str, str]] | None = None,
        token: str | None = None,
        cookies: CookieJar | None = None,
        reconnect: bool = False,
        protocol: ProtocolChoice = 1,
        workspace: bool | None = None,
        resume: str | None = None,
        recover: bool | int = False,
    ) -> None:
        if (agent is None) == (agent_id is None):
            raise UsageError("connect() takes an agent (a command line, URL, app or transport) or agent_id=, "
                             "one of them")
        if registry is not None and agent_id is None:
            raise UsageError("registry= is for agent_id=")
        self.agent = agent
        self.agent_id = agent_id
        self.registry = registry
        remote = isinstance(agent, str) and is_remote_url(agent)
        self.remote = RemoteOptions(str(agent), headers=headers, token=token, cookies=cookies,
                                    reconnect=reconnect) if remote else None
        if not remote and (headers is not None or token is not None or cookies is not None or reconnect):
            raise UsageError("headers=, token=, cookies= and reconnect= are for a remote agent's URL")
        if self.remote is not None:  # (the remote extra: a MissingDependency now, not when opening)
            require_libraries(self.remote.url)
        if fs is None:
            fs = not remote
        if terminal is None:
            terminal = not remote
        self.env = env
        self.inherit_env = inherit_env
        self.cwd = cwd
        self.stderr = stderr
        self.initialize = initialize
        self.protocol_version = protocol_version
        # the options of the Client (real parameters, so that a misspelt one fails type checking)
        self.client_kw: dict[str, Any] = {
            "fs": fs, "terminal": terminal, "permission": permission, "elicitation": elicitation,
            "client_info": client_info, "limits": limits, "check_capabilities": check_capabilities,
            "debug": debug, "protocol": protocol, "workspace": workspace}
        self.client: Client | None = None
        self.resume = resume
        self.recover = _recover_limit(recover, local=(not remote and isinstance(agent, (str, list, tuple)))
                                      or agent_id is not None)

    async def _open(self) -> Client:
        agent = self.agent
        owned: list[AgentSideConnection] = []
        env = self.env
        if self.agent_id is not None:
            launch = await _registry(self.registry).launch_async(self.agent_id)  # (downloads: off the loop)
            agent = launch.command
            env = {**launch.env, **(self.env or {})}  # (the caller's env wins, as the user's does)
        if isinstance(agent, Transport):
            transport: Transport = agent
        elif self.remote is not None:
            transport = remote_transport(self.remote, max_message_size=(
                self.client_kw["limits"] or PeerLimits()).max_message_size)
        elif isinstance(agent, (str, list, tuple)):
            cmd = [agent] if isinstance(agent, str) else list(agent)
            if not cmd:
                raise UsageError("connect() needs an agent command line")
            transport = self._spawn(cmd, env)
        elif agent is not None and hasattr(agent, "connection"):
            ours, theirs = memory_pair()
            agent_conn = agent.connection(theirs)
            await agent_conn.start()
            owned.append(agent_conn)
            transport = ours
        else:
            raise UsageError(f"connect() takes an agent command line, an agent app or a transport, not {agent!r}")
        from .client import Client  # (client.py re-exports connect: imported here, not above)

        client = Client(transport, **self.client_kw)
        client._owned.extend(owned)
        try:
            await client.start(initialize=self.initialize, protocol_version=self.protocol_version)
        except (AcpError, OSError) as exc:
            failure = await _agent_failed(transport, exc)
            await client.aclose()
            if failure is None:
                raise
            raise failure from None
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and isinstance(transport, SubprocessTransport):
                # start-up cut short (a time limit, Ctrl-C): nothing to finish, so no grace
                # before the agent is stopped
                transport.close_timeout = min(transport.close_timeout, _ABANDONED_GRACE)
            await client.aclose()
            raise
        try:
            await self._resume_and_watch(client, agent, env)
        except BaseException:
            await client.aclose()
            raise
        self.client = client
        return client

    def _spawn(self, cmd: list[str], env: dict[str, str] | None) -> SubprocessTransport:
        return SubprocessTransport(cmd, env=env, inherit_env=self.inherit_env, cwd=self.cwd, stderr=self.stderr)

    async def _resume_and_watch(self, client: Client, agent: Any, env: dict[str, str] | None) -> None:
        """``resume=``: the session reopened; ``recover=``: the agent watched and restarted."""
        if self.resume is not None:
            client.resumed = await client.reopen_session(self.resume, self.cwd)
        if self.recover and isinstance(agent, (str, list, tuple)):
            from ._recover import AgentRecovery

            cmd = [agent] if isinstance(agent, str) else list(agent)
            client.recovery = AgentRecovery(client, lambda: self._spawn(cmd, env), limit=self.recover,
                                            protocol_version=self.protocol_version)
            client.recovery.start()

    async def __aenter__(self) -> Client:
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            await self.client.aclose()

    def __await__(self) -> Generator[Any, None, Client]:
        return self._open().__await__()


def _recover_limit(recover: bool | int, *, local: bool) -> int:
    """``recover=``: the most restarts within a minute (0: none)."""
    if recover is False or recover == 0:
        return 0
    if not local:
        raise UsageError("recover= is for an agent command line (a process acplink starts)")
    if recover is True:
        return 3
    if not isinstance(recover, int) or recover < 0:
        raise UsageError(f"recover= takes True, False or a number of restarts, not {recover!r}")
    return recover


def _registry(registry: Registry | str | os.PathLike[str] | None) -> Registry:
    from ..registry import Registry  # (imported when used: archives and HTTP are not every client's)

    return registry if isinstance(registry, Registry) else Registry(registry)


async def _agent_failed(transport: Transport, exc: BaseException) -> AcpError | None:
    """The error for an agent that failed before answering ``initialize`` (None: ``exc`` as is):
    for a spawned agent, the start-up report of :meth:`SubprocessTransport.start_failure`."""
    failure = getattr(transport, "failure", None)  # (a remote transport: the server's answer)
    if isinstance(failure, TransportError):
        return failure
    if isinstance(transport, SubprocessTransport):
        if transport.echoed_initialize():  # (`cat`: our request came back, or our answer to it)
            return ProtocolError(transport.start_failure(exc))
        if isinstance(exc, (ConnectionClosed, TransportError)):
            if transport.spawn_error is not None:
                return exc if isinstance(exc, TransportError) else None
            # an exit of its own, not our stopping it (which the caller does next)
            code = None if isinstance(exc, PeerOutputNotJson) else await transport.exit_code()
            kind = next(k for k in (PeerOutputNotJson, ConnectionClosed, TransportError) if isinstance(exc, k))
            return kind(transport.start_failure(exc, code))
        return None
    if isinstance(exc, (ConnectionClosed, TransportError)):
        return exc if isinstance(exc, TransportError) else ConnectionClosed(str(exc))
    return None
