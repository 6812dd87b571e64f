"""The toy version 99 (``toy99.py``: defined only in the tests, with a prompt lifecycle neither
v1 nor v2 has) served by acplink's agent AND driven by acplink's client, end to end: in memory
and over a real subprocess pipe. Nothing in acplink knows version 99: both sides run it from
the protocol object alone."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toy99 import TOY99, ToyReceipt, make_app, registered

from acplink import UsageError, connect

TOY = str(Path(__file__).with_name("toy99.py"))


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    with registered():
        yield


def _agent(where: str) -> Any:
    return make_app() if where == "memory" else [sys.executable, TOY]


@pytest.mark.parametrize("where", ["memory", "pipe"])
async def test_acplink_serves_and_drives_the_toy_version(tmp_path: Path, where: str) -> None:
    async with connect(_agent(where), protocol=99) as client:
        assert client.protocol_version == 99 and client.connection.protocol is TOY99
        session = await client.new_session(tmp_path)
        turn = session.prompt("hello")
        items = [item async for item in turn]
        # the receipt first, then the toy's own states: busy, the reply, done (no echo)
        assert isinstance(items[0], ToyReceipt) and items[0] is turn.receipt
        kinds = [(getattr(u, "session_update", None) or (u.model_extra or {}).get("sessionUpdate"),
                  getattr(u, "state", None) or (u.model_extra or {}).get("state")) for u in items[1:]]
        assert kinds[0] == ("status", "busy") and kinds[-1] == ("status", "done"), kinds
        assert ("agent_message_chunk", None) in kinds
        done = await turn
        assert TOY99.turns.end_of(done) is not None
        assert TOY99.turns.end_of(done).stop_reason == "end_turn"  # type: ignore[union-attr]
        assert await session.prompt("again").text() == "v99 echo again"
        # the same app still serves v1 to a v1 client
    async with connect(_agent(where)) as v1:
        assert v1.protocol_version == 1
        s1 = await v1.new_session(tmp_path)
        assert await s1.prompt("hi").text() == "v1 echo hi"


async def test_a_second_prompt_during_a_toy_turn_is_refused(tmp_path: Path) -> None:
    # (busy == "refuse": the client refuses it before sending, as on v1)
    async with connect(make_app(), protocol=99) as client:
        session = await client.new_session(tmp_path)
        slow = session.prompt("slow")
        await slow.__anext__()  # the receipt: the turn runs
        with pytest.raises(UsageError, match="already has a prompt turn running"):
            session.prompt("another")
        await session.cancel()
        done = await slow
        assert TOY99.turns.end_of(done).stop_reason == "cancelled"  # type: ignore[union-attr]
