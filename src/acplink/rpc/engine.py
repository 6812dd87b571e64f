"""The JSON-RPC 2.0 state machine: bytes in → events out; calls in → bytes out.

No I/O and no asyncio: the async driver (``acplink.connection.peer``) feeds it what the
transport read and writes what it returns. It owns request-id minting, the table of pending
outbound requests, and every reply to malformed input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from .._record import Record
from ..errors import (
    AcpError,
    InvalidRequest,
    MessageTooLarge,
    ParseError,
    ProtocolError,
    RequestError,
    UsageError,
)
from ..protocol.messages import message_kind, usable_id
from .framing import _KEEP, DEFAULT_MAX_MESSAGE_SIZE, LineDecoder, Oversized

__all__ = [
    "Engine",
    "Event",
    "IncomingNotification",
    "IncomingRequest",
    "IncomingResponse",
    "Violation",
    "encode",
]

RequestId = int | str | None


class IncomingRequest(Record):
    """A request from the peer."""

    __match_args__ = ("id", "method", "params")
    __slots__ = ("id", "method", "params")

    def __init__(self, id: int | str, method: str, params: Any) -> None:
        self.id = id
        self.method = method
        self.params = params


class IncomingNotification(Record):
    """A notification from the peer. ``typed``: ``params`` is already its typed model (see
    Engine.add_fast_notification)."""

    __match_args__ = ("method", "params", "typed")
    __slots__ = ("method", "params", "typed")

    def __init__(self, method: str, params: Any, typed: bool = False) -> None:
        self.method = method
        self.params = params
        self.typed = typed


class IncomingResponse(Record):
    """A response to one of our requests. Exactly one of ``result``/``error`` is meaningful."""

    __match_args__ = ("id", "method", "result", "error")
    __slots__ = ("error", "id", "method", "result")

    def __init__(self, id: int | str, method: str, result: Any = None,
                 error: RequestError | None = None) -> None:
        self.id = id
        self.method = method
        self.result = result
        self.error = error


class Violation(Record):
    """The peer sent something invalid. ``reply`` (if any) must be written back; ``pending_id``
    names one of our requests that this broken message answered (it fails with ``error``)."""

    __match_args__ = ("message", "reply", "pending_id", "error", "noise")
    __slots__ = ("error", "message", "noise", "pending_id", "reply")

    def __init__(self, message: str, reply: bytes | None = None, pending_id: int | str | None = None,
                 error: AcpError | None = None, noise: bool = False) -> None:
        self.message = message
        self.reply = reply
        self.pending_id = pending_id
        self.error = error
        self.noise = noise


Event = IncomingRequest | IncomingNotification | IncomingResponse | Violation

_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d{1,20}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')
_METHOD_RE = re.compile(rb'"method"\s*:\s*"')
#: top-level keys whose (big) values follow the id in a well-ordered message
_BODY_RE = re.compile(rb'"(?:params|result|error)"\s*:')
_RESPONSE_RE = re.compile(rb'"(?:result|error)"\s*:')
_TAIL_END_RE = re.compile(rb'\s*\}\s*$')


def encode(obj: Any) -> bytes:
    """Serialize one message as an NDJSON line."""
    return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)


def _id_json(id_: RequestId) -> bytes:
    return orjson.dumps(id_)


class Engine:
    """JSON-RPC state for one connection (either side).

    ``skip_noise``: lines that do not even start like JSON (``{``/``[``) are dropped with a
    :class:`Violation` flagged ``noise`` instead of being answered -32700 (clients use this
    for agents that print to stdout).
    """

    def __init__(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, skip_noise: bool = False,
                 max_pending: int = 10_000) -> None:
        self.decoder = LineDecoder(max_message_size)
        self.max_message_size = max_message_size
        self.skip_noise = skip_noise
        self.max_pending = max_pending
        self._next_id = 0
        #: line prefix -> (method, decoder of the params JSON into the typed model): the
        #: notifications registered with :meth:`add_fast_notification`
        self._fast: dict[bytes, tuple[str, Callable[[bytes], Any]]] = {}
        self._fast_prefixes: tuple[bytes, ...] = ()
        #: id -> method of each request we sent and await a response for
        self.pending: dict[int | str, str] = {}
        #: id -> method of requests given up on (``forget``): their late response is expected
        self._abandoned: dict[int | str, str] = {}
        #: method -> its JSON string (see _method_json)
        self._methods_json: dict[str, bytes] = {}

    # -- outgoing ------------------------------------------------------------------------------

    def _check_size(self, data: bytes) -> bytes:
        if len(data) > self.max_message_size + 1:
            raise MessageTooLarge(len(data) - 1, self.max_message_size, "outgoing")
        return data

    def request(self, method: str, params_json: bytes | None) -> tuple[int, bytes]:
        """Mint an id and encode a request whose params are already JSON."""
        if len(self.pending) >= self.max_pending:
            raise UsageError(f"too many pending requests ({self.max_pending}); await some first")
        self._next_id += 1
        rid = self._next_id
        data = self._check_size(
            b'{"jsonrpc":"2.0","id":%d,"method":%b%b}\n'
            % (rid, self._method_json(method), b',"params":' + params_json if params_json is not None else b"")
        )
        self.pending[rid] = method
        return rid, data

    def forget(self, rid: int | str) -> bool:
        """Stop waiting for a response (the caller gave up). The peer may still answer
        (before it sees ``$/cancel_request``): that late response is dropped quietly.
        Returns whether ``rid`` was still awaited (False: answered or forgotten already)."""
        method = self.pending.pop(rid, None)
        if method is None:
            return False
        self._abandoned[rid] = method
        if len(self._abandoned) > 1024:
            del self._abandoned[next(iter(self._abandoned))]
        return True

    def forget_all(self) -> None:
        """The connection is over: no response is awaited any more."""
        self.pending.clear()
        self._abandoned.clear()

    @property
    def awaited(self) -> int:
        """How many requests we sent still await their response."""
        return len(self.pending)

    def _method_json(self, method: str) -> bytes:
        """``method`` as JSON (a string), remembered for the first few hundred methods."""
        known = self._methods_json
        encoded = known.get(method)
        if encoded is None:
            encoded = orjson.dumps(method)
            if len(known) < 256:
                known[method] = encoded
        return encoded

    def notification(self, method: str, params_json: bytes | None) -> bytes:
        # (the hot path of a streaming agent: the size check inline, the method's JSON remembered)
        data = (b'{"jsonrpc":"2.0","method":%b,"params":%b}\n' % (self._method_json(method), params_json)
                if params_json is not None else b'{"jsonrpc":"2.0","method":%b}\n' % self._method_json(method))
        if len(data) > self.max_message_size + 1:
            raise MessageTooLarge(len(data) - 1, self.max_message_size, "outgoing")
        return data

    def result(self, rid: int | str, result_json: bytes) -> bytes:
        data = b'{"jsonrpc":"2.0","id":%b,"result":%b}\n' % (_id_json(rid), result_json)
        if len(data) > self.max_message_size + 1:
            raise MessageTooLarge(len(data) - 1, self.max_message_size, "outgoing")
        return data

    @staticmethod
    def error(rid: RequestId, err: RequestError) -> bytes:
        return b'{"jsonrpc":"2.0","id":%b,"error":%b}\n' % (_id_json(rid), orjson.dumps(err.to_wire(), default=str))

    # -- incoming ------------------------------------------------------------------------------

    def add_fast_notification(self, method: str, decode: Callable[[bytes], Any]) -> None:
        """Register a hot notification (the client's ``session/update``): its lines of the
        canonical shape ``{"jsonrpc":"2.0","method":M,"params":P}`` are handed out undecoded
        by :meth:`receive` and decoded later by :meth:`decode_deferred`, ``P`` straight from
        its bytes into the typed model by ``decode`` (one pass in pydantic-core, no dicts)."""
        self._fast[b'{"jsonrpc":"2.0","method":%b,"params":' % orjson.dumps(method)] = (method, decode)
        self._fast_prefixes = tuple(self._fast)

    @property
    def fast_methods(self) -> list[str]:
        """The methods registered with :meth:`add_fast_notification`."""
        return [method for method, _ in self._fast.values()]

    def receive(self, data: bytes) -> list[Event | bytes]:
        """Feed bytes read from the peer; returns the events they complete.

        A ``bytes`` item is a *deferred* notification: a line of a method registered with
        :meth:`add_fast_notification`, not decoded yet. Pass it to :meth:`decode_deferred`
        when it is its turn to be handled: decoding right before handling keeps a burst of
        notifications from holding thousands of models alive at once (which makes the
        garbage collector run often and expensively).
        """
        return self._events(self.decoder.feed(data))

    def receive_message(self, data: bytes) -> Event:
        """Feed one whole message (message-framed transports such as WebSocket)."""
        event = self.receive_frame(data)
        return self.decode_deferred(event) if isinstance(event, bytes) else event

    def receive_frame(self, data: bytes) -> Event | bytes:
        """:meth:`receive_message`, but a notification of a method registered with
        :meth:`add_fast_notification` comes back undecoded (deferred), as from :meth:`receive`."""
        if len(data) > self.max_message_size:
            return self._oversized(Oversized(len(data), data[:_KEEP], data[-_KEEP:]))
        return self._events([data])[0]

    def receive_eof(self) -> list[Event | bytes]:
        """The peer's end of input: a last unterminated line still counts."""
        return self._events(self.decoder.eof())

    def _events(self, items: list[bytes | Oversized]) -> list[Event | bytes]:
        prefixes = self._fast_prefixes
        if not prefixes:
            return [self._event(item) for item in items]
        return [item if type(item) is bytes and item.startswith(prefixes) and item.endswith(b"}")
                else self._event(item) for item in items]

    def decode_deferred(self, line: bytes) -> Event:
        """Decode a deferred notification line (see :meth:`receive`). A line that is not
        exactly the canonical shape with valid params (e.g. one with an ``id`` after its
        params, or params its model refuses) takes the general path, which reports it."""
        for prefix, (method, decode) in self._fast.items():
            if line.startswith(prefix):
                try:
                    return IncomingNotification(method, decode(line[len(prefix):-1]), True)
                except Exception:  # malformed, or not exactly that shape
                    break
        return self._general(line)

    def _event(self, item: bytes | Oversized) -> Event:
        if isinstance(item, Oversized):
            return self._oversized(item)
        return self._general(item)

    def _general(self, item: bytes) -> Event:
        """Any line: parse it as JSON and classify it."""
        try:
            msg = orjson.loads(item)
        except orjson.JSONDecodeError as exc:
            first = item.lstrip()[:1]
            preview = item[:120].decode("utf-8", "replace")
            if self.skip_noise and first not in (b"{", b"["):
                return Violation(f"skipped non-JSON output from the peer: {preview!r}", noise=True)
            parse_err = ParseError(f"Parse error: {exc}")
            return Violation(f"invalid JSON from the peer: {preview!r}", reply=self.error(None, parse_err))
        if type(msg) is dict:
            return self.classify(msg)
        if isinstance(msg, list):
            err = InvalidRequest("Invalid request: batch requests are not supported by ACP")
        else:
            err = InvalidRequest("Invalid request: a message must be a JSON object")
        return Violation(f"invalid message from the peer: {err.message}", reply=self.error(None, err))

    def classify(self, msg: dict[str, Any]) -> Event:
        """Turn one decoded JSON object into an event.

        A response-shaped message (``result`` or ``error``, no ``method``) is never answered,
        whatever is wrong with it: answering one can loop between two peers. Anything else
        that is not a valid request or notification is answered -32600 (with its id when it
        has a usable one, else ``null``)."""
        kind = message_kind(msg)
        if kind == "response":
            return self._response(msg, msg.get("id", _MISSING))
        rid = msg.get("id", _MISSING)
        if msg.get("jsonrpc") != "2.0":
            return self._invalid(rid, f'the "jsonrpc" member must be "2.0", not {_shown(msg, "jsonrpc")}')
        if kind == "notification":
            return IncomingNotification(msg["method"], msg.get("params"))
        if kind == "request":
            if not usable_id(rid):
                return self._invalid(None, "request id must be a string or an integer")
            return IncomingRequest(rid, msg["method"], msg.get("params"))
        if msg.get("method") is not None:
            return self._invalid(rid, "method must be a string")
        return self._invalid(rid, "not a request, notification or response")

    def _response(self, msg: dict[str, Any], rid: Any) -> Event:
        if not usable_id(rid):  # (missing, null or unusable: logged, not answered)
            if "error" in msg:
                err = RequestError.from_wire(msg["error"])
                return Violation(f"the peer reported an error without a request id: {err}")
            return Violation(f"response without a usable id ({_shown(msg, 'id')}) ignored")
        pending = self.pending.pop(rid, None)
        if pending is None:
            pending = self._abandoned.pop(rid, None)  # a late answer to a request we gave up on
        if pending is None:
            return Violation(f"response to unknown request id {rid!r} ignored")
        if msg.get("jsonrpc") != "2.0":
            why = f'the response to {pending} is not JSON-RPC 2.0 (its "jsonrpc" member is {_shown(msg, "jsonrpc")})'
            return Violation(why, pending_id=rid, error=ProtocolError(why))
        if "error" in msg:
            return IncomingResponse(rid, pending, error=RequestError.from_wire(msg["error"]))
        return IncomingResponse(rid, pending, result=msg["result"])

    def _invalid(self, rid: Any, why: str) -> Violation:
        if not usable_id(rid):
            rid = None
        err = InvalidRequest(f"Invalid request: {why}")
        return Violation(f"invalid message from the peer: {why}", reply=self.error(rid, err))

    def _oversized(self, item: Oversized) -> Violation:
        too_big = MessageTooLarge(item.size, self.max_message_size, "incoming")
        rid = _find_id(item)
        method = _METHOD_RE.search(item.head[:512])
        body = _RESPONSE_RE.search(item.head[:512])
        # a "method" key nested in a response's result does not make it a request
        is_request = method is not None and (body is None or method.start() < body.start())
        if is_request and rid is not None:
            err = InvalidRequest(f"Invalid request: {too_big}", {"size": item.size, "limit": self.max_message_size})
            return Violation(str(too_big), reply=self.error(rid, err))
        if rid is not None and rid in self.pending:
            self.pending.pop(rid)
            return Violation(str(too_big), pending_id=rid,
                             error=MessageTooLarge(item.size, self.max_message_size, "incoming response"))
        return Violation(f"{too_big}; discarded")


def _shown(msg: dict[str, Any], key: str) -> str:
    """A member's value for a message (``missing`` when absent), kept short."""
    if key not in msg:
        return "missing"
    text = repr(msg[key])
    return text if len(text) <= 40 else text[:37] + "..."


def _id_value(raw: bytes) -> int | str | None:
    try:
        rid = orjson.loads(raw)
    except orjson.JSONDecodeError:  # a bad escape or invalid UTF-8 in a discarded message
        return None
    return rid if usable_id(rid) else None


def _find_id(item: Oversized) -> int | str | None:
    """The top-level ``id`` of a discarded message, from its kept head or tail.

    In the head the id must come before the params/result/error value (ids nested in that
    value come after it); in the tail it must be the object's last member.
    """
    body = _BODY_RE.search(item.head)
    for m in _ID_RE.finditer(item.head):
        if body is not None and m.start() > body.start():
            break
        rid = _id_value(m.group(1))
        if rid is not None:
            return rid
    for m in reversed(list(_ID_RE.finditer(item.tail))):
        if _TAIL_END_RE.match(item.tail, m.end()):
            return _id_value(m.group(1))
        break
    return None


_MISSING: Any = object()
