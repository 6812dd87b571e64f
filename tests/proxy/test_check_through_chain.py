"""`acplink check` gives the demo agent the same verdicts alone and behind `acplink conduct` with
two pass-through proxies (the issue's "done when")."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

from proxy_raw import DEMO, conduct

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "conformance"))

from check_cases import fast

from acplink.conformance import run_checks


async def test_check_verdicts_alone_and_behind_two_passthrough_proxies(tmp_path: Path) -> None:
    chain = conduct("acplink:passthrough", "acplink:passthrough", agent=DEMO)
    limiter = asyncio.Semaphore(4)

    def opts(command: list[str]) -> object:
        # the same bounds for both; the conformance tests' short ones, with room for a loaded
        # machine (a chain is three processes where the agent alone is one)
        return dataclasses.replace(fast(command, str(tmp_path)), timeout=10.0, cancel_bound=5.0, shutdown_bound=5.0)

    alone, behind = await asyncio.gather(run_checks(opts(DEMO), limiter=limiter),  # type: ignore[arg-type]
                                         run_checks(opts(chain), limiter=limiter))  # type: ignore[arg-type]
    verdicts = {r.requirement.id: r.status for r in alone.results}
    assert {r.requirement.id: r.status for r in behind.results} == verdicts, behind.to_text()
    assert alone.exit_code == behind.exit_code == 0
    assert list(verdicts.values()).count("pass") > 50
