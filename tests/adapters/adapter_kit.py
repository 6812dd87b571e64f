"""What the adapter tests share: the scripted agents' command lines, a turn's updates as JSON,
``acplink check`` and the official TypeScript SDK's client run against an agent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
JS = ROOT / "tests" / "interop" / "js"
NODE = shutil.which("node")

needs_ts_sdk = pytest.mark.skipif(
    NODE is None or not (JS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(),
    reason="node or the official TypeScript SDK missing: (cd tests/interop/js && npm ci)")


def agent_cmd(script: str) -> list[str]:
    return [sys.executable, str(HERE / script)]


def dump(update: Any) -> dict[str, Any]:
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[no-any-return]


async def updates_of(session: Any, text: str) -> list[dict[str, Any]]:
    """The updates of one prompt turn, which must end with ``end_turn``."""
    turn = session.prompt(text)
    updates = [dump(u) async for u in turn]
    assert turn.stop_reason == "end_turn"
    return updates


def chunks(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == kind]


async def load_refuses_an_unknown_session(client: Any, cwd: Path) -> None:
    from acplink import ResourceNotFound

    with pytest.raises(ResourceNotFound):
        await client.load_session("sess_never_seen", cwd=cwd)


def check_passes(agent: list[str], also: frozenset[str] = frozenset()) -> None:
    """``acplink check`` (every requirement, the cancellation ones with the prompt ``slow``)
    finds no "must" requirement failed, and passes the core ones, session/load and ``also``."""
    proc = subprocess.run([sys.executable, "-m", "acplink", "check", "--json", "--cancel-prompt", "slow", "--",
                           *agent], capture_output=True, text=True, timeout=400, cwd=ROOT)
    report = json.loads(proc.stdout)
    assert report["summary"]["must_failed"] == 0 and proc.returncode == 0, proc.stdout[-3000:]
    passed = {r["id"] for r in report["requirements"] if r["status"] == "pass"}
    assert {"INIT-001", "PROMPT-001", "CANCEL-001", "SCHEMA-001", "SESS-011", *also} <= passed, passed


def ts_client(agent: list[str], cwd: Path, *prompts: str) -> tuple[str, list[str], list[dict[str, Any]]]:
    """Run the TS SDK's client (tests/interop/js/client.mjs) with ``prompts``: the agent's
    reply text, the stop reasons, every update."""
    args = [a for p in prompts for a in ("--prompt", p)]
    proc = subprocess.run([str(NODE), str(JS / "client.mjs"), "--cwd", str(cwd), *args, "--", *agent],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    updates = [e["update"] for e in events if e["event"] == "update"]
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    return text, [e["stopReason"] for e in events if e["event"] == "stop"], updates
