"""`acplink check-client`: passes acplink's own `prompt`, fails each broken raw client with the
right requirement id, and gives one line and exit 2 when the client cannot be judged."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acplink.conformance.client_checks import (
    CLIENT_REQUIREMENTS,
    ClientDidNotRun,
    ClientOptions,
    expand_agent,
    run_client_check,
)
from acplink.conformance.runner import Report
from acplink.errors import UsageError

CLIENT = Path(__file__).parent / "broken" / "client.py"
ACPLINK = [sys.executable, "-m", "acplink.cli.main"]

#: broken client behaviour → the requirement id that must fail
BROKEN_CLIENTS = {
    "bad-option": "CLIENT-006",
    "fs-wrong-content": "CLIENT-007",
    "no-reply-unknown": "CLIENT-012",
    "ignore-cancelled": "CLIENT-011",
    "image-prompt": "CLIENT-013",
    "crash-on-unknown-update": "CLIENT-005",
    "bad-session": "CLIENT-003",
    "serve-outside": "CLIENT-009",
}


@pytest.fixture(scope="module")
def client_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    cwd = str(tmp_path_factory.mktemp("check-client"))
    jobs = {"prompt": [*ACPLINK, "prompt", "--allow", "probe", "--", "{agent}"],
            "none": [sys.executable, str(CLIENT), "--", "{agent}"]}
    for name in BROKEN_CLIENTS:
        jobs[name] = [sys.executable, str(CLIENT), "--break", name, "--", "{agent}"]

    async def main() -> list[Report]:
        sem = asyncio.Semaphore(4)

        async def one(cmd: list[str]) -> Report:
            async with sem:
                return await run_client_check(ClientOptions(cmd, timeout=3.0, launch_timeout=30.0, cwd=cwd))

        return await asyncio.gather(*(one(c) for c in jobs.values()))

    return dict(zip(jobs, asyncio.run(main()), strict=True))


@pytest.mark.parametrize("name", ["prompt", "none"])
def test_correct_clients_pass_every_requirement(client_reports: dict[str, Report], name: str) -> None:
    report = client_reports[name]
    assert report.exit_code == 0 and report.count("fail") == 0, report.to_text()
    # acplink prompt advertises fs and terminals: their checks ran
    assert {r.requirement.id for r in report.results if r.status == "pass"} >= {
        "CLIENT-004", "CLIENT-006", "CLIENT-007", "CLIENT-008", "CLIENT-010", "CLIENT-011", "CLIENT-012"}


@pytest.mark.parametrize("broken", sorted(BROKEN_CLIENTS))
def test_each_broken_client_fails_with_the_right_id(client_reports: dict[str, Report], broken: str) -> None:
    report = client_reports[broken]
    result = report.result(BROKEN_CLIENTS[broken])
    assert result is not None and result.status == "fail", report.to_text()
    data = report.to_json()
    entry = next(r for r in data["requirements"] if r["id"] == BROKEN_CLIENTS[broken])
    assert entry["transcripts"]["client-probe"]  # the evidence carries the wire transcript
    if result.requirement.level == "must":
        assert report.exit_code == 1


def test_the_placeholder_becomes_words_or_one_word() -> None:
    agent = ["python", "-m", "probe", "--report", "/tmp/a b.jsonl"]
    assert expand_agent(["prompt", "hi", "--", "{agent}"], agent) == ["prompt", "hi", "--", *agent]
    one = "python -m probe --report '/tmp/a b.jsonl'"
    assert expand_agent(["acpx", "--agent", "{agent}", "exec", "x"], agent) == ["acpx", "--agent", one, "exec", "x"]
    assert expand_agent(["c", "'{agent}'"], agent) == ["c", one]
    assert expand_agent(["c", "--agent={agent}"], agent) == ["c", f"--agent={one}"]
    with pytest.raises(UsageError):
        expand_agent(["c", "--agent"], agent)


@pytest.mark.parametrize(("client", "launch", "says"), [
    (["false", "{agent}"], "2", "exited (code 1) without launching the probe agent"),
    ([sys.executable, "-c", "import time; time.sleep(60)", "{agent}"], "2", "did not launch the probe agent within 2 s"),
])
def test_a_client_that_cannot_be_judged_is_one_line_and_exit_2(client: list[str], launch: str, says: str) -> None:
    t = time.monotonic()
    out = subprocess.run([*ACPLINK, "check-client", "--timeout", "1", "--launch-timeout", launch, "--", *client],
                         capture_output=True, text=True, timeout=90)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.count("\n") == 1 and says in out.stderr, out.stderr
    assert time.monotonic() - t < 60  # bounded (a generous bound, not a timing assertion)


#: a client that launches the probe agent, then never prompts
SILENT_CLIENT = [sys.executable, "-c", "import subprocess, sys, time; p = subprocess.Popen(sys.argv[1:]); time.sleep(60)",
                 "{agent}"]


async def test_a_client_that_never_prompts_is_no_verdict() -> None:
    # (the same ClientDidNotRun as above, which the CLI shows as one line and exit 2; run in
    # process with a short prompt_grace instead of waiting for the default 20 s)
    with pytest.raises(ClientDidNotRun, match="launched the probe agent but sent no prompt within 2 s"):
        await asyncio.wait_for(run_client_check(ClientOptions(command=SILENT_CLIENT, timeout=1, launch_timeout=30,
                                                              prompt_grace=1)), 60)


def test_json_report_and_requirement_table() -> None:
    out = subprocess.run([*ACPLINK, "check-client", "--json", "--timeout", "3", "--", sys.executable, str(CLIENT),
                          "--break", "bad-option", "--", "{agent}"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert {r["id"] for r in data["requirements"]} == {r.id for r in CLIENT_REQUIREMENTS}
    assert data["summary"]["must_failed"] == 1
    doc = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text()
    for r in CLIENT_REQUIREMENTS:
        assert f"| `{r.id}` | {r.level} |" in doc, r.id


def test_a_client_serving_files_outside_the_session_is_flagged_with_the_path(client_reports: dict[str, Report]) -> None:
    """CLIENT-009 is a failed "should" (security) naming the path served, plain and through `..`;
    clients that refuse such reads (acplink prompt, the correct raw client) pass it."""
    result = client_reports["serve-outside"].result("CLIENT-009")
    assert result is not None and result.requirement.level == "should" and result.status == "fail"
    detail = " ".join(o.detail for o in result.outcomes if o.status == "fail")
    assert "security" in detail and "served /" in detail and "/outside.txt and " in detail and "/../" in detail
    for name in ("prompt", "none"):
        ok = client_reports[name].result("CLIENT-009")
        assert ok is not None and ok.status == "pass", client_reports[name].to_text()
        assert "refused" in ok.outcomes[0].detail
    strict = Report(**{**client_reports["serve-outside"].__dict__, "strict": True})
    assert strict.exit_code == 1
