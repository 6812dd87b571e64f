"""Run the checks (concurrently, each on a fresh agent, each bounded in time) and build the report."""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import logging
import os
import shlex
import shutil
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._text import sanitize_for_terminal
from ..errors import AcpError, ConnectionClosed, PeerOutputNotJson, TransportError, UsageError
from ..protocol.initialize import agent_info
from ..transports.subprocess import describe_start_failure
from .checks import Check
from .probe import CheckAbort, Options, Outcome, Probe
from .requirements import Requirement
from .suites import agent_of, judge_traffic, suite_of

__all__ = ["AgentDidNotStart", "CheckRun", "ProgressListener", "Report", "RequirementResult", "preflight", "run_checks",
           "select_checks"]

#: told of each check as it starts (``"start"``, ``None``) and ends (``"done"``, its run), with
#: the number of checks done so far and the total: what ``acplink check`` shows as it goes
ProgressListener = Callable[[str, "Check", "CheckRun | None", int, int], None]

#: the order of the levels in the summary
_LEVELS = ("must", "should", "informational")


class AgentDidNotStart(AcpError):
    """The agent exited, or stayed silent, before answering ``initialize``: no check can run.
    The message is the start-up report (its last stderr lines on the following lines)."""


@dataclass
class CheckRun:
    name: str
    duration: float
    outcomes: list[Outcome]
    transcript: list[str]
    error: str | None = None


@dataclass
class RequirementResult:
    requirement: Requirement
    status: str  # pass | fail | skipped
    outcomes: list[Outcome] = field(default_factory=list)

    def to_json(self, runs: dict[str, CheckRun]) -> dict[str, Any]:
        r = self.requirement
        out: dict[str, Any] = {"id": r.id, "level": r.level, "spec": r.spec, "url": r.url, "title": r.title,
                               "status": self.status,
                               "evidence": [{"check": o.check, "status": o.status, "detail": o.detail}
                                            for o in self.outcomes]}
        out["tck"] = list(r.tck)
        if self.status in ("fail", "error"):
            out["transcripts"] = {o.check: runs[o.check].transcript for o in self.outcomes
                                  if o.status == self.status and o.check in runs}
        return out


