"""ACP's session rules, in one place and without I/O: what may be sent when.

- **Initialization**: before the ``initialize`` response only ``initialize`` (and ``_``
  extension methods) may be requested (:func:`before_initialize`).
- **Capabilities**: a method guarded by a capability may be called only when its owner
  advertised it (:func:`advertises`, :func:`missing_capability`); ``{}`` counts as advertised.
- **Sessions**: a request for a session must name one that is open (:func:`session_refusal`;
  an update for a session neither open nor being loaded: :func:`update_session_finding`).
- **Turns**: a prompt during a turn is refused or held, as the version's
  :meth:`~acplink.protocol.turns.TurnRules.prompt_action` says (:func:`prompt_refusal`,
  :class:`PromptTurns`); the updates of a turn (:data:`TURN_UPDATE_KINDS`) come before its
  prompt response, never after it (:meth:`PromptTurns.update_after_response`).

The connections enforce them (the agent side refuses, the client side raises before sending or
warns about what it drops), calling the same functions as the state machine: a rule is written
once (the map of which side decides what is in docs/design.md, "One decision source").
:mod:`acplink.protocol.state` builds the state machine of a whole connection on them (and on the
protocol object's turn rules): the trace analyser (``acplink inspect``, devtools) and the
conformance checker judge recorded traffic with it. Each function returns a verdict (a bool, or
the reason a message is refused); the caller raises its own error or records its own finding.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from ..schema._table import MethodTable
from ..schema.v1 import TABLE as _V1_TABLE
from .turns import V1_TURNS, TurnRules

__all__ = [
    "BEFORE_INITIALIZE",
    "TURN_UPDATE_KINDS",
    "PromptTurns",
    "advertise_path",
    "advertises",
    "before_initialize",
    "is_turn_update",
    "missing_capability",
    "prompt_refusal",
    "required_capability",
    "session_refusal",
    "update_session_finding",
]

T = TypeVar("T")

#: the requests allowed before the ``initialize`` response (besides ``_`` extensions), in v1
#: (each protocol object carries its own: ``Protocol.before_initialize``)
BEFORE_INITIALIZE = frozenset(m.method for m in _V1_TABLE.methods if m.params_name == "InitializeRequest")

#: update kinds that belong to a prompt turn (others, e.g. available_commands_update, may come any time)
TURN_UPDATE_KINDS = V1_TURNS.turn_update_kinds


# -- initialization -------------------------------------------------------------------------------

def before_initialize(method: str, allowed: frozenset[str] = BEFORE_INITIALIZE) -> bool:
    """Whether ``method`` may be requested before the ``initialize`` response (``allowed``:
    the protocol version's list)."""
    return method in allowed or method.startswith("_")


# -- capabilities ---------------------------------------------------------------------------------

def advertises(capabilities: Any, path: str) -> bool:
    """Whether ``capabilities`` (a capabilities model or its wire dict) advertise the dotted
    wire ``path`` (e.g. "sessionCapabilities.list"). An empty object (``{}``) counts: that is
    how ACP advertises most capabilities; absent, ``null`` and ``false`` do not."""
    node = capabilities
    for part in path.split("."):
        if node is None:
            return False
        if isinstance(node, dict):
            node = node.get(part)
        else:
            fields = type(node).model_fields if isinstance(node, BaseModel) else {}
            name = next((n for n, f in fields.items() if (f.alias or n) == part), None)
            node = getattr(node, name) if name else (getattr(node, "__pydantic_extra__", None) or {}).get(part)
    return node is not None and node is not False


def advertise_path(caps: dict[str, Any], path: str, flag: bool) -> None:
    """Advertise the capability at dotted wire ``path`` in the wire dict ``caps``: ``true`` when
    the schema has a flag there (``flag``), ``{}`` (an object: advertised) otherwise; what is
    already there stays."""
    *parents, leaf = path.split(".")
    node = caps
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    if not isinstance(node.get(leaf), dict):
        node[leaf] = True if flag else {}


def required_capability(method: str, table: MethodTable = _V1_TABLE) -> tuple[str, str] | None:
    """The capability a request needs: (``"client"`` or ``"agent"``, its dotted wire path), or
    None when the method needs none (``table``: the protocol version's method table)."""
    info = table.info(method, "request")
    if info is None or info.capability is None:
        return None
    who, path = info.capability.split(":", 1)
    return who, path


def missing_capability(method: str, client_capabilities: Any, agent_capabilities: Any,
                       table: MethodTable = _V1_TABLE) -> tuple[str, str] | None:
    """The capability that ``method`` needs and its owner did not advertise (as
    :func:`required_capability`), or None when the call is allowed."""
    need = required_capability(method, table)
    if need is None:
        return None
    who, path = need
    return None if advertises(client_capabilities if who == "client" else agent_capabilities, path) else need


# -- prompt turns ---------------------------------------------------------------------------------

def prompt_refusal(session_id: str, running: bool) -> str | None:
    """Why a ``session/prompt`` for ``session_id`` may not start (None: it may): one turn per
    session; ``running``: the session has a turn that has not been answered yet."""
    return f"session {session_id!r} already has a prompt turn running" if running else None


def session_refusal(session_id: str, known: bool) -> str | None:
    """Why a request naming ``session_id`` (a prompt, a mode change...) may not be served
    (None: it may); ``known``: the session is open on this connection."""
    return None if known else f"unknown session {session_id!r}"


def update_session_finding(session_id: str, kind: str, *, opened: bool, closed: bool,
                           loading: bool) -> tuple[str, str] | None:
    """The rule an update of ``kind`` for ``session_id`` breaks, as (finding id of
    :data:`acplink.protocol.state.FINDINGS`, message), or None: the session must be open
    (``opened``; or being loaded or resumed, ``loading``: its history is replayed before the
    answer) and not closed since (``closed``)."""
    if closed:
        return "update-after-close", f"{kind} for session {session_id!r} after its session/close response"
    if not opened and not loading:
        return "update-unknown-session", f"{kind} for unknown session {session_id!r}"
    return None


def is_turn_update(kind: str) -> bool:
    """Whether a ``session/update`` of ``kind`` belongs to a prompt turn (only during one)."""
    return kind in TURN_UPDATE_KINDS


class PromptTurns(Generic[T]):
    """The prompt turns of a connection's sessions: ``T`` is what the caller keeps per turn
    (the agent its running task, the analyser its timeline entry)."""

    def __init__(self, rules: TurnRules = V1_TURNS) -> None:
        #: the version's turn rules (what a prompt during a turn becomes)
        self.rules = rules
        self._running: dict[str, T] = {}
        #: sessions with at least one answered prompt
        self._ended: set[str] = set()

    def get(self, session_id: str) -> T | None:
        """The running turn of ``session_id``."""
        return self._running.get(session_id)

    def __getitem__(self, session_id: str) -> T:
        return self._running[session_id]

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._running

    def start(self, session_id: str, turn: T) -> str | None:
        """Start ``turn``; or, when the session has one running, the reason it may not start (a
        version that holds such a prompt holds it before it gets here: see ``agent/_turns.py``)."""
        if self.rules.prompt_action(session_id in self._running) != "start":
            return prompt_refusal(session_id, True)
        self._running[session_id] = turn
        return None

    def end(self, session_id: str, turn: T) -> bool:
        """``turn``'s prompt was answered: the session is free (False: it was not running)."""
        if self._running.get(session_id) is not turn:
            return False
        del self._running[session_id]
        self._ended.add(session_id)
        return True

    def update_after_response(self, session_id: str, kind: str) -> bool:
        """Whether an update of ``kind`` for ``session_id`` breaks the rule: a turn update with
        no turn running, after a prompt of that session was answered. (Before any prompt, e.g.
        while a session is loaded, history replay is allowed: the caller judges that.)"""
        return is_turn_update(kind) and session_id not in self._running and session_id in self._ended
