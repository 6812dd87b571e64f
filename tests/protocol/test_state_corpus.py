"""THE test of the session rules: one corpus of recorded traces (``traces/*.jsonl``, the
recorder's format; valid and broken, ACP v1 and v2), each with its expected findings and
turns written once (``traces/expected.json``), judged three ways that must agree:

(a) the protocol's state machine fed directly (:class:`acplink.protocol.state.ConnectionState`);
(b) ``acplink inspect`` / devtools (:func:`acplink.tools.analysis.analyze`);
(c) ``acplink check``'s judge of a check's traffic (:func:`acplink.conformance.suites.judge_traffic`,
    run on every check's records): each finding of an agent's message that the version's
    requirement set maps is failed, with that message as evidence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from acplink.conformance.suites import finding_requirement, judge_traffic, suite_of
from acplink.protocol.state import ConnectionState, Ready, TurnEnded, TurnStarted
from acplink.tools.analysis import Finding
from acplink.tools.inspect import load_timeline

TRACES = Path(__file__).resolve().parent / "traces"
EXPECTED: dict[str, Any] = {k: v for k, v in json.loads((TRACES / "expected.json").read_text()).items()
                            if not k.startswith("/")}
SCHEMA = {"schema", "schema-strict", "invalid-json"}
ROLE = {"c2a": "client", "a2c": "agent"}


def _records(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (TRACES / f"{name}.jsonl").read_bytes().splitlines()]


def _expected(name: str) -> tuple[list[tuple[str, int]], list[tuple[Any, ...]]]:
    case = EXPECTED[name]
    return [(str(f[0]), int(f[1])) for f in case["findings"]], [tuple(t) for t in case["turns"]]


def test_the_corpus_is_complete() -> None:
    names = {p.stem for p in TRACES.glob("*.jsonl")}
    assert names == set(EXPECTED)
    # both versions, valid and broken traffic
    assert {n for n in names if n.startswith("v1_")} and {n for n in names if n.startswith("v2_")}
    assert any(not c["findings"] for c in EXPECTED.values()) and any(c["findings"] for c in EXPECTED.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_the_machine_fed_directly(name: str) -> None:
    findings, turns = _expected(name)
    state = ConnectionState()
    got: list[tuple[str, int]] = []
    started: dict[Any, bool] = {}
    ended: dict[Any, tuple[Any, ...]] = {}
    agreed = None
    for rec in _records(name):
        if rec.get("type") != "message":
            continue
        verdict = state.process(ROLE[rec["dir"]], rec["msg"], rec["seq"])
        got += [(f.id, rec["seq"]) for f in verdict.findings]
        for ev in verdict.events:
            if isinstance(ev, Ready):
                agreed = ev.agreed
            elif isinstance(ev, TurnStarted):
                started[ev.request_id] = ev.held
            elif isinstance(ev, TurnEnded):
                ended[ev.request_id] = (ev.session_id, ev.request_id, ev.stop_reason,
                                        None if ev.error is None else ev.error.get("message"))
    got += [(f.id, f.at) for f in state.finish()]
    assert got == findings
    assert [(*ended[rid], started[rid]) for rid in started] == turns
    assert agreed == EXPECTED[name]["version"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_b_acplink_inspect(name: str) -> None:
    findings, turns = _expected(name)
    t = load_timeline(TRACES / f"{name}.jsonl")
    assert [(f.code, f.seq) for f in t.findings if f.code not in SCHEMA] == findings
    assert t.protocol_version == EXPECTED[name]["version"]
    got = [(turn.session_id, turn.request_id, turn.stop_reason, turn.error) for s in t.sessions.values()
           for turn in s.turns]
    assert got == [tt[:4] for tt in turns]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_c_the_checker_judges_the_same_traffic(name: str) -> None:
    findings, _turns = _expected(name)
    records = _records(name)
    direction = {r["seq"]: r["dir"] for r in records if r.get("type") == "message"}
    suite = suite_of(EXPECTED[name]["version"])
    messages = {r["seq"]: r for r in records if r.get("type") == "message"}
    want = set()
    for code, seq in findings:
        if direction[seq] != "a2c":
            continue  # (the checker judges the agent)
        text = str(messages[seq].get("method") or "")
        req = finding_requirement(suite, Finding(code, text, seq, "a2c"))
        if req is not None:
            want.add((req, f"message #{seq}"))
    got = {(o.requirement, o.detail.split(":")[0]) for o in judge_traffic(records, suite, name)
           if not o.requirement.startswith(("SCHEMA", "V2-SCHEMA"))}
    assert got == want
    assert all(o.status == "fail" for o in judge_traffic(records, suite, name))


def test_the_checker_maps_what_the_corpus_breaks() -> None:
    # the corpus exercises the checker's mapping, not an empty one: on v1, a turn update after the
    # response, an update for an unknown session, an unknown tool call, a second answer, a
    # capability
    mapped = {finding_requirement(suite_of(c["version"]), Finding(f, "fs/write_text_file"))
              for c in EXPECTED.values() for f, _seq in c["findings"]}
    assert {"PROMPT-002", "PROMPT-003", "PROMPT-004", "RPC-010", "CAP-001"} <= mapped
