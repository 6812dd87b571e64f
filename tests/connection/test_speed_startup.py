"""Start-up: what a v1 agent imports before it answers ``initialize`` (a fresh process on stdio).

Each module is time at every start of every agent; the ones only another protocol version, a
v2 client or another transport needs are imported when first used."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

AGENT = textwrap.dedent("""
    import sys
    from acplink import AgentApp, run_agent

    app = AgentApp("startup-probe", "1")

    @app.initialize
    async def initialize(ctx):
        return ctx.app.initialize_json(meta={"modules": sorted(sys.modules)})

    run_agent(app)
""")

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}}

#: not on a v1 stdio agent's way to answering initialize
DEFERRED = {
    "acplink.agent._turns",  # the receipt lifecycle (versions whose prompt is answered with a receipt)
    "acplink.protocol.codec",  # the client side of a version that does not speak v1
    "acplink.protocol.initialize",  # the client's handshake
    "acplink.protocol.router",  # the version router (a v2 client asking a v1-only agent)
    "acplink.protocol.v2",
    "acplink.transports.memory",
    "acplink.transports.recording",
    "acplink.transports.subprocess",
}


def _modules_at_initialize(initialize: dict[str, object]) -> tuple[set[str], dict[str, object]]:
    out = subprocess.run([sys.executable, "-c", AGENT], input=json.dumps(initialize) + "\n",
                         capture_output=True, text=True, timeout=120)
    answer = json.loads(out.stdout.splitlines()[0])
    return set(answer["result"]["_meta"]["modules"]), answer["result"]


def test_a_v1_agent_answers_initialize_without_what_only_other_versions_and_transports_need() -> None:
    modules, result = _modules_at_initialize(INITIALIZE)
    assert result["protocolVersion"] == 1
    assert "acplink.transports.stdio" in modules  # (the probe sees what the agent imported)
    assert modules & DEFERRED == set()


def test_a_v2_initialize_still_reaches_the_router_and_is_answered_with_v1() -> None:
    modules, result = _modules_at_initialize({**INITIALIZE, "params": {
        "protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}}})
    assert result["protocolVersion"] == 1 and "acplink.protocol.router" in modules
