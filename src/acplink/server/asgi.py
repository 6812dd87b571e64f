"""Small ASGI 3 helpers: headers, plain answers, bounded bodies (no framework needed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["Receive", "Scope", "Send", "TooLarge", "answer", "header_map", "peer_of", "read_body"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def header_map(scope: Scope) -> dict[str, str]:
    """The request headers, lower-case names (repeated ones joined with ", ")."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def peer_of(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "?"


def _encode(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def answer(send: Send, status: int, body: bytes | str = b"", *,
                 content_type: str = "text/plain; charset=utf-8",
                 headers: Iterable[tuple[str, str]] = (), prefix: str = "http") -> None:
    """A whole response. ``prefix`` "websocket.http" answers a refused WebSocket upgrade."""
    data = body.encode() if isinstance(body, str) else body
    all_headers = list(headers)
    if data:
        all_headers.append(("content-type", content_type))
    all_headers.append(("content-length", str(len(data))))
    await send({"type": f"{prefix}.response.start", "status": status, "headers": _encode(all_headers)})
    await send({"type": f"{prefix}.response.body", "body": data, "more_body": False})


class TooLarge(Exception):  # (an internal signal: it never leaves the package)
    """The body is over the limit."""


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body; None when the client went away; raises TooLarge past ``limit``."""
    parts: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return None
        chunk = event.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge
        parts.append(chunk)
        if not event.get("more_body", False):
            return b"".join(parts)
