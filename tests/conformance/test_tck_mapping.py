"""Every v1 requirement of the official conformance kit (acp-tck) is covered by an acplink one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from acplink.conformance import REQUIREMENTS
from acplink.conformance.requirements import tck_requirements

ROOT = Path(__file__).resolve().parents[2]
LEVEL = {"MANDATORY": "must", "CAPABILITY": "must", "ADVISORY": "should", "INFORMATIONAL": "informational"}


def test_every_v1_kit_id_is_mapped() -> None:
    kit = tck_requirements()
    assert len(kit) == 56 and len({k.id for k in kit}) == 56
    assert all(re.fullmatch(r"ACP-[A-Z-]+-\d{3}", k.id) for k in kit)
    assert [k.id for k in kit if not k.covered_by] == []
    # no acplink requirement names a kit id that is not in the vendored list
    known = {k.id for k in kit}
    assert {t for r in REQUIREMENTS for t in r.tck} <= known


def test_the_vendored_list_names_its_source() -> None:
    data = json.loads((ROOT / "src" / "acplink" / "conformance" / "tck_ids.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{40}", data["source"]["commit"]) and data["source"]["path"].endswith(".py")
    assert {k["tier"] for k in data["requirements"]} == set(LEVEL)


def test_levels_follow_the_kit_tiers() -> None:
    """Some acplink requirement covering each kit id is at least as strict as the kit's tier."""
    order = ["informational", "should", "must"]
    by_id = {r.id: r for r in REQUIREMENTS}
    for k in tck_requirements():
        best = max(order.index(by_id[a].level) for a in k.covered_by)
        assert best >= order.index(LEVEL[k.tier]), (k.id, k.tier, k.covered_by)


def test_tck_ids_command_and_readme_figure() -> None:
    out = subprocess.run([sys.executable, "-m", "acplink.cli.main", "check", "--tck-ids"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 57 and lines[-1] == "56 of 56 v1 requirements of the official kit covered"
    assert any(re.fullmatch(r"ACP-RESUME-002\s+CAPABILITY\s+SESS-018", line) for line in lines)
    data = json.loads(subprocess.run([sys.executable, "-m", "acplink.cli.main", "check", "--tck-ids", "--json"],
                                     capture_output=True, text=True, timeout=60).stdout)
    assert {d["tck"] for d in data} == {k.id for k in tck_requirements()}
    assert "all 56 v1 requirements of the official kit" in (ROOT / "README.md").read_text()
