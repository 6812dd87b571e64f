"""The process under test for the client side of the backpressure tests.

``python bp_client.py STALL_S ROOT -- AGENT_CMD...``: connects acplink's client (default fs
handler, root ROOT) to the agent with ``PeerLimits(stalled_peer_timeout=STALL_S)``, opens a
session, then watches itself until the connection closes (hang guard 20 s): its RSS, its
write buffer, the inbound requests it holds back. Once the buffer is over its high-water
mark it makes one more call (a writer that must wait), and reports what that call raised.
Prints one JSON line.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from typing import Any

from acplink import PeerLimits, connect
from acplink.errors import AcpError


def limits(stall: float) -> PeerLimits:
    # (the code before the backpressure fix had no such limit: the same script measures it)
    if "stalled_peer_timeout" in inspect.signature(PeerLimits).parameters:
        return PeerLimits(stalled_peer_timeout=stall)
    return PeerLimits()


def rss_kb(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def buffered(transport: Any) -> int:
    """The client's write buffer (through asyncio's pipe when the transport cannot tell: the
    same script measures the code before the fix)."""
    if hasattr(transport, "write_buffer_size"):
        return int(transport.write_buffer_size())
    stdin = transport._stdin
    return int(stdin.get_write_buffer_size()) if stdin is not None else 0


async def main() -> None:
    stall, root = float(sys.argv[1]), sys.argv[2]
    agent = sys.argv[sys.argv.index("--") + 1:]
    report: dict[str, object] = {}
    async with connect(agent, limits=limits(stall), stderr="capture") as client:
        peer = client.conn.peer
        await client.new_session(cwd=root)
        report["rss_before_kb"] = rss_kb()
        max_rss = max_buf = max_held = 0
        call: asyncio.Task[object] | None = None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20.0
        while not peer.closed and loop.time() < deadline:
            max_rss = max(max_rss, rss_kb())
            max_buf = max(max_buf, buffered(peer.transport))
            max_held = max(max_held, len(peer.delivery.held if hasattr(peer, "delivery") else getattr(peer, "_held", ())))
            if call is None and buffered(peer.transport) > 4 * 1024 * 1024:
                call = asyncio.ensure_future(client.conn.call("_bp/ping", {}))
            await asyncio.sleep(0.02)
        report.update(closed=peer.closed, max_rss_kb=max_rss, peak_rss_kb=rss_kb("VmHWM"),
                      max_write_buffer=max_buf, max_held=max_held, call_started=call is not None)
        if call is not None:
            try:
                await asyncio.wait_for(call, 5.0)
                report["call_error"] = None
            except (AcpError, TimeoutError) as exc:
                report["call_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
