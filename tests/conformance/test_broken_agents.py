"""Each deliberately broken agent fails `acplink check` with the right requirement id."""

from __future__ import annotations

import pytest
from check_cases import BROKEN_CASES, SETUP_ERRORS, get_report

from acplink.conformance import Report, requirement


@pytest.mark.parametrize("broken", sorted(BROKEN_CASES))
def test_broken_agent_fails_with_the_right_id(reports: dict[str, Report | str], broken: str) -> None:
    _, req_id = BROKEN_CASES[broken]
    report = get_report(reports, f"broken:{broken}")
    result = report.result(req_id)
    assert result is not None, f"{req_id} not in the report"
    assert result.status == "fail", report.to_text()
    # the evidence names the check and carries its transcript
    data = report.to_json()
    entry = next(r for r in data["requirements"] if r["id"] == req_id)
    assert entry["transcripts"] and any(entry["transcripts"].values())
    if requirement(req_id).level == "must":
        assert report.exit_code == 1


def test_the_unbroken_raw_agent_passes(reports: dict[str, Report | str]) -> None:
    report = get_report(reports, "broken:none")
    assert report.count("fail", "must") == 0, report.to_text()
    assert report.exit_code == 0
    assert report.result("CANCEL-001").status == "pass"  # type: ignore[union-attr]


@pytest.mark.parametrize("broken", sorted(SETUP_ERRORS))
def test_a_failed_setup_is_an_error_with_the_agents_stderr(reports: dict[str, Report | str], broken: str) -> None:
    _, req_id = SETUP_ERRORS[broken]
    report = get_report(reports, f"broken:{broken}")
    result = report.result(req_id)
    assert result is not None and result.status == "error", report.to_text()
    assert any("session/new failed" in o.detail and "no model configured" in o.detail for o in result.outcomes)
    assert report.exit_code == 1 and report.to_json()["summary"]["errors"] >= 1
    assert f"ERR   {req_id}" in report.to_text()
    # a session/new that fails with and without _meta is a setup error, not a _meta failure
    assert report.result("RPC-011").status == "error"  # type: ignore[union-attr]


def test_an_error_without_id_is_named_and_never_answered(reports: dict[str, Report | str]) -> None:
    report = get_report(reports, "broken:error-without-id")
    result = report.result("RPC-005")
    assert result is not None and any("without an `id` member" in o.detail for o in result.outcomes)
    run = next(r for r in report.runs if r.name == "invalid-json")
    after = run.transcript[next(i for i, line in enumerate(run.transcript) if "Parse error" in line) + 1:]
    # the checker's next message is its own request, not an answer to the id-less error
    assert '"result"' not in after[0] and '"error"' not in after[0] and "ping_unknown" in after[0]
    assert any("closed the agent's stdin" in line for line in run.transcript)


def test_a_batch_is_a_should_finding(reports: dict[str, Report | str]) -> None:
    report = get_report(reports, "broken:crash-on-array")
    assert report.result("RPC-006").status == "fail"  # type: ignore[union-attr]
    assert requirement("RPC-006").level == "should"


def test_an_early_update_is_an_ordering_finding_not_an_unknown_session(reports: dict[str, Report | str]) -> None:
    report = get_report(reports, "broken:update-before-new")
    assert report.result("SESS-003").status == "fail"  # type: ignore[union-attr]
    assert report.result("PROMPT-003") is None or report.result("PROMPT-003").status != "fail"  # type: ignore[union-attr]
    assert report.exit_code == 0
