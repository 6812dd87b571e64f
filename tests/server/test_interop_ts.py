"""The official TypeScript SDK 2.4.0's remote clients (experimental/ws-client with `ws`,
experimental/http-client; our peer program tests/interop/js/remote_client.mjs) against
``acplink serve -- acplink demo-agent``, against the ASGI app under uvicorn, and against
``acplink serve --app`` with a ``PostgresStore`` (a flood, committed in groups)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from acplink.server import AcpServer

from .helpers import DEMO, children_of, env_without_token, peer_events, serve, serving, wait_no_children

JS = Path(__file__).resolve().parents[1] / "interop" / "js"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node not found on PATH"),
    pytest.mark.skipif(not (JS / "node_modules" / "ws").is_dir()
                       or not (JS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(),
                       reason="the TS SDK or ws is not installed: (cd tests/interop/js && npm ci)"),
    pytest.mark.parametrize("transport", ["ws", "http"]),
]


async def ts_client(url: str, transport: str, *args: str) -> list[dict[str, Any]]:
    assert NODE is not None
    return await peer_events(NODE, str(JS / "remote_client.mjs"), "--url", url, "--transport", transport, *args)


def chunks(events: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(e["update"]["content"]["text"] for e in events
                   if e["event"] == "update" and e["update"]["sessionUpdate"] == kind)


def ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] in ("stop", "error", "fatal")]


async def test_against_acplink_serve(transport: str, tmp_path: Path) -> None:
    """Token auth, a turn with a permission request (and file writes) and an error, cancel,
    and session/load on a fresh connection; each client's agent is gone once it closed."""
    env = {**env_without_token(), "ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    (tmp_path / "work").mkdir()
    cwd = str(tmp_path / "work")
    async with serve("--token", "tok", agent=DEMO, env=env) as served:
        url = served.urls[transport]
        refused = await ts_client(url, transport, "--token", "wrong", "--cwd", cwd)
        assert [e["event"] for e in refused] == ["fatal", "closed"]
        events = await ts_client(url, transport, "--token", "tok", "--cwd", cwd, "--bad-session",
                                 "--prompt", "write notes.txt hi", "--prompt", "hello")
        assert events[0]["event"] == "initialize" and events[0]["result"]["agentCapabilities"]["loadSession"]
        assert ends(events) == [
            {"event": "error", "code": -32002, "message": "unknown session 'no-such-session'"},
            {"event": "stop", "stopReason": "end_turn"}, {"event": "stop", "stopReason": "end_turn"}]
        assert {"event": "permission", "optionId": "allow"} in events
        assert (tmp_path / "work" / "notes.txt").read_text() == "hi\n"
        assert chunks(events).endswith("Wrote 3 characters to notes.txt.You said: hello")
        # the client closed: its agent process is gone (acplink serve promises 5 s)
        assert await wait_no_children(served.proc.pid, 5.0), children_of(served.proc.pid)

        first = await ts_client(url, transport, "--token", "tok", "--cwd", cwd, "--prompt", "remember me",
                                "--prompt", "slow 100", "--cancel-after", "1")
        assert ends(first) == [{"event": "stop", "stopReason": "end_turn"},
                               {"event": "stop", "stopReason": "cancelled"}]
        sid = next(e["sessionId"] for e in first if e["event"] == "session")
        second = await ts_client(url, transport, "--token", "tok", "--cwd", cwd, "--load", sid,
                                 "--prompt", "again")
        loaded = second.index({"event": "loaded", "sessionId": sid})
        assert "remember me" in chunks(second[:loaded], "user_message_chunk")  # the replay came first
        assert ends(second) == [{"event": "stop", "stopReason": "end_turn"}]
        assert chunks(second[loaded:]).endswith("You said: again")
        assert await wait_no_children(served.proc.pid, 5.0), children_of(served.proc.pid)


async def test_against_the_asgi_app(transport: str, tmp_path: Path) -> None:
    app = AcpServer(DEMO)
    async with serving(app) as url:
        if transport == "ws":
            url = "ws" + url.removeprefix("http")
        events = await ts_client(url, transport, "--cwd", str(tmp_path), "--prompt", "write a.txt x")
        assert ends(events) == [{"event": "stop", "stopReason": "end_turn"}]
        assert (tmp_path / "a.txt").read_text() == "x\n"


async def test_a_flood_from_an_app_with_a_postgres_store_served_in_process(
        transport: str, tmp_path: Path, pg_dsn: str) -> None:
    """``acplink serve --app`` with a ``PostgresStore`` (tests/agent/store_agent.py, counting its
    commits): the TS client gets a flood whole and in order, committed in groups, and a fresh
    TS client's ``session/load`` replays all of it."""
    import os

    agents = str(Path(__file__).resolve().parents[1] / "agent")
    env = {**env_without_token(), "ACPLINK_TEST_STORE": pg_dsn,
           "PYTHONPATH": os.pathsep.join(filter(None, [agents, os.environ.get("PYTHONPATH")]))}
    n = 3000
    flood = "".join(f"{i}," for i in range(n))
    async with serve(f"--{transport}", "--app", "store_agent:counted_app_from_env", agent=(), env=env) as served:
        url = served.urls[transport]
        events = await ts_client(url, transport, "--cwd", str(tmp_path), "--prompt", "commits",
                                 "--prompt", f"burst {n}", "--prompt", "commits")
        assert ends(events) == [{"event": "stop", "stopReason": "end_turn"}] * 3
        stops = [i for i, e in enumerate(events) if e["event"] == "stop"]
        before, burst, after = (chunks(events[a + 1:b]) for a, b in zip([-1, *stops], stops, strict=False))
        assert burst == flood
        assert 0 < int(after) - int(before) <= n // 20  # (one commit per update would be n)
        sid = next(e["sessionId"] for e in events if e["event"] == "session")
        loaded = await ts_client(url, transport, "--cwd", str(tmp_path), "--load", sid)
        assert flood in chunks(loaded)
