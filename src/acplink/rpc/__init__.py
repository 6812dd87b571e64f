"""Sans-I/O JSON-RPC 2.0 core: framing, messages and correlation state. No asyncio in here."""

from .engine import Engine, Event, IncomingNotification, IncomingRequest, IncomingResponse, Violation
from .framing import LineDecoder, Oversized

__all__ = [
    "Engine",
    "Event",
    "IncomingNotification",
    "IncomingRequest",
    "IncomingResponse",
    "LineDecoder",
    "Oversized",
    "Violation",
]
