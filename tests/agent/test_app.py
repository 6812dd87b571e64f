"""The high-level agent API (AgentApp / Agent / PromptContext), in memory and over a real pipe."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import build_app

from acplink import (
    PROTOCOL_VERSION,
    Agent,
    AgentApp,
    AuthRequired,
    Client,
    ClientSideConnection,
    Context,
    InternalError,
    InvalidParams,
    PermissionPolicy,
    PromptContext,
    RequestError,
    Router,
    SubprocessTransport,
    TerminalHandle,
    TerminalHandler,
    Transport,
    UsageError,
    connect,
    memory_pair,
    schema,
)

AGENT_CMD = [sys.executable, str(Path(__file__).with_name("agents.py"))]

Opener = Callable[..., connect]


def _opener(where: str) -> Opener:
    def opener(**kw: Any) -> connect:
        return connect(build_app() if where == "memory" else AGENT_CMD, **kw)

    return opener


@pytest.fixture(params=["memory", "pipe"])
def open_agent(request: pytest.FixtureRequest) -> Opener:
    """``open_agent(**client_kw)`` → a ``connect(...)`` to the test agent, in memory or spawned."""
    return _opener(request.param)


@pytest.fixture
def in_memory() -> Opener:
    """Like ``open_agent``, in memory only (for what does not depend on the transport)."""
    return _opener("memory")


# -- registration ------------------------------------------------------------------------------------


def test_registering_twice_is_a_usage_error() -> None:
    app = AgentApp()

    @app.prompt
    async def prompt(ctx: PromptContext) -> None: ...

    with pytest.raises(UsageError, match="already registered"):
        @app.prompt
        async def again(ctx: PromptContext) -> None: ...

    @app.ext_request("_x/y")
    async def ext(ctx: Context[Any]) -> None: ...

    with pytest.raises(UsageError, match="already registered"):
        app.ext_request("_x/y")(ext)


def test_subclass_hook_then_decorator_is_a_usage_error() -> None:
    class Echo(Agent):
        async def prompt(self, ctx: PromptContext) -> None:
            await ctx.send_text(ctx.text)

    app = Echo()
    assert "prompt" in app.handlers
    with pytest.raises(UsageError, match="already registered"):
        @app.on("prompt")
        async def prompt(ctx: PromptContext) -> None: ...


def test_unknown_hook_and_bad_handlers_are_usage_errors() -> None:
    app = AgentApp()
    with pytest.raises(UsageError, match="unknown agent hook 'promt'"):
        app.on("promt")
    with pytest.raises(AttributeError):
        app.promt  # noqa: B018  (not a hook: no decorator)
    with pytest.raises(UsageError, match="async"):
        @app.prompt
        def sync_prompt(ctx: PromptContext) -> None: ...
    with pytest.raises(UsageError, match="must start with '_'"):
        app.ext_request("acme/thing")


# -- capabilities ------------------------------------------------------------------------------------


async def test_capabilities_follow_registered_hooks() -> None:
    bare = AgentApp("bare")

    @bare.prompt
    async def prompt(ctx: PromptContext) -> None: ...

    async with connect(bare) as client:
        caps = client.agent_capabilities
        assert caps is not None and caps.load_session is False
        assert not client.supports("sessionCapabilities.list")
        assert not client.supports("loadSession")

    full = AgentApp("full")
    full.on("prompt")(prompt)

    @full.list_sessions
    async def list_sessions(ctx: Context[schema.ListSessionsRequest]) -> schema.ListSessionsResponse:
        return schema.ListSessionsResponse(sessions=[])

    @full.load_session
    async def load_session(ctx: Context[schema.LoadSessionRequest]) -> schema.LoadSessionResponse:
        return schema.LoadSessionResponse()

    @full.close_session
    async def close_session(ctx: Context[schema.CloseSessionRequest]) -> schema.CloseSessionResponse:
        return schema.CloseSessionResponse()

    async with connect(full) as client:
        caps = client.agent_capabilities
        assert caps is not None and caps.load_session is True
        assert client.supports("loadSession")
        assert client.supports("sessionCapabilities.list")
        assert client.supports("sessionCapabilities.close")
        assert not client.supports("sessionCapabilities.fork")
        assert await client.list_sessions() == []


async def test_capabilities_over_a_pipe(open_agent: Opener) -> None:
    async with open_agent() as client:
        assert client.agent_info is not None
        assert (client.agent_info.name, client.agent_info.version) == ("test-agent", "9.9.9")
        assert client.agent_capabilities is not None
        assert client.agent_capabilities.load_session is False
        assert not client.supports("sessionCapabilities.list")


async def test_version_negotiation(open_agent: Opener) -> None:
    # the client asks for a version the agent does not speak: the agent answers with its own
    async with open_agent(protocol_version=99) as client:
        assert client.conn.protocol_version == PROTOCOL_VERSION == 1
        session = await client.new_session()
        assert (await session.prompt("hello")).stop_reason == "end_turn"


# -- errors ------------------------------------------------------------------------------------------


async def test_prompt_handler_returning_the_wrong_type(open_agent: Opener, tmp_path: Path) -> None:
    async with open_agent() as client:
        session = await client.new_session(cwd=tmp_path)
        with pytest.raises(InternalError) as info:
            await session.prompt("wrong-type")
        assert info.value.code == -32603
        # the connection and the session still work
        assert (await session.prompt("hello")).stop_reason == "end_turn"
        assert session.state.last_agent_message is not None
        assert session.state.last_agent_message.text == "hello"


async def test_new_session_handler_returning_the_wrong_type(in_memory: Opener, tmp_path: Path) -> None:
    (tmp_path / "wrong-type").mkdir()
    async with in_memory() as client:
        with pytest.raises(RequestError) as info:
            await client.new_session(cwd=tmp_path / "wrong-type")
        assert info.value.code == -32603
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("hello")).stop_reason == "end_turn"


async def test_prompt_on_a_closed_session(in_memory: Opener, tmp_path: Path) -> None:
    async with in_memory() as client:
        session = await client.new_session(cwd=tmp_path)
        await session.close()
        with pytest.raises(UsageError, match="closed"):
            session.prompt("hello")
        other = await client.new_session(cwd=tmp_path)
    with pytest.raises(UsageError, match="closed"):
        other.prompt("hello")


async def test_tool_call_update_for_an_unknown_id(in_memory: Opener, tmp_path: Path) -> None:
    async with in_memory() as client:
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("unknown-tool")).stop_reason == "end_turn"
        text = session.state.last_agent_message.text  # type: ignore[union-attr]
        assert text.startswith("UsageError: tool-call update for unknown id 'never-started'")
        assert session.state.tool_calls == {}


async def _low_level_client(target: str, router: Router) -> tuple[ClientSideConnection, list[Any]]:
    owned: list[Any] = []
    transport: Transport
    if target == "memory":
        ours, theirs = memory_pair()
        agent_conn = build_app().connection(theirs)
        await agent_conn.start()
        owned.append(agent_conn)
        transport = ours
    else:
        transport = SubprocessTransport(AGENT_CMD)
    conn = ClientSideConnection(transport, router)
    await conn.start()
    return conn, owned


@pytest.mark.parametrize("target", ["memory", "pipe"])
async def test_permission_answer_with_an_option_that_was_not_offered(target: str, tmp_path: Path) -> None:
    updates: list[Any] = []
    asked: list[schema.RequestPermissionRequest] = []
    router = Router()

    async def on_update(p: schema.SessionNotification) -> None:
        updates.append(p.update)

    async def bogus_answer(p: schema.RequestPermissionRequest) -> schema.RequestPermissionResponse:
        asked.append(p)
        return schema.RequestPermissionResponse(outcome=schema.SelectedPermissionOutcome(option_id="yolo"))

    router.add_notification("session/update", on_update)
    router.add_request("session/request_permission", bogus_answer)
    conn, owned = await _low_level_client(target, router)
    try:
        await conn.initialize(protocol_version=1, client_capabilities=schema.ClientCapabilities())
        sid = (await conn.session_new(cwd=str(tmp_path), mcp_servers=[])).session_id
        resp = await conn.session_prompt(session_id=sid, prompt=[schema.TextContent(text="bogus-permission")])
    finally:
        await conn.aclose()
        for c in owned:
            await c.aclose()
    assert resp.stop_reason == "end_turn"
    assert [o.option_id for o in asked[0].options] == ["allow", "allow_always", "reject"]
    # the permission request names the tool call, with its title and kind
    assert (asked[0].tool_call.title, asked[0].tool_call.kind) == ("Risky", "edit")
    texts = [u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk)]
    assert len(texts) == 1
    assert texts[0].startswith("ProtocolError: the client selected option 'yolo', which was not offered")
    assert updates[-1].status == "failed"


async def test_error_auth_methods(open_agent: Opener, tmp_path: Path) -> None:
    # Error.authMethods (acplink extension): a top-level member of the JSON-RPC error object
    async with open_agent() as client:
        session = await client.new_session(cwd=tmp_path)
        with pytest.raises(AuthRequired) as info:
            await session.prompt("auth")
        assert (info.value.code, info.value.message) == (-32000, "log in first")
        assert info.value.auth_methods == [{"id": "demo", "name": "Demo"}]


async def test_unknown_session_is_resource_not_found(in_memory: Opener) -> None:
    async with in_memory() as client:
        with pytest.raises(RequestError) as info:
            await client.conn.session_prompt(session_id="nope", prompt=[schema.TextContent(text="hi")])
        assert info.value.code == -32002


# -- turns: terminals, cancellation, session/stop ------------------------------------------------------


async def test_terminals_are_released_at_the_end_of_a_turn(open_agent: Opener, tmp_path: Path) -> None:
    async with open_agent() as client:
        assert client.terminals is not None
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("terminal sleep 30")).stop_reason == "end_turn"
        terminal_id = session.state.last_agent_message.text  # type: ignore[union-attr]
        # the handler never released it: acplink did, at the end of the turn (the client
        # killed the process and forgot the id; its last output is kept)
        assert client.terminals.terminal_ids == []
        snapshot = client.terminals.snapshot(terminal_id)
        assert snapshot.exit_status is not None and snapshot.exit_status.signal is not None


@pytest.mark.parametrize("prompt", ["wait", "stubborn"])
async def test_cancel_ends_the_turn_cancelled(open_agent: Opener, tmp_path: Path, prompt: str) -> None:
    async with open_agent() as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt(prompt)
        async for update in turn:
            if isinstance(update, schema.AgentMessageChunk) and update.content.text == "waiting":
                await turn.cancel()
        # "wait" returns end_turn after the cancel, "stubborn" never returns: both are cancelled
        assert turn.stop_reason == "cancelled"
        assert (await session.prompt("hello")).stop_reason == "end_turn"


async def test_session_stop_extension(open_agent: Opener, tmp_path: Path) -> None:
    async with open_agent() as client:
        session = await client.new_session(cwd=tmp_path)
        # nothing running: no stop reason
        idle = await client.conn.session_stop(session_id=session.session_id)
        assert idle.stop_reason is None
        turn = session.prompt("wait")
        async for update in turn:
            if isinstance(update, schema.AgentMessageChunk) and update.content.text == "waiting":
                stopped = await client.conn.session_stop(session_id=session.session_id)
                assert stopped.stop_reason == "cancelled"
        assert turn.stop_reason == "cancelled"


# -- extension methods -------------------------------------------------------------------------------


async def test_extension_methods(open_agent: Opener) -> None:
    async with open_agent() as client:
        assert await client.conn.call("_test/echo", {"x": [1, 2]}) == {"echo": {"x": [1, 2]}}
        await client.conn.notify("_test/note", {"n": 1})
        await client.conn.notify("_test/note", {"n": 2})
        # notifications are handled in order, before a later request's answer
        assert await client.conn.call("_test/notes", {}) == {"notes": [{"n": 1}, {"n": 2}]}
        with pytest.raises(RequestError) as info:
            await client.conn.call("_test/missing", {})
        assert info.value.code == -32601


# -- the in-process client/agent pair -----------------------------------------------------------------


async def test_connect_in_memory_subclass_style(tmp_path: Path) -> None:
    class Shout(Agent):
        async def prompt(self, ctx: PromptContext) -> str:
            await ctx.send_thought("hmm")
            await ctx.send_plan(["shout"])
            await ctx.send_text(ctx.text.upper())
            return "end_turn"

    client: Client = await connect(Shout("shout"))
    try:
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("hey")).stop_reason == "end_turn"
        state = session.state
        assert state.agent_text == "HEY"
        assert state.thoughts[0].text == "hmm"
        assert state.plan is not None and [e.content for e in state.plan.entries] == ["shout"]
    finally:
        await client.aclose()


async def _gather(it: AsyncIterator[Any]) -> list[Any]:
    return [x async for x in it]


async def test_two_sessions_prompt_concurrently(in_memory: Opener, tmp_path: Path) -> None:
    async with in_memory() as client:
        a = await client.new_session(cwd=tmp_path)
        b = await client.new_session(cwd=tmp_path)
        ua, ub = await asyncio.gather(_gather(a.prompt("one")), _gather(b.prompt("two")))
        assert [u.content.text for u in ua] == ["one"]
        assert [u.content.text for u in ub] == ["two"]


# -- documented extensions (docs/extensions.md) --------------------------------------------------------


async def test_permission_timeout_outcome_is_opt_in(tmp_path: Path) -> None:
    app = AgentApp("timeouts")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        tool = await ctx.start_tool_call("Slow question")
        answer = await ctx.request_permission(tool, accepts_timeout=ctx.text == "opt-in")
        await ctx.send_text(f"{answer.outcome} {answer.allowed}")

    never = asyncio.Event()

    async def ask(request: schema.RequestPermissionRequest) -> str | None:
        await never.wait()  # the user never answers
        return None

    policy = PermissionPolicy(default="ask", ask=ask, timeout=0.05)
    async with connect(app, permission=policy) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("opt-in")
        assert session.state.agent_text.endswith("timeout False")
        await session.prompt("no opt-in")
        assert session.state.last_agent_message is not None
        assert session.state.last_agent_message.text == "cancelled False"


@pytest.mark.parametrize("allow_shell", [True, False])
async def test_shell_terminal_extension(tmp_path: Path, allow_shell: bool) -> None:
    app = AgentApp("shell")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        created = await ctx.connection.terminal_create(
            session_id=ctx.session_id, command="echo one two three | wc -w", meta={"acplink": {"shell": True}})
        async with TerminalHandle(ctx, created.terminal_id) as term:
            await term.wait()
            await ctx.send_text((await term.output()).output.strip())

    async with connect(app, terminal=TerminalHandler(allow_shell=allow_shell)) as client:
        session = await client.new_session(cwd=tmp_path)
        if allow_shell:
            await session.prompt("go")
            assert session.state.agent_text == "3"
        else:
            with pytest.raises(InvalidParams, match="shell"):
                await session.prompt("go")
        assert client.terminals is not None and client.terminals.terminal_ids == []


# -- session/close during a running prompt (SESS-021) -------------------------------------------------


@pytest.mark.parametrize("stubborn", [False, True], ids=["turn-ends-on-cancel", "turn-ignores-cancel"])
async def test_session_close_ends_a_running_turn_cancelled(tmp_path: Path, stubborn: bool) -> None:
    # a plain app: its close handler knows nothing of turns; the app cancels the running turn
    # (forced after the grace when the handler ignores the cancel) before the handler runs
    app = AgentApp("closer", cancel_grace=0.2)
    events: list[str] = []
    started = asyncio.Event()

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        started.set()
        try:
            if stubborn:
                await asyncio.sleep(60)
            else:
                await ctx.wait_cancelled()
        finally:
            events.append("turn ended")

    @app.close_session
    async def close_session(ctx: Context[schema.CloseSessionRequest]) -> schema.CloseSessionResponse:
        events.append("close handler")
        return schema.CloseSessionResponse()

    async with connect(app) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("work")
        async with asyncio.timeout(10):
            await started.wait()
            await session.close()
            assert (await turn).stop_reason == "cancelled"
        assert events == ["turn ended", "close handler"]
        assert app.sessions == {}
