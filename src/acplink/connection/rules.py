"""ACP's session rules: moved to :mod:`acplink.protocol.rules` (the protocol object's layer);
this name stays for the connections and the tools that import it from here."""

from ..protocol.rules import (
    BEFORE_INITIALIZE,
    TURN_UPDATE_KINDS,
    PromptTurns,
    advertises,
    before_initialize,
    is_turn_update,
    missing_capability,
    prompt_refusal,
    required_capability,
)

__all__ = [
    "BEFORE_INITIALIZE",
    "TURN_UPDATE_KINDS",
    "PromptTurns",
    "advertises",
    "before_initialize",
    "is_turn_update",
    "missing_capability",
    "prompt_refusal",
    "required_capability",
]
