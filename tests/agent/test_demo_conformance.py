"""The demo agent against the spec and the official conformance kit: idempotent delete, opaque
cursors, the model selector as a config option (legacy ``models`` opt-in), and nothing sent
after a ``session/load`` / ``session/resume`` response."""

from __future__ import annotations

import asyncio
import base64
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from acplink import AgentApp, connect, schema
from acplink.demo.agent import COMMANDS, DemoStore, create_demo_agent

GUARD = 20.0  # hang guard only


class RawDemo:
    """The demo agent in a child process, spoken to with raw JSON-RPC over its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    async def send(self, method: str, params: Any) -> int:
        assert self.proc.stdin is not None
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()
        return self.next_id

    async def until_response(self, rid: int) -> tuple[list[Any], Any]:
        """The messages that arrive before the response to ``rid``, and the response."""
        assert self.proc.stdout is not None
        before = []
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), GUARD)
            assert line, "the demo agent closed its stdout"
            msg = orjson.loads(line)
            if msg.get("id") == rid and "method" not in msg:
                return before, msg
            before.append(msg)

    async def call(self, method: str, params: Any) -> Any:
        _, response = await self.until_response(await self.send(method, params))
        return response


@pytest.fixture
async def raw_demo(tmp_path: Path) -> AsyncIterator[RawDemo]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "acplink.demo", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env={"ACPLINK_DEMO_STORE": str(tmp_path / "store"), "PATH": "/usr/bin:/bin"})
    demo = RawDemo(proc)
    try:
        init = await demo.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        yield demo
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), GUARD)


async def test_nothing_is_sent_after_a_load_or_resume_response(raw_demo: RawDemo, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    sid = (await raw_demo.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]
    for method in ("session/load", "session/resume"):
        params: dict[str, Any] = {"sessionId": sid, "cwd": cwd}
        if method == "session/load":
            params["mcpServers"] = []
        before, response = await raw_demo.until_response(await raw_demo.send(method, params))
        assert "result" in response, response
        kinds = [m["params"]["update"]["sessionUpdate"] for m in before if m.get("method") == "session/update"]
        assert "available_commands_update" in kinds, (method, before)
        # a round trip: nothing came between the response and its answer
        between, ping = await raw_demo.until_response(await raw_demo.send("_ping", {}))
        assert ping["error"]["code"] == -32601
        assert between == [], (method, between)


async def test_delete_of_an_unknown_session_succeeds(raw_demo: RawDemo) -> None:
    for sid in ("sess_never_existed", "../not an id", ""):
        response = await raw_demo.call("session/delete", {"sessionId": sid})
        assert response.get("result") == {}, response


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


async def test_list_cursors_are_opaque_and_a_foreign_one_is_invalid_params(raw_demo: RawDemo, tmp_path: Path) -> None:
    cwd = str(tmp_path)
    made = {(await raw_demo.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]
            for _ in range(60)}
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"cwd": cwd}
        if cursor is not None:
            params["cursor"] = cursor
        result = (await raw_demo.call("session/list", params))["result"]
        seen += [i["sessionId"] for i in result["sessions"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        assert not cursor.isdigit()  # (not an offset a client could be tempted to compute)
    assert sorted(seen) == sorted(made)
    for foreign in ("opaque-cursor-xyz", "50", "", "!!!", "é", _cursor("other:50"), _cursor("acplink-demo:x")):
        response = await raw_demo.call("session/list", {"cursor": foreign})
        assert response["error"]["code"] == -32602, (foreign, response)


async def test_models_are_a_config_option_and_the_legacy_field_is_opt_in(raw_demo: RawDemo, tmp_path: Path) -> None:
    result = (await raw_demo.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]
    assert "models" not in result
    (model,) = [o for o in result["configOptions"] if o.get("category") == "model"]
    assert model["currentValue"] == "demo-small"
    assert [o["value"] for o in model["options"]] == ["demo-small", "demo-large"]
    set_model = await raw_demo.call("session/set_model", {"sessionId": result["sessionId"], "modelId": "demo-large"})
    assert set_model["error"]["code"] == -32601  # (not offered: no legacy models)
    changed = await raw_demo.call("session/set_config_option", {
        "sessionId": result["sessionId"], "configId": model["id"], "value": "demo-large"})
    assert [o["currentValue"] for o in changed["result"]["configOptions"] if o["id"] == model["id"]] == ["demo-large"]


async def test_legacy_models_keep_both_selectors_in_step(tmp_path: Path) -> None:
    app = create_demo_agent(DemoStore(tmp_path / "store"), delay=0, legacy_models=True)
    async with connect(app) as client:
        session = await client.new_session(tmp_path)
        state = session.state
        assert state.current_model_id == "demo-small"
        assert [m.model_id for m in state.available_models] == ["demo-small", "demo-large"]
        await session.set_model("demo-large")
        assert app.sessions[session.session_id].model_id == "demo-large"
        resp = await session.set_config_option("model", "demo-small")
        assert app.sessions[session.session_id].model_id == "demo-small"
        assert [o.current_value for o in resp.config_options] == ["demo-small", "plain"]


def test_an_app_that_declares_its_own_model_option_gets_no_second_one() -> None:
    own = schema.SessionConfigOptionSelect(id="llm", name="LLM", category="model", current_value="a",
                                           options=[schema.SessionConfigSelectOption(value="a", name="A")])
    app = AgentApp("t", config_options=[own], models=[schema.ModelInfo(model_id="a", name="A")])
    assert [o.id for o in app.config_options] == ["llm"] and app.model_option_id == "llm"
    assert [o.id for o in AgentApp("t", models=[schema.ModelInfo(model_id="a", name="A")]).config_options] == ["model"]
    assert AgentApp("t").config_options == [] and AgentApp("t").model_option_id is None


async def test_the_client_keeps_what_is_sent_before_a_load_or_resume_response(tmp_path: Path) -> None:
    app = create_demo_agent(DemoStore(tmp_path / "store"), delay=0)
    async with connect(app) as client:
        sid = (await client.new_session(tmp_path)).session_id
    for reopen in ("load_session", "resume_session"):
        async with connect(app) as client:
            sess = await getattr(client, reopen)(sid, tmp_path)
            assert [c.name for c in sess.state.available_commands] == [n for n, _, _ in COMMANDS], reopen
            assert client.sessions[sid] is sess
