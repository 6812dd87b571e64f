"""One AgentApp served as ACP v2: the lifecycle the SDK owns, and the bad inputs of the agent side."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from v2_wire import INIT2, RawClient, idle, make_app, served, updates

from acplink import AgentApp, PromptContext
from acplink.demo.agent import DemoStore, create_demo_agent


async def start(c: RawClient) -> str:
    r, _ = await c.call("initialize", INIT2)
    assert r["result"]["protocolVersion"] == 2
    r, _ = await c.call("session/new", {"cwd": "/tmp"})
    return str(r["result"]["sessionId"])


def text(p: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": p}]


async def test_initialize_shape() -> None:
    async with served(make_app()) as c:
        r, _ = await c.call("initialize", INIT2)
        res = r["result"]
        assert res["protocolVersion"] == 2
        assert res["info"] == {"name": "t2", "version": "1.0"}
        assert "prompt" in res["capabilities"]["session"]  # session methods always honest


async def test_prompt_receipt_echo_running_chunks_idle() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        r, before = await c.call("session/prompt", {"sessionId": sid, "prompt": text("hi")})
        receipt = r["result"]["messageId"]
        rest = await c.until(idle)
        ups = updates(before) + updates(rest)
        kinds = [u["sessionUpdate"] for u in ups]
        echo = next(u for u in ups if u["sessionUpdate"] == "user_message")
        assert echo["messageId"] == receipt and echo["content"] == text("hi")
        assert kinds.index("user_message") < kinds.index("state_update")
        assert ups[kinds.index("state_update")]["state"] == "running"
        chunks = [u for u in ups if u["sessionUpdate"].endswith("_chunk")]
        assert chunks and all(u.get("messageId") for u in chunks)
        assert "".join(u["content"]["text"] for u in chunks) == "echo hi"
        assert ups[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


async def test_held_prompts_are_inserted_in_order() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        first = c.request("session/prompt", {"sessionId": sid, "prompt": text("slow")})
        second = c.request("session/prompt", {"sessionId": sid, "prompt": text("after")})
        msgs = await c.until(lambda m: m.get("id") == second)
        second_receipt = msgs[-1]["result"]["messageId"]
        got_first = next(i for i, m in enumerate(msgs) if m.get("id") == first)
        first_idle = next(i for i, m in enumerate(msgs) if idle(m))
        assert got_first < first_idle < len(msgs) - 1  # the second receipt comes after the first turn ended
        msgs += await c.until(idle)
        echoes = [u for u in updates(msgs) if u["sessionUpdate"] == "user_message"]
        assert [e["content"][0]["text"] for e in echoes] == ["slow", "after"]
        assert echoes[1]["messageId"] == second_receipt
        stops = [u.get("stopReason") for u in updates(msgs) if u.get("state") == "idle"]
        assert stops == ["end_turn", "end_turn"]


async def test_cancel_ends_with_idle_cancelled_and_refuses_held_prompts() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        c.request("session/prompt", {"sessionId": sid, "prompt": text("slow")})
        await c.until(lambda m: m.get("method") == "session/update"
                      and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        held = c.request("session/prompt", {"sessionId": sid, "prompt": text("never")})
        await asyncio.sleep(0.05)
        c.notify("session/cancel", {"sessionId": sid})
        msgs = await c.until(idle)
        assert msgs[-1]["params"]["update"]["stopReason"] == "cancelled"
        answer = next(m for m in c.log if m.get("id") == held)
        assert answer["error"]["code"] == -32800
        assert "never" not in str(updates(c.log))  # a held prompt is never inserted


async def test_close_sends_idle_cancelled_before_its_answer() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        c.request("session/prompt", {"sessionId": sid, "prompt": text("slow")})
        await c.until(lambda m: m.get("method") == "session/update"
                      and m["params"]["update"].get("state") == "running")
        r, before = await c.call("session/close", {"sessionId": sid})
        assert r["result"] == {}
        assert any(idle(m) and m["params"]["update"]["stopReason"] == "cancelled" for m in before)
        r, _ = await c.call("session/close", {"sessionId": "sess_unknown"})
        assert r["result"] == {}  # closing an unknown session succeeds


async def test_error_in_the_handler_is_an_idle_error() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        r, _ = await c.call("session/prompt", {"sessionId": sid, "prompt": text("fail")})
        assert "messageId" in r["result"]  # inserted: the receipt stays successful
        last = (await c.until(idle))[-1]["params"]["update"]
        assert last["stopReason"] == "error" and last["error"]["code"] == -32603


async def test_custom_stop_reason_is_kept() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        await c.call("session/prompt", {"sessionId": sid, "prompt": text("custom")})
        assert (await c.until(idle))[-1]["params"]["update"]["stopReason"] == "_mine"


async def test_permission_title_subject_and_requires_action() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        c.request("session/prompt", {"sessionId": sid, "prompt": text("perm")})
        msgs = await c.until(lambda m: m.get("method") == "session/request_permission")
        req = msgs[-1]
        assert req["params"]["title"] == "Edit x"
        assert req["params"]["subject"]["type"] == "tool_call"
        assert [u.get("state") for u in updates(msgs) if u["sessionUpdate"] == "state_update"] == [
            "running", "requires_action"]
        c.send({"jsonrpc": "2.0", "id": req["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
        rest = await c.until(idle)
        states = [u.get("state") for u in updates(rest) if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "idle"]
        assert "picked allow" in str(updates(rest))


async def test_cancel_while_waiting_for_permission() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        c.request("session/prompt", {"sessionId": sid, "prompt": text("perm")})
        await c.until(lambda m: m.get("method") == "session/request_permission")
        c.notify("session/cancel", {"sessionId": sid})
        msgs = await c.until(idle)
        assert msgs[-1]["params"]["update"]["stopReason"] == "cancelled"
        assert any(m.get("method") == "$/cancel_request" for m in msgs)


async def test_tool_calls_are_upserts_and_plans_plan_updates() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        await c.call("session/prompt", {"sessionId": sid, "prompt": text("tool")})
        ups = updates(await c.until(idle))
        tools = [u for u in ups if u["sessionUpdate"] == "tool_call_update"]
        assert [t["toolCallId"] for t in tools] == ["t1", "t1"]
        assert tools[0]["title"] == "Look" and "capabilities" not in tools[0]  # no cancel hook
        assert tools[1]["status"] == "completed"
        assert tools[1]["content"][0]["content"]["text"] == "found"
        r, _ = await c.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "t1"})
        assert r["error"]["code"] == -32602  # not cancellable
        await c.call("session/prompt", {"sessionId": sid, "prompt": text("plan")})
        ups = updates(await c.until(idle))
        plan = next(u for u in ups if u["sessionUpdate"] == "plan_update")["plan"]
        assert plan["type"] == "items" and [e["content"] for e in plan["entries"]] == ["one", "two"]


async def test_fs_calls_on_v2_are_a_clear_local_error() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        await c.call("session/prompt", {"sessionId": sid, "prompt": text("read")})
        said = "".join(u["content"]["text"] for u in updates(await c.until(idle))
                       if u["sessionUpdate"] == "agent_message_chunk")
        assert "fs/read_text_file does not exist in ACP v2" in said and "MCP-over-ACP" in said
        assert not any(m.get("method") == "fs/read_text_file" for m in c.log)


async def test_resume_replays_then_snapshot_then_responds(tmp_path: Path) -> None:
    app = make_app()
    async with served(app) as c:
        sid = await start(c)
        r, _ = await c.call("session/prompt", {"sessionId": sid, "prompt": text("hello")})
        user_id = r["result"]["messageId"]
        await c.until(idle)
        r, before = await c.call("session/resume", {"sessionId": sid, "cwd": "/tmp", "replayFrom": {"type": "start"}})
        assert "error" not in r
        ups = updates(before)
        assert [u["sessionUpdate"] for u in ups] == ["user_message", "agent_message", "state_update"]
        assert ups[0]["messageId"] == user_id and ups[0]["content"] == text("hello")
        assert ups[1]["content"] == text("echo hello")
        assert ups[2]["state"] == "idle"
        r, before = await c.call("session/resume", {"sessionId": sid, "cwd": "/tmp"})
        assert [u["sessionUpdate"] for u in updates(before)] == ["state_update"]  # no replay without replayFrom
        r, _ = await c.call("session/resume", {"sessionId": "sess_nope", "cwd": "/tmp"})
        assert r["error"]["code"] == -32002


async def test_list_default_and_modes_as_config_option() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        r, _ = await c.call("session/list", {})
        assert [x["sessionId"] for x in r["result"]["sessions"]] == [sid]
        r, _ = await c.call("session/set_config_option", {"sessionId": sid, "configId": "mode", "type": "id",
                                                          "value": "auto"})
        mode = next(o for o in r["result"]["configOptions"] if o["configId"] == "mode")
        assert mode["currentValue"] == "auto" and mode["category"] == "mode"
        r, _ = await c.call("session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "nope"})
        assert r["error"]["code"] == -32602


@pytest.mark.parametrize(("method", "params", "code"), [
    ("session/prompt", {"sessionId": "S", "prompt": []}, -32602),
    ("session/prompt", {"sessionId": "S"}, -32602),
    ("session/prompt", {"sessionId": "sess_unknown", "prompt": text("x")}, -32002),
    ("authenticate", {"methodId": "x"}, -32601),
    ("session/load", {"sessionId": "S", "cwd": "/", "mcpServers": []}, -32601),
    ("session/set_mode", {"sessionId": "S", "modeId": "auto"}, -32601),
    ("fs/read_text_file", {"sessionId": "S", "path": "/etc/hostname"}, -32601),
    ("session/new", {"cwd": 5}, -32602),  # checked against the v2 model
    ("auth/login", {"methodId": "x"}, -32601),  # this app offers no auth methods
    ("initialize", {"protocolVersion": 1}, -32600),  # a repeat asking for 1 on v2
    ("tool_call/cancel", {"sessionId": "S", "toolCallId": "nope"}, -32602),
    ("terminal/cancel", {"sessionId": "S", "terminalId": "nope"}, -32602),
])
async def test_bad_inputs(method: str, params: dict[str, Any], code: int) -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        params = {k: (sid if v == "S" else v) for k, v in params.items()}
        r, _ = await c.call(method, params)
        assert r["error"]["code"] == code, r
        assert not any(u["sessionUpdate"] == "user_message" for u in updates(c.log))  # nothing inserted


@pytest.mark.parametrize(("message", "code", "rid"), [
    ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2"}}, -32602, 1),
    ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 70000}}, -32602, 1),
    ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 0}}, -32022, 1),
    ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2}}, -32602, 1),  # no info
    ({"jsonrpc": "2.0", "id": None, "method": "initialize", "params": INIT2}, -32600, None),
    ({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "/"}}, -32600, 4),
    ([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT2}], -32600, None),
])
async def test_before_initialize(message: Any, code: int, rid: Any) -> None:
    async with served(make_app()) as c:
        c.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}})  # ignored
        c.send(message)
        r = await c.recv()
        assert r["error"]["code"] == code and r["id"] == rid
        if code == -32022:
            assert r["error"]["data"] == {"requested": 0, "supported": [1, 2]}
        r, _ = await c.call("initialize", INIT2)  # may be retried
        assert r["result"]["protocolVersion"] == 2


async def test_v1_clients_still_get_v1() -> None:
    async with served(make_app()) as c:
        r, _ = await c.call("initialize", {"protocolVersion": 1})
        assert r["result"]["protocolVersion"] == 1 and "agentCapabilities" in r["result"]
        r, _ = await c.call("session/new", {"cwd": "/tmp", "mcpServers": []})
        sid = r["result"]["sessionId"]
        r, before = await c.call("session/prompt", {"sessionId": sid, "prompt": text("hi")})
        assert r["result"] == {"stopReason": "end_turn"}
        assert not any(u["sessionUpdate"] == "state_update" for u in updates(before))
        r, _ = await c.call("initialize", {"protocolVersion": 2, "info": {"name": "x", "version": "1"}})
        assert r["result"]["protocolVersion"] == 1  # the version chosen never changes


async def test_demo_tool_call_cancel_and_auth(tmp_path: Path) -> None:
    async with served(create_demo_agent(DemoStore(tmp_path), delay=0)) as c:
        sid = await start(c)
        r, _ = await c.call("auth/login", {"methodId": "demo"})
        assert r["result"] == {}
        r, _ = await c.call("auth/login", {"methodId": "other"})
        assert r["error"]["code"] == -32602
        r, _ = await c.call("auth/logout", {})
        assert r["result"] == {}
        c.request("session/prompt", {"sessionId": sid, "prompt": text("wait 30")})
        msgs = await c.until(lambda m: m.get("method") == "session/update"
                             and m["params"]["update"]["sessionUpdate"] == "tool_call_update")
        tool = msgs[-1]["params"]["update"]
        assert tool["capabilities"] == {"cancel": {}}
        r, _ = await c.call("tool_call/cancel", {"sessionId": sid, "toolCallId": tool["toolCallId"]})
        assert r["result"] == {}
        rest = await c.until(idle)
        assert rest[-1]["params"]["update"]["stopReason"] == "end_turn"  # only the tool call was cancelled
        r, _ = await c.call("tool_call/cancel", {"sessionId": sid, "toolCallId": tool["toolCallId"]})
        assert r["error"]["code"] == -32602  # already final
        r, _ = await c.call("session/delete", {"sessionId": "sess_unknown"})
        assert r["result"] == {}  # deleting an unknown session succeeds


async def test_display_terminal_and_terminal_cancel() -> None:
    async with served(make_app()) as c:
        sid = await start(c)
        c.request("session/prompt", {"sessionId": sid, "prompt": text("term")})
        msgs = await c.until(lambda m: m.get("method") == "session/update"
                             and m["params"]["update"]["sessionUpdate"] == "terminal_output_chunk")
        first = next(u for u in updates(msgs) if u["sessionUpdate"] == "terminal_update")
        assert first == {"sessionUpdate": "terminal_update", "terminalId": "term1", "command": "make", "cwd": "/tmp",
                         "capabilities": {"cancel": {}}}
        assert updates(msgs)[-1]["data"] == "building\n"
        r, _ = await c.call("terminal/cancel", {"sessionId": sid, "terminalId": "term1"})
        assert r["result"] == {}
        rest = updates(await c.until(idle))
        exit_update = next(u for u in rest if u["sessionUpdate"] == "terminal_update")
        assert exit_update["exitStatus"] == {"exitCode": None, "signal": "SIGTERM"}
        assert rest[-1]["stopReason"] == "end_turn"
        r, _ = await c.call("terminal/cancel", {"sessionId": sid, "terminalId": "term1"})
        assert r["error"]["code"] == -32602  # exited: nothing to cancel


async def test_display_terminal_is_v2_only() -> None:
    async with served(make_app()) as c:
        await c.call("initialize", {"protocolVersion": 1})
        r, _ = await c.call("session/new", {"cwd": "/tmp", "mcpServers": []})
        r, before = await c.call("session/prompt", {"sessionId": r["result"]["sessionId"], "prompt": text("term")})
        said = "".join(u["content"]["text"] for u in updates(before) if u["sessionUpdate"] == "agent_message_chunk")
        assert "ACP v2 feature" in said


async def test_null_id_on_v2_is_invalid_request() -> None:
    async with served(make_app()) as c:
        await start(c)
        c.send({"jsonrpc": "2.0", "id": None, "method": "session/list", "params": {}})
        r = await c.recv()
        assert r["id"] is None and r["error"]["code"] == -32600


async def test_a_v1_only_app_downgrades_a_v2_initialize() -> None:
    # as the TS router does for a v1-only implementation: answered with version 1, the v2
    # request seen in v1's shape (info → clientInfo, no fs or terminal, terminal auth kept)
    seen: list[Any] = []
    app = AgentApp("v1-only")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        seen.append((ctx.connection.client_info, ctx.client_capabilities))

    async with served(app, protocols=(1,)) as c:
        r, _ = await c.call("initialize", {"protocolVersion": 2, "info": {"name": "ts", "version": "9"},
                                           "capabilities": {"auth": {"terminal": {}}}})
        assert r["result"]["protocolVersion"] == 1 and "agentInfo" in r["result"]
        r, _ = await c.call("session/new", {"cwd": "/tmp", "mcpServers": []})
        sid = r["result"]["sessionId"]
        r, _ = await c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
        assert r["result"]["stopReason"] == "end_turn"
    ((info, caps),) = seen
    assert (info.name, info.version) == ("ts", "9")
    assert caps.fs.read_text_file is False and caps.terminal is False and caps.auth.terminal is True
