"""Transports: stdio, spawned subprocess, in-memory, recording wrapper (WebSocket and HTTP come next).

The concrete transports are imported on first use (a stdio agent never loads the subprocess,
in-memory or recording ones: start-up time)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr as _lazy_getattr
from .base import MessageMeta, Transport, TransportSink
from .batch import BatchingTransport
from .stream import StreamTransport

if TYPE_CHECKING:
    from .memory import MemoryTransport, memory_pair
    from .recording import RecordingTransport, TraceTap
    from .stdio import StdioTransport
    from .subprocess import SubprocessTransport

#: name -> the module that defines it, for the names imported on first use
_LAZY = {"MemoryTransport": ".memory", "memory_pair": ".memory", "RecordingTransport": ".recording",
         "TraceTap": ".recording", "StdioTransport": ".stdio", "SubprocessTransport": ".subprocess"}

__all__ = [
    "BatchingTransport",
    "MemoryTransport",
    "MessageMeta",
    "RecordingTransport",
    "StdioTransport",
    "StreamTransport",
    "SubprocessTransport",
    "TraceTap",
    "Transport",
    "TransportSink",
    "memory_pair",
]


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
