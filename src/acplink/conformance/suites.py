"""The requirement set of each protocol version, as data, and the one judge of recorded traffic.

A protocol object names its requirement set (``Protocol.requirement_set``); :func:`suite_of`
returns that set's :class:`Suite`: its checks, its requirements, the requirements judged from
every check's traffic (``monitored``) and which requirement each finding of the traffic
breaks. The runner never asks which version it checks: it asks the suite.

:func:`judge_traffic` judges a check's records (the transcript of the wire) the same way for
every version: the session-rule findings come from :func:`acplink.tools.analysis.analyze`, that
is from the verdicts of the protocol's state machine (:mod:`acplink.protocol.state`), the same
findings ``acplink inspect`` shows; a few message-level rules (an error's message, undeclared
root keys, a call to a method the client does not handle) are read from the messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..protocol.base import Protocol
from ..protocol.initialize import agent_info
from ..protocol.state import default_protocol, protocol_of_version
from ..tools.analysis import Finding, analyze
from .checks import CHECKS, MONITORED, Check
from .probe import Outcome
from .requirements import REQUIREMENTS, Requirement
from .rootkeys import undeclared_root_keys

__all__ = ["Suite", "judge_traffic", "register_suite", "suite_of"]


@dataclass(frozen=True)
class Suite:
    """The requirement set of one protocol version (see the module's doc)."""

    name: str
    checks: Sequence[Check]
    requirements: Sequence[Requirement]
    monitored: Sequence[str]
    #: finding code (``acplink inspect``'s) → the requirement an agent's message breaks with it
    findings: Mapping[str, str]
    #: the requirement of a capability finding, from the finding's message (None: ``findings``)
    capability: Callable[[str], str] | None = None
    #: an update for a session whose id a later response returns (too early, not a ghost)
    early_update: str | None = None
    #: a line that is not valid UTF-8 (when ``invalid-json`` maps elsewhere)
    bad_utf8: str | None = None
    #: an error with an empty or multi-line message
    error_message: str | None = None
    #: root keys the schema does not declare
    root_keys: str | None = None
    #: a call of a method the client does not handle in this version (or an ``_`` one)
    foreign_call: str | None = None
    #: the initialize params of the checker's handshake
    initialize: Mapping[str, Any] = field(default_factory=dict)
    #: the key of the kit's ids in ``tck_ids.json`` (None: the top level)
    tck_key: str | None = None
    #: whether a response with id null (an answer to a notification) breaks the ids' requirement
    #: (else it is judged by the check that sends the notification)
    null_id_responses: bool = True


def _capability_v1(message: str) -> str:
    return "CAP-001" if "fs/" in message else "CAP-002" if "terminal/" in message else "CAP-003"


def _v1() -> Suite:
    return Suite(
        "acp-v1", CHECKS, REQUIREMENTS, MONITORED,
        findings={"schema": "SCHEMA-001", "invalid-json": "SCHEMA-001", "schema-strict": "SCHEMA-002",
                  "update-after-response": "PROMPT-002", "update-unknown-session": "PROMPT-003",
                  "tool-update-unknown-id": "PROMPT-004", "response-unknown-id": "RPC-010",
                  "duplicate-response": "RPC-010"},
        capability=_capability_v1, early_update="SESS-003", bad_utf8="TRANS-001", error_message="RPC-014",
        root_keys="SCHEMA-003",
        initialize={"clientCapabilities": {}, "clientInfo": {"name": "acplink-check", "version": "1"}})


def _v2_draft() -> Suite:
    from .v2_checks import V2_CHECKS, V2_MONITORED
    from .v2_checks_kit import V2_KIT_CHECKS
    from .v2_requirements import V2_REQUIREMENTS

    return Suite(
        "acp-v2-draft", (*V2_CHECKS, *V2_KIT_CHECKS), V2_REQUIREMENTS, V2_MONITORED,
        findings={"schema": "V2-SCHEMA-001", "schema-strict": "V2-SCHEMA-002", "invalid-json": "V2-TRANS-001",
                  "response-unknown-id": "V2-IDS-001", "duplicate-response": "V2-IDS-001",
                  "capability": "V2-CAP-001"},
        # (not update-after-close → V2-CLOSE-002 on every check: the idle that ends a turn still
        # running at session/close may follow the close response, V2-CLOSE-004; v2-close judges it)
        error_message="V2-RPC-008", foreign_call="V2-CAP-001",
        initialize={"info": {"name": "acplink-check", "version": "1"}, "capabilities": {}}, tck_key="v2",
        null_id_responses=False)


_SUITES: dict[str, Callable[[], Suite]] = {"acp-v1": _v1, "acp-v2-draft": _v2_draft}
_BUILT: dict[str, Suite] = {}


def register_suite(name: str, build: Callable[[], Suite]) -> None:
    """Make the requirement set ``name`` (a ``Protocol.requirement_set``) available."""
    _SUITES[name] = build
    _BUILT.pop(name, None)


def suite_of(protocol: Protocol | int | None = None) -> Suite:
    """The requirement set of ``protocol`` (or of the version number the command line chose)."""
    proto = protocol if isinstance(protocol, Protocol) else protocol_of_version(protocol) or default_protocol()
    name = proto.requirement_set
    suite = _BUILT.get(name)
    if suite is None:
        suite = _BUILT[name] = _SUITES[name]()
    return suite


def _created_later(records: list[dict[str, Any]], seq: Any) -> str | None:
    """The session id of the update with trace number ``seq`` when a later session/new (or
    fork) response returns it: the update came too early rather than for a ghost session."""
    at = next((i for i, r in enumerate(records) if r.get("seq") == seq and isinstance(r.get("msg"), dict)), None)
    if at is None:
        return None
    sid = (records[at]["msg"].get("params") or {}).get("sessionId")
    return sid if any(r.get("dir") == "a2c" and r.get("kind") == "response" and isinstance(r.get("msg"), dict)
                      and isinstance(r["msg"].get("result"), dict) and r["msg"]["result"].get("sessionId") == sid
                      for r in records[at:]) else None


def finding_requirement(suite: Suite, f: Finding) -> str | None:
    """The requirement an agent's message breaks with finding ``f`` (None: none of the suite's)."""
    if f.code == "capability" and suite.capability is not None:
        return suite.capability(f.message)
    return suite.findings.get(f.code)


def _message_outcomes(records: list[dict[str, Any]], suite: Suite) -> list[tuple[str, str]]:
    """Violations read straight from the agent's messages: (requirement, evidence)."""
    out: list[tuple[str, str]] = []
    proto = default_protocol()  # (the version the agent answered initialize with: its messages follow that schema)
    for rec in records:
        if rec.get("type") != "message" or rec.get("dir") != "a2c":
            continue
        msg = rec.get("msg")
        if "msg" not in rec and suite.bad_utf8 and "\ufffd" in str(rec.get("raw", "")):
            out.append((suite.bad_utf8, f"message #{rec.get('seq')}: a line that is not valid UTF-8: "
                        f"{str(rec.get('raw'))[:80]!r}"))
        if not isinstance(msg, dict):
            continue
        answered = rec.get("method") if rec.get("kind") == "response" else None
        if answered is not None and proto.is_(str(answered), "initialize") and isinstance(msg.get("result"), dict):
            from ..protocol.initialize import agreed_version

            proto = protocol_of_version(agreed_version(msg["result"])) or default_protocol()
        err = msg.get("error")
        if suite.error_message and "method" not in msg and isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
            if not text.strip() or "\n" in text.strip():
                out.append((suite.error_message, f"message #{rec.get('seq')}: error {err.get('code')} has "
                            f"{'an empty' if not text.strip() else 'a multi-line'} message: {text[:120]!r}"))
        called = msg.get("method")
        if suite.foreign_call and isinstance(called, str) and not called.startswith(("_", "$/")):
            info = proto.info(called, "request" if "id" in msg else "notification")
            if info is None or info.side not in ("client", "protocol"):
                out.append((suite.foreign_call, f"message #{rec.get('seq')}: the agent called {called!r}: not a "
                            f"client method of ACP v{proto.version}"))
        if suite.root_keys:
            extra = undeclared_root_keys(msg, answered, proto)
            if extra:
                out.append((suite.root_keys, f"message #{rec.get('seq')}: undeclared root key(s) {', '.join(extra)} "
                            f"({msg.get('method') or 'result'}; custom data belongs in _meta)"))
    return out


def judge_traffic(records: list[dict[str, Any]], suite: Suite, check: str = "") -> list[Outcome]:
    """The monitored requirements the agent's messages in ``records`` break (at most three
    outcomes per requirement): the findings of :func:`~acplink.tools.analysis.analyze` (the
    state machine's verdicts) mapped to the suite's requirements, and the message-level rules."""
    found: list[tuple[str, str]] = []
    null_ids = set() if suite.null_id_responses else {
        r.get("seq") for r in records if r.get("kind") == "response" and isinstance(r.get("msg"), dict)
        and r["msg"].get("id") is None}
    for f in analyze(records).findings:
        if f.dir != "a2c" or (f.code == "response-unknown-id" and f.seq in null_ids):
            continue
        if f.code == "update-unknown-session" and suite.early_update is not None \
                and (early := _created_later(records, f.seq)) is not None:
            found.append((suite.early_update, f"message #{f.seq}: an update for session {early!r} arrived before "
                          "the session/new response that returns its id (an ordering problem)"))
            continue
        req = finding_requirement(suite, f)
        if req is not None:
            found.append((req, f"message #{f.seq}: {f.message}"))
    out: list[Outcome] = []
    seen: dict[str, int] = {}
    for req, detail in [*found, *_message_outcomes(records, suite)]:
        seen[req] = seen.get(req, 0) + 1
        if seen[req] <= 3:
            out.append(Outcome(req, "fail", detail, check))
    return out


def agent_of(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The agent's name and version from the initialize answer in a check's traffic."""
    for rec in records:
        msg = rec.get("msg")
        if rec.get("kind") == "response" and isinstance(msg, dict) and default_protocol().is_(
                str(rec.get("method")), "initialize"):
            info = agent_info(msg.get("result"))
            if isinstance(info, dict):
                return {"name": info.get("name"), "version": info.get("version")}
    return None
