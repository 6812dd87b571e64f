"""Typed connections for both sides, over any transport."""

from .agent_side import PROTOCOL_VERSION, AgentSideConnection, Turn
from .base import Connection, Router
from .client_side import ClientSideConnection
from .peer import Peer, PeerLimits

__all__ = [
    "PROTOCOL_VERSION",
    "AgentSideConnection",
    "ClientSideConnection",
    "Connection",
    "Peer",
    "PeerLimits",
    "Router",
    "Turn",
]
