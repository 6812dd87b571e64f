"""ACP's session rules: moved to :mod:`acplink.protocol.rules` (the protocol object's layer);
this name stays for the connections and the tools that import it from here."""

from ..protocol import rules as _rules
from ..protocol.rules import *  # noqa: F403

__all__ = list(_rules.__all__)
