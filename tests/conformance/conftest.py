"""Runs every `acplink check` the conformance tests look at, once and concurrently: the demo
agent, each deliberately broken agent, and the official SDKs' example agents (when installed)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from typing import Any

import pytest
from check_cases import BROKEN, BROKEN_CASES, DEMO, SETUP_ERRORS, fast, official_agents

from acplink.conformance import Report, run_checks


@pytest.fixture(scope="session")
def reports() -> dict[str, Report | str]:
    tmp = tempfile.mkdtemp(prefix="acplink-check-")
    jobs: dict[str, Any] = {}
    jobs["demo"] = (fast(DEMO, tmp), None)
    jobs["broken:none"] = (fast([sys.executable, str(BROKEN)], tmp, cancel_prompt="wait"), None)
    for name, (patterns, _) in {**BROKEN_CASES, **SETUP_ERRORS}.items():
        jobs[f"broken:{name}"] = (fast([sys.executable, str(BROKEN), "--break", name], tmp,
                                       cancel_prompt="wait"), patterns)
    skipped: dict[str, str] = {}
    for name, cmd in official_agents().items():
        if isinstance(cmd, str):
            skipped[name] = cmd
        else:
            jobs[name] = (fast(cmd, tmp, cancel_prompt="wait"), None)

    async def main() -> list[Report | BaseException]:
        limiter = asyncio.Semaphore(max(4, min(12, 2 * (os.cpu_count() or 2))))
        return await asyncio.gather(*(run_checks(o, p, limiter=limiter) for o, p in jobs.values()),
                                    return_exceptions=True)

    results = asyncio.run(main())
    out: dict[str, Report | str] = dict(skipped)
    for key, res in zip(jobs, results, strict=True):
        if isinstance(res, BaseException):
            raise res
        out[key] = res
    shutil.rmtree(tmp, ignore_errors=True)
    return out
