"""The protocol object of each ACP version (see :mod:`acplink.protocol.base`).

``get_protocol(1)`` is ACP v1 (:data:`V1`); the connections select the version ``initialize``
agreed on. A new version is a module beside ``v1.py`` that builds and registers its object.
"""

from .base import Protocol, get_protocol, known_versions, negotiate, register_protocol, unregister_protocol
from .v1 import PROTOCOL_VERSION, V1

__all__ = [
    "PROTOCOL_VERSION",
    "V1",
    "Protocol",
    "get_protocol",
    "known_versions",
    "negotiate",
    "register_protocol",
    "unregister_protocol",
]
