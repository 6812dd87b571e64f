"""The protocol object: one per version, selected when ``initialize`` agrees on a version, and
the only place that spells wire method names."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import acplink
from acplink import AgentApp, Client, PromptContext
from acplink.connection.peer import PeerLimits
from acplink.errors import MethodNotFound, UsageError
from acplink.protocol import (
    PROTOCOL_VERSION,
    V1,
    get_protocol,
    known_versions,
    negotiate,
    register_protocol,
    unregister_protocol,
)
from acplink.schema import v1 as schema_v1
from acplink.transports.memory import memory_pair

SRC = Path(acplink.__file__).resolve().parent

#: the packages that must not spell a wire method: they ask the protocol object
NO_WIRE_NAMES = ("connection", "agent", "client", "testing", "tools")
#: exempt for now: connection/peer.py (`$/cancel_request`), conformance/ and cli/ (not scanned);
#: for good: the typed ``on`` of each side, generated from the method table (its overloads'
#: ``Literal["session/prompt"]`` are the table's names, which a ``Literal`` cannot spell as a constant)
EXEMPT = {"connection/peer.py", "agent/_on.py", "client/_on.py"}


def _literals() -> Iterator[tuple[str, int, str]]:
    wire = {m.method for m in V1.table.methods}
    names = set(V1.names)  # acplink's own names ("initialize" is both): not wire spellings
    for pkg in NO_WIRE_NAMES:
        for path in sorted((SRC / pkg).rglob("*.py")):
            rel = path.relative_to(SRC).as_posix()
            if rel in EXEMPT:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in wire
                        and node.value not in names):
                    yield rel, node.lineno, node.value


def test_no_module_spells_a_wire_method() -> None:
    assert list(_literals()) == []


def test_the_scan_finds_a_spelled_method(tmp_path: Path) -> None:
    # (the scan itself works: a wire name in a module of those packages is found)
    tree = ast.parse('x = "session/prompt"')
    hits = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in
            {m.method for m in V1.table.methods}]
    assert hits == ["session/prompt"]


def test_v1_is_registered_and_exported() -> None:
    assert get_protocol(1) is V1 and PROTOCOL_VERSION == 1 == acplink.PROTOCOL_VERSION
    assert 1 in known_versions()
    assert V1.table is schema_v1.TABLE and V1.models is schema_v1
    assert V1.wire("prompt") == "session/prompt" and V1.name_of("session/update", "notification") == "session_update"
    assert V1.may_precede_initialize("initialize") and V1.may_precede_initialize("_ext")
    assert not V1.may_precede_initialize("session/new")
    with pytest.raises(UsageError, match="no 'nope' method"):
        V1.wire("nope")
    with pytest.raises(UsageError, match="unknown ACP protocol version"):
        get_protocol(12345)


def test_negotiation_follows_the_spec() -> None:
    assert negotiate(1, (1, 7)) == 1
    assert negotiate(7, (1, 7)) == 7
    assert negotiate(9, (1, 7)) == 7  # unsupported: the latest the agent supports
    assert negotiate("1", (1,)) == 1
    assert negotiate(True, (1, 7)) == 7


#: a toy second version, defined here only: v1 with two methods renamed
TOY = V1.derive(99, {"session/prompt": "session/ask", "session/new": "session/open"})


@pytest.fixture
def toy() -> Iterator[None]:
    register_protocol(TOY)
    try:
        yield
    finally:
        unregister_protocol(TOY.version)


def _app() -> AgentApp:
    app = AgentApp("toy", protocols=(1, 99))

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text(f"v{ctx.connection.protocol.version}: {ctx.text}")

    return app


async def _converse(protocol_version: int, check: Any = None) -> tuple[Any, Any, str]:
    """Connect a client asking for ``protocol_version`` to the app, open a session and prompt
    it: (the client's protocol, the agent's protocol, the reply). ``check(client, agent)`` runs
    before the client closes."""
    app = _app()
    ours, theirs = memory_pair()
    agent = app.connection(theirs)
    client = Client(ours)
    async with agent:
        try:
            await client.start(protocol_version=protocol_version)
            session = await client.new_session()
            texts = [u.content.text async for u in session.prompt("hi")]
            if check is not None:
                await check(client, agent)
            return client.connection.protocol, agent.protocol, "".join(texts)
        finally:
            await client.aclose()


@pytest.mark.usefixtures("toy")
async def test_a_second_version_is_served_and_selected_by_initialize() -> None:
    async def check(client: Client, agent: Any) -> None:
        assert "session/ask" in agent.router.requests and "session/prompt" not in agent.router.requests
        # the v1 names are not served in the toy version
        with pytest.raises(MethodNotFound):
            await client.connection.request_json("session/prompt", b'{"sessionId":"x","prompt":[]}')

    # session/new went out as session/open, session/prompt as session/ask
    assert await _converse(99, check) == (TOY, TOY, "v99: hi")


@pytest.mark.usefixtures("toy")
async def test_the_same_app_serves_v1_to_a_v1_client() -> None:
    assert await _converse(1) == (V1, V1, "v1: hi")


async def test_an_unknown_version_falls_back_to_the_latest_supported() -> None:
    app = _app()  # serves 1 and 99, but 99 is not registered here: it answers its latest, 99...
    app.protocols = (1,)
    ours, theirs = memory_pair()
    agent = app.connection(theirs)
    client = Client(ours)
    async with agent:
        try:
            response = await client.start(protocol_version=42) and client.connection.initialize_response
            assert response is not None and response.protocol_version == 1
            assert client.connection.protocol is V1
        finally:
            await client.aclose()


def _is_flag(model: Any, path: str) -> bool:
    """Whether the capability at ``path`` of the capabilities ``model`` is a boolean field."""
    field_type: Any = None
    for part in path.split("."):
        fields = getattr(model, "model_fields", {})
        info = next((f for n, f in fields.items() if (f.alias or n) == part), None)
        assert info is not None, path
        field_type = info.annotation
        model = next((a for a in (*getattr(field_type, "__args__", ()), field_type) if hasattr(a, "model_fields")),
                     None)
    return field_type is bool or bool in getattr(field_type, "__args__", ())


def test_the_capability_flags_are_the_boolean_capabilities_of_the_schema() -> None:
    # (the agent advertises without building models: the protocol object knows which are flags)
    caps = {m.capability for m in V1.table.methods if m.capability}
    models = {"agent": schema_v1.AgentCapabilities, "client": schema_v1.ClientCapabilities}
    flags = {c for c in caps if _is_flag(models[c.split(":")[0]], c.split(":", 1)[1])}
    assert flags == V1.capability_flags
    wire: dict[str, Any] = {}
    V1.advertise(wire, "agent:loadSession")
    V1.advertise(wire, "agent:sessionCapabilities.list")
    assert wire == {"loadSession": True, "sessionCapabilities": {"list": {}}}


@pytest.mark.usefixtures("toy")
@pytest.mark.parametrize("version", [1, 99])
async def test_the_versions_long_running_methods_take_no_running_slot(version: int) -> None:
    # One running slot: a prompt turn waiting (session/prompt in v1, session/ask in the toy
    # version) must not hold back a quick request of the same client (session/new or /open).
    assert ("session/ask" in TOY.long_running) and "session/prompt" not in TOY.long_running
    app = AgentApp("toy", protocols=(1, 99))
    started, release = asyncio.Event(), asyncio.Event()

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        started.set()
        await release.wait()

    ours, theirs = memory_pair()
    agent = app.connection(theirs, limits=PeerLimits(max_running_requests=1))
    client = Client(ours)
    turn: asyncio.Future[Any] | None = None
    async with agent:
        try:
            await client.start(protocol_version=version)
            assert agent.protocol.version == version
            session = await client.new_session()
            turn = asyncio.ensure_future(session.prompt("hi").result())
            await asyncio.wait_for(started.wait(), 10)
            other = await asyncio.wait_for(client.new_session(), 10)  # (not held behind the turn)
            assert other.session_id != session.session_id
            release.set()
            assert (await asyncio.wait_for(turn, 10)).stop_reason == "end_turn"
        finally:
            release.set()
            if turn is not None:
                turn.cancel()
            await client.aclose()
