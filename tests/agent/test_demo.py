"""The built-in demo agent (``python -m acplink.demo``): every feature, through the client
API, over a real pipe. Sessions are stored under a temporary ``ACPLINK_DEMO_STORE``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acplink import InvalidParams, PermissionPolicy, ResourceNotFound, Session, connect, schema
from acplink.demo.agent import COMMANDS

DEMO = [sys.executable, "-m", "acplink.demo"]
LEGACY_DEMO = [sys.executable, "-m", "acplink", "demo-agent", "--legacy-models"]

Demo = Callable[..., connect]


@pytest.fixture
def demo(tmp_path: Path) -> Demo:
    """``demo(**client_kw)`` → ``connect(...)`` to a fresh demo agent process (shared store)."""
    store = tmp_path / "store"

    def opener(*, legacy_models: bool = False, **kw: Any) -> connect:
        command = LEGACY_DEMO if legacy_models else DEMO
        return connect(command, env={"ACPLINK_DEMO_STORE": str(store)}, **kw)

    return opener


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def reply(session: Session) -> str:
    message = session.state.last_agent_message
    assert message is not None
    return message.text


# -- conversation -----------------------------------------------------------------------------------


async def test_echo_streams_word_by_word(demo: Demo, work: Path) -> None:
    async with demo() as client:
        assert client.agent_info is not None and client.agent_info.name == "acplink-demo"
        session = await client.new_session(cwd=work)
        turn = session.prompt("hello there world")
        updates = [u async for u in turn]
        assert turn.stop_reason == "end_turn"
        chunks = [u for u in updates if isinstance(u, schema.AgentMessageChunk)]
        assert [c.content.text for c in chunks] == ["You ", "said: ", "hello ", "there ", "world"]
        assert len({c.message_id for c in chunks}) == 1  # one message, streamed
        state = session.state
        assert [m.role for m in state.messages] == ["user", "agent"]
        assert reply(session) == "You said: hello there world"
        # the first prompt names the session (session_info_update) and reports usage
        assert state.title == "hello there world"
        assert state.usage is not None and state.usage.size == 100_000 and state.usage.used > 0
        # the available commands were announced after session/new
        assert [c.name for c in state.available_commands] == [n for n, _, _ in COMMANDS]
        # a second turn is a second message
        await session.prompt("again")
        assert [m.role for m in state.messages] == ["user", "agent", "user", "agent"]
        assert reply(session) == "You said: again"


async def test_help_as_a_slash_command(demo: Demo, work: Path) -> None:
    async with demo() as client:
        session = await client.new_session(cwd=work)
        await session.prompt("/help")
        text = reply(session)
        assert text.startswith("I am the acplink demo agent.")
        for name, description, _ in COMMANDS:
            assert f"  {name} " in text and description in text


async def test_think_streams_thoughts(demo: Demo, work: Path) -> None:
    async with demo() as client:
        session = await client.new_session(cwd=work)
        turn = session.prompt("think about tea")
        kinds = [u.session_update async for u in turn]
        assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
        assert session.state.thoughts[-1].text == "Let me think about 'about tea'... "
        assert reply(session) == "I thought about it. about tea"


async def test_plan_updates(demo: Demo, work: Path) -> None:
    async with demo() as client:
        session = await client.new_session(cwd=work)
        turn = session.prompt("plan design; build; ship")
        plans = [[e.status for e in u.entries] async for u in turn if isinstance(u, schema.Plan)]
        assert plans[0] == ["pending"] * 3
        assert plans[1] == ["in_progress", "pending", "pending"]
        assert plans[-1] == ["completed"] * 3
        plan = session.state.plan
        assert plan is not None and [e.content for e in plan.entries] == ["design", "build", "ship"]
        assert plan.completed == 3
        assert reply(session).endswith("All steps done.")


async def test_title(demo: Demo, work: Path) -> None:
    async with demo() as client:
        session = await client.new_session(cwd=work)
        updates = [u async for u in session.prompt("title My project")]
        assert any(isinstance(u, schema.SessionInfoUpdate) and u.title == "My project" for u in updates)
        assert session.state.title == "My project"
        assert reply(session) == "Title set to 'My project'."


async def test_slow_and_cancel(demo: Demo, work: Path) -> None:
    async with demo() as client:
        session = await client.new_session(cwd=work)
        turn = session.prompt("slow 200")
        seen = 0
        async for update in turn:
            if isinstance(update, schema.AgentMessageChunk):
                seen += 1
                if seen == 2:
                    await turn.cancel()
        assert turn.stop_reason == "cancelled"
        assert 2 <= seen < 200
        # the session is still usable after a cancelled turn
        assert (await session.prompt("slow 2")).stop_reason == "end_turn"
        assert reply(session) == "chunk 1/2 chunk 2/2 "


# -- files, terminals and permission ------------------------------------------------------------------


async def test_read(demo: Demo, work: Path) -> None:
    (work / "notes.txt").write_text("one\ntwo\n")
    async with demo() as client:
        session = await client.new_session(cwd=work)
        await session.prompt("read notes.txt")
        (call,) = session.state.tool_calls.values()
        assert (call.kind, call.status, call.title) == ("read", "completed", "Read notes.txt")
        assert [loc.path for loc in call.locations] == [str(work / "notes.txt")]
        assert call.content[0].content.text == "one\ntwo\n"  # type: ignore[union-attr]
        assert reply(session) == "notes.txt has 2 lines and 8 characters."
        await session.prompt("read missing.txt")
        failed = list(session.state.tool_calls.values())[-1]
        assert failed.status == "failed"
        assert reply(session).startswith("I could not read missing.txt")


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_write_with_diff_and_permission(demo: Demo, work: Path, decision: str) -> None:
    (work / "a.txt").write_text("old\n")
    asked: list[schema.RequestPermissionRequest] = []

    async def ask(request: schema.RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow" if decision == "allow" else "reject"

    async with demo(permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=work)
        await session.prompt("write a.txt new text\\nline two")
    (call,) = session.state.tool_calls.values()
    diff = call.content[0]
    assert isinstance(diff, schema.Diff)
    assert (diff.path, diff.old_text, diff.new_text) == (str(work / "a.txt"), "old\n", "new text\nline two\n")
    assert len(asked) == 1 and asked[0].tool_call.tool_call_id == call.tool_call_id
    assert [o.kind for o in asked[0].options] == ["allow_once", "allow_always", "reject_once"]
    if decision == "allow":
        assert (work / "a.txt").read_text() == "new text\nline two\n"
        assert call.status == "completed"
        assert reply(session) == "Wrote 18 characters to a.txt."
    else:
        assert (work / "a.txt").read_text() == "old\n"
        assert call.status == "failed"
        assert reply(session) == "Permission denied: I did not write a.txt."


async def test_write_outside_the_session_is_refused(demo: Demo, work: Path, tmp_path: Path) -> None:
    async with demo(permission=PermissionPolicy.allow_all()) as client:
        session = await client.new_session(cwd=work)
        await session.prompt(f"write {tmp_path / 'outside.txt'} nope")
    assert not (tmp_path / "outside.txt").exists()
    assert list(session.state.tool_calls.values())[-1].status == "failed"
    assert reply(session).startswith("I could not write")


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_run_in_a_terminal(demo: Demo, work: Path, decision: str) -> None:
    policy = PermissionPolicy.allow_all() if decision == "allow" else PermissionPolicy.deny_all()
    async with demo(permission=policy) as client:
        session = await client.new_session(cwd=work)
        await session.prompt("run sh -c 'echo hi; touch ran.txt'")
        if decision == "deny":  # deny_all confines: no terminals at all
            assert client.terminals is None
        else:
            assert client.terminals is not None and client.terminals.terminal_ids == []  # released
    (call,) = session.state.tool_calls.values()
    assert call.kind == "execute"
    assert call.raw_input == {"command": ["sh", "-c", "echo hi; touch ran.txt"]}
    if decision == "allow":
        assert call.status == "completed"
        assert isinstance(call.content[0], schema.Terminal)
        assert call.raw_output == {"output": "hi\n", "truncated": False}
        assert (work / "ran.txt").exists()
        # the output is in the terminal the tool call shows, not repeated in the reply
        assert reply(session) == "`sh -c 'echo hi; touch ran.txt'` finished with exit code 0 (1 line of output)."
    else:
        assert call.status == "failed"
        assert not (work / "ran.txt").exists()
        assert reply(session) == "Permission denied: I did not run it."


async def test_run_failing_command(demo: Demo, work: Path) -> None:
    async with demo(permission=PermissionPolicy.allow_all()) as client:
        session = await client.new_session(cwd=work)
        await session.prompt("run sh -c 'exit 3'")
    (call,) = session.state.tool_calls.values()
    assert call.status == "failed"
    assert "finished with exit code 3" in reply(session)


# -- elicitation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["accept", "decline", None])
async def test_ask_elicitation(demo: Demo, work: Path, action: str | None) -> None:
    questions: list[Any] = []

    async def elicitation(params: Any) -> Any:
        questions.append(params)
        if action == "accept":
            return {"action": "accept", "content": {"colour": "blue"}}
        return {"action": action}

    kw = {"elicitation": elicitation} if action else {}
    async with demo(**kw) as client:
        session = await client.new_session(cwd=work)
        await session.prompt("ask")
    if action is None:
        assert reply(session) == "Your client does not support elicitation, so I cannot ask."
        return
    (question,) = questions
    assert question.message == "What is your favourite colour?"
    assert question.requested_schema.required == ["colour"] if hasattr(question.requested_schema, "required") \
        else question.requested_schema["required"] == ["colour"]
    assert reply(session) == ("Nice, blue it is." if action == "accept" else "You chose not to answer (decline).")


# -- modes, config options, models --------------------------------------------------------------------


async def test_modes(demo: Demo, work: Path) -> None:
    # (a denying policy that does not confine: deny_all() would serve no write at all)
    async with demo(permission=PermissionPolicy(default="deny", remember=False)) as client:
        session = await client.new_session(cwd=work)
        state = session.state
        assert [m.id for m in state.available_modes] == ["ask", "auto"]
        assert state.current_mode_id == "ask"
        await session.prompt("write x.txt denied")
        assert not (work / "x.txt").exists()
        # auto mode: no permission request (the deny-all policy is never consulted)
        await session.set_mode("auto")
        assert state.current_mode_id == "auto"
        await session.prompt("write x.txt written")
        assert (work / "x.txt").read_text() == "written\n"
        await session.set_mode("ask")
        await session.prompt("write x.txt denied again")
        assert (work / "x.txt").read_text() == "written\n"
        with pytest.raises(InvalidParams):
            await session.set_mode("yolo")


async def test_allow_always_is_not_a_switch_to_auto(demo: Demo, work: Path) -> None:
    """"Always allow" is remembered by the client for that file; the session stays in "ask"
    (it used to switch the whole session to auto mode)."""
    asked: list[str] = []

    async def ask(request: schema.RequestPermissionRequest) -> str:
        asked.append(request.tool_call.title or "")
        return "allow_always"

    async with demo(permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=work)
        updates = [u async for u in session.prompt("write y.txt yes")]
        assert not any(isinstance(u, schema.CurrentModeUpdate) for u in updates)
        assert session.state.current_mode_id == "ask"
        await session.prompt("write y.txt again")  # the same file: remembered by the client
        await session.prompt("write z.txt other")  # another file: asked
        assert asked == ["Write y.txt", "Write z.txt"]
        assert (work / "y.txt").read_text() == "again\n" and (work / "z.txt").read_text() == "other\n"


async def test_config_option_style(demo: Demo, work: Path) -> None:
    async with demo() as client:
        session = await client.new_session(cwd=work)
        assert [o.id for o in session.state.config_options] == ["model", "style"]
        style = session.state.config_options[1]
        assert (style.id, style.current_value) == ("style", "plain")
        await session.prompt("quiet please")
        assert reply(session) == "You said: quiet please"
        resp = await session.set_config_option("style", "shouty")
        assert [o.current_value for o in resp.config_options] == ["demo-small", "shouty"]
        assert session.state.config_options[1].current_value == "shouty"
        await session.prompt("loud please")
        assert reply(session) == "YOU SAID: LOUD PLEASE"
        with pytest.raises(InvalidParams):
            await session.set_config_option("style", "whisper")
        with pytest.raises(InvalidParams):
            await session.set_config_option("colour", "red")


async def test_legacy_model_selector(demo: Demo, work: Path) -> None:
    async with demo(legacy_models=True) as client:
        session = await client.new_session(cwd=work)
        state = session.state
        assert [m.model_id for m in state.available_models] == ["demo-small", "demo-large"]
        assert state.current_model_id == "demo-small"
        await session.set_model("demo-large")
        assert state.current_model_id == "demo-large"
        with pytest.raises(InvalidParams):
            await session.set_model("gpt-99")


# -- authentication -----------------------------------------------------------------------------------


async def test_authenticate(demo: Demo) -> None:
    async with demo() as client:
        assert [m.id for m in client.auth_methods] == ["demo"]
        await client.authenticate("demo")
        with pytest.raises(InvalidParams) as info:
            await client.authenticate("github")
        assert info.value.code == -32602
        assert "unknown auth method 'github'" in info.value.message
        await client.authenticate("demo")  # the connection still works


# -- stored sessions ------------------------------------------------------------------------------------


async def test_session_lifecycle(demo: Demo, work: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with demo() as client:
        for cap in ("loadSession", "sessionCapabilities.list", "sessionCapabilities.resume",
                    "sessionCapabilities.fork", "sessionCapabilities.close", "sessionCapabilities.delete"):
            assert client.supports(cap), cap
        first = await client.new_session(cwd=work)
        await client.new_session(cwd=elsewhere)
        await first.prompt("remember the milk")
        await first.prompt("title Shopping")
        sid = first.session_id
        listed = {i.session_id: i for i in await client.list_sessions()}
        assert len(listed) == 2
        assert listed[sid].title == "Shopping" and listed[sid].cwd == str(work)
        assert [i.session_id for i in await client.list_sessions(cwd=work)] == [sid]
        await first.close()
        assert sid not in client.sessions

    # a new agent process, the same store
    async with demo() as client:
        loaded = await client.load_session(sid, cwd=work)
        # the history was replayed before the load response
        assert [(m.role, m.text) for m in loaded.state.messages] == [
            ("user", "remember the milk"), ("agent", "You said: remember the milk"),
            ("user", "title Shopping"), ("agent", "Title set to 'Shopping'.")]
        assert loaded.state.current_mode_id == "ask"
        await loaded.prompt("more")
        assert reply(loaded) == "You said: more"

    async with demo() as client:
        resumed = await client.resume_session(sid, cwd=work)
        assert resumed.state.messages == []  # resume does not replay
        await resumed.prompt("resumed")
        assert reply(resumed) == "You said: resumed"
        fork = await client.fork_session(sid, cwd=work)
        assert fork.session_id != sid
        await fork.prompt("in the fork")
        titles = {i.session_id: i.title for i in await client.list_sessions(cwd=work)}
        assert titles == {sid: "Shopping", fork.session_id: "fork of Shopping"}
        await client.conn.session_delete(session_id=sid)
        assert [i.session_id for i in await client.list_sessions(cwd=work)] == [fork.session_id]
        with pytest.raises(ResourceNotFound):
            await client.load_session(sid, cwd=work)
        await client.conn.session_delete(session_id=sid)  # deleting again is not an error
