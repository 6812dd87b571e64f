"""The older ``_proxy/*`` dialect: a proxy that knows only it is asked again in it after -32601 and
keeps it; what it receives is compared with a golden transcript (its documented shapes)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from proxy_raw import HERE, PROBE, PY, RawClient, conduct

GOLDEN = HERE / "golden" / "legacy_dialect.jsonl"


async def test_legacy_proxy_golden_transcript(tmp_path: Path) -> None:
    log = tmp_path / "legacy.jsonl"
    legacy = f"{PY} {HERE / 'components' / 'legacy_proxy.py'} {log}"
    async with RawClient(conduct("acplink:passthrough", legacy, agent=PROBE)) as c:
        result = await c.initialize()
        assert result["protocolVersion"] == 1 and result["agentInfo"] == {"name": "probe"}
        echo = {"x": 1, "_meta": {"k": "v"}}
        assert await c.call("_probe/echo", echo) == {"method": "_probe/echo", "params": echo}
        await c.notify("_probe/note", {"n": 1})
        for _ in range(100):
            if c.notes:
                break
            await asyncio.sleep(0.05)
        assert c.notes == [("_probe/noted", {"n": 1})]
    got = [json.loads(line) for line in log.read_text().splitlines()]
    if os.environ.get("ACPLINK_UPDATE_GOLDEN"):
        GOLDEN.write_text("".join(json.dumps(m, sort_keys=True) + "\n" for m in got))
    assert got == [json.loads(line) for line in GOLDEN.read_text().splitlines()]
