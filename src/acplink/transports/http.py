"""The streamable-HTTP client transport (``http://``, ``https://``): each message we send is
one POST; what the agent sends arrives as server-sent events on a GET stream per connection
and one per session.

HTTP (1.1, or 2 where the server offers it through TLS ALPN) is httpx's and SSE parsing is
httpx-sse's; both are imported when the transport starts. The routing rules are those of
the remote-transport RFD as the TypeScript SDK client applies them:

- ``initialize`` is POSTed first, without ``Acp-Connection-Id``; its 200 answer carries the
  connection's id (sent on every later request) and the JSON-RPC response. Then the
  connection stream is opened (GET, ``Accept: text/event-stream``).
- A message whose params carry a ``sessionId`` (and the answer to a request that came on a
  session stream) is sent with ``Acp-Session-Id``; that session's stream is opened first, when
  it is not open yet (so an update never waits for nobody). A result carrying a new
  ``sessionId`` opens that session's stream at once.
- 401/403/404/410 on any request, a network failure, or the end of the connection stream end
  the whole connection (pending calls fail with ``ConnectionClosed``). A 409 on a session (its
  stream or a POST for it), or a 404 on a session's stream, fails that session only: its
  pending requests and later ones fail until ``session/load`` or ``session/resume``. Another
  HTTP error on a request's POST fails that request only (a JSON-RPC error, -32603, whose
  ``data`` holds the status and the start of the body).
- Closing DELETEs the connection (within ``CLOSE_TIMEOUT``).
- With ``options.reconnect``, when the server advertises resumable streams
  (``agentCapabilities.transport.resumable`` in the ``initialize`` answer), a stream that
  drops (a network failure, not an HTTP error answer) is opened again with ``Last-Event-ID``: the SSE id of the last event it delivered,
  so that the server sends what was missed, once and in order (a few tries, ``_BACKOFF``
  apart). A 409 to that resume ends the connection with :class:`StreamResumeFailed`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson

from .._tasks import TaskSet
from ..errors import ConnectionClosed, MessageTooLarge, StreamResumeFailed, TransportError
from ._cursor import RESUMED_METHOD, TURN_STATE_KEY
from ._http_body import _count, _Fatal, _read_capped
from ._remote import (
    CLOSE_TIMEOUT,
    HEADER_CONNECTION_ID,
    HEADER_SESSION_ID,
    RESUME_BACKOFF,
    RemoteOptions,
    advertises_resume,
    http_refusal,
    refused,
    remote_description,
    require_libraries,
    too_large,
)
from .base import MessageMeta, Transport, TransportSink

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpTransport"]

_DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
#: error bodies are read up to this many bytes (they are diagnostics, not messages)
_ERROR_BODY = 8 * 1024
#: statuses that mean the connection is unusable or gone
_CONNECTION_GONE = frozenset((401, 403, 404, 410))
_REATTACH = frozenset(("session/load", "session/resume"))
#: how long a session stream's end waits for the connection's own end before failing its requests
_SETTLE = 0.25
_JSON = "application/json"
_SSE = "text/event-stream"
_BACKOFF = RESUME_BACKOFF


class _Cursor:
    """The SSE id of the last event a stream delivered (None: none yet)."""

    last: str | None = None


class _Failure:
    """Why a request or a session failed: a message, and the HTTP status and body if any."""

    __slots__ = ("http", "message")

    def __init__(self, message: str, http: tuple[int, str] | None = None) -> None:
        self.message = message
        self.http = http


class _SessionStream:
    __slots__ = ("ready", "task")

    def __init__(self, ready: asyncio.Future[_Failure | None]) -> None:
        #: None once the stream is open; the reason when it could not be opened
        self.ready = ready
        self.task: asyncio.Future[None] | None = None


class HttpTransport(Transport):
    """A connection to a remote agent over streamable HTTP (see the module's doc).

    ``options`` (:class:`RemoteOptions`): the URL, the headers of every request and the
    cookie jar (every ``Set-Cookie`` is stored and sent back, by this connection and by the
    next one given the same jar). ``max_message_size``: an SSE event or response body over
    it ends the connection with :class:`MessageTooLarge`. ``http2``: offer HTTP/2 on TLS
    (ALPN; plain ``http://`` is HTTP/1.1).
    """

    framed = True

    def __init__(self, options: RemoteOptions, *, max_message_size: int = _DEFAULT_MAX_MESSAGE,
                 http2: bool = True, connect_timeout: float = 30.0) -> None:
        require_libraries(options.url, http2=http2)
        self.options = options
        self.max_message_size = max_message_size
        self.http2 = http2
        self.connect_timeout = connect_timeout
        #: the server's ``Acp-Connection-Id``, once ``initialize`` was answered
        self.connection_id: str | None = None
        self._client: httpx.AsyncClient | None = None
        #: the URL parsed once (httpx parses a string again on every request)
        self._url: httpx.URL | None = None
        self._sink: TransportSink | None = None
        self._outbox: deque[bytes] = deque()
        self._outbox_bytes = 0
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._reading = asyncio.Event()
        self._reading.set()
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._high = 4 * 1024 * 1024
        self._low = self._high // 4
        #: every task of the connection (writer, stream readers): closing cancels and awaits them
        self._owned = TaskSet("acplink-http-transport")
        self._writer: asyncio.Future[None] | None = None
        self._conn_stream: asyncio.Future[None] | None = None
        self._sessions: dict[str, _SessionStream] = {}
        #: session id -> why it failed (409, or its stream 404): sticky until load/resume
        self._failed_sessions: dict[str, _Failure] = {}
        #: the agent's requests that came on a session stream: id -> session (for the answer)
        self._answer_session: dict[Any, str] = {}
        #: our requests for a session, not answered yet: id -> session (failed with it)
        self._pending: dict[Any, str] = {}
        self._error: TransportError | None = None
        self._closing = False
        #: whether a dropped stream is resumed: ``options.reconnect`` and the server advertises it
        self._resume_streams = False
        #: how many times a dropped stream was resumed
        self.resumes = 0
        #: the last resume's ``_meta["acp/turnState"]`` (see :class:`WebSocketTransport`)
        self.turn_state: dict[str, Any] | None = None
        #: session-stream readers whose stream ended, waiting to see whether the connection did
        self._lingering: set[asyncio.Future[None]] = set()

    @property
    def description(self) -> str:
        return remote_description(self.options.url)

    @property
    def failure(self) -> TransportError | None:
        """Why the connection ended, when it failed (an :class:`AuthRejected` for 401/403)."""
        return self._error

    async def start(self, sink: TransportSink) -> None:
        import httpx

        self._sink = sink
        self._url = httpx.URL(self.options.url)
        self._client = httpx.AsyncClient(
            http2=self.http2, follow_redirects=False,
            timeout=httpx.Timeout(self.connect_timeout, read=None, write=60.0, pool=None))
        self._writer = self._owned.spawn(self._write_loop(), name="acplink-http-writer")

    # -- the way out ---------------------------------------------------------------------------------

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        if self._error is not None:
            raise ConnectionClosed(f"connection to {self.description} is closed: {self._error}")
        if self._closing or self._writer is None:
            raise ConnectionClosed(f"connection to {self.description} is closed")
        self._outbox.append(message)
        self._outbox_bytes += len(message)
        self._idle.clear()
        self._wake.set()
        if self._outbox_bytes > self._high and self._resumed.is_set():
            self._resumed.clear()
            if self._sink is not None:
                self._sink.write_paused()
        return self._resumed.is_set()

    async def drain(self) -> None:
        if not self._resumed.is_set():
            await self._resumed.wait()
        if self._error is not None:
            raise ConnectionClosed(f"connection to {self.description} is closed: {self._error}")

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._high, self._low = high, low

    def write_buffer_size(self) -> int:
        return self._outbox_bytes

    @property
    def writing_paused(self) -> bool:
        return not self._resumed.is_set()

    def abort_writing(self) -> None:
        self._outbox.clear()
        self._outbox_bytes = 0
        self._fail(ConnectionClosed("the server stopped taking messages"))

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    async def _write_loop(self) -> None:
        import httpx

        outbox = self._outbox
        try:
            while True:
                while not outbox:
                    self._idle.set()
                    self._wake.clear()
                    await self._wake.wait()
                message = outbox.popleft()
                self._outbox_bytes -= len(message)
                if not self._resumed.is_set() and self._outbox_bytes <= self._low:
                    self._resumed.set()
                await self._post(message)
        except _Fatal as exc:
            self._fail(exc.error)
        except httpx.HTTPError as exc:
            self._fail(self._lost(exc))

    def _lost(self, exc: BaseException) -> ConnectionClosed:
        import httpx

        why = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectError):
            return ConnectionClosed(f"cannot connect to {self.description}: {why}")
        return ConnectionClosed(f"lost the connection to {self.description}: {why}")

    async def _post(self, message: bytes) -> None:
        msg = orjson.loads(message)
        method = msg.get("method")
        has_id = "id" in msg
        rid = msg.get("id")
        if self.connection_id is None:
            if method != "initialize" or not has_id:
                raise _Fatal(ConnectionClosed("the first message over streamable HTTP must be the initialize request"))
            await self._initialize(message, rid)
            return
        params = msg.get("params")
        sid: str | None = None
        if method is not None:
            found = params.get("sessionId") if isinstance(params, dict) else None
            sid = found if isinstance(found, str) else None
        elif has_id:
            sid = self._answer_session.pop(rid, None)
        if sid is not None:
            if method in _REATTACH:
                self._failed_sessions.pop(sid, None)
            why = self._failed_sessions.get(sid)
            if why is None:
                why = await self._open_session(sid)
            if why is not None:
                self._drop(method, has_id, rid, why)
                return
            if method is not None and has_id:
                self._pending[rid] = sid
        headers = [("Content-Type", _JSON), (HEADER_CONNECTION_ID, self.connection_id)]
        if sid is not None:
            headers.append((HEADER_SESSION_ID, sid))
        status, reason, body = await self._request("POST", headers, message)
        if status < 300:
            return
        still_pending = self._pending.pop(rid, None) is not None if sid is not None and has_id else True
        line = http_refusal(status, reason, body, f"a POST of {method or 'a response'}", self.description)
        if sid is not None and status == 409:
            failure = _Failure(line, (status, body))
            self._fail_session(sid, failure)
            self._drop(method, has_id, rid, failure)
        elif status in _CONNECTION_GONE or method is None or not has_id:
            raise _Fatal(self._refused(status, line))
        elif still_pending:
            self._deliver_error(rid, _Failure(line, (status, body)))

    @staticmethod
    def _refused(status: int, line: str) -> TransportError:
        return refused(status, line)

    async def _request(self, method: str, headers: list[tuple[str, str]], content: bytes | None = None,
                       limit: int = _ERROR_BODY) -> tuple[int, str, str]:
        """One request; the status, its reason and the start of the body (the whole body up to
        ``limit`` bytes for a success)."""
        client = self._client
        assert client is not None
        async with client.stream(method, self._endpoint, headers=[*self.options.request_headers(), *headers],
                                 content=content) as resp:
            self.options.cookies.store(resp.headers.get_list("set-cookie"))
            body = await _read_capped(resp, limit if resp.status_code < 300 else _ERROR_BODY)
            return resp.status_code, resp.reason_phrase, body.decode("utf-8", "replace")

    async def _initialize(self, message: bytes, rid: Any) -> None:
        client = self._client
        assert client is not None
        async with client.stream("POST", self._endpoint, content=message,
                                 headers=[*self.options.request_headers(), ("Content-Type", _JSON)]) as resp:
            self.options.cookies.store(resp.headers.get_list("set-cookie"))
            if resp.status_code != 200:
                text = (await _read_capped(resp, _ERROR_BODY)).decode("utf-8", "replace")
                line = http_refusal(resp.status_code, resp.reason_phrase, text, "initialize", self.description)
                raise _Fatal(self._refused(resp.status_code, line))
            cid = resp.headers.get(HEADER_CONNECTION_ID)
            if not cid:
                raise _Fatal(ConnectionClosed(f"the server at {self.description} answered initialize without "
                                              f"an {HEADER_CONNECTION_ID} header: not a streamable-HTTP ACP server?"))
            body = await _read_capped(resp, self.max_message_size + 1)
        if len(body) > self.max_message_size:
            raise _Fatal(self._too_large())
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or answer.get("id") != rid or not ("result" in answer or "error" in answer):
            raise _Fatal(ConnectionClosed(f"the server at {self.description} answered initialize with something "
                                          "that is not its JSON-RPC response"))
        self.connection_id = cid
        self._resume_streams = self.options.reconnect and advertises_resume(answer)
        self._conn_stream = self._owned.spawn(self._read_connection(), name="acplink-http-sse")
        assert self._sink is not None
        self._sink.message_received(body, None)

    @property
    def _endpoint(self) -> httpx.URL:
        assert self._url is not None  # (set by start(), before any request)
        return self._url

    def _too_large(self) -> MessageTooLarge:
        return too_large("a message", self.max_message_size)

    # -- failing requests, sessions, the connection ----------------------------------------------------

    def _deliver_error(self, rid: Any, why: _Failure) -> None:
        """Fail our request ``rid`` with a JSON-RPC error, as if the agent had answered so."""
        error: dict[str, Any] = {"code": -32603, "message": why.message}
        if why.http is not None:
            error["data"] = {"status": why.http[0], "body": why.http[1]}
        if self._sink is not None and self._error is None:
            self._sink.message_received(orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error}), None)

    def _drop(self, method: str | None, has_id: bool, rid: Any, why: _Failure) -> None:
        """A message for a failed session: a request fails; a notification or an answer has
        nobody to tell (its session is gone) and is dropped."""
        if method is not None and has_id:
            self._deliver_error(rid, why)

    def _fail_session(self, sid: str, why: _Failure) -> None:
        self._failed_sessions[sid] = why
        stream = self._sessions.pop(sid, None)
        if stream is not None:
            if not stream.ready.done():
                stream.ready.set_result(why)
            if stream.task is not None and stream.task is not asyncio.current_task():
                stream.task.cancel()
        self._fail_pending(sid, why)

    def _fail_pending(self, sid: str, why: _Failure) -> None:
        for rid in [r for r, s in self._pending.items() if s == sid]:
            del self._pending[rid]
            self._deliver_error(rid, why)

    def _fail(self, error: TransportError) -> None:
        """The connection is over: tell the sink once; stop writing and reading."""
        if self._error is not None or self._closing:
            return
        self._error = error
        self._resumed.set()
        self._idle.set()
        me = asyncio.current_task()
        for task in self._tasks():
            if task is not me:
                task.cancel()
        if self._sink is not None:
            self._sink.eof_received(error)

    def _tasks(self) -> list[asyncio.Future[None]]:
        tasks = [self._writer, self._conn_stream, *(s.task for s in self._sessions.values()), *self._lingering]
        return [t for t in tasks if t is not None and not t.done()]

    # -- the way in ----------------------------------------------------------------------------------

    async def _read_connection(self) -> None:
        import httpx

        assert self.connection_id is not None
        try:
            await self._resumable([(HEADER_CONNECTION_ID, self.connection_id)], None)
        except _Fatal as exc:
            self._fail(exc.error)
            return
        except httpx.HTTPError as exc:
            self._fail(self._lost(exc))
            return
        self._fail(ConnectionClosed(f"the server at {self.description} ended the connection"))

    def _open_session(self, sid: str) -> asyncio.Future[_Failure | None]:
        """Open the session's stream (if not open or opening): done when the server answered
        its GET (None: open; else why not)."""
        stream = self._sessions.get(sid)
        if stream is None:
            stream = self._sessions[sid] = _SessionStream(asyncio.get_running_loop().create_future())
            stream.task = self._owned.spawn(self._read_session(sid, stream), name="acplink-http-session-sse")
        return asyncio.shield(stream.ready)

    async def _read_session(self, sid: str, stream: _SessionStream) -> None:
        import httpx

        assert self.connection_id is not None
        try:
            await self._resumable([(HEADER_CONNECTION_ID, self.connection_id), (HEADER_SESSION_ID, sid)], sid,
                                  stream.ready)
        except _Fatal as exc:
            if not stream.ready.done():
                stream.ready.set_result(_Failure(str(exc.error)))
            self._fail(exc.error)
            return
        except httpx.HTTPError as exc:
            if not stream.ready.done():
                stream.ready.set_result(_Failure(str(exc)))
            self._fail(self._lost(exc))
            return
        # the server ended the session's stream: answers to its requests cannot come any more;
        # the next message for the session opens it again
        if self._sessions.get(sid) is stream:
            del self._sessions[sid]
        if not stream.ready.done():
            stream.ready.set_result(None)
        # when the whole connection ends (DELETE, shutdown) its stream ends a moment later: the
        # requests then fail with the connection (ConnectionClosed), not one by one
        me = asyncio.current_task()
        assert me is not None
        self._lingering.add(me)
        try:
            await asyncio.sleep(_SETTLE)
        finally:
            self._lingering.discard(me)
        self._fail_pending(sid, _Failure(f"the server at {self.description} ended the stream of session {sid}"))

    async def _resumable(self, headers: list[tuple[str, str]], sid: str | None,
                         ready: asyncio.Future[_Failure | None] | None = None) -> None:
        """Read one stream to its end; with ``reconnect``, a drop opens it again from the last
        event delivered."""
        import httpx

        cursor = _Cursor()
        tries = 0
        while True:
            resume = [("Last-Event-ID", cursor.last)] if cursor.last is not None else []
            try:
                async for _ in self._stream([*headers, *resume], sid, ready, cursor):
                    tries = 0
                return
            except httpx.TransportError:
                # (only where the server said it resumes streams, and from a cursor it gave)
                if not self._resume_streams or cursor.last is None or self._closing or tries >= len(_BACKOFF):
                    raise
            await asyncio.sleep(_BACKOFF[tries])
            tries += 1

    async def _stream(self, headers: list[tuple[str, str]], sid: str | None,
                      ready: asyncio.Future[_Failure | None] | None = None,
                      cursor: _Cursor | None = None) -> AsyncIterator[None]:
        """GET one SSE stream and deliver its events; yields nothing (an async generator so
        that the response closes with it)."""
        from httpx_sse import EventSource

        client = self._client
        sink = self._sink
        assert client is not None and sink is not None
        async with client.stream("GET", self._endpoint,
                                 headers=[*self.options.request_headers(), ("Accept", _SSE), *headers]) as resp:
            self.options.cookies.store(resp.headers.get_list("set-cookie"))
            if resp.status_code != 200:
                body = (await _read_capped(resp, _ERROR_BODY)).decode("utf-8", "replace")
                what = f"the stream of session {sid}" if sid is not None else "the connection stream"
                line = http_refusal(resp.status_code, resp.reason_phrase, body, what, self.description)
                if resp.status_code == 409 and any(k == "Last-Event-ID" for k, _ in headers):
                    raise _Fatal(StreamResumeFailed(
                        f"{line}; what the stream missed is lost: reopen the session on a new connection "
                        "(session/resume or session/load)"))
                if sid is not None and resp.status_code in (404, 409):
                    self._fail_session(sid, _Failure(line, (resp.status_code, body)))
                    return
                raise _Fatal(self._refused(resp.status_code, line))
            if ready is not None and not ready.done():
                ready.set_result(None)
            counted = _count(resp, self.max_message_size)
            reading = self._reading
            async for event in EventSource(resp).aiter_sse():
                counted.count = 0
                data = event.data
                if not data:  # (an id-only event: the stream's position)
                    if cursor is not None and event.id:
                        cursor.last = event.id
                    continue
                if len(data) > self.max_message_size:
                    raise _Fatal(self._too_large())
                if not reading.is_set():
                    await reading.wait()
                self._route(data, sid, sink)
                if cursor is not None and event.id:
                    cursor.last = event.id
                yield None

    def _route(self, data: str, sid: str | None, sink: TransportSink) -> None:
        raw = data.encode()
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            msg = None
        if isinstance(msg, dict):
            if msg.get("method") == RESUMED_METHOD and "id" not in msg:  # (the server's, not the agent's)
                params = msg.get("params")
                meta = params.get("_meta") if isinstance(params, dict) else None
                state = meta.get(TURN_STATE_KEY) if isinstance(meta, dict) else None
                self.turn_state = state if isinstance(state, dict) else None
                self.resumes += 1
                return
            if "method" in msg:
                if sid is not None and "id" in msg:  # its answer goes with the session's header
                    self._answer_session[msg["id"]] = sid
            elif "id" in msg:
                self._pending.pop(msg["id"], None)
                result = msg.get("result")
                new = result.get("sessionId") if isinstance(result, dict) else None
                if isinstance(new, str) and new not in self._sessions and new not in self._failed_sessions:
                    self._open_session(new)  # opened now; a POST for it waits until it is
        sink.message_received(raw, None)

    # -- closing ---------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Send what is queued (bounded), stop the streams, DELETE the connection (at most
        ``CLOSE_TIMEOUT`` seconds), release the HTTP client."""
        if self._closing:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLOSE_TIMEOUT
        if self._error is None and self._writer is not None and self._outbox:
            try:
                async with asyncio.timeout_at(deadline - CLOSE_TIMEOUT / 2):
                    await self._idle.wait()
            except TimeoutError:
                pass
        self._closing = True
        await self._owned.aclose()
        client = self._client
        if client is None:
            return
        try:
            async with asyncio.timeout_at(deadline):
                if self.connection_id is not None:
                    await self._request("DELETE", [(HEADER_CONNECTION_ID, self.connection_id)])
        except Exception:  # (the server may be gone: nothing more to do)
            pass
        finally:
            self._client = None
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT / 4):
                    await client.aclose()
            except Exception:
                pass
