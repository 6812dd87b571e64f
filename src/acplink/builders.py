"""Small constructors for ACP values, so that no code needs hand-written wire dicts.

Every function returns a generated schema model (see :mod:`acplink.schema`). Optional
arguments left at ``None`` are omitted from the wire form. Only the value a builder is about
is positional; every other argument is keyword-only, so no two strings can be swapped
unnoticed (``diff(path, old_text=..., new_text=...)``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

from .schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContent,
    AvailableCommand,
    AvailableCommandsUpdate,
    BlobResourceContents,
    Content,
    ContentBlock,
    Cost,
    CurrentModeUpdate,
    Diff,
    EmbeddedResource,
    ImageContent,
    Notice,
    PermissionOption,
    PermissionOptionKind,
    Plan,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    ResourceLink,
    SessionInfoUpdate,
    Terminal,
    TextContent,
    TextResourceContents,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStatus,
    ToolKind,
    UnstructuredCommandInput,
    UsageUpdate,
    UserMessageChunk,
)

__all__ = [
    "agent_text",
    "audio",
    "available_commands",
    "command",
    "diff",
    "embedded_blob",
    "embedded_text",
    "image",
    "location",
    "mode_update",
    "notice",
    "permission_option",
    "plan",
    "plan_entry",
    "resource_link",
    "session_info",
    "terminal_content",
    "text",
    "thought",
    "tool_call",
    "tool_call_update",
    "tool_content",
    "usage_update",
    "user_text",
]


def _given(**fields: Any) -> dict[str, Any]:
    """The keyword arguments that are not ``None`` (those are left off the wire)."""
    return {k: v for k, v in fields.items() if v is not None}


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data).decode("ascii") if isinstance(data, bytes) else data


# -- content blocks ---------------------------------------------------------------------------


def text(s: str) -> TextContent:
    """A text content block."""
    return TextContent(text=s)


def image(data: str | bytes, *, mime_type: str, uri: str | None = None) -> ImageContent:
    """An image block; ``bytes`` are base64-encoded, a ``str`` is taken as base64 already."""
    return ImageContent(data=_b64(data), mime_type=mime_type, **_given(uri=uri))


def audio(data: str | bytes, *, mime_type: str) -> AudioContent:
    """An audio block; ``bytes`` are base64-encoded, a ``str`` is taken as base64 already."""
    return AudioContent(data=_b64(data), mime_type=mime_type)


def resource_link(
    uri: str,
    *,
    name: str,
    mime_type: str | None = None,
    title: str | None = None,
    description: str | None = None,
    size: int | None = None,
) -> ResourceLink:
    """A link to a resource the agent can fetch."""
    return ResourceLink(
        uri=uri, name=name, **_given(mime_type=mime_type, title=title, description=description, size=size)
    )


def embedded_text(uri: str, *, text: str, mime_type: str | None = None) -> EmbeddedResource:
    """A resource embedded as text (for example a file's content)."""
    contents = TextResourceContents(uri=uri, text=text, **_given(mime_type=mime_type))
    return EmbeddedResource(resource=contents)


def embedded_blob(uri: str, *, blob: str | bytes, mime_type: str | None = None) -> EmbeddedResource:
    """A resource embedded as base64 data; ``bytes`` are encoded."""
    contents = BlobResourceContents(uri=uri, blob=_b64(blob), **_given(mime_type=mime_type))
    return EmbeddedResource(resource=contents)


def _block(block: ContentBlock | str) -> ContentBlock:
    return text(block) if isinstance(block, str) else block


# -- message chunks ---------------------------------------------------------------------------


def agent_text(s: str, *, message_id: str | None = None) -> AgentMessageChunk:
    """An ``agent_message_chunk`` update carrying text."""
    return AgentMessageChunk(content=text(s), **_given(message_id=message_id))


def user_text(s: str, *, message_id: str | None = None) -> UserMessageChunk:
    """A ``user_message_chunk`` update carrying text."""
    return UserMessageChunk(content=text(s), **_given(message_id=message_id))


def thought(s: str, *, message_id: str | None = None) -> AgentThoughtChunk:
    """An ``agent_thought_chunk`` update carrying text."""
    return AgentThoughtChunk(content=text(s), **_given(message_id=message_id))


# -- tool calls -------------------------------------------------------------------------------


def tool_content(block: ContentBlock | str) -> Content:
    """Tool-call content wrapping a content block (a ``str`` becomes a text block)."""
    return Content(content=_block(block))


def diff(path: str, *, old_text: str | None = None, new_text: str) -> Diff:
    """Tool-call content showing a file change (``old_text=None``, the default, means a new file)."""
    return Diff(path=path, new_text=new_text, **_given(old_text=old_text))


def terminal_content(terminal_id: str) -> Terminal:
    """Tool-call content embedding a terminal's live output."""
    return Terminal(terminal_id=terminal_id)


def location(path: str, *, line: int | None = None) -> ToolCallLocation:
    """A file location a tool call touches (for follow-along)."""
    return ToolCallLocation(path=path, **_given(line=line))


def _contents(content: Iterable[ToolCallContent | ContentBlock | str] | None) -> list[Any] | None:
    if content is None:
        return None
    out: list[Any] = []
    for item in content:
        if isinstance(item, Content | Diff | Terminal):
            out.append(item)
        else:
            out.append(tool_content(item))  # type: ignore[arg-type]
    return out


def _locations(locations: Iterable[ToolCallLocation | str] | None) -> list[ToolCallLocation] | None:
    if locations is None:
        return None
    return [location(loc) if isinstance(loc, str) else loc for loc in locations]


def tool_call(
    tool_call_id: str,
    *,
    title: str,
    kind: ToolKind | None = None,
    status: ToolCallStatus | None = "pending",
    name: str | None = None,
    content: Iterable[ToolCallContent | ContentBlock | str] | None = None,
    locations: Iterable[ToolCallLocation | str] | None = None,
    raw_input: Any = None,
    raw_output: Any = None,
) -> ToolCall:
    """A ``tool_call`` session update announcing a new tool call.

    ``content`` items may be tool-call content, plain content blocks or strings (wrapped as
    text content); ``locations`` may be paths.
    """
    return ToolCall(
        tool_call_id=tool_call_id,
        title=title,
        **_given(
            kind=kind,
            status=status,
            name=name,
            content=_contents(content),
            locations=_locations(locations),
            raw_input=raw_input,
            raw_output=raw_output,
        ),
    )


def tool_call_update(
    tool_call_id: str,
    *,
    title: str | None = None,
    kind: ToolKind | None = None,
    status: ToolCallStatus | None = None,
    name: str | None = None,
    content: Iterable[ToolCallContent | ContentBlock | str] | None = None,
    locations: Iterable[ToolCallLocation | str] | None = None,
    raw_input: Any = None,
    raw_output: Any = None,
) -> ToolCallProgress:
    """A ``tool_call_update`` session update; only the fields given go on the wire."""
    return ToolCallProgress(
        tool_call_id=tool_call_id,
        **_given(
            title=title,
            kind=kind,
            status=status,
            name=name,
            content=_contents(content),
            locations=_locations(locations),
            raw_input=raw_input,
            raw_output=raw_output,
        ),
    )


def permission_option(option_id: str, *, name: str, kind: PermissionOptionKind) -> PermissionOption:
    """One choice offered in ``session/request_permission``."""
    return PermissionOption(option_id=option_id, name=name, kind=kind)


# -- plans, commands, modes, session info -----------------------------------------------------


def plan_entry(
    content: str, *, priority: PlanEntryPriority = "medium", status: PlanEntryStatus = "pending"
) -> PlanEntry:
    """One entry of an agent plan."""
    return PlanEntry(content=content, priority=priority, status=status)


def plan(entries: Iterable[PlanEntry | str]) -> Plan:
    """A ``plan`` session update (the complete list; strings become pending entries)."""
    return Plan(entries=[plan_entry(e) if isinstance(e, str) else e for e in entries])


def command(name: str, *, description: str, hint: str | None = None) -> AvailableCommand:
    """A slash command the agent offers; ``hint`` describes its free-text input."""
    if hint is None:
        return AvailableCommand(name=name, description=description)
    return AvailableCommand(name=name, description=description, input=UnstructuredCommandInput(hint=hint))


def available_commands(commands: Sequence[AvailableCommand]) -> AvailableCommandsUpdate:
    """An ``available_commands_update`` session update."""
    return AvailableCommandsUpdate(available_commands=list(commands))


def mode_update(mode_id: str) -> CurrentModeUpdate:
    """A ``current_mode_update`` session update."""
    return CurrentModeUpdate(current_mode_id=mode_id)


def session_info(*, title: str | None = None, updated_at: str | None = None) -> SessionInfoUpdate:
    """A ``session_info_update``; fields left at ``None`` are omitted (left unchanged)."""
    return SessionInfoUpdate(**_given(title=title, updated_at=updated_at))


def usage_update(*, used: int, size: int, cost: float | None = None, currency: str = "USD") -> UsageUpdate:
    """A ``usage_update``: tokens in context, context size, optional cumulative cost."""
    if cost is None:
        return UsageUpdate(used=used, size=size)
    return UsageUpdate(used=used, size=size, cost=Cost(amount=cost, currency=currency))


def notice(title: str, *, severity: str = "info", description: str | None = None) -> Notice:
    """A ``notice`` update (severity ``info``, ``warning`` or ``error``)."""
    return Notice(title=title, severity=severity, **_given(description=description))
