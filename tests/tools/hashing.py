"""A transport wrapper that hashes every byte written and received (for transparency tests)."""

from __future__ import annotations

import hashlib
from typing import Any

from acplink.transports import Transport


class HashingTransport(Transport):
    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent = hashlib.sha256()
        self.received = hashlib.sha256()
        self.sent_bytes = 0
        self.received_bytes = 0
        self._sink: Any = None

    async def start(self, sink: Any) -> None:
        self._sink = sink
        await self.inner.start(self)

    def data_received(self, data: bytes) -> None:
        self.received.update(data)
        self.received_bytes += len(data)
        self._sink.data_received(data)

    def eof_received(self, exc: BaseException | None) -> None:
        self._sink.eof_received(exc)

    def write(self, data: bytes) -> None:
        self.sent.update(data)
        self.sent_bytes += len(data)
        self.inner.write(data)

    async def drain(self) -> None:
        await self.inner.drain()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def summary(self) -> dict[str, Any]:
        return {"sent": self.sent.hexdigest(), "received": self.received.hexdigest(),
                "sent_bytes": self.sent_bytes, "received_bytes": self.received_bytes}
