"""Each deliberately broken agent fails `acplink check` with the right requirement id."""

from __future__ import annotations

import pytest
from check_cases import BROKEN_CASES, get_report

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
