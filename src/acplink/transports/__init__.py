"""Transports: stdio, spawned subprocess, in-memory (WebSocket and HTTP come next)."""

from .base import Transport, TransportSink
from .memory import MemoryTransport, memory_pair
from .stdio import StdioTransport
from .subprocess import SubprocessTransport

__all__ = [
    "MemoryTransport",
    "StdioTransport",
    "SubprocessTransport",
    "Transport",
    "TransportSink",
    "memory_pair",
]
