"""Where the official-SDK peer programs live and whether their environments are installed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEERS_PYTHON = ROOT / ".peers-venv" / "bin" / "python"
JS_DIR = HERE / "js"
NODE = shutil.which("node")

ACPLINK_AGENT = [sys.executable, str(HERE / "acplink_agent.py")]


def _py_missing() -> str | None:
    if not PEERS_PYTHON.exists():
        return ("official Python SDK peer venv missing: python3 -m venv .peers-venv && "
                ".peers-venv/bin/pip install agent-client-protocol==0.12.1")
    return None


def _ts_missing() -> str | None:
    if NODE is None:
        return "node not found on PATH (needed for the official TypeScript SDK peers)"
    if not (JS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        return "official TypeScript SDK not installed: (cd tests/interop/js && npm ci)"
    return None


#: name -> (agent command, client command, reason the environment is missing or None)
PEERS: dict[str, tuple[list[str], list[str], str | None]] = {
    "python-sdk": ([str(PEERS_PYTHON), str(HERE / "peers" / "py_agent.py")],
                   [str(PEERS_PYTHON), str(HERE / "peers" / "py_client.py")], _py_missing()),
    "ts-sdk": ([str(NODE), str(JS_DIR / "agent.mjs")],
               [str(NODE), str(JS_DIR / "client.mjs")], _ts_missing()),
}

AGENT_NAMES = {"python-sdk": "py-sdk-agent", "ts-sdk": "ts-sdk-agent"}


def peer_params() -> list[object]:
    """``pytest.param`` per official peer, skipped with the reason when its env is missing."""
    return [pytest.param(name, id=name, marks=[pytest.mark.skipif(reason is not None, reason=reason or "")])
            for name, (_, _, reason) in PEERS.items()]


def agent_cmd(name: str) -> list[str]:
    return PEERS[name][0]


def client_cmd(name: str) -> list[str]:
    return PEERS[name][1]
