"""The v2 client: ``connect(protocol=...)`` version selection and v2 prompt turns, against a
scripted raw-JSON agent (``v2_script_agent.py``: the edges) and the official TypeScript SDK's
agents (``tests/interop/js``: a v2 agent, an AgentProtocolRouter agent with v1 + v2, the
v1-only agent)."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import PermissionPolicy, connect
from acplink.client import Client, PromptTurn
from acplink.errors import (
    CapabilityError,
    MethodNotFound,
    ProtocolError,
    RequestError,
    SchemaValidationError,
    UsageError,
)
from acplink.protocol.v2.client_state import V2SessionState
from acplink.schema import v2 as m
from acplink.transports.memory import memory_pair

HERE = Path(__file__).resolve().parent
JS = HERE.parent / "interop" / "js"
NODE = shutil.which("node")


def script(mode: str) -> list[str]:
    return [sys.executable, str(HERE / "v2_script_agent.py"), mode]


def ts(name: str) -> list[str]:
    if NODE is None or not (JS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        pytest.skip("node or the official TypeScript SDK (tests/interop/js/node_modules) is missing")
    return [NODE, str(JS / name)]


async def test_v2_turn_receipt_first_then_updates_until_idle(tmp_path: Path) -> None:
    async with connect(script("normal"), protocol=2) as client:
        assert client.protocol_version == 2 and client.connection.protocol.version == 2
        assert client.agent_info is not None and client.agent_info.name == "script-v2"
        assert client.supports("session.delete") and not client.supports("session.fork")
        session = await client.new_session(tmp_path)
        assert isinstance(session.native_state, V2SessionState)
        turn = session.prompt("hello")
        assert isinstance(turn, PromptTurn) and turn.receipt is None  # (until it comes)
        items = [item async for item in turn]
        assert isinstance(items[0], m.PromptResponse) and items[0].message_id == "u1" == turn.message_id
        kinds = [getattr(i, "session_update", None) or i.model_extra.get("sessionUpdate") for i in items[1:]]
        assert kinds == ["user_message", "state_update", "agent_message_chunk", "state_update"]
        assert items[-1].state == "idle" and turn.stop_reason == "end_turn"
        assert (await turn).stop_reason == "end_turn"
        assert await turn.text() == "hi"
        st = session.v2_state
        assert (st.state, st.stop_reason, st.agent_text) == ("idle", "end_turn", "hi")
        assert [(msg.role, msg.text) for msg in session.state.messages] == [("user", "hello"), ("agent", "hi")]
        await session.close()
        assert session.closed and session.session_id not in client.sessions


async def test_v2_turn_whose_receipt_comes_after_its_idle(tmp_path: Path) -> None:
    async with connect(script("late-receipt"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        turn = session.prompt("hello")
        items = [item async for item in turn]
        assert isinstance(items[0], m.PromptResponse)
        assert turn.stop_reason == "end_turn" and await turn.text() == "hi"


async def test_v2_custom_stop_reason_is_preserved(tmp_path: Path) -> None:
    async with connect(script("custom-stop"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        idle = await session.prompt("hello")
        assert idle.stop_reason == "_acme_paused" and session.v2_state.stop_reason == "_acme_paused"


async def test_v2_malformed_stop_reason_fails_the_turn_naming_the_path(tmp_path: Path) -> None:
    async with connect(script("bad-stop"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        with pytest.raises(SchemaValidationError) as info:
            await session.prompt("hello")
        assert "stopReason" in str(info.value) or "update" in str(info.value)
        assert session._turn is None or session._turn.done


async def test_v2_idle_without_stop_reason_ends_the_turn(tmp_path: Path) -> None:
    async with connect(script("no-stop"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        turn = session.prompt("hello")
        await turn
        assert turn.stop_reason is None and session.v2_state.state == "idle"


async def test_v2_prompt_refused_by_the_agent(tmp_path: Path) -> None:
    async with connect(script("error-response"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        with pytest.raises(RequestError) as info:
            await session.prompt("hello")
        assert info.value.code == -32602
        with pytest.raises(UsageError):
            session.prompt([])  # an empty prompt is refused locally


@pytest.mark.parametrize(("policy", "chosen"), [(PermissionPolicy.allow_all(), "yes"),
                                                (PermissionPolicy.deny_all(), "no")])
async def test_v2_permission_request_goes_to_the_policy(tmp_path: Path, policy: PermissionPolicy,
                                                        chosen: str) -> None:
    async with connect(script("permission"), protocol=2, permission=policy) as client:
        session = await client.new_session(tmp_path)
        turn = session.prompt("hello")
        await turn
        assert json.loads(await turn.text()) == {"outcome": "selected", "optionId": chosen}


async def test_v2_has_no_fs_client_methods(tmp_path: Path) -> None:
    async with connect(script("fs"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        turn = session.prompt("hello")
        await turn
        assert await turn.text() == str(MethodNotFound.code)


async def test_protocol_2_refuses_an_agent_answering_1() -> None:
    with pytest.raises(ProtocolError, match="answered 1"):
        async with connect(script("v1"), protocol=2):
            pass


async def test_auto_retries_v1_when_the_agent_refuses_2() -> None:
    async with connect(script("refuse"), protocol="auto") as client:
        assert client.protocol_version == 1 and client.connection.protocol.version == 1
        assert client.agent_info is not None and client.agent_info.name == "script-v1"
    with pytest.raises(RequestError) as info:
        async with connect(script("refuse"), protocol=2):
            pass
    assert info.value.code == -32022


async def test_auto_retries_v1_when_the_agent_refuses_2_with_any_error() -> None:
    # a v1 agent may refuse the unknown version in its own way (-32602 here): v1 would work
    async with connect(script("refuse-params"), protocol="auto") as client:
        assert client.protocol_version == 1 and client.agent_info is not None
        assert client.agent_info.name == "script-v1"
    with pytest.raises(RequestError) as info:  # unless the agent says it does not speak 1
        async with connect(script("refuse-all"), protocol="auto"):
            pass
    assert info.value.code == -32022


async def test_auto_goes_on_with_v1_when_the_agent_echoes_2_with_a_v1_answer(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="acplink.client")
    async with connect(script("echo"), protocol="auto") as client:
        assert client.protocol_version == 1 and client.connection.protocol.version == 1
        assert client.agent_info is not None and client.agent_info.name == "script-echo"
        assert client.connection.protocol.version == 1
        session = await client.new_session(tmp_path)
        assert session.native_state is None
    said = [r.getMessage() for r in caplog.records if "echoes the version" in r.getMessage()]
    assert len(said) == 1 and "continuing on v1" in said[0]
    with pytest.raises(ProtocolError, match="answered 2 with a v1 initialize response"):
        async with connect(script("echo"), protocol=2):
            pass


async def test_the_default_is_v1() -> None:
    async with connect(script("echo")) as client:  # (asks for 1: the echo is 1)
        assert client.protocol == 1 and client.protocol_version == 1


PY_ECHO_AGENT = [str(HERE.parents[1] / ".peers-venv" / "bin" / "python"),
                 str(HERE.parent / "interop" / "peers" / "py_echo_agent.py")]


@pytest.mark.skipif(not Path(PY_ECHO_AGENT[0]).exists(), reason="official Python SDK venv (.peers-venv) missing")
@pytest.mark.parametrize("shape", [[], ["--with-info"]], ids=["bare", "with-info"])
async def test_auto_against_the_official_python_sdks_echo_agent(tmp_path: Path, shape: list[str]) -> None:
    async with connect([*PY_ECHO_AGENT, *shape], protocol="auto") as client:
        assert client.protocol_version == 1 and client.connection.protocol.version == 1
        assert await _hello(client, tmp_path) == "hello"


async def test_protocol_argument_is_checked() -> None:
    ours, theirs = memory_pair()
    with pytest.raises(UsageError):
        Client(ours, protocol=3)  # type: ignore[arg-type]
    await ours.aclose()
    await theirs.aclose()


# -- against the official TypeScript SDK's agents ------------------------------------------------


async def _hello(client: Client, tmp_path: Path) -> str:
    session = await client.new_session(tmp_path)
    turn = session.prompt("hello")
    await turn
    assert turn.stop_reason == "end_turn"
    return await turn.text()


@pytest.mark.parametrize(("agent", "protocol", "version", "reply"), [
    ("v2_agent.mjs", "auto", 2, "Hello, world"),
    ("v2_agent.mjs", 2, 2, "Hello, world"),
    ("v2_router_agent.mjs", "auto", 2, "Hello, world"),
    ("v2_router_agent.mjs", 1, 1, "v1:hello"),
    ("agent.mjs", "auto", 1, "Hello, world"),
])
async def test_ts_agents(tmp_path: Path, agent: str, protocol: Any, version: int, reply: str) -> None:
    async with connect(ts(agent), protocol=protocol) as client:
        assert client.protocol_version == version
        assert await _hello(client, tmp_path) == reply


async def test_ts_v2_agent_turns(tmp_path: Path) -> None:
    async with connect(ts("v2_agent.mjs"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        assert isinstance(session.native_state, V2SessionState)
        await session.prompt("tools")
        call = session.v2_state.tool_calls["t1"]
        assert (call.title, call.status, len(call.content)) == ("Read file", "completed", 1)
        assert session.v2_state.plan is not None and session.v2_state.usage.used == 10
        fail = await session.prompt("fail")
        assert fail.stop_reason == "error" and fail.error.message == "peer failure"
        # cancel: the running turn ends idle "cancelled"
        turn = session.prompt("wait")
        async for item in turn:
            if isinstance(item, m.AgentMessageChunk):
                await turn.cancel()
        assert turn.stop_reason == "cancelled"
        await session.close()


async def test_auto_goes_on_with_v1_against_a_v1_only_app(tmp_path: Path) -> None:
    # the v2 initialize reaches a v1-only AgentApp: downgraded as the TS router does (v2's info
    # as v1's clientInfo, no fs), answered with protocolVersion 1, and the client goes on with v1
    agent = [sys.executable, str(HERE / "v1_only_agent.py")]
    async with connect(agent, protocol="auto") as client:
        assert client.protocol_version == 1 and client.connection.protocol.version == 1
        assert client.agent_info is not None and client.agent_info.name == "v1-only"
        assert await _hello(client, tmp_path) == "client=acplink fs=True"  # (its v1 fields kept)


async def test_v2_calls_are_checked_against_the_agents_capabilities_as_v1_calls_are(tmp_path: Path) -> None:
    # every call of a v2 session goes through the connection's one typed path: a method the
    # agent did not advertise fails before anything is sent, as it does on v1
    errors: dict[int, CapabilityError] = {}
    for protocol, mode in ((2, "normal"), (1, "v1")):
        async with connect(script(mode), protocol=protocol) as client:
            session = await client.new_session(tmp_path)
            with pytest.raises(CapabilityError) as info:
                await client.fork_session(session.session_id, tmp_path)
            errors[protocol] = info.value
            with pytest.raises(CapabilityError):  # (the low-level call too)
                await client.connection.call("session/fork", {"sessionId": session.session_id, "cwd": str(tmp_path)})
            assert client.supports("session.delete") == (protocol == 2)
            if protocol == 2:
                await client.delete_session(session.session_id)  # (advertised: it goes out and is answered)
                assert session.session_id not in client.sessions
    assert errors[2].capability == "agent:session.fork"
    assert errors[1].capability == "agent:sessionCapabilities.fork"
    for error in errors.values():
        assert "session/fork needs the agent capability" in str(error) and "did not advertise" in str(error)


async def test_v2_session_calls_v1_lacks_and_v1_calls_v2_lacks(tmp_path: Path) -> None:
    async with connect(script("normal"), protocol=2) as client:
        session = await client.new_session(tmp_path)
        with pytest.raises(UsageError, match="ACP v2 has no session modes: they are config options"):
            await session.set_mode("code")
    async with connect(script("v1"), protocol=1) as client:
        session = await client.new_session(tmp_path)
        with pytest.raises(UsageError, match="ACP v1 has no 'cancel_tool_call' method"):
            await session.cancel_tool_call("t1")
        with pytest.raises(UsageError, match="cannot replay"):
            await client.resume_session(session.session_id, tmp_path, replay=True)
