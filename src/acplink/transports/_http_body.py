"""The streamable-HTTP client transport's body handling (:mod:`acplink.transports.http`): reading
a capped body, counting an event stream's bytes so a server that never ends an event cannot
fill the memory, and reading the resume capability off an ``initialize`` answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..errors import TransportError
from ._remote import too_large

if TYPE_CHECKING:
    import httpx


class _Fatal(Exception):
    """The connection is over (carries the error pending calls get)."""

    def __init__(self, error: TransportError) -> None:
        super().__init__(str(error))
        self.error = error


async def _read_capped(resp: httpx.Response, limit: int) -> bytes:
    """The body, at most ``limit`` bytes of it (the rest is not read)."""
    out = bytearray()
    async for chunk in resp.aiter_bytes():
        out += chunk[: limit - len(out)]
        if len(out) >= limit:
            break
    return bytes(out)


class _Counter:
    count = 0


def _count(resp: httpx.Response, limit: int) -> _Counter:
    """Count the bytes of ``resp`` read since the counter was last reset; more than ``limit``
    (and a read's worth) fails the read with :class:`MessageTooLarge`: an event the server
    never ends cannot fill the memory."""
    import httpx

    counter = _Counter()
    inner = resp.stream
    ceiling = limit + 64 * 1024  # (the part of a read that belongs to the next event)

    class Counted(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in inner:  # type: ignore[union-attr]
                counter.count += len(chunk)
                if counter.count > ceiling:
                    raise _Fatal(too_large("an event", limit))
                yield chunk

        async def aclose(self) -> None:
            await inner.aclose()  # type: ignore[union-attr]

    resp.stream = Counted()
    return counter
