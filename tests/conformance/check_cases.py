"""What the conformance tests run: the agents, the broken behaviours and their requirement ids."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink.conformance import Options, Report

ROOT = Path(__file__).resolve().parents[2]
BROKEN = Path(__file__).parent / "broken" / "agent.py"
DEMO = [sys.executable, "-m", "acplink.demo"]
PEERS_PY = ROOT / ".peers-venv" / "bin" / "python"
PY_AGENT = ROOT / "tests" / "interop" / "peers" / "py_agent.py"
JS_DIR = ROOT / "tests" / "interop" / "js"

#: broken behaviour → (checks to run (-k), the requirement id that must fail)
BROKEN_CASES: dict[str, tuple[list[str], str]] = {
    "updates-after-response": (["prompt"], "PROMPT-002"),
    "no-stop-reason": (["prompt"], "PROMPT-001"),
    "bad-stop-reason": (["prompt"], "PROMPT-001"),
    "ghost-session-update": (["prompt"], "PROMPT-003"),
    "tool-update-unknown": (["prompt"], "PROMPT-004"),
    "invalid-update": (["prompt"], "SCHEMA-001"),
    "no-reply-unknown": (["unknown-method"], "RPC-001"),
    "ext-silent": (["extensions"], "RPC-002"),
    "ext-null-result": (["extensions"], "RPC-016"),
    "fs-without-cap": (["capabilities"], "CAP-001"),
    "terminal-without-cap": (["capabilities"], "CAP-002"),
    "ignore-cancel": (["cancel"], "CANCEL-001"),
    "cancel-end-turn": (["cancel"], "CANCEL-001"),
    "late-exit": (["shutdown"], "SHUT-001"),
    "id-zero-null": (["ids"], "RPC-010"),
    "crash-on-array": (["batch"], "RPC-006"),
    "crash-on-invalid-json": (["invalid-json"], "RPC-004"),
    "invalid-params-ok": (["invalid-params"], "RPC-008"),
    "reject-meta": (["meta"], "RPC-011"),
    "echo-version": (["unknown-version"], "INIT-003"),
    "version-error": (["unknown-version"], "INIT-003"),
    "update-before-new": (["session-new"], "SESS-003"),
    "error-without-id": (["invalid-json"], "RPC-005"),
    "answer-notification": (["notifications"], "RPC-013"),
    "terminal-auth": (["auth-methods"], "AUTH-003"),
    "resume-replays": (["session-resume"], "SESS-018"),
    "close-no-cancel": (["close-running"], "SESS-021"),
    "load-late-history": (["session-load"], "SESS-016"),
    "list-null": (["session-list"], "SESS-019"),
    "delete-unknown-error": (["session-delete"], "SESS-020"),
    "multiline-error": (["unknown-method"], "RPC-014"),
    "extra-root-key": (["prompt"], "SCHEMA-003"),
    "bad-utf8": (["prompt"], "TRANS-001"),
    "bool-config": (["config-options"], "CONFIG-003"),
    "bad-current-mode": (["modes"], "MODE-001"),
}

#: broken behaviour → (checks, the requirement that must be an error: its check could not set up)
SETUP_ERRORS: dict[str, tuple[list[str], str]] = {
    "new-fails": (["prompt", "meta"], "PROMPT-001"),
}


def official_agents() -> dict[str, list[str] | str]:
    """name → command, or the reason it is unavailable."""
    out: dict[str, list[str] | str] = {}
    out["python-sdk"] = ([str(PEERS_PY), str(PY_AGENT)] if PEERS_PY.exists()
                         else f"{PEERS_PY} missing (python3 -m venv .peers-venv && "
                              ".peers-venv/bin/pip install agent-client-protocol==0.12.1)")
    node = shutil.which("node")
    if node is None:
        out["typescript-sdk"] = "node is not installed"
    elif not (JS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        out["typescript-sdk"] = "tests/interop/js/node_modules missing (cd tests/interop/js && npm ci)"
    else:
        out["typescript-sdk"] = [node, str(JS_DIR / "agent.mjs")]
    return out


def fast(command: list[str], cwd: str, **kw: Any) -> Options:
    opts = Options(command=command, timeout=4.0, cancel_bound=2.0, shutdown_bound=1.5, settle=0.2,
                   cwd=cwd, env={"ACPLINK_DEMO_STORE": os.path.join(cwd, ".demo-store")}, **kw)
    return opts


def get_report(reports: dict[str, Report | str], key: str) -> Report:
    rep = reports[key]
    if isinstance(rep, str):
        pytest.skip(f"{key}: {rep}")
    return rep