@dataclass
class Report:
    command: list[str]
    agent: dict[str, Any] | None
    results: list[RequirementResult]
    runs: list[CheckRun]
    duration: float
    strict: bool = False
    tool: str = "check"  # the command that made the report, and what it judged
    peer: str = "agent"

    def count(self, status: str, level: str | None = None) -> int:
        return sum(1 for r in self.results if r.status == status and (level is None or r.requirement.level == level))

    @property
    def exit_code(self) -> int:
        if self.count("fail", "must") or self.count("error", "must"):
            return 1
        if self.strict and self.count("fail", "should"):
            return 1
        return 0

    def result(self, req_id: str) -> RequirementResult | None:
        return next((r for r in self.results if r.requirement.id == req_id), None)

    def to_json(self) -> dict[str, Any]:
        runs = {r.name: r for r in self.runs}
        return {
            "command": self.command,
            "agent": self.agent,
            "summary": {"passed": self.count("pass"), "failed": self.count("fail"), "skipped": self.count("skipped"),
                        "errors": self.count("error"),
                        "must_failed": self.count("fail", "must"), "should_failed": self.count("fail", "should"),
                        "informational_failed": self.count("fail", "informational"), "total": len(self.results),
                        "exit_code": self.exit_code, "duration_s": round(self.duration, 3)},
            "requirements": [r.to_json(runs) for r in self.results],
            "checks": [{"name": r.name, "duration_s": round(r.duration, 3), "error": r.error} for r in self.runs],
        }

    def summary(self) -> str:
        """``N requirements: P passed, F failed (M must, S should, I informational), K skipped in T s``."""
        failed = f"{self.count('fail')} failed"
        by_level = ", ".join(f"{self.count('fail', lvl)} {lvl}" for lvl in _LEVELS if self.count("fail", lvl))
        errors = f", {self.count('error')} errors (setup failed)" if self.count("error") else ""
        return (f"{len(self.results)} requirements: {self.count('pass')} passed, {failed}"
                f"{f' ({by_level})' if by_level else ''}{errors}, {self.count('skipped')} skipped in "
                f"{self.duration:.1f} s")

    def to_text(self, *, verbose: bool = False, width: int | None = None) -> str:
        """The report for a terminal; lines longer than ``width`` are wrapped (transcript lines:
        cut, ``to_json`` has them whole). Control characters are removed (what the agent sent
        is quoted); ``to_json`` keeps them."""
        runs = {r.name: r for r in self.runs}
        name = (self.agent or {}).get("name") or "?"
        lines: list[str] = []

        def add(text: str, indent: int = 0, hang: int = 2) -> None:
            text = sanitize_for_terminal(text)  # names, details and transcripts quote the agent
            if width is None or len(text) + indent <= width:
                lines.append(" " * indent + text)
                return
            lines.extend(textwrap.wrap(text, max(20, width), initial_indent=" " * indent,
                                       subsequent_indent=" " * (indent + hang), break_on_hyphens=False))

        def cut(text: str, indent: int) -> None:
            text = sanitize_for_terminal(text)
            room = max(20, (width or 0) - indent)
            lines.append(" " * indent + (text if width is None or len(text) <= room else text[:room - 1] + "…"))

        add(f"acplink {self.tool}: {' '.join(self.command)}", hang=4)
        add(f"{self.peer}: {name} {(self.agent or {}).get('version') or ''}".rstrip())
        lines.append("")
        mark = {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP", "error": "ERR "}
        for res in self.results:
            r = res.requirement
            add(f"{mark[res.status]}  {r.id:<12} {r.level:<13} {r.title}  [{r.spec}]", hang=6)
            shown = [o for o in res.outcomes if o.status == res.status] or res.outcomes
            if res.status != "pass" or verbose:
                for o in shown[:5]:
                    add(f"{o.check}: {o.detail}" if o.check else o.detail, 8)
            if res.status in ("fail", "error"):
                for check in dict.fromkeys(o.check for o in res.outcomes if o.status == res.status):
                    run = runs.get(check)
                    if run is None:
                        continue
                    add(f"transcript of check {check!r}:", 8)
                    for entry in run.transcript:
                        cut(entry, 10)
        lines.append("")
        add(self.summary())
        add("result: " + ("conformant (no \"must\" requirement failed)" if self.exit_code == 0 else "NOT conformant"))
        return "\n".join(lines)


def _matches(check: Check, pattern: str) -> bool:
    pat = pattern.lower()
    names = [check.name, *check.requirements, *check.vouches]
    glob = any(c in pat for c in "*?[")
    return any(fnmatch.fnmatch(n.lower(), pat) if glob else pat in n.lower() for n in names)


def select_checks(patterns: Sequence[str] | None, protocol: int = 1) -> list[Check]:
    checks = suite_of(protocol).checks
    if not patterns:
        return list(checks)
    return [c for c in checks if any(_matches(c, p) for p in patterns)]


async def _run_one(check: Check, opts: Options) -> tuple[CheckRun, dict[str, Any] | None]:
    probe = Probe(opts, check.name)
    probe.roles = check.roles
    start = time.monotonic()
    error: str | None = None
    budget = 4 * opts.timeout + opts.cancel_bound + opts.shutdown_bound + 5
    completed = False
    try:
        await probe.start()
        await asyncio.wait_for(check.fn(probe), budget)
        completed = True
    except CheckAbort as exc:  # the agent failed the check's setup: an error, with its stderr
        tail = probe.transport.stderr_tail[-5:] if probe.transport is not None else []
        error = f"setup failed: {exc}" + (f"; agent stderr: {' | '.join(tail)}" if tail else "")
        for req in check.requirements:
            if not probe.reported(req):
                probe.report(req, "error", error)
    except TimeoutError:
        error = f"the check exceeded its time budget of {budget:.0f} s"
        for req in check.requirements:
            if not probe.reported(req):
                probe.fail(req, error)
    except (ConnectionClosed, TransportError) as exc:
        error = f"{exc}; {probe.died()}"
        for req in check.requirements:
            if not probe.reported(req):
                probe.fail(req, f"the agent went away: {error}")
    except AcpError as exc:
        error = str(exc)
        for req in check.requirements:
            if not probe.reported(req):
                probe.fail(req, str(exc))
    except Exception as exc:  # a bug in the checker: never blame the agent for it
        error = f"checker error: {type(exc).__name__}: {exc}"
        if opts.debug:
            error += "\n" + traceback.format_exc()
        for req in check.requirements:
            if not probe.reported(req):
                probe.skip(req, error)
    finally:
        try:
            await asyncio.wait_for(probe.aclose(), opts.shutdown_bound + 10)
        except (TimeoutError, AcpError, OSError):
            pass
    outcomes = list(probe.outcomes)
    suite = suite_of(opts.protocol)
    found = judge_traffic(probe.records, suite, probe.check)
    outcomes.extend(found)
    failed = {o.requirement for o in found}
    if completed:
        for req in check.vouches:
            if req not in failed and req in suite.monitored:
                outcomes.append(Outcome(req, "pass", "no violation in this check's traffic", check.name))
    agent = agent_of(probe.records)
    run = CheckRun(check.name, time.monotonic() - start, outcomes, probe.transcript(), error)
    return run, agent


async def preflight(opts: Options, startup_timeout: float) -> dict[str, Any] | None:
    """Start the agent once and wait for its answer to ``initialize`` (its ``agentInfo``); raise
    :class:`AgentDidNotStart` when it exits first, stays silent for ``startup_timeout`` s, is
    not an ACP agent (output that is not JSON-RPC, our request echoed back), worded as every
    start-up failure (:meth:`SubprocessTransport.start_failure`). (An error answer is the
    checks' business: they report it.)"""
    probe = Probe(opts, "startup")
    try:
        try:
            await probe.start()
        except (AcpError, OSError) as exc:
            raise AgentDidNotStart(str(exc)) from None
        params = {"protocolVersion": opts.protocol, **suite_of(opts.protocol).initialize}
        try:
            answer = await probe.request("initialize", params, timeout=startup_timeout)
        except AcpError:  # it is gone already
            answer = None
        reason = probe.conn.peer.close_reason if probe.conn is not None else None
        transport = probe.transport
        if transport is not None and (isinstance(reason, PeerOutputNotJson) or transport.echoed_initialize()):
            transport.close_timeout = 0.1  # (not an agent: no grace for closing its input)
            raise AgentDidNotStart(transport.start_failure(reason))
        if answer is not None:
            info = agent_info(answer.get("result"))
            return {"name": info.get("name"), "version": info.get("version")} if isinstance(info, dict) else None
        # None from the request: its output ended, or the time ran out. Only the second is a
        # time-out: an agent that closed its output at once may take a moment to be reaped on
        # a busy machine (its exit code is worth waiting for; the output's end is known now)
        ended = transport is not None and probe.conn is not None and probe.conn.closed
        if not ended:
            raise AgentDidNotStart(f"the agent {shlex.join(opts.command)!r} did not answer initialize within "
                                   f"{startup_timeout:g} s (--startup-timeout)")
        assert transport is not None
        code = await transport.exit_code(timeout=10.0)
        raise AgentDidNotStart(transport.start_failure(reason, code))
    finally:
        try:
            await asyncio.wait_for(probe.aclose(), opts.shutdown_bound + 10)
        except (TimeoutError, AcpError, OSError):
            pass


async def run_checks(opts: Options, patterns: Sequence[str] | None = None, *, concurrency: int = 8,
                     limiter: asyncio.Semaphore | None = None, startup_timeout: float | None = None,
                     started: float | None = None, progress: ProgressListener | None = None) -> Report:
    """Run the selected checks against ``opts.command`` and build the report.

    ``concurrency`` checks run at once (``limiter``: a semaphore shared by several runs instead).
    With ``startup_timeout``, the agent is first started once (:func:`preflight`): an agent that
    cannot answer ``initialize`` raises :class:`AgentDidNotStart` instead of failing every check.
    ``started``: the ``time.monotonic()`` the report's duration counts from (default: now).
    ``progress``: told of each check as it starts and ends (see :data:`ProgressListener`).
    """
    start = time.monotonic() if started is None else started
    if not opts.command:
        raise UsageError("no agent command given")
    exe = opts.command[0]
    if shutil.which(exe) is None and not os.path.exists(exe):
        raise AgentDidNotStart(describe_start_failure(shlex.join(opts.command), None, program=exe,
                                                      spawn_error=FileNotFoundError(2, "not found", exe)))
    checks = select_checks(patterns, opts.protocol)
    if not checks:
        raise UsageError(f"no check matches {' '.join(patterns or [])!r}")
    logging.getLogger("acplink").setLevel(logging.CRITICAL)  # the checker provokes warnings on purpose
    with tempfile.TemporaryDirectory(prefix="acplink-check-") as scratch:
        return await _run_all(opts, checks, scratch, limiter or asyncio.Semaphore(concurrency), startup_timeout,
                              start, progress)


#: the environment variable naming the demo agent's session store
DEMO_STORE_ENV = "ACPLINK_DEMO_STORE"


def _scratch_opts(opts: Options, scratch: str, name: str) -> Options:
    """``opts`` for one agent process whose stores acplink controls (the demo agent's session
    store) are a fresh folder of ``scratch``: the checker never writes into the user's stores."""
    store = os.path.join(scratch, "".join(c if c.isalnum() or c in "-_" else "_" for c in name))
    os.makedirs(store, exist_ok=True)
    return dataclasses.replace(opts, env={**opts.env, DEMO_STORE_ENV: store})


async def _run_all(opts: Options, checks: list[Check], scratch: str, sem: asyncio.Semaphore,
                   startup_timeout: float | None, start: float, progress: ProgressListener | None) -> Report:
    known = None
    if startup_timeout is not None:
        async with sem:
            known = await preflight(_scratch_opts(opts, scratch, "startup"), startup_timeout)

    finished = 0

    async def one(c: Check) -> tuple[CheckRun, dict[str, Any] | None]:
        nonlocal finished
        async with sem:
            if progress is not None:
                progress("start", c, None, finished, len(checks))
            done = await _run_one(c, _scratch_opts(opts, scratch, c.name))
        finished += 1
        if progress is not None:
            progress("done", c, done[0], finished, len(checks))
        return done

    done = await asyncio.gather(*(one(c) for c in checks))
    runs = [r for r, _ in done]
    agent = next((a for _, a in done if a), known)
    by_req: dict[str, list[Outcome]] = {}
    for run in runs:
        for o in run.outcomes:
            by_req.setdefault(o.requirement, []).append(o)
    wanted = {req for c in checks for req in (*c.requirements, *c.vouches)} | set(by_req)
    results = []
    for r in suite_of(opts.protocol).requirements:
        if r.id not in wanted:
            continue
        outs = by_req.get(r.id, [])
        if any(o.status == "fail" for o in outs):
            status = "fail"
        elif any(o.status == "error" for o in outs):
            status = "error"
        elif any(o.status == "pass" for o in outs):
            status = "pass"
        else:
            status = "skipped"
            if not outs:
                outs = [Outcome(r.id, "skipped", "not exercised", "")]
        results.append(RequirementResult(r, status, outs))
    return Report(list(opts.command), agent, results, runs, time.monotonic() - start, opts.strict)
