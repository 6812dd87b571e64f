"""The requirement table: well-formed ids, and docs/tools.md lists every one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from acplink.conformance import REQUIREMENTS
from acplink.conformance.probe import Options, Probe
from acplink.conformance.suites import PROBES, suite_of
from acplink.protocol.requirements import requirement_set

ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_unique_and_well_formed() -> None:
    ids = [r.id for r in REQUIREMENTS]
    assert len(ids) == len(set(ids))
    for r in REQUIREMENTS:
        assert re.fullmatch(r"[A-Z]+-\d{3}", r.id), r.id
        assert r.level in ("must", "should", "informational")
        assert r.spec and not r.spec.startswith("/")
        assert r.url.startswith("https://agentclientprotocol.com/protocol/v1/")


@pytest.mark.parametrize("version", [1, 2])
def test_every_requirement_is_covered_by_a_check(version: int) -> None:
    suite = suite_of(version)
    covered = {req for c in suite.checks for req in (*c.requirements, *c.vouches)} | set(suite.monitored)
    assert covered == {r.id for r in suite.requirements}
    assert len({c.name for c in suite.checks}) == len(suite.checks)
    assert set(suite.monitored) <= covered


def test_each_version_has_its_requirement_set_as_protocol_data() -> None:
    # the rows and the check table are the protocol object's data; the probes are shared: one
    # probe serves both versions where v1 has the same requirement in another form
    v1, v2 = requirement_set("acp-v1"), requirement_set("acp-v2-draft")
    assert v1.requirements == REQUIREMENTS and suite_of(2).rules is v2
    probes = {v: {c.name: c.probe_name for c in s.checks} for v, s in ((1, v1), (2, v2))}
    assert {*probes[1].values(), *probes[2].values()} <= set(PROBES)
    shared = set(probes[1].values()) & set(probes[2].values())
    assert shared == {"auth-methods", "shutdown"}
    by_name = {c.name: c for c in v1.checks} | {c.name: c for c in v2.checks}
    assert by_name["auth-methods"].roles["no_terminal"] == "AUTH-003"
    assert by_name["v2-auth-methods"].roles["no_terminal"] == "V2-AUTH-003"
    assert "types" not in by_name["auth-methods"].roles  # (v1 does not judge the auth method types)


def test_a_probe_reports_roles_as_the_check_tables_ids() -> None:
    probe = Probe(Options(command=["agent"]), "auth-methods")
    probe.roles = {"no_terminal": "AUTH-003"}
    probe.ok("no_terminal", "mapped")
    probe.fail("types", "a role this requirement set does not judge")
    probe.fail("RPC-010", "an id is reported as it is")
    assert [(o.requirement, o.status) for o in probe.outcomes] == [("AUTH-003", "pass"), ("RPC-010", "fail")]
    assert probe.reported("no_terminal") and not probe.reported("types")


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
