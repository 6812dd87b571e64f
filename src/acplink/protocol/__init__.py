"""The protocol object of each ACP version (see :mod:`acplink.protocol.base`).

``get_protocol(1)`` is ACP v1 (:data:`V1`); the connections select the version ``initialize``
agreed on. A new version is a module beside ``v1.py`` that builds and registers its object.
"""

from ..schema.v1._stubs import AgentMethods as AgentStubs
from ..schema.v1._stubs import ClientMethods as ClientStubs
from .base import Protocol, get_protocol, known_versions, negotiate, register_protocol, unregister_protocol
from .v1 import PROTOCOL_VERSION, V1

# AgentStubs / ClientStubs: the typed calls in acplink's vocabulary (the v1 models, what the
# high-level APIs are written against), the base of each side's connection; a connection sends
# them in the version in use (Protocol.send_name, or through the version's agent codec)

__all__ = [
    "PROTOCOL_VERSION",
    "AgentStubs",
    "ClientStubs",
    "V1",
    "Protocol",
    "get_protocol",
    "known_versions",
    "negotiate",
    "register_protocol",
    "unregister_protocol",
]
