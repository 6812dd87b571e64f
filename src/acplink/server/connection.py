"""One remote connection (its agent and the routing of the agent's messages to the client's
streams) and the registry of connections.

Routing (HTTP): a message from the agent whose ``params.sessionId`` names a session goes to
that session's stream, any other request or notification to the connection stream; a
response goes where the request it answers came from (``session/new`` and ``session/load``
answers: the connection stream). On a WebSocket everything goes to the one socket. Output
nobody has read yet is queued, bounded by ``max_buffered_bytes``: while the queue is full the
agent's output is not read, and a client that takes nothing for ``output_stall`` is dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import orjson

from .._tasks import TaskSet
from ..errors import ConnectionClosed
from ..protocol.messages import message_kind
from ._metrics import relay_metrics
from .backends import AgentBackend, AgentChannel
from .limits import ServerLimits
from .resume import Retention

__all__ = ["Mailbox", "Registry", "RemoteConnection", "id_key", "credentials_of", "pump"]

log = logging.getLogger("acplink.server")

#: where a message goes: a session id, or None for the connection stream
Route = str | None
Key = tuple[str, Any]
Kind = Literal["http", "ws"]

#: client requests whose answer goes to the connection stream whatever session they name
CONNECTION_ANSWERS = frozenset({"session/new", "session/load"})

#: how every notification acplink's engine writes begins
_NOTIFICATION = b'{"jsonrpc":"2.0","method":'
#: in every v2 ``state_update`` (kept for a resume); looked for before any parse
_STATE_UPDATE = b'"state_update"'


def credentials_of(headers: dict[str, str]) -> str:
    """A digest of a request's credentials (``Authorization``; empty without). A stream is
    resumed only with the credentials that opened its connection."""
    auth = headers.get("authorization")
    return hashlib.sha256(auth.encode()).hexdigest() if auth else ""


def id_key(rid: Any) -> Key | None:
    """A request id as a dict key (1 and "1" are different ids)."""
    if type(rid) is int:
        return ("n", rid)
    if type(rid) is str:
        return ("s", rid)
    return None


class Mailbox:
    """The output of one stream (a session's, the connection's, or a whole WebSocket's), in
    order, for at most one reader at a time."""

    def __init__(self, owner: RemoteConnection, session: str | None) -> None:
        self.owner = owner
        self.session = session
        self.queue: deque[bytes] = deque()
        self.has_reader = False
        self.finished = False
        self.wake = asyncio.Event()
        self.reader_task: asyncio.Future[Any] | None = None
        #: set while the stream has no reader (a resume waits for the reader it replaces)
        self.free = asyncio.Event()
        self.free.set()
        limits = owner.limits
        #: what was sent (as sent: a WebSocket's messages with their cursor), for a resume
        #: (None: a WebSocket whose client does not resume, whose connection ends with it)
        self.retention: Retention | None = Retention(limits.retention_messages, limits.retention_seconds,
                                                     limits.max_buffered_bytes) if owner.resumable else None

    def push(self, data: bytes) -> None:
        if self.finished:
            return
        self.queue.append(data)
        self.owner._queued(len(data))
        self.wake.set()

    def peek(self) -> bytes | None:
        return self.queue[0] if self.queue else None

    def commit(self, sent: bytes | None = None) -> None:
        """The message :meth:`peek` returned was sent (as ``sent``, when it was changed)."""
        data = self.queue.popleft()
        if self.retention is not None:
            self.retention.keep(data if sent is None else sent)
        self.owner._taken(len(data))

    def head_cursor(self) -> str:
        """The cursor of the message :meth:`peek` returned."""
        assert self.retention is not None
        return self.retention.cursor(self.retention.sent + 1)

    def finish(self) -> None:
        """Nothing more comes: a reader gets what is queued, then its stream ends."""
        self.finished = True
        self.wake.set()

    def drop(self) -> None:
        """End now: queued output is discarded and a reader stuck on a send is cancelled."""
        self.finish()
        size = sum(map(len, self.queue))
        self.queue.clear()
        self.owner._taken(size)
        if self.reader_task is not None:
            self.reader_task.cancel()

    async def take_over(self, timeout: float) -> None:
        """Stop the reader this stream has (a client whose socket dropped before the server
        saw it go: its resume replaces it), waiting at most ``timeout`` for it to let go."""
        if self.reader_task is not None:
            self.reader_task.cancel()
        try:
            await asyncio.wait_for(self.free.wait(), timeout)
        except TimeoutError:
            pass

    @property
    def unread(self) -> bool:
        return not self.has_reader and bool(self.queue)


async def pump(box: Mailbox, send: Callable[[bytes], Awaitable[bytes | None]], *,
               keepalive: float | None = None,
               on_quiet: Callable[[], Awaitable[None]] | None = None) -> None:
    """Send a mailbox's messages in order until it is finished and empty. A message leaves
    the queue only once ``send`` returned (a cancelled send loses nothing); ``send`` returns
    the message as it sent it when it changed it (None: as it was). ``on_quiet`` runs after
    ``keepalive`` seconds without a message."""
    while True:
        box.wake.clear()
        data = box.peek()
        if data is not None:
            box.commit(await send(data))
            continue
        if box.finished:
            return
        if keepalive is None:
            await box.wake.wait()
            continue
        # (a timeout scope, not wait_for: no task per wait, the sender wakes in one loop turn)
        try:
            async with asyncio.timeout(keepalive):
                await box.wake.wait()
        except TimeoutError:
            if on_quiet is not None:
                await on_quiet()


class RemoteConnection:
    """A remote client's connection: its agent, its streams, its routes."""

    def __init__(self, registry: Registry, kind: Kind, peer: str, *, cid: str | None = None,
                 principal: str | None = None, credentials: str = "", resumable: bool = True) -> None:
        self.id = cid or str(uuid.uuid4())
        #: its streams keep what they sent for a resume (HTTP always; a WebSocket when its
        #: client said it resumes: see server/ws.py)
        self.resumable = resumable
        #: whom the client's token identifies (None: the server needs no token); its agent
        #: serves that principal's sessions, and only that token reaches the connection
        self.principal = principal
        self.kind = kind
        self.peer = peer
        #: the credentials it was opened with (see :func:`credentials_of`): a resume must
        #: present the same (stricter than the principal: also on a server without tokens)
        self.credentials = credentials
        #: the WebSocket now carrying the connection (each resume makes a new one)
        self.generation = 0
        #: the client's ``session/prompt`` requests not answered yet: id key -> (session, id)
        self.prompts: dict[Key, tuple[str | None, Any]] = {}
        #: the last ``state_update`` (v2) the agent sent for each session, as sent
        self.states: dict[str, bytes] = {}
        self.registry = registry
        self.limits: ServerLimits = registry.limits
        self.channel: AgentChannel | None = None
        self.stream = Mailbox(self, None)
        self.sessions: dict[str, Mailbox] = {}
        self.pending: dict[Key, Route] = {}   # client request → where its answer goes
        self.answers: dict[Key, Route] = {}   # agent request → the stream it went to
        self.buffered = 0
        self.paused = False
        self.closed = False
        self.end_reason = ""
        self.close_code = 1000
        self.ended = asyncio.Event()
        self.readers = 0
        self.starting = False
        self.last_active = time.monotonic()
        self._init: tuple[Key, asyncio.Future[bytes]] | None = None
        self._loop = asyncio.get_running_loop()
        self._stall: asyncio.TimerHandle | None = None
        self._idle: asyncio.TimerHandle | None = None
        #: a WebSocket connection to an agent whose output is acplink's own (well-formed): its
        #: notifications go to the client as they are, without a parse (nothing to route)
        self._pass_notifications = False
        #: the server's metrics (None unless a meter provider is configured: see _metrics.py)
        self.metrics = registry.metrics
        if self.metrics is not None:
            self.metrics.opened(self.id)

    # -- the agent ---------------------------------------------------------------------------

    async def start_agent(self, backend: AgentBackend) -> None:
        self.starting = True
        try:
            self._pass_notifications = self.kind == "ws" and backend.well_formed_output
            self.channel = await backend.open_as(self.id, self._from_agent, self._agent_ended, self.principal)
        finally:
            self.starting = False
        if self.closed:  # closed while it started (server shutdown)
            await self.registry.stop_late(self)

    def expect_answer(self, rid: Any, method: str = "initialize") -> asyncio.Future[bytes]:
        """The agent's answer to request ``rid`` (``method``) is handed here instead of to a stream."""
        fut: asyncio.Future[bytes] = self._loop.create_future()
        key = id_key(rid)
        assert key is not None
        self._init = (key, fut)
        if self.metrics is not None:  # (its bytes are counted as it is sent)
            self.metrics.from_client(self.id, 0, method, key)
        return fut

    def send(self, message: bytes, *, method: str | None = None, rid: Any = None,
             route: Route = None) -> None:
        """Pass one client message to the agent. ``method`` and ``rid``: a request (its route
        is kept for its answer); ``rid`` alone: an answer to an agent request."""
        if self.closed or self.channel is None:
            raise ConnectionClosed(f"connection {self.id} is closed")
        self.touch()
        key = id_key(rid)
        if key is not None:
            if method is not None:  # a request: where its answer goes
                self.pending[key] = None if method in CONNECTION_ANSWERS else route
                if method == "session/prompt":
                    self.prompts[key] = (route, rid)
            else:  # an answer: the agent's request is settled
                self.answers.pop(key, None)
        if self.metrics is not None:
            self.metrics.from_client(self.id, len(message), method, key)
        self.channel.send(message)

    async def drain(self) -> None:
        if self.channel is not None:
            await self.channel.drain()

    def route_of_answer(self, rid: Any) -> tuple[bool, Route]:
        """Where the agent request ``rid`` went: (known, session)."""
        key = id_key(rid)
        if key is None or key not in self.answers:
            return False, None
        return True, self.answers[key]

    def _from_agent(self, line: bytes) -> None:
        if self.metrics is not None:
            self.metrics.from_agent(self.id, len(line))
        if _STATE_UPDATE in line:
            self._keep_state(line)
        if self._pass_notifications and line.startswith(_NOTIFICATION):
            self.stream.push(line)  # (a flood's updates: what the parse below would do with them)
            return
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            log.warning("connection %s: the agent wrote a line that is not JSON; dropped", self.id)
            return
        kind = message_kind(msg)
        if kind == "response":
            key = id_key(msg.get("id"))
            if self.metrics is not None and key is not None:
                self.metrics.answered(self.id, key, msg)
            init = self._init
            if init is not None and key == init[0]:
                self._init = None
                if not init[1].done():
                    init[1].set_result(line)
                return
            route = self.pending.pop(key, None) if key is not None else None
            if key is not None:
                self.prompts.pop(key, None)
            self._deliver(route, line)
        elif kind == "invalid":
            log.warning("connection %s: the agent wrote a message that is not JSON-RPC; dropped", self.id)
        else:
            params = msg.get("params")
            sid = params.get("sessionId") if isinstance(params, dict) else None
            route = sid if isinstance(sid, str) else None
            key = id_key(msg.get("id")) if kind == "request" else None
            if key is not None:
                self.answers[key] = route
            self._deliver(route, line)

    def _deliver(self, route: Route, line: bytes) -> None:
        if self.kind == "ws" or route is None:
            self.stream.push(line)
            return
        box = self.sessions.get(route)
        if box is None:
            if len(route) > self.limits.max_id_length:
                log.warning("connection %s: dropped an agent message for an over-long session id", self.id)
                return
            unread = sum(1 for b in self.sessions.values() if b.unread)
            if unread >= self.limits.max_session_streams:
                self.close(f"over {self.limits.max_session_streams} unread session streams",
                           code=1008, drop=True)
                return
            box = self.sessions[route] = Mailbox(self, route)
        box.push(line)

    def _keep_state(self, line: bytes) -> None:
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        params = msg.get("params") if isinstance(msg, dict) and msg.get("method") == "session/update" else None
        update = params.get("update") if isinstance(params, dict) else None
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(update, dict) and update.get("sessionUpdate") == "state_update" and isinstance(sid, str):
            self.states[sid] = line

    def turn_state(self, session: str | None) -> dict[str, Any]:
        """Where the turns stand (the RFD draft's v1 ``acp/turnState``): ``running`` while a
        ``session/prompt`` is not answered, ``requires_action`` while the agent also waits for
        an answer of the client, else ``idle``; of ``session``'s stream, or with ``sessions``
        (each session with a turn) for the connection's."""
        def state(sid: str | None) -> dict[str, Any]:
            prompt = next((rid for s, rid in self.prompts.values() if sid is None or s == sid), None)
            if prompt is None:
                return {"state": "idle"}
            asking = any(sid is None or s == sid for s in self.answers.values())
            return {"state": "requires_action" if asking else "running", "promptRequestId": prompt}

        out = state(session)
        if session is None:
            turns = {s: state(s) for s, _ in self.prompts.values() if s is not None}
            if turns:
                out["sessions"] = turns
        return out

    def _agent_ended(self, reason: str) -> None:
        self.close(reason, code=1011)

    # -- streams -----------------------------------------------------------------------------

    def open_stream(self, session: str | None) -> Mailbox | None:
        """Take the reader's place of a stream (a session's is made on demand); None when it
        already has a reader."""
        if session is None:
            box = self.stream
        else:
            found = self.sessions.get(session)
            box = found if found is not None else self.sessions.setdefault(session, Mailbox(self, session))
        if box.has_reader:
            return None
        box.has_reader = True
        box.free.clear()
        self.readers += 1
        self.touch()
        return box

    def close_stream(self, box: Mailbox) -> None:
        box.has_reader = False
        box.reader_task = None
        box.free.set()
        self.readers -= 1
        self.touch()
        kept = box.retention is not None and box.retention.kept
        if box.session is not None and not box.queue and not kept and self.sessions.get(box.session) is box:
            del self.sessions[box.session]

    # -- flow control and timers -------------------------------------------------------------

    def _queued(self, size: int) -> None:
        self.buffered += size
        if not self.paused and self.buffered >= self.limits.max_buffered_bytes:
            self.paused = True
            if self.channel is not None:
                self.channel.pause()
            self._arm_stall()

    def _taken(self, size: int) -> None:
        self.buffered -= size
        if not self.paused:
            return
        if self.buffered < self.limits.max_buffered_bytes:
            self.paused = False
            if self._stall is not None:
                self._stall.cancel()
                self._stall = None
            if self.channel is not None and not self.closed:
                self.channel.resume()
        else:
            self._arm_stall()  # the client read something: its clock starts again

    def _arm_stall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
        stall = self.limits.output_stall
        self._stall = self._loop.call_later(
            stall, lambda: self.close(f"the client read none of its output for {stall:g} s",
                                      code=1008, drop=True))

    def arm_idle(self) -> None:
        """Start the idle clock (HTTP, once ``initialize`` is answered; a WebSocket, once its
        socket dropped)."""
        self.touch()
        if not self.closed and self._idle is None:
            self._idle = self._loop.call_later(self.limits.idle_timeout, self._check_idle)

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def _check_idle(self) -> None:
        idle = self.limits.idle_timeout
        quiet = time.monotonic() - self.last_active
        if self.readers == 0 and quiet >= idle * 0.99:
            self.close(f"idle for {idle:g} s")
            return
        self._idle = self._loop.call_later(idle if self.readers else idle - quiet, self._check_idle)

    # -- the end -----------------------------------------------------------------------------

    def close(self, reason: str, *, code: int = 1000, drop: bool = False) -> None:
        """End the connection: its streams end (at once with ``drop``), later requests get
        404, and its agent is stopped."""
        if self.closed:
            return
        self.closed = True
        self.end_reason = reason
        self.close_code = code
        for timer in (self._stall, self._idle):
            if timer is not None:
                timer.cancel()
        if self._init is not None and not self._init[1].done():
            self._init[1].set_exception(ConnectionClosed(reason))
        for box in (self.stream, *self.sessions.values()):
            if drop:
                box.drop()
            else:
                box.finish()
        self.pending.clear()
        self.answers.clear()
        self.prompts.clear()
        self.ended.set()
        self.registry._forget(self)


class Registry:
    """The live connections, the tasks that stop their agents, and the connection limit."""

    def __init__(self, limits: ServerLimits, backend: AgentBackend) -> None:
        self.limits = limits
        self.backend = backend
        self.connections: dict[str, RemoteConnection] = {}
        #: WebSockets accepted whose first message has not come yet (they count as connections)
        self.opening = 0
        self.closing = False
        #: the tasks that stop agents, keyed by connection id (aclose waits for them)
        self._stopping = TaskSet("acplink-serve-stop")
        #: what the server measures (None unless a meter provider is configured)
        self.metrics = relay_metrics()

    @property
    def full(self) -> bool:
        return self.closing or len(self.connections) + self.opening >= self.limits.max_connections

    def create(self, kind: Kind, peer: str, *, cid: str | None = None, principal: str | None = None,
               credentials: str = "", resumable: bool = True) -> RemoteConnection:
        conn = RemoteConnection(self, kind, peer, cid=cid, principal=principal, credentials=credentials,
                                resumable=resumable)
        self.connections[conn.id] = conn
        log.info("connection %s opened (%s from %s)", conn.id, "WebSocket" if kind == "ws" else "HTTP", peer)
        return conn

    def get(self, connection_id: str, kind: Kind) -> RemoteConnection | None:
        conn = self.connections.get(connection_id)
        return conn if conn is not None and conn.kind == kind else None

    def _forget(self, conn: RemoteConnection) -> None:
        if self.connections.pop(conn.id, None) is not None and self.metrics is not None:
            self.metrics.closed(conn.id)
        if conn.channel is not None:
            self._stop(conn)
        elif not conn.starting:  # no agent (yet): start_agent stops one that comes later
            log.info("connection %s closed (%s)", conn.id, conn.end_reason)

    def _stop(self, conn: RemoteConnection) -> None:
        channel, conn.channel = conn.channel, None
        if channel is not None:
            self._stopping.spawn(self._stop_agent(conn, channel), key=conn.id, name=f"acplink-stop-{conn.id}")

    async def stop_late(self, conn: RemoteConnection) -> None:
        """Stop the agent of a connection closed while the agent started: in a task of the
        registry, or here once the registry is closed (no task may start any more)."""
        if not self._stopping.closed:
            self._stop(conn)
            return
        channel, conn.channel = conn.channel, None
        if channel is not None:
            await self._stop_agent(conn, channel)

    async def _stop_agent(self, conn: RemoteConnection, channel: AgentChannel) -> None:
        try:
            try:
                how = await channel.aclose()
            except Exception as exc:
                how = f"agent stop failed: {exc}"
            log.info("connection %s closed (%s; %s)", conn.id, conn.end_reason, how)
        finally:
            self._stopping.discard(conn.id)

    async def aclose(self, reason: str = "server shutting down") -> None:
        """Close every connection (WebSockets with 1001) and wait for their agents to stop."""
        self.closing = True
        for conn in list(self.connections.values()):
            conn.close(reason, code=1001)
        # (each stop is bounded by the agent's shutdown ladder)
        while stops := [t for t in self._stopping.keyed.values() if not t.done()]:
            await asyncio.gather(*stops, return_exceptions=True)
        await self._stopping.aclose()
