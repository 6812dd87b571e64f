"""The session rules of one connection, as a state machine without I/O.

:class:`ConnectionState` follows one connection, live or recorded, one decoded JSON-RPC message
at a time: ``process(role, message)``, where ``role`` is the side that *sent* the message
(``"client"`` or ``"agent"``). It returns a :class:`Verdict`:

- ``events``: what happened, the same in every version (:class:`Ready`, :class:`SessionOpened`,
  :class:`SessionClosed`, :class:`TurnStarted`, :class:`PromptReceipt`, :class:`Update`,
  :class:`StateChanged`, :class:`TurnEnded`, :class:`QuestionAsked`, :class:`QuestionAnswered`);
- ``findings``: the rules the message broke (:class:`Finding`: an id of :data:`FINDINGS` and a
  message), e.g. a request before ``initialize`` was answered, a second prompt while a turn
  runs (on versions that refuse it), a prompt for a session that is not open, a turn update after the turn ended, an update after
  ``session/close``;
- ``refusal``: for a request a live side must refuse (answer with an error), the reason.

Every rule comes from the protocol object's tables (:mod:`acplink.protocol.base`): the
requests allowed before ``initialize`` (``before_initialize``), the wire names (``names``),
the requests whose answer opens a session (``session_openers``), the capabilities of the
method table (:func:`~acplink.protocol.rules.missing_capability`), the tool-call update kinds
(``tool_call_kinds``) and the prompt-turn lifecycle (``turns``: a response or an idle state
update ends a turn, a prompt during a turn is refused or held). With ``protocol=None`` the
version is the one the ``initialize`` answer agrees on (an unknown one: a finding, and the
first version's rules).

Who uses it:

- ``acplink inspect``, devtools and ``acplink check`` (:mod:`acplink.tools.analysis`) feed a
  recorded trace through it and turn the verdicts into a timeline and findings;
- the live connections do not feed it their traffic (the update flood must not pay for it):
  they call the same rule functions it calls (:mod:`acplink.protocol.rules`:
  ``before_initialize``, ``session_refusal``, ``prompt_refusal``, ``update_session_finding``;
  :meth:`TurnRules.prompt_action`, ``end_of``), so each rule is written once; the corpus test
  replays its traces through live connections to keep them deciding alike (docs/design.md,
  "One decision source"). A caller that wants the whole machine live can still keep one per
  connection: :meth:`ConnectionState.refusal` says, before sending, why a request may not go,
  and :meth:`ConnectionState.running` gives a session's running turn::

      state = ConnectionState()
      verdict = state.process("client", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": {"protocolVersion": 1}})
      verdict = state.process("agent", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})
      assert state.ready and verdict.events == (Ready(1, 1),)

At the end of a trace, :meth:`ConnectionState.finish` reports the requests never answered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError
from .base import Protocol, get_protocol
from .initialize import agreed_version
from .messages import CallMatcher, message_kind
from .rules import (
    before_initialize,
    missing_capability,
    prompt_refusal,
    session_refusal,
    update_session_finding,
)

__all__ = [
    "FINDINGS",
    "ConnectionState",
    "Event",
    "Finding",
    "PromptReceipt",
    "QuestionAnswered",
    "QuestionAsked",
    "Ready",
    "Role",
    "SessionClosed",
    "SessionOpened",
    "StateChanged",
    "TurnEnded",
    "TurnStarted",
    "Update",
    "Verdict",
    "default_protocol",
    "protocol_of_version",
]

Role = Literal["client", "agent"]

#: the ids of the rules the machine judges → what breaking them means
FINDINGS: Mapping[str, str] = {
    "before-initialize": "a request before the initialize response",
    "capability": "a request the peer's capabilities did not allow",
    "prompt-while-running": "a session/prompt while the session's previous prompt is still running",
    "prompt-unknown-session": "a session/prompt for a session that is not open (never opened, or closed)",
    "update-after-response": "a turn update after the turn ended (no turn running)",
    "update-unknown-session": "a session/update for a session that does not exist",
    "update-after-close": "a session/update for a session after its session/close response",
    "tool-update-unknown-id": "a tool_call_update for a tool call id never announced",
    "response-unknown-id": "a response to a request id that is not pending",
    "duplicate-response": "a second response to the same request",
    "unanswered": "a request that never got a response",
    "unknown-version": "initialize agreed on a protocol version acplink does not know (judged by the first's rules)",
}


# -- verdicts -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Finding:
    """A rule the traffic broke: ``id`` (a key of :data:`FINDINGS`) and what happened. ``at``:
    the caller's tag of the message it is about, for :meth:`ConnectionState.finish` (the
    unanswered request's tag); None for the message just processed."""

    id: str
    message: str
    at: Any = None


