"""The requirement table: well-formed ids, and docs/tools.md lists every one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from acplink.conformance import REQUIREMENTS
from acplink.conformance.checks import CHECKS, MONITORED

ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_unique_and_well_formed() -> None:
    ids = [r.id for r in REQUIREMENTS]
    assert len(ids) == len(set(ids))
    for r in REQUIREMENTS:
        assert re.fullmatch(r"[A-Z]+-\d{3}", r.id), r.id
        assert r.level in ("must", "should", "informational")
        assert r.spec and not r.spec.startswith("/")
        assert r.url.startswith("https://agentclientprotocol.com/protocol/v1/")


def test_every_requirement_is_covered_by_a_check() -> None:
    covered = {req for c in CHECKS for req in (*c.requirements, *c.vouches)} | set(MONITORED)
    assert covered == {r.id for r in REQUIREMENTS}
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_docs_list_every_requirement() -> None:
    doc = (ROOT / "docs" / "tools.md").read_text()
    for r in REQUIREMENTS:
        assert re.search(rf"\| `{r.id}` \| {r.level} \|", doc), f"docs/tools.md does not list {r.id}"


def test_check_cli_json_and_exit_codes(tmp_path: Path) -> None:
    acplink = [sys.executable, "-m", "acplink.cli.main"]
    broken = Path(__file__).parent / "broken" / "agent.py"
    ok = subprocess.run([*acplink, "check", "--json", "-k", "INIT-00*", "--timeout", "5", "--cwd", str(tmp_path),
                         "--", sys.executable, str(broken)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    import json

    data = json.loads(ok.stdout)
    assert {r["id"] for r in data["requirements"]} >= {"INIT-001", "INIT-003"}
    assert data["summary"]["must_failed"] == 0
    bad = subprocess.run([*acplink, "check", "-k", "unknown-version", "--timeout", "5", "--cwd", str(tmp_path), "--",
                          sys.executable, str(broken), "--break", "echo-version"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 1
    assert "FAIL  INIT-003" in bad.stdout and "transcript of check 'unknown-version'" in bad.stdout
    missing = subprocess.run([*acplink, "check", "--", "no-such-agent-xyz"], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no-such-agent-xyz" in missing.stderr
