"""The MCP polyfill proxy (``acplink proxy mcp-http``, ``acplink:mcp-http``): an agent whose MCP
client speaks only HTTP calls the MCP-over-ACP servers of the client and of the proxies before
it, over real pipes and a real loopback socket."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))

from proxy_raw import DEMO, HERE, PY, RawClient, conduct, processes_with
from test_mcp_interop import acplink_tools

from acplink import connect
from acplink.errors import RequestError
from acplink.mcp import McpServer

HTTP_AGENT = [PY, str(HERE / "components" / "http_mcp_agent.py")]
MCP_PROXY = f"{PY} {HERE / 'components' / 'mcp_proxy.py'}"
IN_PROCESS = "acplink:mcp-http"
OWN_PROCESS = f"{PY} -m acplink proxy mcp-http"


def client_tools() -> tuple[McpServer, list[str]]:
    """The client's MCP server: echo (with progress), fail (an inner error), hang (until
    cancelled; the list records each cancelled call)."""
    return acplink_tools()


async def _reply(session: Any, text: str) -> str:
    await session.prompt(text)
    message = session.state.last_agent_message
    assert message is not None
    return str(message.text)


@pytest.mark.parametrize(("protocol", "proxy"), [(1, IN_PROCESS), (2, OWN_PROCESS)], ids=["v1-in-process", "v2-own-process"])
async def test_an_http_only_agent_calls_the_clients_tools_through_the_polyfill(protocol: int, proxy: str,
                                                                                tmp_path: Path) -> None:
    tools, cancelled = client_tools()
    async with connect(conduct(proxy, agent=HTTP_AGENT), protocol=protocol) as client:
        assert client.protocol_version == protocol
        client.mcp.register("tools", tools)
        session = await client.new_session(cwd=tmp_path)
        # the client declared acp servers (the polyfill advertised acp); the agent got them over http
        # (on v2 the client also offers its workspace server: an HTTP-only agent gets its hands too)
        expected = ["http tools 127.0.0.1"] + (["http workspace 127.0.0.1"] if protocol == 2 else [])
        assert (await _reply(session, "servers")).splitlines() == expected
        assert await _reply(session, 'call tools echo {"text": "hi"}') == \
            "tools: echo,fail,hang; progress: 1,2; result: echo: hi"
        assert await _reply(session, "call tools fail {}") == "tools: echo,fail,hang; mcp-error: -32602 bad arguments"
        # the HTTP client cancelling its request cancels the provider's handler ($/cancel_request)
        assert await _reply(session, "hang tools") == "hang: aborted"
        for _ in range(200):
            if cancelled:
                break
            await asyncio.sleep(0.05)
        assert len(cancelled) == 1
        # a later session gets its own endpoint, and the first still works
        second = await client.new_session(cwd=tmp_path)
        assert await _reply(second, 'call tools echo {"text": "again"}') == \
            "tools: echo,fail,hang; progress: 1,2; result: echo: again"


async def _initialize(chain: list[str], protocol: int, store: Path) -> dict[str, Any]:
    params: dict[str, Any] = {"protocolVersion": protocol, "clientCapabilities": {}}
    if protocol == 2:
        params["info"] = {"name": "raw", "version": "1"}
    async with RawClient(chain, env={"ACPLINK_DEMO_STORE": str(store)}) as c:
        result: dict[str, Any] = await c.call("initialize", params)
    return result


@pytest.mark.parametrize("protocol", [1, 2])
async def test_the_polyfill_advertises_acp_only_over_http_mcp(protocol: int, tmp_path: Path) -> None:
    field, path = {1: ("agentCapabilities", ("mcpCapabilities",)), 2: ("capabilities", ("session", "mcp"))}[protocol]

    def mcp(result: dict[str, Any]) -> Any:
        node: Any = result[field]
        for key in path:
            node = node[key]
        return node

    bridged = await _initialize(conduct(IN_PROCESS, agent=HTTP_AGENT), protocol, tmp_path)
    direct = await _initialize(conduct(agent=HTTP_AGENT), protocol, tmp_path)
    assert "acp" not in mcp(direct)
    assert mcp(bridged) == {**mcp(direct), "acp": True if protocol == 1 else {}}
    # nothing else changed
    mcp(bridged).pop("acp")
    assert bridged == direct
    # an agent with native acp: the answer passes unchanged
    assert await _initialize(conduct(IN_PROCESS, agent=DEMO), protocol, tmp_path) == \
        await _initialize(conduct(agent=DEMO), protocol, tmp_path)


async def test_an_agent_with_native_acp_gets_the_declarations_unchanged(tmp_path: Path) -> None:
    tools, _ = client_tools()
    trace = tmp_path / "chain.jsonl"
    async with connect(conduct(IN_PROCESS, agent=DEMO, extra=("--trace", str(trace))),
                       env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        client.mcp.register("tools", tools)
        session = await client.new_session(cwd=tmp_path)
        assert await _reply(session, 'mcp echo {"text": "ping"}') == "echo: echo: ping"
    news = [e["params"] for e in _events(trace) if e.get("method") == "session/new" and e["type"] == "request"]
    assert len(news) == 2 and news[0] == news[1]  # client → proxy:0, proxy:0 → agent
    assert [s["type"] for s in news[1]["mcpServers"]] == ["acp"]


async def test_a_proxys_own_mcp_server_reaches_an_http_only_agent(tmp_path: Path) -> None:
    # [mcp_proxy (offers "proxy-tools" over acp), mcp-http] → the HTTP-only agent: the proxy's
    # mcp/message relayed by the polyfill is answered by the proxy before it, not the client
    async with connect(conduct(MCP_PROXY, OWN_PROCESS, agent=HTTP_AGENT)) as client:
        session = await client.new_session(cwd=tmp_path)
        assert await _reply(session, "servers") == "http proxy-tools 127.0.0.1"
        assert await _reply(session, 'call proxy-tools echo {"text": "hi"}') == \
            "tools: echo; progress: ; result: proxy echoes hi"


def _events(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]


async def _post(url: str, headers: dict[str, str]) -> int:
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
    return int(answer.status_code)


async def test_the_endpoint_is_loopback_needs_its_token_and_is_gone_after_close(tmp_path: Path) -> None:
    tools, _ = client_tools()
    trace = tmp_path / "chain.jsonl"
    marker = f"ACPLINK_TEST_MCP_HTTP_{id(tmp_path)}"
    async with connect(conduct(IN_PROCESS, agent=HTTP_AGENT, extra=("--trace", str(trace))),
                       env={marker: "1"}) as client:
        client.mcp.register("tools", tools)
        await client.new_session(cwd=tmp_path)
        news = [e["params"] for e in _events(trace) if e.get("method") == "session/new" and e["type"] == "request"]
        [declared] = news[-1]["mcpServers"]
        assert declared["type"] == "http" and declared["name"] == "tools"
        url = declared["url"]
        assert url.startswith("http://127.0.0.1:")
        [header] = declared["headers"]
        assert header["name"] == "Authorization" and header["value"].startswith("Bearer ")
        token = header["value"].removeprefix("Bearer ")
        assert len(token) >= 24 and token not in url  # unguessable, and never in the URL
        assert await _post(url, {}) == 401
        assert await _post(url, {"Authorization": "Bearer " + "x" * len(token)}) == 401
        assert await _post(url, {"Authorization": header["value"], "Origin": "http://evil.test"}) == 403
        assert await _post(url, {"Authorization": header["value"]}) == 200
        port = int(url.split(":")[2].split("/")[0])
    for _ in range(100):
        if not processes_with(marker):
            break
        await asyncio.sleep(0.05)
    assert processes_with(marker) == []
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


async def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    async with RawClient(conduct(IN_PROCESS, agent=HTTP_AGENT)) as c:
        await c.initialize()
        with pytest.raises(RequestError) as info:
            await c.call("session/new", {"cwd": str(tmp_path), "mcpServers": [{"type": "acp", "name": "x"}]})
        assert info.value.code == -32602
        assert "mcpServers[0]" in info.value.message and "mcp-http proxy cannot bridge it" in info.value.message


async def test_the_bridge_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        async with RawClient(conduct(f"{IN_PROCESS}={port}", agent=HTTP_AGENT)) as c:
            await c.initialize()
            with pytest.raises(RequestError) as info:
                await c.call("session/new", {"cwd": str(tmp_path),
                                             "mcpServers": [{"type": "acp", "name": "x", "serverId": "x-1"}]})
    assert info.value.code == -32603
    assert f"cannot listen on 127.0.0.1:{port}" in info.value.message
    assert "another process uses that port" in info.value.message


class RefusingClient(RawClient):
    """A client that declares an acp server and then refuses mcp/message (no MCP-over-ACP)."""

    async def handle_request(self, method: str, params: Any) -> bytes:
        if method == "mcp/message":
            self.asked.append((method, params))
            raise RequestError("Method not found: mcp/message", code=-32601)
        return await super().handle_request(method, params)


async def test_the_client_refusing_mcp_message_reaches_the_agent_as_an_error(tmp_path: Path) -> None:
    async with RefusingClient(conduct(IN_PROCESS, agent=HTTP_AGENT)) as c:
        await c.initialize()
        new = await c.call("session/new", {"cwd": str(tmp_path),
                                           "mcpServers": [{"type": "acp", "name": "ghost", "serverId": "ghost-1"}]})
        await c.call("session/prompt", {"sessionId": new["sessionId"],
                                        "prompt": [{"type": "text", "text": "call ghost echo {}"}]})
    [text] = [p["update"]["content"]["text"] for m, p in c.notes if m == "session/update"]
    # the agent's MCP client got the failure as a JSON-RPC error saying who refused what
    assert text.startswith("failed: MCPError: ")
    assert text.endswith("the client refused mcp/message for the MCP server 'ghost' "
                         "(-32601: Method not found: mcp/message)"), text
    method, params = c.asked[0]
    assert method == "mcp/message" and params["serverId"] == "ghost-1"
    assert params["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]  # as a native caller sends it


def test_the_cli_refuses_a_bad_port() -> None:
    import subprocess

    proc = subprocess.run([PY, "-m", "acplink", "proxy", "mcp-http", "--port", "70000"], capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert "port must be 0 (any free one) to 65535" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_example_runs() -> None:
    import subprocess

    example = HERE.parent.parent / "examples" / "proxy_mcp_http.py"
    proc = subprocess.run([PY, str(example)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["words.word_count says: 4"]


async def test_in_process_the_listener_and_its_tasks_are_gone_after_close(tmp_path: Path) -> None:
    from acplink.proxy import Component, Conductor, ProxyContext, mcp_http_proxy
    from acplink.transports.memory import memory_pair

    app = mcp_http_proxy()
    states: list[dict[str, Any]] = []

    @app.from_client("session/prompt")
    async def keep_state(ctx: ProxyContext, params: Any) -> Any:
        states.append(ctx.state)
        return await ctx.forward(params)

    tools, _ = client_tools()
    client_end, conductor_end = memory_pair()
    conductor = Conductor([Component(serve=app.serve, name="mcp-http"), HTTP_AGENT])
    serving = asyncio.ensure_future(conductor.serve(conductor_end))
    async with connect(client_end) as client:
        client.mcp.register("tools", tools)
        session = await client.new_session(cwd=tmp_path)
        assert await _reply(session, 'call tools echo {"text": "in"}') == \
            "tools: echo,fail,hang; progress: 1,2; result: echo: in"
        port = states[0]["acplink.mcp-http"].bridge.port
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # (listening)
    await asyncio.wait_for(serving, 15)
    assert states[0] == {}  # the polyfill's state was released by its on_close
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    left = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("acplink-mcp-http")]
    assert left == []
