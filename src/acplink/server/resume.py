"""What a stream keeps of the output it sent, so that a client whose stream dropped can get
back what it missed (the SSE ``Last-Event-ID`` of the durable-transport RFD draft).

Every message of a stream gets a cursor, ``<stream token>.<number>``: the token is random
per stream (a cursor of another stream, connection or server is refused, as is one made up),
the number counts the stream's messages from 1. A sent message is kept for
``retention_seconds`` and among the last ``retention_messages``; a resume from a cursor whose
successors are no longer all kept is refused (409), never answered with a gap.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from typing import Any

import orjson

__all__ = ["ResumeRefused", "Retention", "advertise"]


class ResumeRefused(Exception):
    """A cursor this stream cannot resume from; the message says why."""


class Retention:
    """The sent messages of one stream, kept for a resume: the last ``max_messages``, at most
    ``max_bytes`` of them (the oldest go first: memory stays bounded whatever the stream
    carries), for ``max_seconds``."""

    def __init__(self, max_messages: int, max_seconds: float, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.token = secrets.token_urlsafe(12)
        self.max_messages = max_messages
        self.max_seconds = max_seconds
        self.max_bytes = max_bytes
        #: (number, when sent, message), oldest first
        self.kept: deque[tuple[int, float, bytes]] = deque()
        #: the size of the kept messages
        self.kept_bytes = 0
        #: the number of the last message sent (0: none yet)
        self.sent = 0

    def cursor(self, number: int) -> str:
        return f"{self.token}.{number}"

    def keep(self, data: bytes) -> None:
        """The next message was sent."""
        self.sent += 1
        kept = self.kept
        kept.append((self.sent, time.monotonic(), data))
        self.kept_bytes += len(data)
        while len(kept) > self.max_messages or self.kept_bytes > self.max_bytes:
            self.kept_bytes -= len(kept.popleft()[2])

    def _expire(self) -> None:
        horizon = time.monotonic() - self.max_seconds
        kept = self.kept
        while kept and kept[0][1] < horizon:
            self.kept_bytes -= len(kept.popleft()[2])

    def check(self, cursor: str) -> int:
        """The number of ``cursor`` when it is one of this stream's; else :class:`ResumeRefused`."""
        token, sep, number = cursor.strip().rpartition(".")
        if not sep or not number.isdigit() or len(number) > 18 or not secrets.compare_digest(token, self.token):
            raise ResumeRefused("the cursor is not one of this stream's")
        return int(number)

    def after(self, number: int) -> list[tuple[int, bytes]]:
        """The sent messages after ``number`` (checked by :meth:`check`), in order; refused
        when one of them is no longer kept, or when ``number`` was never sent."""
        if number > self.sent:
            raise ResumeRefused("the cursor is ahead of what this stream sent")
        self._expire()
        if number == self.sent:
            return []
        kept = self.kept
        if not kept or kept[0][0] > number + 1:
            raise ResumeRefused(
                f"what followed the cursor is no longer kept (retention: {self.max_messages} messages, "
                f"{self.max_seconds:g} s, {self.max_bytes} bytes)")
        start = number + 1 - kept[0][0]
        return [(n, data) for n, _, data in list(kept)[start:]]


def advertise(reply: bytes, limits: Any) -> bytes:
    """The agent's ``initialize`` answer with the server's resumable streams in its
    capabilities (``agentCapabilities.transport.resumable``, the RFD draft's shape)."""
    try:
        msg = orjson.loads(reply)
    except orjson.JSONDecodeError:
        return reply
    result = msg.get("result") if isinstance(msg, dict) else None
    caps = result.get("agentCapabilities") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not (caps is None or isinstance(caps, dict)):
        return reply
    caps = result["agentCapabilities"] = dict(caps or {})
    transport = caps.get("transport")
    caps["transport"] = {**(transport if isinstance(transport, dict) else {}), "resumable": {
        "retentionMessages": limits.retention_messages, "retentionSeconds": limits.retention_seconds}}
    return orjson.dumps(msg)
