"""A chain behind ``acplink serve``: a remote client (WebSocket) reaches a local conductor, its
proxies (one in process, one a process of its own) and the demo agent."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from proxy_raw import DEMO, PY, conduct, processes_with

from acplink import PermissionPolicy, connect, schema


async def _gone_but(marker: str, keep: int) -> list[int]:
    """The processes with ``marker`` once at most ``keep`` are left (or after 10 s)."""
    for _ in range(200):
        if len(pids := processes_with(marker)) <= keep:
            return pids
        await asyncio.sleep(0.05)
    return processes_with(marker)


async def test_a_remote_client_reaches_a_local_chain(tmp_path: Path) -> None:
    marker = f"ACPLINK_SERVE_CHAIN_TEST_{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k != "ACPLINK_TOKEN"}
    env.update({marker: "1", "ACPLINK_DEMO_STORE": str(tmp_path)})
    chain = conduct("acplink:passthrough", f"{PY} -m acplink proxy policy --deny edit", agent=DEMO)
    with open(tmp_path / "serve.log", "wb") as log:
        server = await asyncio.create_subprocess_exec(PY, "-m", "acplink", "serve", "--port", "0", "--ws", "--", *chain,
                                                      stdout=subprocess.PIPE, stderr=log, env=env)
    try:
        assert server.stdout is not None
        async with asyncio.timeout(30):
            url = (await server.stdout.readline()).decode().strip()
        assert url.startswith("ws://127.0.0.1:"), (tmp_path / "serve.log").read_text()
        async with connect(url, permission=PermissionPolicy.allow_all()) as client:
            assert client.agent_info is not None and client.agent_info.name == "acplink-demo"
            # serve, the conductor, the policy proxy, the agent
            assert len(processes_with(marker)) == 4
            session = await client.new_session(cwd=tmp_path)
            turn = session.prompt("hello")
            text = "".join([u.content.text async for u in turn if isinstance(u, schema.AgentMessageChunk)])
            assert turn.stop_reason == "end_turn" and text == "You said: hello"
            turn = session.prompt("write a.txt hi")  # the client allows everything; the chain's policy denies
            text = "".join([u.content.text async for u in turn if isinstance(u, schema.AgentMessageChunk)])
            assert text == "Permission denied: I did not write a.txt."
        assert not (tmp_path / "a.txt").exists()
        # the connection ended: its chain stopped, every component of it
        assert await _gone_but(marker, 1) == [server.pid]
        log_text = (tmp_path / "serve.log").read_text()
        assert "acplink policy: deny edit 'Write a.txt' (rule deny:edit;" in log_text
    finally:
        if server.returncode is None:
            server.terminate()
        await server.wait()
    assert await _gone_but(marker, 0) == []
