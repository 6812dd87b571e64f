"""FakeAgent scripts against FakeClient, through the kit's fixtures (the plugin is installed)."""

from __future__ import annotations

import asyncio

import pytest

from acplink import PermissionRule
from acplink import testing as kit
from acplink.testing import FakeAgent, FakeCommand, assert_tool_call, assert_turn, assert_updates_in_order

GUARD = 10.0  # hang guard only


async def test_a_scripted_turn_uses_every_client_service(acp_pair) -> None:
    agent = FakeAgent([[
        kit.think("planning"), kit.plan("read", "edit"), kit.say("Reading. "),
        kit.tool_call("Read notes.txt", kind="read", id="t1"), kit.read_file("notes.txt", line=2, limit=1),
        kit.tool_update("t1", status="completed"),
        kit.tool_call("Edit notes.txt", kind="edit", id="t2"), kit.permission("t2"), kit.write_file("notes.txt", "new"),
        kit.tool_call("Run ls", kind="execute", id="t3"), kit.permission("t3"), kit.run("ls", "-l"),
        kit.tool_update("t2", status="failed"), kit.sleep(0.01), kit.say("Done."), kit.stop("max_tokens"),
    ]])
    pair = await acp_pair(agent, files={"notes.txt": "one\ntwo\nthree\n"},
                          permissions=[PermissionRule(kind="edit", decision="allow")],
                          commands={"ls -l": FakeCommand("a.txt\n", 0)})
    turn = await pair.client.turn(pair.session, "go")

    assert_turn(turn, stop_reason="max_tokens", text="Reading. Done.")
    assert_updates_in_order(turn, ["agent_thought_chunk", "plan", "tool_call", "tool_call_update",
                                   "agent_message_chunk"])
    assert_tool_call(turn, title="Read notes.txt", kind="read", status="completed")
    assert_tool_call(pair.client, tool_call_id="t2", status="failed")
    assert agent.prompts == ["go"]
    assert agent.results == [("tool_call", "t1"), ("read_file", "two\n"), ("tool_call", "t2"),
                             ("permission", "allow"), ("tool_call", "t3"), ("permission", "reject"),
                             ("run", ("a.txt\n", 0))]
    assert pair.client.files == {"notes.txt": "new"}
    assert [m for m in (s.method for s in pair.client.seen) if m != "session/update"] == [
        "fs/read_text_file", "session/request_permission", "fs/write_text_file", "session/request_permission",
        "terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release"]
    assert pair.client.calls("terminal/create")[0]["args"] == ["-l"]


async def test_the_real_file_system_is_rooted_in_tmp_path(acp_pair, tmp_path) -> None:
    (tmp_path / "a.txt").write_text("hello")
    agent = FakeAgent([[kit.read_file("a.txt"), kit.write_file("b.txt", "written")], [kit.read_file("/etc/hostname")]])
    pair = await acp_pair(agent)
    assert pair.root == tmp_path
    assert_turn(await pair.client.turn(pair.session, "1"))
    assert agent.results == [("read_file", "hello")]
    assert (tmp_path / "b.txt").read_text() == "written"
    with pytest.raises(Exception, match="outside"):  # confined to the session's roots
        await pair.session.prompt("2")


async def test_errors_and_cancellation(acp_pair) -> None:
    raw = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "raw"}}
    agent = FakeAgent([[kit.update(raw), kit.wait_cancel()], [kit.fail("quota exceeded", code=-32001)]])
    pair = await acp_pair(agent)
    turn = pair.session.prompt("wait")
    async for update in turn:
        assert (update.session_update, update.content.text) == ("agent_message_chunk", "raw")
        await turn.cancel()
        break
    response = await asyncio.wait_for(turn.result(), GUARD)
    assert response.stop_reason == "cancelled"
    with pytest.raises(Exception, match="quota exceeded") as err:
        await pair.session.prompt("again")
    assert getattr(err.value, "code", None) == -32001


async def test_assertion_messages_show_expected_and_actual(acp_pair) -> None:
    pair = await acp_pair(FakeAgent([[kit.say("hello"), kit.tool_call("Read", kind="read", id="t1")]]))
    turn = await pair.client.turn(pair.session, "hi")
    with pytest.raises(AssertionError) as err:
        assert_turn(turn, stop_reason="cancelled", text="goodbye")
    assert "stop reason: expected 'cancelled', got 'end_turn'" in str(err.value)
    assert "-goodbye" in str(err.value) and "+hello" in str(err.value)
    with pytest.raises(AssertionError) as err:
        assert_updates_in_order(turn, ["tool_call", "agent_message_chunk"])
    assert "'agent_message_chunk', was not found" in str(err.value)
    assert "1. agent_message_chunk\n  2. tool_call" in str(err.value)
    with pytest.raises(AssertionError) as err:
        assert_tool_call(turn, title="Read", status="completed")
    assert "tool_call_id='t1', title='Read', kind='read', status='pending'" in str(err.value)


async def test_an_agent_that_dies_at_once_is_one_clear_error(acp_agent_process) -> None:
    import sys

    with pytest.raises(Exception, match="exited with code 3 before answering initialize") as err:
        await acp_agent_process([sys.executable, "-c", "import sys; print('broken', file=sys.stderr); sys.exit(3)"])
    assert str(err.value).startswith("the agent ") and "sys.exit(3)" in str(err.value)
    assert "Traceback" not in str(err.value)
