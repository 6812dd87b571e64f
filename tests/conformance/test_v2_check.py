"""``acplink check --protocol 2``: the v2 requirements pass on correct v2 agents (a raw one, the
official TypeScript SDK's v2 agent) and each deliberately broken v2 agent fails with the right id."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from check_cases import fast

from acplink.conformance import Report, run_checks
from acplink.conformance.suites import suite_of

#: the requirements of ``--protocol 2`` (the v2 protocol object's requirement set)
V2_REQUIREMENTS = suite_of(2).requirements
HERE = Path(__file__).resolve().parent
BROKEN_V2 = HERE / "broken" / "v2_agent.py"
JS = HERE.parent / "interop" / "js"
NODE = shutil.which("node")

#: --break NAME -> the requirement id it must fail
BROKEN_V2_CASES = {
    "no-receipt-id": "V2-PROMPT-001",
    "no-running": "V2-PROMPT-003",
    "idle-without-stop-reason": "V2-PROMPT-004",
    "updates-after-close": "V2-CLOSE-002",
    "ext-result": "V2-RPC-005",
    "same-message-id": "V2-PROMPT-006",
    "answer-cancel": "V2-RPC-006",
    "state-after-cancel": "V2-CANCEL-003",
    "list-ignores-cwd": "V2-LIST-001",
    "delete-keeps-listed": "V2-SESS-007",
    "require-mcp-servers": "V2-SESS-006",
    "resume-replays": "V2-SESS-008",
    "terminal-auth": "V2-AUTH-003",
    "multiline-error": "V2-RPC-008",
    "garbage-line": "V2-TRANS-001",
    "close-no-cancel": "V2-CLOSE-004",
    "fs-call": "V2-CAP-001",
    "reject-image": "V2-CONTENT-002",
}


@pytest.fixture(scope="module")
def v2_reports() -> dict[str, Report]:
    tmp = tempfile.mkdtemp(prefix="acplink-check-v2-")
    jobs = {"none": [sys.executable, str(BROKEN_V2)]}
    jobs.update({name: [sys.executable, str(BROKEN_V2), "--break", name] for name in BROKEN_V2_CASES})
    if NODE is not None and (JS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        jobs["ts-v2"] = [NODE, str(JS / "v2_agent.mjs")]

    async def main() -> list[Report]:
        limiter = asyncio.Semaphore(6)
        return await asyncio.gather(*(run_checks(fast(cmd, tmp, cancel_prompt="wait", protocol=2), limiter=limiter)
                                      for cmd in jobs.values()))

    try:
        return dict(zip(jobs, asyncio.run(main()), strict=True))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_every_v2_requirement_has_an_id_a_level_and_a_spec_reference() -> None:
    ids = [r.id for r in V2_REQUIREMENTS]
    assert len(ids) == len(set(ids)) and all(i.startswith("V2-") for i in ids)
    for r in V2_REQUIREMENTS:
        assert r.level in ("must", "should", "informational") and r.spec and r.title
        assert r.url.startswith("https://agentclientprotocol.com/protocol/v2/draft/")


def test_correct_raw_v2_agent_passes_every_requirement(v2_reports: dict[str, Report]) -> None:
    report = v2_reports["none"]
    assert report.count("fail") == 0, report.to_text()
    assert {r.requirement.id for r in report.results} == {r.id for r in V2_REQUIREMENTS}
    assert report.exit_code == 0 and report.agent == {"name": "broken-v2", "version": "1"}


def test_v2_results_carry_the_kits_ids(v2_reports: dict[str, Report]) -> None:
    by_id = {r["id"]: r for r in v2_reports["none"].to_json()["requirements"]}
    assert by_id["V2-PROMPT-001"]["tck"] == ["ACP-PROMPT-201"]
    assert by_id["V2-PROMPT-006"]["tck"] == ["ACP-PATCH-203"]
    assert set(by_id["V2-RPC-006"]["tck"]) == {"ACP-JSONRPC-003", "ACP-CANCEL-205"}


def test_official_ts_v2_agent_passes_every_must(v2_reports: dict[str, Report]) -> None:
    if "ts-v2" not in v2_reports:
        pytest.skip("node or the official TypeScript SDK is missing")
    report = v2_reports["ts-v2"]
    assert report.count("fail", "must") == 0, report.to_text()


@pytest.mark.parametrize("broken", sorted(BROKEN_V2_CASES))
def test_broken_v2_agent_fails_with_the_right_id(v2_reports: dict[str, Report], broken: str) -> None:
    report = v2_reports[broken]
    req_id = BROKEN_V2_CASES[broken]
    result = report.result(req_id)
    assert result is not None and result.status == "fail", report.to_text()
    assert report.exit_code == (1 if result.requirement.level == "must" else 0)
    entry = next(r for r in report.to_json()["requirements"] if r["id"] == req_id)
    assert entry["url"].startswith("https://agentclientprotocol.com/protocol/v2/draft/")
    assert entry["transcripts"] and any(entry["transcripts"].values())
    # nothing else fails but what follows from the breakage: the checks tell behaviours apart
    others = {r.requirement.id for r in report.results if r.status == "fail" and r.requirement.id != req_id}
    also = {"idle-without-stop-reason": {"V2-CANCEL-001", "V2-CANCEL-002", "V2-CLOSE-004"},
            "no-receipt-id": {"V2-SCHEMA-001", "V2-PROMPT-002", "V2-EXT-002"},  # (the receipt's messageId is required)
            "answer-cancel": {"V2-CANCEL-002"},
            "fs-call": {"V2-SCHEMA-001"}}  # (not a v2 message at all)  # (the same wrong answer, to a cancel of a running turn)
    assert others <= also.get(broken, set()), report.to_text()


def test_check_cli_protocol_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "acplink", "check", "--protocol", "2", "--cancel-prompt", "wait",
                           "-k", "v2-prompt", "--timeout", "5", "--cwd", str(tmp_path), "--",
                           sys.executable, str(BROKEN_V2), "--break", "no-running"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL  V2-PROMPT-003" in proc.stdout and "NOT conformant" in proc.stdout


def test_v1_check_judges_a_v2_answer_to_an_unknown_version_by_v2() -> None:
    # the v1 checker's unknown-version check asks a dual-version agent for a newer version: it
    # answers v2, and that initialize result (info, capabilities, v2 auth methods) is v2's schema
    from check_cases import DEMO

    report = asyncio.run(run_checks(fast(DEMO, tempfile.mkdtemp(prefix="acplink-check-uv-")), ["unknown-version"]))
    assert report.result("INIT-003").status == "pass", report.to_text()  # type: ignore[union-attr]
    assert report.count("fail") == 0, report.to_text()
