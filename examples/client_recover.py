"""A client that outlives its agent: ``connect(cmd, recover=True)``, then ``resume=``.

    python examples/client_recover.py [STORE_DIR]

Starts the demo agent (its sessions in STORE_DIR, default a new temporary directory), kills
it in the middle of a streamed reply, and goes on: the client restarts it, reopens the
session from the agent's store and reports what the crash interrupted (that prompt is not
sent again); the next prompt works. A second client, later, continues the same session
with ``resume=``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile

from acplink import Client, ConnectionClosed, connect


def agent(store: str) -> list[str]:
    return [sys.executable, "-m", "acplink", "demo-agent", "--store", store]


def kill_agent(client: Client) -> None:
    """Simulate a crash: SIGKILL the agent process."""
    pid = getattr(client.transport, "pid", None)
    if isinstance(pid, int):
        os.kill(pid, signal.SIGKILL)


async def main(store: str) -> None:
    async with connect(agent(store), recover=True) as client:
        assert client.recovery is not None
        session = await client.new_session()
        print("agent:", await session.prompt("hello").text())
        received = 0
        try:
            async for _update in session.prompt("slow 100"):
                received += 1
                if received == 5:
                    kill_agent(client)
        except ConnectionClosed:
            print(f"the agent died after {received} updates")
        report = await client.recovery.wait()
        assert report is not None
        print("restarted; the old one", report.reason.split("' ", 1)[-1])  # (after its command line)
        print("reopened with:", report.reopened[session.session_id])
        for turn in report.lost:
            print(f"interrupted: {turn.prompt!r}, {turn.received_updates} updates received, "
                  f"missing from the agent's history: {turn.missing_text!r}")
        print("agent:", await session.prompt("still there?").text())
        sid = session.session_id
    async with connect(agent(store), resume=sid) as client:
        assert client.resumed is not None
        print("resumed:", client.resumed.session_id == sid)
        print("agent:", await client.resumed.prompt("and now?").text())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()))
