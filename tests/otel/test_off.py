"""Off means off: a process that never configured OpenTelemetry gets connections without
telemetry (their peer's ``telemetry`` is None) and acplink imports no OpenTelemetry module, with
the extra installed or not; the API imported without an SDK changes nothing; an SDK configured
after the fact reports on the connections made from then on. Each case runs a real prompt turn
in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk")

TURN = """
import asyncio, sys
{setup}
from acplink import AgentApp, PromptContext, connect

app = AgentApp("a", "1.0")

@app.prompt
async def prompt(ctx: PromptContext) -> None:
    await ctx.send_text("hi")

async def main() -> None:
    async with connect(app) as client:
        session = await client.new_session(".")
        [u async for u in session.prompt("go")]
        print(type(client.connection.peer.telemetry).__name__)
    print(sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m] is not None)[:1])

asyncio.run(main())
"""

SDK = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
"""


def _run(setup: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", TURN.format(setup=setup)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_nothing_configured_nothing_imported() -> None:
    assert _run("") == ["NoneType", "[]"]


def test_not_installed() -> None:
    assert _run("sys.modules['opentelemetry'] = None") == ["NoneType", "[]"]


def test_the_api_without_an_sdk_is_off() -> None:
    assert _run("import opentelemetry.trace, opentelemetry.metrics") == ["NoneType", "['opentelemetry']"]


def test_an_sdk_turns_it_on() -> None:
    assert _run(SDK) == ["ConnectionTelemetry", "['opentelemetry']"]
