"""The client's version choice at ``initialize``, sans-I/O (``acplink.protocol.initialize.Handshake``):
the request for each choice, and what each answer or error leads to."""

from __future__ import annotations

from typing import Any

import pytest

from acplink.errors import UsageError
from acplink.protocol import V1
from acplink.protocol.initialize import Agreed, Handshake, Refused, Retry, check_choice
from acplink.protocol.v2 import protocol as v2_protocol

INFO = {"name": "c", "version": "1"}
CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True, "elicitation": {"form": {}}}
V1_ANSWER = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "a", "version": "1"}}
V2_ANSWER = {"protocolVersion": 2, "info": {"name": "a", "version": "2"}, "capabilities": {}}
ECHO = {"protocolVersion": 2, "agentInfo": {"name": "a", "version": "1"}}


def hs(choice: Any, **kw: Any) -> Handshake:
    return Handshake(choice, info=INFO, capabilities=CAPS, **kw)


def test_the_request_of_each_choice() -> None:
    assert hs(1).request() == {"protocolVersion": 1, "clientCapabilities": CAPS, "clientInfo": INFO}
    assert hs(1, protocol_version=42).request()["protocolVersion"] == 42
    # v2's shape: what a v2 client offers (no fs, no terminal: elicitation only)
    assert hs(2).request() == {"protocolVersion": 2, "capabilities": {"elicitation": {"form": {}}}, "info": INFO}
    assert hs("auto").request() == {"protocolVersion": 2, "capabilities": {"elicitation": {"form": {}}},
                                    "info": INFO, "clientCapabilities": CAPS, "clientInfo": INFO}


@pytest.mark.parametrize(("choice", "answer", "version", "note"), [
    (1, V1_ANSWER, 1, False),
    (2, V2_ANSWER, 2, False),
    ("auto", V2_ANSWER, 2, False),
    ("auto", V1_ANSWER, 1, False),
    ("auto", ECHO, 1, True),  # a v1 agent echoing the version asked for
    (1, ECHO, 1, False),  # (a v1 request: read as v1's)
])
def test_answers_that_go_on(choice: Any, answer: dict[str, Any], version: int, note: bool) -> None:
    outcome = hs(choice).on_result(answer)
    assert isinstance(outcome, Agreed) and outcome.protocol.version == version
    assert (outcome.version or outcome.protocol.version) == version
    assert (outcome.note is not None and "echoes the version asked for" in outcome.note) == note
    assert outcome.protocol is (V1 if version == 1 else v2_protocol())


@pytest.mark.parametrize(("choice", "answer", "message"), [
    (2, V1_ANSWER, "asked for ACP protocol version 2, the agent answered 1 (protocol \"auto\" continues on v1)"),
    (2, ECHO, "answered 2 with a v1 initialize response (it echoes the version asked for"),
    # (a version neither asked for nor v1, in a body that is not v1's alone: not an echo)
    ("auto", {**V2_ANSWER, "protocolVersion": 7}, "asked for ACP protocol version 2, the agent answered 7"),
    (1, {"protocolVersion": "x"}, "invalid initialize response"),
])
def test_answers_that_are_refused(choice: Any, answer: dict[str, Any], message: str) -> None:
    outcome = hs(choice).on_result(answer)
    assert isinstance(outcome, Refused) and message in outcome.message


def test_auto_asks_again_for_v1_after_an_error_unless_the_agent_says_it_has_no_v1() -> None:
    auto = hs("auto")
    retry = auto.on_error(-32602, None)
    assert isinstance(retry, Retry) and retry.body == hs(1).request()
    outcome = auto.on_result(V1_ANSWER)  # (the answer to the second request: a v1 one)
    assert isinstance(outcome, Agreed) and outcome.protocol is V1
    assert auto.on_error(-32602, None) is None  # (once)
    assert hs("auto").on_error(-32022, {"supported": [1, 2]}) is not None
    assert hs("auto").on_error(-32022, {"supported": [3]}) is None
    assert hs(2).on_error(-32022, {"supported": [1]}) is None  # (2 asked for 2: the error stands)


def test_the_choices() -> None:
    assert [check_choice(c) for c in (1, 2, "auto")] == [1, 2, "auto"]
    for bad in (3, "2", True, None):
        with pytest.raises(UsageError, match='protocol must be one of 1, 2 or "auto"'):
            check_choice(bad)
