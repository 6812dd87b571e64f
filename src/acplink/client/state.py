"""A reducer that folds ``session/update`` notifications into the state of one session.

:class:`SessionState` is pure (no I/O, no asyncio): feed it every update with
:meth:`SessionState.apply` and the setup response with :meth:`SessionState.apply_session_setup`,
then read the conversation, tool calls, plans, modes and the rest from its attributes.

Patch semantics follow the schema: where a field's omission means "unchanged" and ``null``
means "clear" (session info, compactions, subagents, session messages), the reducer tells
the two apart by the fields actually present in the update (``model_fields_set``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal

from ..protocol.entities import (
    CompactionState,
    PlanState,
    SessionMessageState,
    SubagentState,
    _patch,
    apply_compaction,
    apply_session_message,
    apply_subagent,
    block_text,
    entity,
    plan_of,
)
from ..schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    ContentBlock,
    CurrentModeUpdate,
    ForkSessionResponse,
    LoadSessionResponse,
    ModelInfo,
    NewSessionResponse,
    Notice,
    Plan,
    PlanFile,
    PlanItems,
    PlanMarkdown,
    PlanRemoved,
    PlanUpdate,
    ResumeSessionResponse,
    SessionConfigOption,
    SessionInfoUpdate,
    SessionMessage,
    SessionMessageChunk,
    SessionMode,
    SessionNotification,
    SessionUpdate,
    SubagentUpdate,
    TextContent,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
    UnknownSessionUpdate,
    UsageUpdate,
    UserMessageChunk,
)

__all__ = [
    "CompactionState",
    "Message",
    "PlanState",
    "SessionMessageState",
    "SessionState",
    "SubagentState",
    "ToolCallState",
    "block_text",
]

Role = Literal["user", "agent", "thought"]
SessionSetupResponse = NewSessionResponse | LoadSessionResponse | ResumeSessionResponse | ForkSessionResponse


@dataclass
class Message:
    """One message of the conversation, built from streamed chunks.

    ``turn`` counts the user messages that came before this one (0 before the first).
    """

    role: Role
    message_id: str | None = None
    blocks: list[ContentBlock] = field(default_factory=list)
    turn: int = 0

    @property
    def text(self) -> str:
        """The concatenated text of the message's text blocks."""
        return "".join(b.text for b in self.blocks if isinstance(b, TextContent))


@dataclass
class ToolCallState:
    """The merged view of one tool call (``tool_call`` then ``tool_call_update`` patches).

    ``status`` defaults to ``"pending"`` and ``kind`` to ``"other"``, as the spec says.
    """

    tool_call_id: str
    title: str = ""
    kind: str = "other"
    status: str = "pending"
    name: str | None = None
    content: list[ToolCallContent] = field(default_factory=list)
    locations: list[ToolCallLocation] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    meta: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        """True once the tool call completed or failed."""
        return self.status in ("completed", "failed")


