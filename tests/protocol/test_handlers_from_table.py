"""One registration path on both high-level APIs: every method of the method table can be
handled, ``AgentApp.on(<wire method>)`` on the agent side and ``Client.on(<wire method>)`` on
the client side, with typed params in, typed results (or dicts) out, and the capabilities that
gate each method advertised from what is registered; in memory and over a subprocess."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from minimal import minimal
from table_app import BUILT_IN, agent_methods, client_methods, make_app

from acplink import Client
from acplink.errors import UsageError
from acplink.protocol import V1
from acplink.schema import dump
from acplink.transports.memory import memory_pair
from acplink.transports.subprocess import SubprocessTransport

AGENT = Path(__file__).resolve().parent / "table_agent.py"

#: called last: they forget the session
LAST = ("session/close", "session/delete")


def _params(info: Any, session_id: str) -> Any:
    params = minimal(info.params_type)
    if isinstance(params, dict) and "sessionId" in params:
        params["sessionId"] = session_id
    return params


def _ordered(methods: list[Any]) -> list[Any]:
    return sorted(methods, key=lambda m: (m.method in LAST, m.method))


def _register_client_handlers(client: Client) -> dict[tuple[str, str], list[Any]]:
    got: dict[tuple[str, str], list[Any]] = {}
    for info in client_methods():
        def handler(info: Any = info) -> Any:
            async def handle(params: Any) -> Any:
                got.setdefault((info.method, info.kind), []).append(params)
                return None if info.result_type is None else minimal(info.result_type)

            return handle

        client.on(info.method)(handler())
    return got


async def _drive_agent_methods(client: Client) -> None:
    """The client calls every agent-side method (``initialize`` was called by start)."""
    conn = client.connection
    new = await conn.session_new(cwd=str(Path.cwd()), mcp_servers=[])
    sid = new.session_id
    for info in _ordered(agent_methods()):
        if info.method == "initialize":
            continue
        params = _params(info, sid)
        if info.kind == "request":
            result = await asyncio.wait_for(conn.call(info.method, params), 30)
            if info.result_type is not None and isinstance(info.result_type, type):
                assert isinstance(result, info.result_type), info.method
        else:
            await conn.notify(info.method, params)


def _check_agent_saw(seen: dict[tuple[str, str], list[str]]) -> None:
    for info in agent_methods():
        names = seen.get((info.method, info.kind))
        assert names, f"the handler of {info.method} ({info.kind}) was not called"
        if isinstance(info.params_type, type):
            assert names[0] == info.params_type.__name__, info.method


def _check_client_got(got: dict[tuple[str, str], list[Any]]) -> None:
    for info in client_methods():
        params = got.get((info.method, info.kind))
        assert params, f"the client's handler of {info.method} ({info.kind}) was not called"
        if isinstance(info.params_type, type):
            assert isinstance(params[0], info.params_type), info.method


async def _until(check: Any) -> None:
    for _ in range(500):
        try:
            check()
            return
        except AssertionError:
            await asyncio.sleep(0.01)
    check()


def test_the_table_has_methods_of_every_family() -> None:
    families = {m.method.split("/")[0] for m in agent_methods() + client_methods()}
    assert {"session", "nes", "document", "providers", "mcp", "auth", "fs", "terminal", "elicitation"} <= families


async def test_every_method_of_the_table_in_memory() -> None:
    app, seen = make_app()
    ours, theirs = memory_pair()
    agent_conn = app.connection(theirs)
    client = Client(ours)
    got = _register_client_handlers(client)
    async with agent_conn:
        try:
            await client.start()
            # capabilities advertised from what is registered, on both sides
            caps = client.connection.peer_capabilities
            assert caps.providers is not None and caps.nes is not None
            assert client.client_capabilities().elicitation is not None
            await _drive_agent_methods(client)
            await _until(lambda: _check_agent_saw(seen))
            sid = next(iter(app.sessions), "s")
            for info in _ordered(client_methods()):
                params = _params(info, sid)
                if info.kind == "request":
                    result = await asyncio.wait_for(agent_conn.call(info.method, params), 30)
                    assert dump(result) == minimal(info.result_type), info.method
                else:
                    await agent_conn.notify(info.method, params)
            await _until(lambda: _check_client_got(got))
        finally:
            await client.aclose()


async def test_every_method_of_the_table_over_a_subprocess() -> None:
    client = Client(SubprocessTransport([sys.executable, str(AGENT)], stderr="pipe"))
    got = _register_client_handlers(client)
    try:
        await client.start()
        await _drive_agent_methods(client)
        for info in _ordered(client_methods()):
            params = _params(info, "s")
            answer = await client.connection.call("_call_client", {
                "method": info.method, "kind": info.kind, "params": params})
            if info.kind == "request":
                assert answer["result"] == minimal(info.result_type), info.method
        await _until(lambda: _check_client_got(got))
        seen = await client.connection.call("_seen", {})
        _check_agent_saw({(m, k): names for m, k, names in seen["seen"]})
    finally:
        await client.aclose()


def test_hook_names_and_wire_names_are_one_registration() -> None:
    app, _ = make_app()
    # "session/prompt" was registered as the prompt hook: the decorator sees it taken
    with pytest.raises(UsageError, match="already registered"):
        app.prompt(_noop)
    assert "prompt" in app.handlers and ("providers/list", "request") in app.methods
    with pytest.raises(UsageError, match="unknown agent hook"):
        app.on("fs/read_text_file")  # a client-side method
    client = Client(memory_pair()[0])
    with pytest.raises(UsageError, match="not a method a client handles"):
        client.on("session/prompt")
    assert client.conn is client.connection
    assert BUILT_IN <= set(V1.names)


async def _noop(ctx: Any) -> None:
    return None
