"""The client's one prompt turn runs a lifecycle described only as data: the toy version 99
(``toy99_client.py``: a receipt answers the prompt, a ``status`` ``done`` update ends the turn),
against a scripted raw-JSON agent speaking it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from toy99_client import SCRIPTED_AGENT, TOY99, ToyReceipt

from acplink import connect
from acplink.errors import ProtocolError
from acplink.protocol import register_protocol, unregister_protocol


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    register_protocol(TOY99)
    try:
        yield
    finally:
        unregister_protocol(TOY99.version)


def agent(mode: str) -> list[str]:
    return [sys.executable, "-c", SCRIPTED_AGENT, mode]


@pytest.mark.parametrize("mode", ["normal", "late"])
async def test_a_toy_99_turn_ends_at_its_done_status_with_its_stop_reason(tmp_path: Path, mode: str) -> None:
    async with connect(agent(mode), protocol=99) as client:
        assert client.protocol_version == 99 and client.connection.protocol is TOY99
        assert client.agent_info is not None and client.agent_info.name == "toy99"
        session = await client.new_session(tmp_path)
        turn = session.prompt("hi")
        items = [item async for item in turn]
        # the receipt first (also when it came after the done), then the updates up to the done
        assert isinstance(items[0], ToyReceipt) and items[0] is turn.receipt and turn.receipt.message_id == "t-hi"
        states = [(item.model_extra or {}).get("state") for item in items[1:]]
        assert states == ["busy", None, "done"]
        ended = await turn
        assert ended is items[-1] and turn.stop_reason == "max_tokens"
        assert await turn.text() == "toy: hi"
        # the conversation in acplink's state: the prompt recorded locally (no echo), the reply
        assert [(m.role, m.text) for m in session.state.messages] == [("user", "hi"), ("agent", "toy: hi")]
        second = session.prompt("again")  # (the session is free again: busy="refuse" lets it)
        await second
        assert second.stop_reason == "max_tokens" and await second.text() == "toy: again"


async def test_asking_for_99_an_agent_that_answers_otherwise_is_refused() -> None:
    with pytest.raises(ProtocolError, match="asked for ACP protocol version 99, the agent answered 1"):
        async with connect([sys.executable, "-c", "import sys, json\nfor l in sys.stdin:\n"
                            "    m = json.loads(l)\n    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': "
                            "{'protocolVersion': 1, 'agentCapabilities': {}}}), flush=True)"], protocol=99):
            pass