class SessionState:
    """The client-side state of one session, reduced from its updates.

    Attributes (all public, read them freely; change them only through the methods):

    * ``messages``: user and agent messages in order; ``thoughts``: agent thoughts in order.
    * ``tool_calls``: ``{toolCallId: ToolCallState}`` in creation order.
    * ``plan``: the plan updated last (or ``None``); ``plans``: ``{planId: PlanState}`` of the
      id-addressed (unstable) plans.
    * ``current_mode_id``, ``available_modes``; ``config_options``; the legacy model selector
      ``current_model_id``, ``available_models``; ``available_commands``.
    * ``usage`` (the last ``usage_update``), ``title``, ``updated_at``, ``notices``,
      ``compactions``, ``subagents``, ``session_messages``.
    * ``unknown``: updates of kinds this version does not know; ``warnings``: oddities
      noticed (for example an update for an unknown tool call); ``updates_seen``.
    """

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        self.updates_seen = 0
        self.messages: list[Message] = []
        self.thoughts: list[Message] = []
        self.tool_calls: dict[str, ToolCallState] = {}
        self.plan: PlanState | None = None
        self.plans: dict[str, PlanState] = {}
        self._legacy_plan: PlanState | None = None
        self.current_mode_id: str | None = None
        self.available_modes: list[SessionMode] = []
        self.config_options: list[SessionConfigOption] = []
        self.current_model_id: str | None = None
        self.available_models: list[ModelInfo] = []
        self.available_commands: list[AvailableCommand] = []
        self.usage: UsageUpdate | None = None
        self.title: str | None = None
        self.updated_at: str | None = None
        self.info_meta: dict[str, Any] | None = None
        self.notices: list[Notice] = []
        self.compactions: dict[str, CompactionState] = {}
        self.subagents: dict[str, SubagentState] = {}
        self.session_messages: dict[str, SessionMessageState] = {}
        self.unknown: list[UnknownSessionUpdate] = []
        self.warnings: list[str] = []
        self._turn = 0
        self._by_id: dict[tuple[str, str], Message] = {}

    # -- setup ------------------------------------------------------------------------------

    def apply_session_setup(self, response: SessionSetupResponse) -> None:
        """Take modes, config options and the legacy model selector from a setup response."""
        session_id = getattr(response, "session_id", None)
        if isinstance(session_id, str):
            self.session_id = session_id
        if response.modes is not None:
            self.current_mode_id = response.modes.current_mode_id
            self.available_modes = list(response.modes.available_modes)
        if response.config_options is not None:
            self.config_options = list(response.config_options)
        if response.models is not None:
            self.current_model_id = response.models.current_model_id
            self.available_models = list(response.models.available_models)

    def set_current_mode(self, mode_id: str) -> None:
        """Record a mode change the client made (``session/set_mode`` succeeded)."""
        self.current_mode_id = mode_id

    def set_current_model(self, model_id: str) -> None:
        """Record a legacy model change the client made (``session/set_model`` succeeded)."""
        self.current_model_id = model_id

    def set_config_options(self, options: list[SessionConfigOption]) -> None:
        """Record the options returned by ``session/set_config_option``."""
        self.config_options = list(options)

    # -- updates ----------------------------------------------------------------------------

    def apply(self, update: SessionUpdate | SessionNotification) -> None:
        """Fold one ``SessionUpdate`` variant (or a whole ``SessionNotification``) into the state."""
        if isinstance(update, SessionNotification):
            update = update.update
        self.updates_seen += 1
        if isinstance(update, UserMessageChunk):
            self._turn += 1 if self._starts_user_message(update.message_id) else 0
            self._chunk(self.messages, "user", update.message_id, update.content)
        elif isinstance(update, AgentMessageChunk):
            self._chunk(self.messages, "agent", update.message_id, update.content)
        elif isinstance(update, AgentThoughtChunk):
            self._chunk(self.thoughts, "thought", update.message_id, update.content)
        elif isinstance(update, ToolCall):
            self._tool_call(update)
        elif isinstance(update, ToolCallUpdate):
            self._tool_call_update(update)
        elif isinstance(update, Plan):
            self._legacy_plan = PlanState(plan_id=None, kind="items", entries=list(update.entries))
            self.plan = self._legacy_plan
        elif isinstance(update, PlanUpdate):
            self._plan_update(update)
        elif isinstance(update, PlanRemoved):
            self._plan_removed(update.plan_id)
        elif isinstance(update, AvailableCommandsUpdate):
            self.available_commands = list(update.available_commands)
        elif isinstance(update, CurrentModeUpdate):
            self.current_mode_id = update.current_mode_id
        elif isinstance(update, ConfigOptionUpdate):
            self.config_options = list(update.config_options)
        elif isinstance(update, SessionInfoUpdate):
            _patch(self, update, ("title", "updated_at"))
            if "meta" in update.model_fields_set:
                self.info_meta = update.meta
        elif isinstance(update, UsageUpdate):
            self.usage = update
        elif isinstance(update, Notice):
            self.notices.append(update)
        elif isinstance(update, CompactionUpdate):
            apply_compaction(self.compactions, update)
        elif isinstance(update, CompactionSummaryChunk):
            entity(self.compactions, update.compaction_id, CompactionState).summary.append(update.content)
        elif isinstance(update, SubagentUpdate):
            apply_subagent(self.subagents, update)
        elif isinstance(update, SessionMessage):
            apply_session_message(self.session_messages, update)
        elif isinstance(update, SessionMessageChunk):
            entity(self.session_messages, update.message_id, SessionMessageState).content.append(update.content)
        elif isinstance(update, UnknownSessionUpdate):
            self.unknown.append(update)
        else:
            self.updates_seen -= 1
            raise TypeError(f"not a SessionUpdate: {type(update).__name__}")

    # -- conversation -----------------------------------------------------------------------

    def _starts_user_message(self, message_id: str | None) -> bool:
        if message_id is not None:
            return ("user", message_id) not in self._by_id
        return not (self.messages and self.messages[-1].role == "user")

    def _chunk(self, into: list[Message], role: Role, message_id: str | None, block: ContentBlock) -> None:
        if message_id is not None:
            found = self._by_id.get((role, message_id))
            if found is None:
                found = Message(role=role, message_id=message_id, turn=self._turn)
                self._by_id[(role, message_id)] = found
                into.append(found)
            found.blocks.append(block)
            return
        last = into[-1] if into else None
        if role == "thought":
            # A thought continues the last thought of the same turn.
            same = last is not None and last.turn == self._turn
        else:
            # A message continues the last message only while nobody else spoke since.
            same = last is not None and last.role == role
        if last is None or not same:
            last = Message(role=role, turn=self._turn)
            into.append(last)
        last.blocks.append(block)

    @property
    def last_agent_message(self) -> Message | None:
        """The latest agent message, if any."""
        for message in reversed(self.messages):
            if message.role == "agent":
                return message
        return None

    @property
    def agent_text(self) -> str:
        """The text of every agent message, joined by blank lines."""
        return "\n\n".join(m.text for m in self.messages if m.role == "agent")

    # -- tool calls -------------------------------------------------------------------------

    def _tool_call(self, update: ToolCall) -> None:
        self.tool_calls.pop(update.tool_call_id, None)
        self.tool_calls[update.tool_call_id] = ToolCallState(
            tool_call_id=update.tool_call_id,
            title=update.title,
            kind=update.kind or "other",
            status=update.status or "pending",
            name=update.name,
            content=list(update.content or []),
            locations=list(update.locations or []),
            raw_input=update.raw_input,
            raw_output=update.raw_output,
            meta=update.meta,
        )

    def _tool_call_update(self, update: ToolCallUpdate) -> None:
        state = self.tool_calls.get(update.tool_call_id)
        if state is None:
            self.warnings.append(f"tool_call_update for unknown tool call {update.tool_call_id!r}")
            state = self.tool_calls[update.tool_call_id] = ToolCallState(tool_call_id=update.tool_call_id)
        if update.title is not None:
            state.title = update.title
        if update.kind is not None:
            state.kind = update.kind
        if update.status is not None:
            state.status = update.status
        if update.name is not None:
            state.name = update.name
        if update.content is not None:
            state.content = list(update.content)
        if update.locations is not None:
            state.locations = list(update.locations)
        if update.raw_input is not None:
            state.raw_input = update.raw_input
        if update.raw_output is not None:
            state.raw_output = update.raw_output
        if update.meta is not None:
            state.meta = update.meta

    # -- plans ------------------------------------------------------------------------------

    def _plan_update(self, update: PlanUpdate) -> None:
        content = update.plan
        new = plan_of(content, (PlanItems, PlanFile, PlanMarkdown))
        if new is None:  # (an UnknownPlanUpdateContent: its raw data kept)
            raw: dict[str, Any] = getattr(content, "raw", None) or {}
            plan_id = raw.get("planId")
            if not isinstance(plan_id, str):
                self.warnings.append("plan_update of an unknown type without a planId; ignored")
                return
            self.warnings.append(f"plan_update of unknown type {raw.get('type')!r} for plan {plan_id!r}")
            new = PlanState(plan_id=plan_id, kind="unknown", raw=raw)
        assert new.plan_id is not None
        self.plans.pop(new.plan_id, None)  # re-insert: dict order is recency order
        self.plans[new.plan_id] = new
        self.plan = new

    def _plan_removed(self, plan_id: str) -> None:
        removed = self.plans.pop(plan_id, None)
        if removed is None:
            self.warnings.append(f"plan_removed for unknown plan {plan_id!r}")
            return
        if self.plan is removed:
            self.plan = next(reversed(self.plans.values()), None) if self.plans else self._legacy_plan

    # -- reading ----------------------------------------------------------------------------

    @property
    def compacting(self) -> bool:
        """True while some compaction is in progress."""
        return any(c.status == "in_progress" for c in self.compactions.values())

    @property
    def current_mode(self) -> SessionMode | None:
        """The current mode's description, when the agent listed it."""
        return next((m for m in self.available_modes if m.id == self.current_mode_id), None)

    def _tool_call_counts(self, cancelled: Collection[str]) -> str:
        """``2 done, 1 failed, 1 cancelled, 1 unfinished`` (the empty kinds left out)."""
        def kind(t: ToolCallState) -> str:
            if t.status in ("completed", "failed"):
                return "done" if t.status == "completed" else "failed"
            return "cancelled" if t.tool_call_id in cancelled else "unfinished"

        kinds = [kind(t) for t in self.tool_calls.values()]
        counted = [f"{kinds.count(k)} {k}" for k in ("done", "failed", "cancelled", "unfinished") if k in kinds]
        return ", ".join(counted)

    def summary(self, cancelled: Collection[str] = ()) -> str:
        """A one-line human summary (for the CLI). ``cancelled``: the ids of tool calls that a
        cancelled turn left unfinished (counted as cancelled, not as unfinished)."""
        parts: list[str] = []
        if self.title:
            parts.append(repr(self.title))
        user = sum(1 for m in self.messages if m.role == "user")
        agent = len(self.messages) - user
        parts.append(f"{user} user / {agent} agent messages")
        if self.thoughts:
            parts.append(f"{len(self.thoughts)} thoughts")
        if self.tool_calls:
            parts.append(f"{len(self.tool_calls)} tool calls ({self._tool_call_counts(cancelled)})")
        if self.plan is not None:
            if self.plan.kind == "items":
                parts.append(f"plan {self.plan.completed}/{len(self.plan.entries)} done")
            else:
                parts.append(f"plan ({self.plan.kind})")
        if self.current_mode_id is not None:
            parts.append(f"mode {self.current_mode_id}")
        if self.current_model_id is not None:
            parts.append(f"model {self.current_model_id}")
        if self.usage is not None:
            cost = f", {self.usage.cost.amount:g} {self.usage.cost.currency}" if self.usage.cost else ""
            parts.append(f"context {self.usage.used}/{self.usage.size} tokens{cost}")
        if self.compacting:
            parts.append("compacting")
        if self.subagents:
            parts.append(f"{len(self.subagents)} subagents")
        if self.unknown:
            parts.append(f"{len(self.unknown)} unknown updates")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"<SessionState {self.session_id or '?'}: {self.summary()}>"
