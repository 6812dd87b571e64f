"""The floor's wire layer, shared by its agent and client: newline-delimited JSON-RPC over an
asyncio pipe pair, orjson in and out, nothing else.

No schema, no validation, no framework: a line is parsed and handed to ``on_message``; a request
sent is a future in a dict keyed by id; a write is ``transport.write`` plus a wait only while the
transport has paused writing (its buffer is above the high-water mark). It is the least a correct
peer of this benchmark contract can do, so the other implementations can be measured against it.
"""

from __future__ import annotations

import asyncio
import math
import resource
from typing import Any

import orjson

HIGH_WATER = 64 * 1024  # asyncio's default high-water mark for a write transport
_dumps = orjson.dumps
_loads = orjson.loads


def maxrss_kb() -> int:
    """Peak RSS in KiB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def percentile_us(samples_ns: list[int], p: float) -> float:
    """Nearest-rank percentile of nanosecond samples, in microseconds."""
    if not samples_ns:
        return 0.0
    ordered = sorted(samples_ns)
    rank = max(1, math.ceil(p * len(ordered)))
    return round(ordered[rank - 1] / 1000, 1)


class RpcError(Exception):
    """The peer answered a request with a JSON-RPC error."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.code = error.get("code")
        super().__init__(f"{error.get('message')} (code {self.code})"
                         + (f" data={_dumps(error['data']).decode()}" if "data" in error else ""))


class Peer(asyncio.Protocol):
    """One JSON-RPC endpoint: feed it bytes, give it a write transport, override on_message.

    It is also the asyncio protocol of both pipes of the agent's stdio (read and write).
    """

    def __init__(self) -> None:
        self.out: asyncio.WriteTransport | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 0
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._buf: list[bytes] = []
        self._paused: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._outbox: list[bytes] = []  # lines written this loop turn, sent together at its end
        self._outbox_size = 0

    def data_received(self, data: bytes) -> None:
        self.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost(exc)

    # -- reading --------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        start = 0
        if self._buf:  # the rest of a line begun in an earlier chunk
            end = data.find(b"\n")
            if end < 0:
                self._buf.append(data)
                return
            self._buf.append(data[:end])
            line = b"".join(self._buf)
            self._buf = []
            self._dispatch(line)
            start = end + 1
        find = data.find
        while (end := find(b"\n", start)) >= 0:
            if end > start:
                self._dispatch(data[start:end])
            start = end + 1
        if start < len(data):
            self._buf.append(data[start:])

    def _dispatch(self, line: bytes) -> None:
        msg = _loads(line)
        if "method" in msg:
            self.on_message(msg)
            return
        fut = self.pending.pop(msg["id"], None)
        if fut is None or fut.done():
            return
        if "error" in msg:
            fut.set_exception(RpcError(msg["error"]))
        else:
            fut.set_result(msg.get("result"))

    def on_message(self, msg: dict[str, Any]) -> None:
        """A request (has ``id``) or a notification from the peer."""
        raise NotImplementedError

    def lost(self, exc: BaseException | None) -> None:
        """The read side closed: fail what is pending, wake whoever waits for the end."""
        error = ConnectionError(f"connection closed{f': {exc}' if exc else ''}")
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(error)
        self.pending.clear()
        if self._paused is not None and not self._paused.done():
            self._paused.set_exception(error)
        if not self.closed.done():
            self.closed.set_result(None)

    # -- writing --------------------------------------------------------------------------------

    def pause_writing(self) -> None:
        if self._paused is None:
            self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)

    def write(self, msg: dict[str, Any]) -> None:
        """Queue one line; the lines of a loop turn go out in one pipe write (or sooner, when
        they pass the high-water mark, so the transport's flow control still applies)."""
        line = _dumps(msg)
        outbox = self._outbox
        if not outbox:
            self._loop.call_soon(self.flush)
        outbox.append(line)
        outbox.append(b"\n")
        self._outbox_size += len(line)
        if self._outbox_size > HIGH_WATER:
            self.flush()

    def flush(self) -> None:
        if self._outbox:
            assert self.out is not None
            data = b"".join(self._outbox)
            self._outbox.clear()
            self._outbox_size = 0
            if not self.out.is_closing():
                self.out.write(data)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})
        if self._paused is not None:
            await self._paused

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        rid = self.next_id
        self.next_id = rid + 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if self._paused is not None:
            await self._paused
        return await fut

    def respond(self, rid: Any, result: Any) -> None:
        self.write({"jsonrpc": "2.0", "id": rid, "result": result})

    def respond_error(self, rid: Any, code: int, message: str) -> None:
        self.write({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})
