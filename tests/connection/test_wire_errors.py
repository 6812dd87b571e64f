"""Exact wire replies of an acplink agent (a real subprocess) to bad and edge-case input.

A raw JSON-RPC client writes exact bytes to the agent's stdin and reads its stdout.
"""

from __future__ import annotations

import orjson
from connhelpers import RawPeer


async def assert_alive(peer: RawPeer) -> None:
    reply = await peer.request("_acme/echo", {"still": "alive"})
    assert reply["result"] == {"still": "alive"}


async def test_invalid_json_line_is_parse_error_and_connection_continues(raw_agent: RawPeer) -> None:
    await raw_agent.initialize()
    await raw_agent.send(b'{"jsonrpc":"2.0","id":5,"method":"session/new",\n')
    reply = await raw_agent.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert "Parse error" in reply["error"]["message"]
    await raw_agent.send(b"\xff\xfe not utf-8\n")
    reply = await raw_agent.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32700
    await assert_alive(raw_agent)


async def test_batch_and_scalar_are_invalid_request(raw_agent: RawPeer) -> None:
    await raw_agent.initialize()
    for line, fragment in ((b'[{"jsonrpc":"2.0","id":1,"method":"_acme/echo"}]', "batch"),
                           (b"12345", "JSON object"), (b'"hello"', "JSON object")):
        await raw_agent.send(line + b"\n")
        reply = await raw_agent.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32600
        assert fragment in reply["error"]["message"]
    await assert_alive(raw_agent)


async def test_unknown_method_and_wrong_params(raw_agent: RawPeer) -> None:
    await raw_agent.initialize()
    reply = await raw_agent.request("session/frobnicate", {})
    assert reply["error"]["code"] == -32601 and "session/frobnicate" in reply["error"]["message"]
    reply = await raw_agent.request("session/new", {"cwd": 42, "mcpServers": []})
    err = reply["error"]
    assert err["code"] == -32602 and "$.cwd" in err["message"]
    assert err["data"]["errors"][0]["path"] == "$.cwd"
    reply = await raw_agent.request("session/prompt", {"sessionId": "s1", "prompt": [{"type": "text"}]})
    assert reply["error"]["code"] == -32602 and "$.prompt[0]" in reply["error"]["message"]
    assert "text" in reply["error"]["message"]
    await assert_alive(raw_agent)


async def test_session_new_before_initialize_is_refused(raw_agent: RawPeer) -> None:
    reply = await raw_agent.request("session/new", {"cwd": "/", "mcpServers": []})
    assert reply["error"]["code"] == -32600
    assert "before initialize" in reply["error"]["message"]
    await raw_agent.initialize()
    reply = await raw_agent.request("session/new", {"cwd": "/", "mcpServers": []})
    assert reply["result"]["sessionId"] == "s1"


async def test_extension_methods_keep_exact_names_and_meta_is_data(raw_agent: RawPeer) -> None:
    # extension requests and notifications reach handlers under their exact names (even before init)
    params = {"x": [1, 2], "_meta": {"trace": "abc"}}
    assert (await raw_agent.request("_acme/echo", params))["result"] == params
    await raw_agent.send({"jsonrpc": "2.0", "method": "_acme/note", "params": {"n": 1, "_meta": {"k": "v"}}})
    await raw_agent.send({"jsonrpc": "2.0", "method": "acme/note", "params": {"n": 2}})  # no prefix added
    assert (await raw_agent.request("_acme/notes"))["result"] == [{"n": 1, "_meta": {"k": "v"}}]
    for name in ("_foo", "_acme/echo2", "acme/echo"):
        reply = await raw_agent.request(name, {})
        assert reply["error"]["code"] == -32601, name
    # _meta on a typed method reaches the handler as data
    await raw_agent.initialize()
    reply = await raw_agent.request("session/new", {"cwd": "/", "mcpServers": [], "_meta": {"zed": {"a": 1}}})
    assert reply["result"]["_meta"] == {"seen": {"zed": {"a": 1}}}


async def test_plain_exception_in_handler_is_internal_error_without_details(raw_agent: RawPeer) -> None:
    await raw_agent.initialize()
    reply = await raw_agent.request("_test/boom", {})
    err = reply["error"]
    assert err["code"] == -32603
    text = orjson.dumps(err).decode()
    for leak in ("secret", "Traceback", "/", "agent.py", "RuntimeError"):
        assert leak not in text, (leak, text)
    await assert_alive(raw_agent)


async def test_cancel_request_cancels_the_handler_and_answers_minus_32800(raw_agent: RawPeer) -> None:
    await raw_agent.send({"jsonrpc": "2.0", "id": "slow-1", "method": "_test/sleep", "params": {"tag": "t1"}})
    await assert_alive(raw_agent)  # the slow handler is running concurrently
    await raw_agent.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "slow-1"}})
    reply = await raw_agent.recv()
    assert reply["id"] == "slow-1" and reply["error"]["code"] == -32800
    assert (await raw_agent.request("_test/cancelled"))["result"] == ["t1"]
    # cancelling an unknown or finished request is harmless
    await raw_agent.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "slow-1"}})
    await raw_agent.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": "junk"})
    await assert_alive(raw_agent)


async def test_oversized_request_is_answered_with_its_id_and_connection_continues() -> None:
    peer = await RawPeer.spawn("--max-size", "100000")
    try:
        await peer.initialize()
        big = b'{"jsonrpc":"2.0","id":77,"method":"_test/size","params":{"data":"' + b"x" * 3_000_000 + b'"}}\n'
        await peer.send(big)
        reply = await peer.recv()
        assert reply["id"] == 77 and reply["error"]["code"] == -32600
        assert "exceeds the limit of 100000 bytes" in reply["error"]["message"]
        # an oversized notification is dropped silently; the next request still works
        await peer.send(b'{"jsonrpc":"2.0","method":"_acme/note","params":{"d":"' + b"y" * 300_000 + b'"}}\n')
        reply = await peer.request("_test/size", {"data": "z" * 50_000})
        assert reply["result"] == {"size": 50_000}
        assert (await peer.request("_acme/notes"))["result"] == []
    finally:
        await peer.kill()


async def test_duplicate_request_id_while_running_is_refused(raw_agent: RawPeer) -> None:
    await raw_agent.send({"jsonrpc": "2.0", "id": 9, "method": "_test/sleep", "params": {"tag": "a"}})
    await raw_agent.send({"jsonrpc": "2.0", "id": 9, "method": "_test/sleep", "params": {"tag": "b"}})
    reply = await raw_agent.recv()
    assert reply["id"] == 9 and reply["error"]["code"] == -32600 and "duplicate" in reply["error"]["message"]
    await raw_agent.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 9}})
    reply = await raw_agent.recv()
    assert reply["id"] == 9 and reply["error"]["code"] == -32800


async def test_agent_exits_when_its_client_goes_away(raw_agent: RawPeer) -> None:
    await raw_agent.initialize()
    assert raw_agent.proc.stdin is not None
    raw_agent.proc.stdin.close()  # the client has gone
    rc = await raw_agent.close()  # hang guard inside: the agent must exit by itself
    assert rc == 0
