"""`acplink check` against the demo agent and the official SDKs' example agents."""

from __future__ import annotations

from check_cases import get_report

from acplink.conformance import REQUIREMENTS, Report


def test_demo_agent_is_conformant(reports: dict[str, Report | str]) -> None:
    report = get_report(reports, "demo")
    assert report.count("fail", "must") == 0, report.to_text()
    assert report.exit_code == 0
    assert report.agent and report.agent["name"] == "acplink-demo"
    # the demo advertises everything, so almost everything is exercised
    for req_id in ("INIT-001", "INIT-003", "SESS-011", "SESS-014", "CONTENT-002", "CANCEL-001", "CANCEL-003",
                   "RPC-004", "RPC-006", "RPC-010", "RPC-011", "SCHEMA-001", "SHUT-001"):
        assert report.result(req_id).status == "pass", (req_id, report.to_text())  # type: ignore[union-attr]
    assert {r.requirement.id for r in report.results} == {r.id for r in REQUIREMENTS}


def _official(reports: dict[str, Report | str], key: str) -> Report:
    report = get_report(reports, key)
    data = report.to_json()
    assert data["summary"]["passed"] > 20
    assert report.result("INIT-001").status == "pass"  # type: ignore[union-attr]
    assert report.result("PROMPT-001").status == "pass"  # type: ignore[union-attr]
    assert report.result("CANCEL-001").status == "pass"  # type: ignore[union-attr]
    # they advertise no session/load etc.: skipped, never passed
    assert report.result("SESS-011").status == "skipped"  # type: ignore[union-attr]
    assert "result:" in report.to_text()
    return report


def test_python_sdk_agent_report(reports: dict[str, Report | str]) -> None:
    _official(reports, "python-sdk")


def test_typescript_sdk_agent_report(reports: dict[str, Report | str]) -> None:
    _official(reports, "typescript-sdk")
