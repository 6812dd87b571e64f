"""Smoke check of the benchmarks: ``benchmarks/run.py --quick`` (small N, one round) and every
client/agent pair interoperates. No timing is asserted: the figures of a quick run mean nothing.

The official-SDK pairs need .peers-venv (Python SDK 0.12.1) and tests/interop/js/node_modules
(TypeScript SDK 2.4.0, ``npm ci``); without them those pairs are skipped, with the reason. The
floor (benchmarks/peers/floor: asyncio + orjson) runs on this Python, so its pairs always run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "benchmarks" / "run.py"
PEERS = {
    "official-py": (ROOT / ".peers-venv" / "bin" / "python").exists() or None,
    "official-ts": (shutil.which("node") is not None
                    and (ROOT / "tests/interop/js/node_modules/@agentclientprotocol/sdk").exists()) or None,
    "floor": True,
}
REASONS = {
    "official-py": ".peers-venv missing (python3 -m venv .peers-venv && "
                   ".peers-venv/bin/pip install agent-client-protocol==0.12.1)",
    "official-ts": "node or tests/interop/js/node_modules missing ((cd tests/interop/js && npm ci))",
}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("bench") / "quick.json"
    impls = ["acplink", *(name for name, ok in PEERS.items() if ok)]
    proc = subprocess.run(
        [sys.executable, str(RUNNER), "--quick", "--impls", ",".join(impls), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert out.exists(), f"run.py wrote no results (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    runs: list[dict[str, Any]] = json.loads(out.read_text())
    assert proc.returncode == 0, f"run.py --quick failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return runs


def _failures(runs: list[dict[str, Any]]) -> list[str]:
    return [f"{r['check']} {r['pair']} n={r['n']}: {r['result'].get('error')}\n{r['stderr_tail']}"
            for r in runs if r["ok"] != r["expect_ok"]]


def test_acplink_pairs(quick_run: list[dict[str, Any]]) -> None:
    mine = [r for r in quick_run if r["client"] == r["agent"] == "acplink"]
    checks = {r["check"] for r in mine}
    assert {"flood", "rtt", "concurrent", "big", "bigup", "startup", "mixed", "memory"} <= checks
    assert not _failures(mine)
    # over the limit: a clean error naming the limit, not a hang or a crash
    over = [r for r in mine if r["check"] == "overlimit"]
    assert over and all("exceeds the limit" in str(r["result"].get("error")) for r in over)


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_peer_pairs(peer: str, quick_run: list[dict[str, Any]]) -> None:
    if not PEERS[peer]:
        pytest.skip(REASONS[peer])
    theirs = [r for r in quick_run if peer in (r["client"], r["agent"])]
    pairs = {(r["client"], r["agent"]) for r in theirs if r["check"] == "flood"}
    assert pairs == {(peer, peer), ("acplink", peer), (peer, "acplink")}
    for scenario in ("flood", "rtt", "concurrent", "big", "bigup", "startup"):
        assert {(r["client"], r["agent"]) for r in theirs if r["check"] == scenario and r["ok"]} == pairs, scenario
    assert not _failures(theirs)
    # the peer's client against acplink's agent over its limit: a clean error naming the limit
    over = [r for r in theirs if r["check"] == "overlimit"]
    assert over and all("exceeds the limit" in str(r["result"].get("error")) for r in over)
    if peer == "floor":  # the floor reports the contract's figures like every implementation
        floor = {r["check"]: r["result"] for r in theirs if r["client"] == r["agent"] == "floor"}
        assert floor["flood"]["count"] == floor["flood"]["n"] and floor["flood"]["rate"] > 0
        assert all(floor[c]["p50_us"] > 0 and floor[c]["p99_us"] > 0 for c in ("rtt", "concurrent"))
        assert floor["startup"]["agent_idle_maxrss_kb"] > 0 and floor["flood"]["agent_maxrss_kb"] > 0


@pytest.mark.skipif(PEERS["official-ts"] is None, reason=REASONS["official-ts"])
def test_remote_benchmark_pairs(tmp_path: Path) -> None:
    """``benchmarks/remote.py --quick``: both servers start (acplink's is ``acplink serve``'s own
    uvicorn setup, so a change there must keep the benchmark working) and every client→server
    pair runs flood and rtt over WebSocket and HTTP. No timing is asserted."""
    out = tmp_path / "remote.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "remote.py"), "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and out.exists(), f"remote.py --quick failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    runs: list[dict[str, Any]] = json.loads(out.read_text())
    seen = {(r["scenario"], r["transport"], r["pair"]) for r in runs if r.get("ok")}
    pairs = {"acplink→acplink", "ts→ts", "acplink→ts", "ts→acplink"}
    assert seen == {(sc, tr, p) for sc in ("flood", "rtt") for tr in ("ws", "http") for p in pairs}, runs
