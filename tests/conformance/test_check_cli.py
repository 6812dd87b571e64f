"""`acplink check` for an agent that cannot start (one line, exit 2), and its report: the
summary adds up, the time is the command's, the lines fit the width."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

from check_cases import DEMO

from acplink.conformance import Options, Report, run_checks
from acplink.conformance.requirements import requirement
from acplink.conformance.runner import RequirementResult

ACPLINK = [sys.executable, "-m", "acplink.cli.main"]


def _check(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPLINK, "check", *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_an_agent_that_exits_at_once_is_one_line() -> None:
    proc = _check("--", "false")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "acplink: error: the agent 'false' exited with code 1 before answering initialize\n"


def test_an_agent_reaped_late_is_not_a_time_out() -> None:
    # its output ends at once, its exit status comes 3 s later (a busy machine reaps late): not
    # "did not answer initialize within 60 s", which it was not given the time to do
    proc = _check("--", "sh", "-c", "exec 1>&-; sleep 3; exit 1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "acplink: error: the agent \"sh -c 'exec 1>&-; sleep 3; exit 1'\" exited with code 1 " \
        "before answering initialize\n"


def test_an_agent_that_dies_says_why() -> None:
    script = "import sys; print('missing API key', file=sys.stderr); sys.exit(3)"
    proc = _check("--", sys.executable, "-c", script)
    assert proc.returncode == 2 and proc.stdout == ""
    first, *rest = proc.stderr.splitlines()
    assert first.startswith("acplink: error: the agent ") and first.endswith(
        "exited with code 3 before answering initialize"), first
    assert rest == ["last stderr lines:", "  | missing API key"]


def test_a_silent_agent_meets_the_startup_limit() -> None:
    proc = _check("--startup-timeout", "0.5", "--", "sleep", "100")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("acplink: error: the agent 'sleep 100' did not answer initialize within 0.5 s "
                           "(--startup-timeout)\n")


def _result(req_id: str, status: str) -> RequirementResult:
    return RequirementResult(requirement(req_id), status)


def test_the_summary_adds_up_and_counts_every_level() -> None:
    results = [_result("INIT-001", "fail"), _result("INIT-002", "fail"), _result("INIT-004", "fail"),
               _result("TRANS-002", "fail"), _result("SESS-001", "pass"), _result("CAP-001", "skipped")]
    report = Report(["agent"], None, results, [], 12.34)
    line = report.summary()
    assert line == ("6 requirements: 1 passed, 4 failed (2 must, 1 should, 1 informational), "
                    "1 skipped in 12.3 s")
    total, passed, failed, must, should, info, skipped = map(int, re.findall(r"\d+", line)[:7])
    assert passed + failed + skipped == total and must + should + info == failed
    data = report.to_json()["summary"]
    assert data["failed"] == data["must_failed"] + data["should_failed"] + data["informational_failed"]
    assert Report(["agent"], None, results[4:], [], 0.0).summary() == \
        "2 requirements: 1 passed, 0 failed, 1 skipped in 0.0 s"


def test_a_real_report_fits_the_width_and_counts_the_whole_time(tmp_path: Path) -> None:
    opts = Options(command=DEMO, timeout=10, shutdown_bound=2, cwd=str(tmp_path))
    started = time.monotonic() - 1000  # as if the command had started long ago
    report = asyncio.run(run_checks(opts, ["initialize"], startup_timeout=30, started=started))
    assert report.duration >= 1000
    assert report.agent is not None and report.agent["name"]  # (from the start-up check)
    for width in (50, 80):
        text = report.to_text(verbose=True, width=width)
        assert max(map(len, text.splitlines())) <= width, text
        assert "initialize is answered with" in " ".join(text.split())
    assert report.to_text().splitlines()[-2].endswith(" s") and "in 10" in report.to_text()


def test_a_slow_starting_agent_gets_the_startup_bound_not_the_request_one(tmp_path: Path) -> None:
    """``initialize`` waits for the start-up bound (a fresh agent process may be slow to start,
    more so on a busy machine); every other request keeps the short request bound."""
    slow = tmp_path / "slow_agent.py"
    slow.write_text("import sys, time\n"
                    "time.sleep(2.5)\n"
                    "import runpy\n"
                    "sys.argv = ['acplink.demo']\n"
                    "runpy.run_module('acplink.demo', run_name='__main__')\n")
    opts = Options(command=[sys.executable, str(slow)], timeout=1.0, cwd=str(tmp_path))
    assert opts.init_timeout == 60.0
    report = asyncio.run(run_checks(opts, ["initialize"]))
    assert report.result("INIT-001").status == "pass", report.to_text()  # type: ignore[union-attr]
    short = Options(command=[sys.executable, str(slow)], timeout=1.0, startup_timeout=1.0, cwd=str(tmp_path))
    report = asyncio.run(run_checks(short, ["initialize"]))
    assert report.result("INIT-001").status == "fail", report.to_text()  # type: ignore[union-attr]


def test_default_parallelism_is_at_most_the_cpu_count() -> None:
    import os

    from acplink.cli.check import DEFAULT_JOBS

    assert 1 <= DEFAULT_JOBS <= (os.cpu_count() or 1)
