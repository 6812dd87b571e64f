"""An acplink agent for the backpressure tests (``python bp_echo_agent.py STALL_S``): an
AgentApp with one extension request, ``_bp/echo``, that answers its params (as big as they
came). On exit it writes ``bp_echo_agent: maxrss_kb=N`` (its peak RSS, VmHWM) to stderr."""

from __future__ import annotations

import inspect
import sys
from typing import Any

from acplink import AgentApp, Context, PeerLimits, run_agent

app = AgentApp("bp-echo", "0")


def limits(stall: float) -> PeerLimits:
    # (the code before the backpressure fix had no such limit: the same script measures it)
    if "stalled_peer_timeout" in inspect.signature(PeerLimits).parameters:
        return PeerLimits(stalled_peer_timeout=stall)
    return PeerLimits()


@app.ext_request("_bp/echo")
async def echo(ctx: Context[Any]) -> Any:
    return ctx.params


if __name__ == "__main__":
    run_agent(app, limits=limits(float(sys.argv[1])))
    # VmHWM, not getrusage's ru_maxrss: that one keeps the peak of the process that forked us
    with open("/proc/self/status") as f:
        peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    print(f"bp_echo_agent: maxrss_kb={peak}", file=sys.stderr, flush=True)
