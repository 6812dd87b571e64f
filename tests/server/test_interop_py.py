"""The official Python SDK 0.12.1's remote clients (acp.ws, acp.http; our peer program
tests/interop/peers/py_remote_client.py) against ``acplink serve -- acplink demo-agent``, with
a permission request. Over HTTP that client answers the permission request without
Acp-Session-Id: the server routes the answer by the request it answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .helpers import DEMO, env_without_token, peer_events, serve, wait_no_children

PEERS = Path(__file__).resolve().parents[1] / "interop" / "peers"
PEERS_PYTHON = Path(__file__).resolve().parents[2] / ".peers-venv" / "bin" / "python"

pytestmark = [
    pytest.mark.skipif(not PEERS_PYTHON.exists(), reason="official Python SDK peer venv missing: "
                       ".peers-venv/bin/pip install 'agent-client-protocol[http]==0.12.1'"),
    pytest.mark.parametrize("transport", ["ws", "http"]),
]


async def py_client(url: str, transport: str, *args: str) -> list[dict[str, Any]]:
    return await peer_events(str(PEERS_PYTHON), str(PEERS / "py_remote_client.py"), "--url", url,
                             "--transport", transport, *args)


async def test_a_turn_with_a_permission_request(transport: str, tmp_path: Path) -> None:
    env = {**env_without_token(), "ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    async with serve("--token", "tok", agent=DEMO, env=env) as served:
        url = served.urls[transport]
        refused = await py_client(url, transport, "--cwd", str(tmp_path))
        assert [e["event"] for e in refused] == ["fatal", "closed"]
        events = await py_client(url, transport, "--cwd", str(tmp_path), "--token", "tok",
                                 "--prompt", "write py.txt hello", "--prompt", "hi")
        assert [p["answer"] for p in events if p["event"] == "permission"] == ["allow"]
        assert [e for e in events if e["event"] in ("stop", "error", "fatal")] == [
            {"event": "stop", "stopReason": "end_turn"}] * 2
        assert (tmp_path / "py.txt").read_text() == "hello\n"
        assert await wait_no_children(served.proc.pid, 5.0)
