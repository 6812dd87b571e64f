"""Replay: serve a recorded trace (``acplink record``) as the agent, with no real agent behind it.

The client's messages are matched against the trace's client-to-agent messages by kind,
method and order; the agent's recorded messages between them are sent back. Ids are tolerated:
the client's request ids, session ids and cwd are mapped onto the recorded ones, and the
agent's replies carry the client's own values. The first message that does not match ends the
replay: one line naming it (index, method) goes to ``on_mismatch``, a request gets a JSON-RPC
error, and the connection closes (never a hang).

The client's answers to the agent's requests (a permission outcome, a file's content, a
terminal's exit code) are compared with the recorded ones too (ids the client makes up, such as
a ``terminalId``, are mapped, and ``_meta`` is ignored): the first that differs is a
*divergence*, named with its method, index and the first differing field (expected vs got).
It ends the replay the same way (the client's open requests get an error, so it never goes on
as if the recording's answer had been given), unless ``lenient``: then it is reported and the
recording plays on.

One implementation serves both ``acplink replay`` (on stdio) and :meth:`FakeAgent.from_trace`
(in memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from .._tasks import TaskSet
from ..errors import ConnectionClosed, UsageError
from ..rpc.framing import LineDecoder, Oversized
from ..tools.trace import read_trace
from ..transports.base import MessageMeta, Transport

__all__ = ["REPLAY_MISMATCH_CODE", "TraceReplay", "first_difference", "parse_speed", "trace_messages"]

#: the JSON-RPC error code a client gets for a request the trace does not have (internal error)
REPLAY_MISMATCH_CODE = -32603

Record = dict[str, Any]


def parse_speed(value: str | float | None) -> float | None:
    """``real`` → 1.0, ``instant`` → None (no delays), a number N → N times real time."""
    if value is None or value == "instant":
        return None
    if value == "real":
        return 1.0
    try:
        speed = float(value)
    except ValueError:
        raise UsageError(f"speed must be 'real', 'instant' or a positive number, not {value!r}") from None
    if not speed > 0:
        raise UsageError(f"speed must be a positive number, not {value!r}")
    return speed


def trace_messages(trace: str | os.PathLike[str] | Sequence[Record]) -> list[Record]:
    """The message records of a trace (a file written by ``acplink record``, or its records)."""
    if isinstance(trace, (str, os.PathLike)):
        try:
            records = read_trace(trace)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read the trace {os.fspath(trace)!r}: {getattr(exc, 'strerror', None) or exc}") \
                from None
    else:
        records = list(trace)
    msgs = [r for r in records if r.get("type") == "message" and isinstance(r.get("msg"), dict)
            and r.get("dir") in ("c2a", "a2c")]
    if not msgs:
        raise UsageError("the trace holds no messages to replay")
    return msgs


def _kind(msg: dict[str, Any]) -> str:
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "response"


#: fields whose values the client makes up: mapped onto the recorded ones, never compared
_CLIENT_MADE = frozenset({"terminalId"})


def first_difference(want: Any, got: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place where ``got`` differs from ``want`` (``_meta`` ignored): its path (e.g.
    ``result.outcome.optionId``), the expected value and the one got; None when they agree."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in dict.fromkeys([*want, *got]):
            if key == "_meta":
                continue
            where = f"{path}.{key}" if path else str(key)
            if key not in got:
                return where, want[key], "(missing)"
            if key not in want:
                return where, "(missing)", got[key]
            diff = first_difference(want[key], got[key], where)
            if diff is not None:
                return diff
        return None
    if isinstance(want, list) and isinstance(got, list):
        for i, (w, g) in enumerate(zip(want, got, strict=False)):
            diff = first_difference(w, g, f"{path}[{i}]")
            if diff is not None:
                return diff
        if len(want) != len(got):
            return f"{path} (length)", len(want), len(got)
        return None
    if want == got and type(want) is type(got):
        return None
    return path or "(the whole message)", want, got


def _show(value: Any, n: int = 80) -> str:
    text = orjson.dumps(value, default=str).decode() if value != "(missing)" else "(missing)"
    return text if len(text) <= n else text[:n - 1] + "…"


def _describe(msg: dict[str, Any]) -> str:
    kind = _kind(msg)
    if kind == "response":
        return f"a response (id {msg.get('id')!r})"
    return f"a {msg.get('method')!r} {kind}"


class TraceReplay:
    """Plays the agent side of a trace on one transport (see the module doc)."""

    def __init__(self, trace: str | os.PathLike[str] | Sequence[Record], transport: Transport, *,
                 speed: float | None = None, on_mismatch: Callable[[str], None] | None = None,
                 lenient: bool = False) -> None:
        self.script = trace_messages(trace)
        self.transport = transport
        self.speed = speed
        self.on_mismatch = on_mismatch
        self.lenient = lenient
        #: the first mismatch (one line), once there is one: it ended the replay
        self.mismatch: str | None = None
        #: every divergence of the client's answers from the recorded ones (one line each; with
        #: ``lenient``, the replay went on past them, else the first one is also the mismatch)
        self.divergences: list[str] = []
        self._agent_requests: dict[Any, str] = {}  # the recorded agent request ids -> their methods
        self._open: dict[Any, None] = {}  # the live ids of client requests not answered yet
        #: every message the client sent, in order
        self.received: list[dict[str, Any]] = []
        self._decoder = LineDecoder()
        self._inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._ids: dict[Any, Any] = {}      # recorded client request id -> the live one
        self._values: dict[str, str] = {}   # recorded session id / cwd -> the live one
        self._tasks = TaskSet("replay")
        self._closed = asyncio.Event()

    # -- transport sink ------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        for line in self._decoder.feed(data):
            self._line(line)

    def message_received(self, message: bytes, meta: MessageMeta | None) -> None:
        self._line(message)

    def write_paused(self) -> None:
        pass  # (each send is drained)

    def send_failed(self, exc: BaseException) -> None:
        self._inbox.put_nowait(None)  # (nothing more can be replayed)

    def eof_received(self, exc: BaseException | None) -> None:
        for line in self._decoder.eof():
            self._line(line)
        self._inbox.put_nowait(None)

    def _line(self, line: bytes | Oversized) -> None:
        try:
            msg = orjson.loads(line) if isinstance(line, bytes) else None
        except orjson.JSONDecodeError:
            msg = None
        self._inbox.put_nowait(msg if isinstance(msg, dict) else {"invalid": True})

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        await self.transport.start(self)
        self._tasks.spawn(self._run(), name="acplink-replay")

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def aclose(self) -> None:
        await self._tasks.aclose()
        await self.transport.aclose()
        self._closed.set()

    # -- the replay ----------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._play()
        except ConnectionClosed:
            pass
        finally:
            with contextlib.suppress(ConnectionClosed):
                await self.transport.aclose()
            self._closed.set()

    async def _play(self) -> None:
        prev_mono: float | None = None
        expected = 0
        for index, rec in enumerate(self.script, 1):
            mono = rec.get("mono")
            if rec["dir"] == "a2c":
                if self.speed is not None and isinstance(mono, (int, float)) and prev_mono is not None:
                    await asyncio.sleep(max(0.0, mono - prev_mono) / self.speed)
                if _kind(rec["msg"]) == "request":
                    self._agent_requests[rec["msg"]["id"]] = str(rec["msg"].get("method"))
                await self._send(self._live(rec["msg"]))
            else:
                expected += 1
                got = await self._inbox.get()
                if got is None:  # the client hung up: the replay is over
                    return
                self.received.append(got)
                if not self._matches(rec["msg"], got):
                    await self._fail(f"message {expected} (trace message {index}) does not match the trace: "
                                     f"expected {_describe(rec['msg'])}, got {self._got(got)}", got)
                    return
                if _kind(got) == "request":
                    self._open[got["id"]] = None
                diverged = self._diverges(rec["msg"], got)
                if diverged is not None:
                    line = f"message {expected} (trace message {index}): {diverged}"
                    self.divergences.append(line)
                    if not self.lenient:
                        await self._fail(line + " (--lenient to play on)", got)
                        return
                    if self.on_mismatch is not None:
                        self.on_mismatch(line + " (--lenient: the recording plays on)")
            if isinstance(mono, (int, float)):
                prev_mono = mono
        while True:  # the trace is over: anything more the client sends is a mismatch
            got = await self._inbox.get()
            if got is None:
                return
            self.received.append(got)
            expected += 1
            await self._fail(f"message {expected} goes beyond the end of the trace: got {self._got(got)}", got)
            return

    def _got(self, msg: dict[str, Any]) -> str:
        return "a line that is not a JSON-RPC message" if msg.get("invalid") else _describe(msg)

    def _matches(self, want: dict[str, Any], got: dict[str, Any]) -> bool:
        if got.get("invalid") or _kind(want) != _kind(got) or want.get("method") != got.get("method"):
            return False
        if _kind(want) == "request":
            self._ids[want["id"]] = got["id"]
        wp, gp = want.get("params"), got.get("params")
        if isinstance(wp, dict) and isinstance(gp, dict):
            for key in ("sessionId", "cwd"):
                w, g = wp.get(key), gp.get(key)
                if isinstance(w, str) and isinstance(g, str) and w != g:
                    self._values[w] = g
        return True

    def _diverges(self, want: dict[str, Any], got: dict[str, Any]) -> str | None:
        """How the client's answer ``got`` differs from the recorded ``want`` (None: it does not,
        or it is not an answer)."""
        if _kind(want) != "response":
            return None
        method = self._agent_requests.get(want.get("id"), "?")
        what = f"the client's answer to {method!r} (request id {want.get('id')!r}) differs from the recording"
        w_err, g_err = want.get("error"), got.get("error")
        if (w_err is None) != (g_err is None):
            expected = f"error {_show(w_err)}" if w_err is not None else f"result {_show(want.get('result'))}"
            found = f"error {_show(g_err)}" if g_err is not None else f"result {_show(got.get('result'))}"
            return f"{what}: expected {expected}, got {found}"
        if isinstance(w_err, dict) and isinstance(g_err, dict):
            if w_err.get("code") != g_err.get("code"):
                return f"{what} at error.code: expected {_show(w_err.get('code'))}, got {_show(g_err.get('code'))}"
            return None
        self._learn(want.get("result"), got.get("result"))
        diff = first_difference(self._map(want.get("result")), got.get("result"), "result")
        if diff is None:
            return None
        where, expected, found = diff
        return f"{what} at {where}: expected {_show(expected)}, got {_show(found)}"

    def _learn(self, want: Any, got: Any) -> None:
        """Map the values the client makes up (``terminalId``) onto the recorded ones."""
        if isinstance(want, dict) and isinstance(got, dict):
            for key, w in want.items():
                g = got.get(key)
                if key in _CLIENT_MADE and isinstance(w, str) and isinstance(g, str) and w != g:
                    self._values[w] = g
                else:
                    self._learn(w, g)
        elif isinstance(want, list) and isinstance(got, list):
            for w, g in zip(want, got, strict=False):
                self._learn(w, g)

    def _live(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A recorded agent message with the client's own ids, session ids and cwd."""
        out: dict[str, Any] = self._map(msg)
        if "method" not in msg and "id" in msg:
            out["id"] = self._ids.get(msg["id"], msg["id"])
            self._open.pop(out["id"], None)
        return out

    def _map(self, node: Any) -> Any:
        if not self._values:
            return dict(node) if isinstance(node, dict) else node
        if isinstance(node, dict):
            return {k: self._map(v) for k, v in node.items()}
        if isinstance(node, list):
            return [self._map(v) for v in node]
        if isinstance(node, str):
            if node in self._values:
                return self._values[node]
            for old, new in self._values.items():  # a path under the recorded cwd
                if node.startswith(old + "/"):
                    return new + node[len(old):]
        return node

    async def _fail(self, line: str, got: dict[str, Any]) -> None:
        """End the replay: ``got`` (when a request) and every request of the client still open
        get an error naming ``line``."""
        self.mismatch = line
        if self.on_mismatch is not None:
            self.on_mismatch(line)
        if _kind(got) == "request" and not got.get("invalid"):
            self._open[got["id"]] = None
        for rid in list(self._open):
            self._open.pop(rid)
            await self._send({"jsonrpc": "2.0", "id": rid,
                              "error": {"code": REPLAY_MISMATCH_CODE, "message": f"replay: {line}"}})

    async def _send(self, msg: dict[str, Any]) -> None:
        self.transport.send(orjson.dumps(msg) + b"\n")  # (one whole message per send)
        await self.transport.drain()