@dataclass(frozen=True, slots=True)
class Ready:
    """``initialize`` was answered: the connection is ready, on ``version`` (the rules in use);
    ``agreed``: the version the answer agreed on (an unknown one too)."""

    version: int
    agreed: Any = None


@dataclass(frozen=True, slots=True)
class SessionOpened:
    """A session opener (``session/new``, ``load``, ``resume``, ``fork``) answered ``method``'s
    request with session ``session_id``."""

    session_id: str
    method: str
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class SessionClosed:
    session_id: str


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A prompt (request ``request_id``) for ``session_id``: ``held`` when another turn of the
    session runs and the version holds it (it starts when that one ends); ``refused`` when the
    version refuses it (a finding too)."""

    session_id: str
    request_id: Any
    held: bool = False
    refused: bool = False


@dataclass(frozen=True, slots=True)
class PromptReceipt:
    """The prompt was accepted (receipt versions): its turn goes on until the idle state."""

    session_id: str
    request_id: Any
    result: Any = None


@dataclass(frozen=True, slots=True)
class Update:
    """A ``session/update`` of ``kind``; ``turn``: the request id of the turn it belongs to
    (None: no turn runs)."""

    session_id: str
    kind: str
    turn: Any = None


@dataclass(frozen=True, slots=True)
class StateChanged:
    """A state update (receipt versions): the session's foreground ``state``."""

    session_id: str
    state: str


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn of prompt ``request_id`` ended: its stop reason, or its error (a wire dict: the
    prompt's error answer, or the error of the state update that ended it)."""

    session_id: str
    request_id: Any
    stop_reason: str | None = None
    error: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class QuestionAsked:
    """The agent asks the user (a permission, an elicitation): request ``request_id``."""

    session_id: str | None
    request_id: Any
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QuestionAnswered:
    session_id: str | None
    request_id: Any
    method: str
    result: Any = None
    error: Mapping[str, Any] | None = None


Event = (Ready | SessionOpened | SessionClosed | TurnStarted | PromptReceipt | Update | StateChanged | TurnEnded
         | QuestionAsked | QuestionAnswered)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one message did (events), broke (findings) and, for a request, whether it must be
    refused (``refusal``: the reason)."""

    events: tuple[Event, ...] = ()
    findings: tuple[Finding, ...] = ()
    refusal: str | None = None


#: the verdict of a message that changes nothing (most of them)
_NOTHING = Verdict()


# -- the machine ----------------------------------------------------------------------------------

def protocol_of_version(version: Any) -> Protocol | None:
    """The protocol object of ``version`` (built on first use for a draft version), None for a
    version acplink does not know."""
    if type(version) is not int:
        return None
    try:
        return get_protocol(version)
    except UsageError:
        pass
    from . import v2

    return v2.protocol() if version == v2.PROTOCOL_VERSION else None


def default_protocol() -> Protocol:
    """The protocol whose rules apply until ``initialize`` agrees on one (and to a version
    acplink does not know): the first version."""
    from .v1 import V1

    return V1


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


class _Session:
    __slots__ = ("closed", "ended", "loading", "open", "turns")

    def __init__(self) -> None:
        self.open = False
        self.closed = False
        #: the session had a turn that ended (a turn update now needs a new turn)
        self.ended = False
        #: pending load/resume requests (their history replay is allowed)
        self.loading = 0
        #: the request ids of the session's turns not ended, oldest first (the first runs)
        self.turns: list[Any] = []


_Out = tuple[list[Event], list[Finding]]
_Handler = Callable[[str, str, Any, dict[str, Any], _Out], "str | None"]
_Answer = Callable[[str, "_Call", Any, Mapping[str, Any] | None, _Out], None]


@dataclass(slots=True)
class _Call:
    """A request in flight."""

    method: str
    params: dict[str, Any]
    rid: Any
    tag: Any


class ConnectionState:
    """The session rules of one connection (see the module's doc)."""

    def __init__(self, protocol: Protocol | None = None) -> None:
        #: the protocol whose rules apply (follows initialize when none was given)
        self.protocol: Protocol = protocol or default_protocol()
        self._follow = protocol is None
        #: whether the initialize request was answered with a result
        self.ready = False
        self.client_capabilities: Any = None
        self.agent_capabilities: Any = None
        self.sessions: dict[str, _Session] = {}
        #: requests in flight, by (direction, id)
        self._calls: CallMatcher[_Call] = CallMatcher()
        self._tool_calls: set[str] = set()
        self._tables(self.protocol)

    # -- the protocol's tables, as dispatch dicts ------------------------------------------------

    def _tables(self, p: Protocol) -> None:
        self.protocol = p
        self._turns = p.turns
        self._cap_agent, self._cap_client = p.capabilities_field
        requests: dict[str, _Handler] = {}
        answers: dict[str, _Answer] = {}
        for name in p.session_openers:
            if p.has(name):
                requests[p.wire(name)] = self._opener_request
                answers[p.wire(name)] = self._opener_answer
        for name, on_request, on_answer in (
                ("initialize", self._initialize_request, self._initialize_answer),
                ("prompt", self._prompt_request, self._prompt_answer),
                ("close_session", None, self._close_answer),
                ("request_permission", self._question, self._answer_question),
                ("create_elicitation", self._question, self._answer_question)):
            if p.has(name):
                if on_request is not None:
                    requests[p.wire(name)] = on_request
                answers[p.wire(name)] = on_answer
        self._on_request = requests
        self._on_answer = answers
        self._update_method = p.wire("session_update") if p.has("session_update") else None
        announce, update = p.tool_call_kinds
        self._announce = announce
        self._refer = update - announce

    # -- queries ---------------------------------------------------------------------------------

    def answering(self, role: str, rid: Any) -> str | None:
        """The method of the request a response from ``role`` with id ``rid`` answers (None:
        no such request is pending)."""
        call = self._calls.peek(_DIR[role], rid)
        return call.method if call is not None else None

    def running(self, session_id: str) -> Any:
        """The request id of the session's running turn (None: no turn runs)."""
        sess = self.sessions.get(session_id)
        return sess.turns[0] if sess is not None and sess.turns else None

    def refusal(self, role: str, message: Any) -> str | None:
        """Why ``role`` may not send ``message`` now (a request), without processing it: what
        a client asks before sending."""
        if not isinstance(message, dict) or type(message.get("method")) is not str:
            return None
        method = message["method"]
        if role == "client" and not self.ready and not before_initialize(method, self.protocol.before_initialize):
            return f"{method} sent before the initialize response"
        if self._on_request.get(method) == self._prompt_request:
            return self._prompt_refusal(str(_obj(message.get("params")).get("sessionId")))[1]
        return None

    def finish(self) -> tuple[Finding, ...]:
        """The requests never answered, as findings (``at``: the tag given with each)."""
        return tuple(Finding("unanswered", f"{c.method} request {c.rid!r} ({d}) never answered", c.tag)
                     for d, _rid, c in self._calls.unanswered())

    def unanswered(self) -> list[tuple[str, Any, str, Any]]:
        """The requests still pending: (role that sent it, id, method, tag)."""
        return [(_ROLE[d], c.rid, c.method, c.tag) for d, _rid, c in self._calls.unanswered()]

    # -- one message -----------------------------------------------------------------------------

    def process(self, role: str, message: Any, tag: Any = None) -> Verdict:
        """Judge one decoded message ``role`` sent (``tag``: whatever the caller wants back in
        the findings about this request later, e.g. its trace number)."""
        kind = message_kind(message)
        if kind == "request":
            return self._request(role, message["method"], message, tag)
        if kind == "notification":
            return self._update(message) if message["method"] == self._update_method and role == "agent" else _NOTHING
        if kind == "response":
            return self._response(role, message)
        if isinstance(message, dict) and "method" in message and "id" in message:
            # an invalid request (method not a string): still answerable
            self._calls.sent(_DIR[role], message.get("id"), _Call("(invalid request)", {}, message.get("id"), tag))
        return _NOTHING

    def _request(self, role: str, method: str, msg: dict[str, Any], tag: Any) -> Verdict:
        rid = msg.get("id")
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        self._calls.sent(_DIR[role], rid, _Call(method, params, rid, tag))
        out: _Out = ([], [])
        refusal = None
        if not self.ready:
            if role == "client" and not before_initialize(method, self.protocol.before_initialize):
                refusal = f"{method} sent before the initialize response"
                out[1].append(Finding("before-initialize", refusal))
        else:
            missing = missing_capability(method, self.client_capabilities, self.agent_capabilities,
                                         self.protocol.table)
            if missing is not None:
                who, path = missing
                refusal = f"{method} called but the {who} did not advertise {path!r}"
                out[1].append(Finding("capability", refusal))
        handler = self._on_request.get(method)
        if handler is not None:
            refusal = handler(role, method, rid, params, out) or refusal
        if not out[0] and not out[1] and refusal is None:
            return _NOTHING
        return Verdict(tuple(out[0]), tuple(out[1]), refusal)

    def _response(self, role: str, msg: dict[str, Any]) -> Verdict:
        rid = msg.get("id")
        call = self._calls.answer(_DIR[role], rid)
        if call is None:
            if self._calls.answered(_DIR[role], rid):
                return Verdict(findings=(Finding("duplicate-response", f"second response to request {rid!r}"),))
            if "error" in msg and rid is None:
                return _NOTHING
            return Verdict(findings=(Finding("response-unknown-id", f"response to unknown request id {rid!r}"),))
        answer = self._on_answer.get(call.method)
        if answer is None:
            return _NOTHING
        out: _Out = ([], [])
        error = msg.get("error") if "error" in msg else None
        answer(role, call, msg.get("result"), None if error is None else error if isinstance(error, dict)
               else {"message": error}, out)
        return Verdict(tuple(out[0]), tuple(out[1])) if out[0] or out[1] else _NOTHING

    # -- requests --------------------------------------------------------------------------------

    def _initialize_request(self, role: str, method: str, rid: Any, params: dict[str, Any], out: _Out) -> str | None:
        self.client_capabilities = params.get(self._cap_client)
        return None

    def _opener_request(self, role: str, method: str, rid: Any, params: dict[str, Any], out: _Out) -> str | None:
        sid = params.get("sessionId")
        if sid is not None:  # (load, resume: the session's history may be replayed until the answer)
            self._session(str(sid)).loading += 1
        return None

    def _prompt_request(self, role: str, method: str, rid: Any, params: dict[str, Any], out: _Out) -> str | None:
        sid = str(params.get("sessionId"))
        finding, why = self._prompt_refusal(sid)
        if why is not None:
            out[1].append(Finding(finding, why))
            if finding == "prompt-while-running":  # (a session that is not open has no turns)
                out[0].append(TurnStarted(sid, rid, refused=True))
            return why
        sess = self._session(sid)
        sess.turns.append(rid)
        out[0].append(TurnStarted(sid, rid, held=len(sess.turns) > 1))
        return None

    def _prompt_refusal(self, sid: str) -> tuple[str, str | None]:
        """The rules a prompt for ``sid`` may break (the live sides call the same functions):
        the session must be open (once ``initialize`` was answered), and a turn running makes
        it held or refused (:meth:`TurnRules.prompt_action`). (finding id, reason or None)."""
        sess = self.sessions.get(sid)
        if self.ready:
            why = session_refusal(sid, sess is not None and sess.open and not sess.closed)
            if why is not None:
                return "prompt-unknown-session", why
        if self._turns.prompt_action(bool(sess is not None and sess.turns)) == "refuse":
            return "prompt-while-running", prompt_refusal(sid, True)
        return "", None

    def _question(self, role: str, method: str, rid: Any, params: dict[str, Any], out: _Out) -> str | None:
        sid = params.get("sessionId")
        out[0].append(QuestionAsked(str(sid) if sid is not None else None, rid, method, params))
        return None

    # -- answers ---------------------------------------------------------------------------------

    def _initialize_answer(self, role: str, call: _Call, result: Any, error: Mapping[str, Any] | None,
                           out: _Out) -> None:
        if not isinstance(result, dict):
            return
        version = agreed_version(result)
        if self._follow:
            proto = protocol_of_version(version)
            if proto is None:
                out[1].append(Finding("unknown-version", f"initialize agreed on protocol version "
                                      f"{result.get('protocolVersion')!r}, which acplink does not know"))
                proto = default_protocol()
            if proto is not self.protocol:
                self._tables(proto)
        self.ready = True
        self.agent_capabilities = result.get(self._cap_agent)
        self.client_capabilities = call.params.get(self._cap_client)
        out[0].append(Ready(self.protocol.version, version if version is not None else result.get("protocolVersion")))

    def _opener_answer(self, role: str, call: _Call, result: Any, error: Mapping[str, Any] | None,
                       out: _Out) -> None:
        named = call.params.get("sessionId")
        if named is not None:
            sess = self._session(str(named))
            sess.loading = max(0, sess.loading - 1)
        if error is not None:
            return
        sid = _obj(result).get("sessionId") or named
        if sid is None:
            return
        sid = str(sid)
        sess = self._session(sid)
        if not sess.open or sess.closed:
            sess.open = True
            sess.closed = False
            cwd = call.params.get("cwd")
            out[0].append(SessionOpened(sid, call.method, cwd if isinstance(cwd, str) else None))

    def _close_answer(self, role: str, call: _Call, result: Any, error: Mapping[str, Any] | None,
                      out: _Out) -> None:
        sid = call.params.get("sessionId")
        if error is None and sid is not None:
            self._session(str(sid)).closed = True
            out[0].append(SessionClosed(str(sid)))

    def _prompt_answer(self, role: str, call: _Call, result: Any, error: Mapping[str, Any] | None,
                       out: _Out) -> None:
        sid = str(call.params.get("sessionId"))
        sess = self.sessions.get(sid)
        mine = sess is not None and call.rid in sess.turns
        if error is not None or not self._turns.receipt:
            if mine and sess is not None:
                sess.turns.remove(call.rid)
                sess.ended = True
            reason = None if error is not None else _obj(result).get("stopReason")
            out[0].append(TurnEnded(sid, call.rid, reason if isinstance(reason, str) else None, error))
        else:
            out[0].append(PromptReceipt(sid, call.rid, result))

    def _answer_question(self, role: str, call: _Call, result: Any, error: Mapping[str, Any] | None,
                         out: _Out) -> None:
        sid = call.params.get("sessionId")
        out[0].append(QuestionAnswered(str(sid) if sid is not None else None, call.rid, call.method, result, error))

    # -- updates ---------------------------------------------------------------------------------

    def _update(self, msg: dict[str, Any]) -> Verdict:
        params = msg.get("params")
        if not isinstance(params, dict):
            return _NOTHING
        sid = str(params.get("sessionId"))
        upd = _obj(params.get("update"))
        kind = str(upd.get("sessionUpdate"))
        sess = self.sessions.get(sid)
        findings: list[Finding] = []
        broken = update_session_finding(sid, kind, opened=sess is not None and sess.open,
                                        closed=sess is not None and sess.closed,
                                        loading=sess is not None and sess.loading > 0)
        if broken is not None:
            findings.append(Finding(*broken))
        turn = sess.turns[0] if sess is not None and sess.turns else None
        events: list[Event] = [Update(sid, kind, turn)]
        rules = self._turns
        if turn is None and sess is not None and sess.ended and not sess.loading and rules.is_turn_update(kind):
            findings.append(Finding("update-after-response", f"{kind} for session {sid!r} after its "
                                    + ("turn ended" if rules.receipt else "prompt response")))
        if kind == rules.state_kind:
            state = rules.state_of(upd)
            if state is not None:
                events.append(StateChanged(sid, state))
            end = rules.end_of(upd)
            if end is not None and turn is not None and sess is not None:
                sess.turns.pop(0)
                sess.ended = True
                events.append(TurnEnded(sid, turn, end.stop_reason, end.error))
        if kind in self._announce:
            self._tool_calls.add(str(upd.get("toolCallId")))
        elif kind in self._refer and str(upd.get("toolCallId")) not in self._tool_calls:
            findings.append(Finding("tool-update-unknown-id",
                                    f"{kind} for unknown tool call {str(upd.get('toolCallId'))!r}"))
        return Verdict(tuple(events), tuple(findings))

    def _session(self, sid: str) -> _Session:
        sess = self.sessions.get(sid)
        if sess is None:
            sess = self.sessions[sid] = _Session()
        return sess


#: the trace direction of a message each role sends, and back
_DIR = {"client": "c2a", "agent": "a2c"}
_ROLE = {"c2a": "client", "a2c": "agent"}
