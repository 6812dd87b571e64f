"""`acplink check` gives the demo agent the same verdicts alone and behind `acplink conduct` with
two pass-through proxies (the issue's "done when")."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from proxy_raw import DEMO, conduct

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "conformance"))

from check_cases import fast

from acplink.conformance import run_checks


async def test_check_verdicts_alone_and_behind_two_passthrough_proxies(tmp_path: Path) -> None:
    chain = conduct("acplink:passthrough", "acplink:passthrough", agent=DEMO)
    limiter = asyncio.Semaphore(4)
    alone, behind = await asyncio.gather(run_checks(fast(DEMO, str(tmp_path)), limiter=limiter),
                                         run_checks(fast(chain, str(tmp_path)), limiter=limiter))
    verdicts = {r.requirement.id: r.status for r in alone.results}
    assert {r.requirement.id: r.status for r in behind.results} == verdicts, behind.to_text()
    assert alone.exit_code == behind.exit_code == 0
    assert list(verdicts.values()).count("pass") > 50
