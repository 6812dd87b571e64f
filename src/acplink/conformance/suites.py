"""The requirement set of each protocol version at work, and the one judge of recorded traffic.

A protocol object names its requirement set (``Protocol.requirement_set``), whose data (the
requirements, the check table, which requirement each finding of the traffic breaks) is the
protocol's (:mod:`acplink.protocol.requirements`); :func:`suite_of` returns the set with the
probes its check table names (:data:`PROBES`): a :class:`Suite`. The runner never asks which
version it checks: it asks the suite.

:func:`judge_traffic` judges a check's records (the transcript of the wire) the same way for
every version: the session-rule findings come from :func:`acplink.tools.analysis.analyze`, that
is from the verdicts of the protocol's state machine (:mod:`acplink.protocol.state`), the same
findings ``acplink inspect`` shows; a few message-level rules (an error's message, undeclared
root keys, a call to a method the client does not handle) are read from the messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..protocol.base import Protocol
from ..protocol.initialize import agent_info
from ..protocol.requirements import Requirement, RequirementSet, requirement_set
from ..protocol.state import default_protocol, protocol_of_version
from ..tools.analysis import Finding, analyze
from . import checks, raw_checks, raw_checks_kit
from .checks import Check, ProbeFn
from .probe import Outcome
from .rootkeys import undeclared_root_keys

__all__ = ["PROBES", "Suite", "judge_traffic", "suite_of"]

#: every probe a check table may name
PROBES: Mapping[str, ProbeFn] = {**checks.PROBES, **raw_checks.PROBES, **raw_checks_kit.PROBES}


@dataclass(frozen=True)
class Suite:
    """A requirement set (its data, ``rules``) and its checks (see the module's doc)."""

    rules: RequirementSet
    checks: Sequence[Check]

    @property
    def name(self) -> str:
        return self.rules.name

    @property
    def requirements(self) -> Sequence[Requirement]:
        return self.rules.requirements

    @property
    def monitored(self) -> Sequence[str]:
        return self.rules.monitored

    @property
    def initialize(self) -> Mapping[str, Any]:
        return self.rules.initialize

    @property
    def tck_key(self) -> str | None:
        return self.rules.tck_key


_BUILT: dict[str, Suite] = {}


def suite_of(protocol: Protocol | int | None = None) -> Suite:
    """The requirement set of ``protocol`` (or of the version number the command line chose)."""
    proto = protocol if isinstance(protocol, Protocol) else protocol_of_version(protocol) or default_protocol()
    name = proto.requirement_set
    suite = _BUILT.get(name)
    if suite is None:
        rules = requirement_set(name)
        suite = _BUILT[name] = Suite(rules, tuple(
            Check(c.name, PROBES[c.probe_name], c.requirements, c.vouches, c.roles) for c in rules.checks))
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
    if f.code == "capability":
        return suite.rules.capability_requirement(f.message)
    return suite.rules.findings.get(f.code)


def _message_outcomes(records: list[dict[str, Any]], rules: RequirementSet) -> list[tuple[str, str]]:
    """Violations read straight from the agent's messages: (requirement, evidence)."""
    out: list[tuple[str, str]] = []
    proto = default_protocol()  # (the version the agent answered initialize with: its messages follow that schema)
    for rec in records:
        if rec.get("type") != "message" or rec.get("dir") != "a2c":
            continue
        msg = rec.get("msg")
        if "msg" not in rec and rules.bad_utf8 and "\ufffd" in str(rec.get("raw", "")):
            out.append((rules.bad_utf8, f"message #{rec.get('seq')}: a line that is not valid UTF-8: "
                        f"{str(rec.get('raw'))[:80]!r}"))
        if not isinstance(msg, dict):
            continue
        answered = rec.get("method") if rec.get("kind") == "response" else None
        if answered is not None and proto.is_(str(answered), "initialize") and isinstance(msg.get("result"), dict):
            from ..protocol.initialize import agreed_version

            proto = protocol_of_version(agreed_version(msg["result"])) or default_protocol()
        err = msg.get("error")
        if rules.error_message and "method" not in msg and isinstance(err, dict) and isinstance(err.get("message"), str):
            text = err["message"]
            if not text.strip() or "\n" in text.strip():
                out.append((rules.error_message, f"message #{rec.get('seq')}: error {err.get('code')} has "
                            f"{'an empty' if not text.strip() else 'a multi-line'} message: {text[:120]!r}"))
        called = msg.get("method")
        if rules.foreign_call and isinstance(called, str) and not called.startswith(("_", "$/")):
            info = proto.info(called, "request" if "id" in msg else "notification")
            if info is None or info.side not in ("client", "protocol"):
                out.append((rules.foreign_call, f"message #{rec.get('seq')}: the agent called {called!r}: not a "
                            f"client method of ACP v{proto.version}"))
        if rules.root_keys:
            extra = undeclared_root_keys(msg, answered, proto)
            if extra:
                out.append((rules.root_keys, f"message #{rec.get('seq')}: undeclared root key(s) {', '.join(extra)} "
                            f"({msg.get('method') or 'result'}; custom data belongs in _meta)"))
    return out


def judge_traffic(records: list[dict[str, Any]], suite: Suite, check: str = "") -> list[Outcome]:
    """The monitored requirements the agent's messages in ``records`` break (at most three
    outcomes per requirement): the findings of :func:`~acplink.tools.analysis.analyze` (the
    state machine's verdicts) mapped to the suite's requirements, and the message-level rules."""
    found: list[tuple[str, str]] = []
    rules = suite.rules
    null_ids = set() if rules.null_id_responses else {
        r.get("seq") for r in records if r.get("kind") == "response" and isinstance(r.get("msg"), dict)
        and r["msg"].get("id") is None}
    for f in analyze(records).findings:
        if f.dir != "a2c" or (f.code == "response-unknown-id" and f.seq in null_ids):
            continue
        if f.code == "update-unknown-session" and rules.early_update is not None \
                and (early := _created_later(records, f.seq)) is not None:
            found.append((rules.early_update, f"message #{f.seq}: an update for session {early!r} arrived before "
                          "the session/new response that returns its id (an ordering problem)"))
            continue
        req = finding_requirement(suite, f)
        if req is not None:
            found.append((req, f"message #{f.seq}: {f.message}"))
    out: list[Outcome] = []
    seen: dict[str, int] = {}
    for req, detail in [*found, *_message_outcomes(records, rules)]:
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
