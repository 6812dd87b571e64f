"""Trace redaction: every free-text value of a message replaced by its size, the structure,
identifiers, kinds and names kept (``acplink record --redact``)."""

from __future__ import annotations

from typing import Any

from ..protocol.base import Protocol
from ..protocol.state import default_protocol

__all__ = ["REDACT_ALL", "REDACT_KEEP", "redact_message", "redacted"]


#: with redaction, the string values kept (wherever they are, outside the free-form parts below);
#: every other string becomes "[redacted: N bytes]". Numbers, booleans, nulls and keys are kept.
REDACT_KEEP = frozenset({
    # the envelope and identifiers
    "jsonrpc", "method", "id", "sessionId", "toolCallId", "terminalId", "messageId", "optionId", "methodId",
    "modeId", "currentModeId", "modelId", "currentModelId", "configId", "currentValue", "requestId",
    "elicitationId", "cursor", "nextCursor",
    # kinds, states and reasons
    "type", "kind", "status", "sessionUpdate", "stopReason", "outcome", "priority", "action", "category",
    "role", "audience", "signal", "protocolVersion", "mimeType",
    # names, places and labels (they may name files and commands)
    "name", "title", "version", "description", "hint", "path", "uri", "cwd", "additionalDirectories",
    "command", "updatedAt", "message",
    # ACP v2: its ids, states and kinds (an idle ``state_update`` must still end its turn)
    "planId", "compactionId", "groupId", "providerId", "serverId", "senderSessionId", "recipientSessionId",
    "senderMessageId", "recipientMessageId", "replayFrom", "state", "severity", "operation", "apiType",
})

#: free-form parts whose strings are all redacted, whatever their keys: tool input and output,
#: extension metadata, error data (and an elicitation's answers: ``content`` of its result)
REDACT_ALL = frozenset({"rawInput", "rawOutput", "_meta", "data"})

def redacted(size: int) -> str:
    return f"[redacted: {size} bytes]"


def _size_of(value: str) -> str:
    return redacted(len(value.encode("utf-8", "replace")))


def _redact(node: Any, keep: bool, everything: bool = False) -> Any:
    """``node`` with its strings redacted; ``keep``: the key above is kept; ``everything``: inside a
    free-form part, where no key is kept."""
    if isinstance(node, str):
        return node if keep and not everything else _size_of(node)
    if isinstance(node, list):
        return [_redact(x, keep, everything) for x in node]
    if isinstance(node, dict):
        return {k: _redact(v, k in REDACT_KEEP, everything or k in REDACT_ALL) for k, v in node.items()}
    return node


def redact_message(msg: Any, method: str | None = None, protocol: Protocol | None = None) -> Any:
    """A copy of ``msg`` with every free-text value replaced by its size: message and prompt
    text, file contents (``fs/*``, diffs, resources, tool call content), terminal output, tool
    input and output, environment values, ``_meta``. Kept: the structure, numbers and booleans,
    and the strings of the :data:`REDACT_KEEP` keys (ids, methods, kinds, statuses, names,
    titles, paths). ``method``: the method a response answers; ``protocol``: the version the
    connection agreed on (it names the elicitation method; None: the first version)."""
    out = _redact(msg, False)
    result = out.get("result") if isinstance(out, dict) else None
    if isinstance(result, dict) and (protocol or default_protocol()).is_(
            msg.get("method") or method or "", "create_elicitation") \
            and "content" in result:
        result["content"] = _redact(msg["result"]["content"], False, True)  # the user's answers, whatever their keys
    return out
