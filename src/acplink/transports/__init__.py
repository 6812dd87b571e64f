"""Transports: stdio, spawned subprocess, in-memory, recording wrapper (WebSocket and HTTP come next)."""

from .base import MessageMeta, Transport, TransportSink
from .memory import MemoryTransport, memory_pair
from .recording import RecordingTransport, TraceTap
from .stdio import StdioTransport
from .stream import StreamTransport
from .subprocess import SubprocessTransport

__all__ = [
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
