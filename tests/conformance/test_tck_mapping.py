"""Every v1 requirement of the official conformance kit (acp-tck) is covered by an acplink one;
every v2 one is covered or listed with the reason it is not."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from acplink.conformance import REQUIREMENTS
from acplink.conformance.requirements import tck_data, tck_requirements
from acplink.conformance.suites import suite_of

#: the requirements of ``--protocol 2`` (the v2 protocol object's requirement set)
V2_REQUIREMENTS = suite_of(2).requirements
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
    for protocol, ours in ((1, REQUIREMENTS), (2, V2_REQUIREMENTS)):
        by_id = {r.id: r for r in ours}
        for k in tck_requirements(protocol):
            if k.covered_by:
                best = max(order.index(by_id[a].level) for a in k.covered_by)
                assert best >= order.index(LEVEL[k.tier]), (protocol, k.id, k.tier, k.covered_by)


def test_every_v2_kit_id_is_mapped_or_has_a_reason() -> None:
    kit = tck_requirements(2)
    assert len(kit) == 106 and len({k.id for k in kit}) == 106
    assert all(re.fullmatch(r"ACP-[A-Z-]+-\d{3}", k.id) for k in kit)
    # exactly one of: covered by acplink requirements, or a reason why not
    assert [k.id for k in kit if bool(k.covered_by) == bool(k.not_covered)] == []
    assert set(tck_data()["v2"]["not_covered"]) <= {k.id for k in kit}
    assert {t for r in V2_REQUIREMENTS for t in r.tck} <= {k.id for k in kit}
    covered = {k.id for k in kit if k.covered_by}
    # the kit's checks acplink lacked and has now (issue 24)
    assert {"ACP-PATCH-203", "ACP-CANCEL-205", "ACP-LIST-202", "ACP-LIST-203", "ACP-DELETE-202",
            "ACP-JSONRPC-004", "ACP-SESSION-002"} <= covered
    assert len(covered) == 63
    data = tck_data()["v2"]
    assert re.fullmatch(r"[0-9a-f]{40}", data["source"]["commit"]) and data["source"]["path"] == \
        "src/tck/v2/requirements.py" and data["source"]["read"]
    assert {k["tier"] for k in data["requirements"]} == set(LEVEL)


def test_tck_ids_protocol_2_prints_the_v2_table() -> None:
    out = subprocess.run([sys.executable, "-m", "acplink.cli.main", "check", "--tck-ids", "--protocol", "2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 107 and lines[-1] == "63 of 106 v2 requirements of the official kit covered"
    assert any(re.fullmatch(r"ACP-PATCH-203\s+CAPABILITY\s+V2-PROMPT-006", line) for line in lines)
    assert any(re.fullmatch(r"ACP-BATCH-201\s+MANDATORY\s+\(not covered: JSON-RPC batches: .*\)", line)
               for line in lines)
    assert not any(line.startswith("ACP-RESUME-002 ") for line in lines)  # (a v1 id)
    data = json.loads(subprocess.run([sys.executable, "-m", "acplink.cli.main", "check", "--tck-ids", "--protocol",
                                      "2", "--json"], capture_output=True, text=True, timeout=60).stdout)
    assert {d["tck"] for d in data} == {k.id for k in tck_requirements(2)}
    assert all(d["acplink"] or d["not_covered"] for d in data)


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


def test_docs_list_every_v2_requirement_and_every_uncovered_kit_id() -> None:
    doc = (ROOT / "docs" / "tools.md").read_text()
    for r in V2_REQUIREMENTS:
        assert re.search(rf"\| `{r.id}` \| {r.level} \|.*\| {', '.join(r.tck)} \|", doc), r.id
    for k in tck_requirements(2):
        if not k.covered_by:
            assert f"`{k.id}`" in doc, k.id
