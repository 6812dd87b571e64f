"""``acplink check`` passes the session requirements of an app that writes no session code but
sets a store (``tests/agent/store_agent.py``): list, load, resume, close, delete, fork, all
advertised and answered by acplink from the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

AGENT = str(Path(__file__).with_name("store_agent.py"))


def test_acplink_check_passes_the_session_requirements(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "acplink", "check", "--cancel-prompt", "wait", "--json", "--cwd", str(tmp_path),
         "--", sys.executable, AGENT, str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout)
    status = {r["id"]: r["status"] for r in report["requirements"]}
    failed = {k: v for k, v in status.items() if v == "fail"}
    assert proc.returncode == 0 and not failed, (failed, proc.stderr[-2000:])
    for rid in ("SESS-010", "SESS-011", "SESS-012", "SESS-013", "SESS-014", "SESS-015", "SESS-016", "SESS-017",
                "SESS-018", "SESS-019", "SESS-020", "SESS-021"):
        assert status[rid] == "pass", (rid, status[rid])
