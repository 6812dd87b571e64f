"""What a decoded JSON-RPC message is, and which request a response answers: the classifier and
the id matcher live in :mod:`acplink.protocol.messages` (sans-I/O, below the protocol's state
machine, which uses them too); this name stays for the engine and the tools."""

from ..protocol.messages import CallMatcher, MessageKind, message_kind, other_direction, usable_id

__all__ = ["CallMatcher", "MessageKind", "message_kind", "other_direction", "usable_id"]
