"""Transports: stdio, spawned subprocess, in-memory, recording wrapper (WebSocket and HTTP come next)."""

from .base import Transport, TransportSink
from .memory import MemoryTransport, memory_pair
from .recording import RecordingTransport, TraceTap
from .stdio import StdioTransport
from .subprocess import SubprocessTransport

__all__ = [
    "MemoryTransport",
    "RecordingTransport",
    "StdioTransport",
    "SubprocessTransport",
    "TraceTap",
    "Transport",
    "TransportSink",
    "memory_pair",
]
