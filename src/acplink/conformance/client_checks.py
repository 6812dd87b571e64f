"""``acplink check-client``: run a client that launches the probe agent
(:mod:`.client_probe`), then judge what the probe saw against the client requirements."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .._tasks import TaskSet
from ..errors import AcpError, UsageError
from .probe import Outcome
from .requirements import Requirement, make_requirement
from .runner import CheckRun, Report, RequirementResult

__all__ = ["CLIENT_REQUIREMENTS", "ClientDidNotRun", "ClientOptions", "expand_agent", "run_client_check"]

PLACEHOLDER = "{agent}"


_c = make_requirement


CLIENT_REQUIREMENTS: tuple[Requirement, ...] = (
    _c("CLIENT-001", "must", "initialization", "initialize carries an integer protocolVersion and clientCapabilities"),
    _c("CLIENT-002", "must", "schema", "every message the client sends matches the ACP schema"),
    _c("CLIENT-003", "must", "session-setup", "session/prompt names a session that session/new returned"),
    _c("CLIENT-004", "must", "prompt-turn#3-agent-reports-output",
       "the client keeps working after every session/update kind (chunks, plan, tool calls, commands, info)"),
    _c("CLIENT-005", "should", "extensibility",
       "unknown update kinds, unknown fields, `_meta` and `_` notifications are tolerated"),
    _c("CLIENT-006", "must", "tool-calls#requesting-permission",
       "a permission request is answered with a valid outcome that selects only an offered option"),
    _c("CLIENT-007", "must", "file-system#reading-files",
       "fs/read_text_file inside the session cwd returns the file's content (when advertised)"),
    _c("CLIENT-008", "must", "file-system#writing-files",
       "fs/write_text_file inside the session cwd writes the file (when advertised)"),
    _c("CLIENT-009", "should", "file-system",
       "fs/read_text_file of a file outside the session's directory (plain or through `..`) is refused (security)"),
    _c("CLIENT-010", "must", "terminals",
       "the terminal lifecycle works: create, wait_for_exit, output, release (when advertised)"),
    _c("CLIENT-011", "should", "cancellation",
       "a request the agent cancels with $/cancel_request is still answered (result or -32800)"),
    _c("CLIENT-012", "must", "overview#communication-model", "unknown methods are answered with error -32601"),
    _c("CLIENT-013", "must", "initialization#prompt-capabilities",
       "the client sends only the content block types the agent advertised"),
)


class ClientDidNotRun(AcpError):
    """The client never launched the probe, exited first, or hung before a prompt: no verdict."""


@dataclass
class ClientOptions:
    command: list[str]  # with the {agent} placeholder
    timeout: float = 10.0  # bound of each probe request and of the wait for the first prompt
    launch_timeout: float = 30.0  # bound of the client's launching the probe agent
    cwd: str | None = None  # where the client runs (default: a fresh temporary directory)
    strict: bool = False
    probe: list[str] | None = None  # the probe agent's command line (default: this Python's module)
    #: seconds a client that launched the probe may take, beyond ``timeout``, to send its prompt
    prompt_grace: float = 20.0


def expand_agent(command: Sequence[str], agent: Sequence[str]) -> list[str]:
    """``command`` with the placeholder replaced: a last argument that is exactly ``{agent}``
    becomes the agent's words; anywhere else (``--agent '{agent}' exec``, ``--agent={agent}``,
    or written with its quotes ``"'{agent}'"``) it becomes one word, the shell-quoted command."""
    if not any(PLACEHOLDER in arg for arg in command):
        raise UsageError(f"the client command has no {PLACEHOLDER} placeholder for the probe agent's command")
    out: list[str] = []
    joined = shlex.join(agent)
    for i, arg in enumerate(command):
        if arg == PLACEHOLDER and i == len(command) - 1:
            out.extend(agent)
        elif arg in (f"'{PLACEHOLDER}'", f'"{PLACEHOLDER}"'):
            out.append(joined)
        else:
            out.append(arg.replace(PLACEHOLDER, joined))
    return out


def _read_events(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    events = []
    for line in lines:
        with contextlib.suppress(orjson.JSONDecodeError):
            events.append(orjson.loads(line))
    return events


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """End the client and everything it started (its process group): TERM, then KILL."""
    if proc.returncode is None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                await asyncio.wait_for(proc.wait(), 2.0)
                break
            except TimeoutError:
                continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the probe or other children left behind


async def _drain(stream: asyncio.StreamReader | None, tail: list[str]) -> None:
    if stream is None:
        return
    while line := await stream.readline():
        tail.append(line.decode("utf-8", "replace").rstrip())
        del tail[:-10]


async def run_client_check(opts: ClientOptions) -> Report:
    """Run the client, let the probe exercise it, and build the report (raises
    :class:`ClientDidNotRun` when no verdict is possible)."""
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="acplink-check-client-")
    report_path = os.path.join(workdir, "probe-report.jsonl")
    probe = [*(opts.probe or [sys.executable, "-m", "acplink.conformance.client_probe"]),
             "--report", report_path, "--timeout", f"{opts.timeout:g}"]
    cmd = expand_agent(opts.command, probe)
    if shutil.which(cmd[0]) is None and not os.path.exists(cmd[0]):
        shutil.rmtree(workdir, ignore_errors=True)
        raise UsageError(f"client command not found: {cmd[0]}")
    try:
        proc = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    cwd=opts.cwd or workdir, start_new_session=True)
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise ClientDidNotRun(f"cannot start the client: {exc}") from None
    out_tail: list[str] = []
    err_tail: list[str] = []
    drains = TaskSet("acplink-check-client-drains")
    drains.spawn(_drain(proc.stdout, out_tail))
    drains.spawn(_drain(proc.stderr, err_tail))
    try:
        events = await _watch(proc, report_path, opts, err_tail)
    finally:
        await _stop(proc)
        await drains.aclose()
        shutil.rmtree(workdir, ignore_errors=True)
    return _build(cmd, events, time.monotonic() - started, opts.strict, err_tail)


async def _watch(proc: asyncio.subprocess.Process, path: str, opts: ClientOptions,
                 err_tail: list[str]) -> list[dict[str, Any]]:
    """Wait for launched, then the first prompt, then done; each step bounded."""
    def stderr() -> str:
        return f"; its stderr: {' | '.join(err_tail[-3:])}" if err_tail else ""

    launch_bound = opts.launch_timeout
    turn_bound = 14 * opts.timeout + 10  # the probe's requests, each bounded by the timeout
    t0 = time.monotonic()
    stage = "launch"
    while True:
        events = _read_events(path)
        names = {e.get("event") for e in events}
        prompted = any(e.get("event") == "record" and isinstance(e.get("msg"), dict)
                       and e["msg"].get("method") == "session/prompt" for e in events)
        if "done" in names:
            await asyncio.sleep(0.3)
            return _read_events(path)
        if stage == "launch" and "launched" in names:
            stage, t0 = "prompt", time.monotonic()
        if stage == "prompt" and prompted:
            stage, t0 = "turn", time.monotonic()
        exited = proc.returncode is not None
        if stage == "launch" and exited:
            raise ClientDidNotRun(f"the client exited (code {proc.returncode}) without launching the probe agent"
                                  + stderr())
        if stage == "launch" and time.monotonic() - t0 > launch_bound:
            raise ClientDidNotRun(f"the client did not launch the probe agent within {launch_bound:g} s")
        if stage == "prompt" and (exited or "stdin-closed" in names):
            how = f"exited (code {proc.returncode})" if exited else "closed it"
            raise ClientDidNotRun(f"the client launched the probe agent but {how} without sending a prompt" + stderr())
        if stage == "prompt" and time.monotonic() - t0 > opts.timeout + opts.prompt_grace:
            raise ClientDidNotRun(f"the client launched the probe agent but sent no prompt within "
                                  f"{opts.timeout + opts.prompt_grace:g} s")
        if stage == "turn" and (exited or "stdin-closed" in names or time.monotonic() - t0 > turn_bound):
            return _read_events(path)  # the turn was cut short: judged on what the probe saw
        await asyncio.sleep(0.1)


def _build(cmd: list[str], events: list[dict[str, Any]], duration: float, strict: bool,
           err_tail: list[str]) -> Report:
    outcomes = [Outcome(str(e["requirement"]), str(e["status"]), str(e["detail"]), "client-probe")
                for e in events if e.get("event") == "outcome"]
    finished = any(e.get("event") == "done" for e in events)
    transcript = []
    for e in events:
        if e.get("event") == "record":
            body = orjson.dumps(e.get("msg")).decode()
            transcript.append(f"+{e.get('t', 0):7.3f}s {'←' if e.get('dir') == 'c2a' else '→'} "
                              f"{body[:400] + '…' if len(body) > 400 else body}")
        elif e.get("event") == "stdin-closed":
            transcript.append("        (the client closed the probe's stdin)")
    if err_tail:
        transcript += ["client stderr (last lines):", *(f"  | {line}" for line in err_tail)]
    by_req: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_req.setdefault(o.requirement, []).append(o)
    results = []
    for r in CLIENT_REQUIREMENTS:
        outs = by_req.get(r.id, [])
        if not outs:
            outs = [Outcome(r.id, "skipped" if finished else "fail",
                            "not exercised" if finished else "the turn ended before the probe got here (the "
                            "client closed the probe or exited)", "client-probe")]
        status = ("fail" if any(o.status == "fail" for o in outs) else
                  "pass" if any(o.status == "pass" for o in outs) else "skipped")
        results.append(RequirementResult(r, status, outs))
    name = next((e["msg"]["params"].get("clientInfo") for e in events if e.get("event") == "record"
                 and isinstance(e.get("msg"), dict) and e["msg"].get("method") == "initialize"
                 and isinstance(e["msg"].get("params"), dict)), None)
    client = {"name": name.get("name"), "version": name.get("version")} if isinstance(name, dict) else None
    return Report(cmd, client, results, [CheckRun("client-probe", duration, outcomes, transcript)], duration, strict,
                  tool="check-client", peer="client")
