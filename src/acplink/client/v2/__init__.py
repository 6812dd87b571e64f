"""The ACP v2 (draft) client: ``connect(..., protocol=2 | "auto")``.

Imported only when a connection asks for v2 (``import acplink`` does not load the v2 models):
:mod:`.handshake` (version selection at ``initialize``), :mod:`.link` (v2 calls and routing
over the connection's peer), :mod:`.session` (sessions and prompt turns), :mod:`.state` (the
reducer).
"""

from typing import Literal

__all__ = ["ProtocolChoice"]

#: what ``connect(protocol=...)`` accepts: 1, 2, or "auto" (ask for 2, continue on what the
#: agent answers)
ProtocolChoice = Literal[1, 2, "auto"]
