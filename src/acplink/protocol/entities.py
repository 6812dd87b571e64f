"""The entities a session's updates upsert by id, in any protocol version (pure data and
their patch rules): plans, compactions, subagents, inter-session messages, and the helpers the
reducers share (:func:`entity`, the ``apply_*`` functions, :func:`plan_of`). The client's
:class:`~acplink.client.state.SessionState` and each version's own reducer (ACP v2:
``acplink.protocol.v2.client_state``) build on them. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..schema import ContentBlock, PlanEntry

__all__ = [
    "CompactionState",
    "PlanState",
    "SessionMessageState",
    "SubagentState",
    "apply_compaction",
    "apply_session_message",
    "apply_subagent",
    "block_text",
    "entity",
    "plan_of",
]


def block_text(block: ContentBlock) -> str:
    """The text of a content block (text blocks and embedded text resources), else ``""``
    (a block of any protocol version: read by its ``type`` tag)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return _text_of(block)
    if kind == "resource":
        return _text_of(getattr(block, "resource", None))
    return ""


def _text_of(value: Any) -> str:
    text = getattr(value, "text", None)
    return text if isinstance(text, str) else ""



@dataclass
class PlanState:
    """One plan: structured entries (``items``), a file (``file``) or markdown (``markdown``).

    ``plan_id`` is ``None`` for the stable, id-less ``plan`` update. ``raw`` keeps a
    ``plan_update`` whose content type is unknown (``kind == "unknown"``).
    """

    plan_id: str | None
    kind: str = "items"
    entries: list[PlanEntry] = field(default_factory=list)
    uri: str | None = None
    markdown: str | None = None
    raw: dict[str, Any] | None = None

    @property
    def completed(self) -> int:
        """How many entries are completed."""
        return sum(1 for e in self.entries if e.status == "completed")


@dataclass
class CompactionState:
    """One context compaction (``compaction_update`` upserts, ``compaction_summary_chunk`` appends)."""

    compaction_id: str
    status: str = "in_progress"
    summary: list[ContentBlock] = field(default_factory=list)
    error: str | None = None
    meta: dict[str, Any] | None = None

    @property
    def summary_text(self) -> str:
        """The text of the summary so far."""
        return "".join(block_text(b) for b in self.summary)


@dataclass
class SubagentState:
    """A child session announced by ``subagent_update`` (fields patched as they arrive)."""

    session_id: str
    title: str | None = None
    description: str | None = None
    capabilities: Any = None
    state: Any = None
    cwd: str | None = None
    additional_directories: list[str] | None = None
    meta: dict[str, Any] | None = None


@dataclass
class SessionMessageState:
    """An inter-session message (``session_message`` upserts, ``session_message_chunk`` appends)."""

    message_id: str
    sender_session_id: str | None = None
    recipient_session_id: str | None = None
    sender_message_id: str | None = None
    recipient_message_id: str | None = None
    content: list[ContentBlock] = field(default_factory=list)
    meta: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """The concatenated text of the message's text blocks."""
        return "".join(_text_of(b) for b in self.content if getattr(b, "type", None) == "text")


def _patch(target: object, update: Any, names: tuple[str, ...]) -> None:
    """Copy each field present in ``update`` (even ``None``: that clears) onto ``target``."""
    present = update.model_fields_set
    for name in names:
        if name in present:
            setattr(target, name, getattr(update, name))


# -- the entities both protocol versions upsert by id (v1 unstable and v2 alike) ---------------

_E = TypeVar("_E")


def entity(store: dict[str, _E], key: str, make: Callable[[str], _E]) -> _E:
    """The entity ``key`` of ``store``, created (``make(key)``) by the first update naming it."""
    found = store.get(key)
    if found is None:
        found = store[key] = make(key)
    return found


def apply_compaction(compactions: dict[str, CompactionState], update: Any) -> None:
    """A ``compaction_update``: the compaction by id, its status set, its other fields patched."""
    state = entity(compactions, update.compaction_id, CompactionState)
    state.status = update.status
    _patch(state, update, ("error", "meta"))
    if "summary" in update.model_fields_set:
        state.summary = list(update.summary or [])


def apply_subagent(subagents: dict[str, SubagentState], update: Any) -> None:
    """A ``subagent_update``: the child session by id, the fields present patched."""
    _patch(entity(subagents, update.session_id, SubagentState), update,
           ("title", "description", "capabilities", "state", "cwd", "additional_directories", "meta"))


def apply_session_message(messages: dict[str, SessionMessageState], update: Any) -> None:
    """A ``session_message``: the message by id, the fields present patched."""
    state = entity(messages, update.message_id, SessionMessageState)
    _patch(state, update, ("sender_session_id", "recipient_session_id", "sender_message_id",
                           "recipient_message_id", "meta"))
    if "content" in update.model_fields_set:
        state.content = list(update.content or [])


def plan_of(content: Any, kinds: tuple[type[Any], type[Any], type[Any]]) -> PlanState | None:
    """The plan a ``plan_update`` carries, ``kinds`` being the version's (items, file, markdown)
    content classes; None for a content type the version does not know."""
    items, file, markdown = kinds
    if isinstance(content, items):
        return PlanState(plan_id=content.plan_id, kind="items", entries=list(content.entries))
    if isinstance(content, file):
        return PlanState(plan_id=content.plan_id, kind="file", uri=content.uri)
    if isinstance(content, markdown):
        return PlanState(plan_id=content.plan_id, kind="markdown", markdown=content.content)
    return None
