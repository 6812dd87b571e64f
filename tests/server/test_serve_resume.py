"""Resumable WebSocket streams through ``acplink serve`` (a subprocess) and ``acplink chat
--reconnect`` (another): a turn cut several times arrives whole, once, in order; a chat away
longer than the retention is told so and reopens its session (``session/load``)."""

from __future__ import annotations

import asyncio
import sys

from acplink import connect

from .cutting_proxy import UPDATES, CuttingProxy, random_cuts
from .helpers import serve

TURN = "thinking" + "".join(map(str, range(UPDATES))) + "done"


async def _read_until(stream: asyncio.StreamReader, needle: str, seen: list[str]) -> None:
    async with asyncio.timeout(60):  # (a hang guard)
        while needle not in "".join(seen):
            chunk = await stream.read(65536)
            assert chunk, f"end of output before {needle!r}: {''.join(seen)[-2000:]!r}"
            seen.append(chunk.decode(errors="replace"))


async def _chat(url: str, proxy: CuttingProxy, *, then: str | None = None) -> tuple[str, str, int]:
    """``chat --reconnect --url`` through the proxy: prompt ``count``, and after a reconnect
    ``then``; (stdout, stderr, exit status)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "acplink", "chat", "--reconnect", "--url", proxy.url,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[str] = []
    try:
        proxy.arm()
        proc.stdin.write(f"count {UPDATES}\n".encode())
        if then is not None:
            await _read_until(proc.stdout, "reconnected", seen)
            proc.stdin.write(f"{then}\n".encode())
        proc.stdin.close()
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.communicate()
    assert proc.returncode is not None
    return "".join(seen) + out.decode(), err.decode(), proc.returncode


async def test_chat_over_a_ws_cut_three_times_shows_the_whole_turn_once() -> None:
    seed, cuts, lost = random_cuts(800_000, 3)
    async with serve("--ws", "--retention-messages", str(2 * UPDATES), "--retention-seconds", "60",
                     "--keepalive", "1") as served:
        url = served.urls["ws"]
        async with connect(url, reconnect=True) as client:  # the retention is advertised as given
            caps = client.agent_capabilities
            extra = (caps.model_extra if caps is not None else None) or {}
            assert extra["transport"]["resumable"] == {"retentionMessages": 2 * UPDATES, "retentionSeconds": 60.0}
        async with CuttingProxy(url, cuts, lost, away=1) as proxy:
            out, err, status = await _chat(url, proxy)
    assert status == 0, err
    assert proxy.done == 3, f"seed {seed}: only {proxy.done} cuts happened"
    assert out.count(TURN) == 1, f"seed {seed}: {out[-500:]!r}"
    assert "connection lost" not in out and "Traceback" not in err


async def test_a_chat_away_longer_than_the_retention_is_told_and_reopens_its_session() -> None:
    async with serve("--ws", "--retention-messages", "20") as served:
        async with CuttingProxy(served.urls["ws"], [50_000], [60_000]) as proxy:
            out, err, status = await _chat(served.urls["ws"], proxy, then="hello")
    assert status == 0, err
    assert "connection lost" in out and "stream/resume_failed" in out and "no longer kept" in out
    assert "no longer holds what it sent while this chat was away" in out
    assert "not sent again" in out and out.count(f"> count {UPDATES}") == 1
    assert "reconnected; session s1 reopened" in out
    assert out.rstrip().endswith("thinkingdone")  # the next prompt, on the reopened session
    assert TURN not in out


def test_bad_retention_and_keepalive_values_are_usage_errors() -> None:
    import subprocess

    from .helpers import ACPLINK, env_without_token

    for bad in (["--retention-messages", "0"], ["--retention-seconds", "-1"], ["--keepalive", "0"]):
        r = subprocess.run([*ACPLINK, "serve", "--port", "0", *bad], capture_output=True, text=True, timeout=60,
                           env=env_without_token())
        assert r.returncode == 2, (bad, r.stderr)
        assert bad[0] in r.stderr and "Traceback" not in r.stderr
