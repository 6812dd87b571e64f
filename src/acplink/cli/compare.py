"""``acplink prompt --agent A --agent B ... TEXT``: one prompt, several agents, side by side.

Each ``--agent`` is a registry ID or a command line (:func:`~acplink.cli.common.is_agent_command`).
Each agent runs in its own working copy of ``--cwd`` (in a git repository a ``git worktree`` at
``HEAD`` with the user's uncommitted work applied, :mod:`.compare_worktree`; elsewhere a
temporary copy; the user's tree only with ``--in-place``), all at once, behind the recorder (``acplink record``), so every run is a
trace, imported into the devtools database afterwards: ``acplink devtools`` shows them, and its
Diff view compares them. An agent that cannot start, fails or dies is reported in its column;
the others still run."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import os
import shlex
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson

from .._text import sanitize_for_terminal
from ..bridges.agent_holder import TurnReport
from ..client.client import connect
from ..client.permissions import PermissionPolicy
from ..errors import AcpError, TransportError
from ..transports.subprocess import SubprocessTransport
from .common import agent_argv, fail, is_agent_command, one_line, protocol_choice, registry_of
from .compare_worktree import GitRepo, WorktreeError, find_repo

__all__ = ["compare_usage_error", "run_compare"]

#: the exit status when some agent failed (or did not end its turn with end_turn)
EXIT_SOME_FAILED = 1


def compare_usage_error(args: argparse.Namespace) -> str | None:
    """What cannot go with several ``--agent`` (or the compare-only options without them)."""
    several = len(getattr(args, "agents", None) or []) > 1
    if not several:
        used = [f for f, v in (("--in-place", args.in_place), ("--keep", args.keep), ("--db", args.db is not None),
                               ("--no-record", args.no_record)) if v]
        if used:
            return f"{', '.join(used)} {'is' if len(used) == 1 else 'are'} for several agents (--agent A --agent B)"
        return None
    if args.url or args.mcp:
        return "--url and --mcp do not go with several --agent"
    if args.in_place and args.keep:
        return "--keep keeps the working copies: with --in-place there are none"
    return None


class _Run:
    """One agent's run: what the comparison shows."""

    def __init__(self, index: int, spec: str) -> None:
        self.index = index
        self.spec = spec
        self.name = spec if not is_agent_command(spec) else _short(agent_argv(spec))
        self.command: list[str] = []
        self.error: str | None = None
        self.report: TurnReport | None = None
        self.duration = 0.0
        self.files: list[dict[str, str]] = []
        self.workdir = ""
        #: how the working copy was made: "git worktree", "copy" or "in place"
        self.workcopy = ""
        self.worktree: Path | None = None  # (the worktree's root, to remove)
        self.trace = ""
        self.recording: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.report is not None and self.report.stop_reason == "end_turn"

    def as_dict(self, keep: bool) -> dict[str, Any]:
        report = self.report
        return {"agent": self.spec, "name": self.name, "command": self.command, "ok": self.ok, "error": self.error,
                "stopReason": report.stop_reason if report else None, "reply": report.text() if report else "",
                "toolCalls": list(report.tool_calls.values()) if report else [],
                "durationSeconds": round(self.duration, 3), "filesChanged": self.files,
                "workdir": self.workdir if keep else None, "workcopy": self.workcopy, "trace": self.trace or None,
                "recording": self.recording}


def _snapshot(root: Path) -> dict[str, str]:
    """relative path → content hash, for every file under ``root`` (``.git`` left out)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if name == ".git":  # (a worktree's link to its repository)
                continue
            path = Path(folder, name)
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if not path.is_symlink() else \
                    "link:" + os.readlink(path)
            except OSError:
                continue
            out[path.relative_to(root).as_posix()] = digest
    return out


def _changes(before: dict[str, str], after: dict[str, str]) -> list[dict[str, str]]:
    changes = [{"path": p, "change": "added"} for p in after.keys() - before.keys()]
    changes += [{"path": p, "change": "deleted"} for p in before.keys() - after.keys()]
    changes += [{"path": p, "change": "modified"} for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(changes, key=lambda c: c["path"])


async def _command(run: _Run, args: argparse.Namespace) -> tuple[list[str], dict[str, str] | None]:
    if is_agent_command(run.spec):
        return agent_argv(run.spec), None
    launch = await registry_of(args).launch_async(run.spec)
    return list(launch.command), dict(launch.env or {}) or None


async def _workcopy(run: _Run, args: argparse.Namespace, scratch: Path, repo: GitRepo | None) -> Path:
    """The folder ``run``'s agent works in: ``--cwd`` itself (``--in-place``), a worktree of its
    repository, or a copy (not in a repository, or the worktree could not be made)."""
    cwd = Path(args.cwd).resolve()
    if args.in_place:
        run.workcopy = "in place"
        return cwd
    dest = scratch / f"{run.index + 1}-{_safe(run.name)}"
    if repo is not None:
        try:
            work = await repo.add(dest)
        except (WorktreeError, OSError) as exc:
            print(f"acplink: {run.name}: no git worktree ({one_line(exc)}): a copy of {cwd} instead",
                  file=sys.stderr)
        else:
            run.workcopy, run.worktree = "git worktree", dest
            return work
    run.workcopy = "copy"
    await asyncio.to_thread(shutil.copytree, cwd, dest, symlinks=True)
    return dest


async def _run_one(run: _Run, args: argparse.Namespace, scratch: Path, policy: PermissionPolicy,
                   repo: GitRepo | None) -> None:
    work = await _workcopy(run, args, scratch, repo)
    run.workdir = str(work)
    before = await asyncio.to_thread(_snapshot, work)
    started = time.monotonic()
    try:
        run.command, env = await _command(run, args)
        argv = run.command
        if not args.no_record:
            run.trace = str(scratch / f"{run.index + 1}-{_safe(run.name)}.jsonl")
            argv = [sys.executable, "-m", "acplink", "record", "--out", run.trace, "--", *run.command]
        await _turn(run, argv, env, work, args, policy)
    except (AcpError, OSError) as exc:
        run.error = run.error or one_line(exc)
    finally:
        run.duration = time.monotonic() - started
        run.files = _changes(before, await asyncio.to_thread(_snapshot, work))


async def _turn(run: _Run, argv: list[str], env: dict[str, str] | None, work: Path, args: argparse.Namespace,
                policy: PermissionPolicy) -> None:
    opening = connect(argv, cwd=work, env=env, stderr="capture", permission=policy, debug=args.debug,
                      terminal=not args.no_terminal, fs=not args.no_fs, protocol=protocol_choice(args))
    try:
        async with asyncio.timeout(args.startup_timeout):
            client = await opening.__aenter__()
    except TimeoutError:
        await opening.__aexit__(None, None, None)
        run.error = f"the agent did not answer initialize within {args.startup_timeout:g} s"
        return
    except (AcpError, OSError) as exc:
        run.error = _start_error(exc, argv, run)
        await opening.__aexit__(None, None, None)
        return
    try:
        async with asyncio.timeout(args.timeout):
            if args.auth_method:
                await client.authenticate(args.auth_method)
            session = await client.new_session(str(work), additional_directories=args.add_dir)
            report = run.report = TurnReport(session.session_id)
            turn = session.prompt(args.text)
            async for item in turn:
                if item is not turn.receipt:
                    report.fold(session, item)
            await turn
            report.stop_reason = turn.stop_reason
            if turn.stop_reason != "end_turn":
                run.error = f"the turn ended with stop reason {turn.stop_reason!r}"
    except TimeoutError:
        run.error = f"the turn did not end within {args.timeout:g} s (--timeout)"
    except TransportError as exc:
        run.error = await _died(exc, client.transport, run)
    except AcpError as exc:
        run.error = f"the agent failed the prompt: {one_line(exc)}"
    finally:
        await opening.__aexit__(None, None, None)


def _start_error(exc: BaseException, argv: list[str], run: _Run) -> str:
    """Why an agent did not start, in its own words: the recorder in front of it says so on its
    stderr (``acplink: error: ...``); else the error, naming the agent, not the recorder."""
    text = one_line(exc)
    marker = "acplink: error: "
    if marker in text:
        return sanitize_for_terminal(text.rsplit(marker, 1)[1].strip())
    return sanitize_for_terminal(text.replace(shlex.join(argv), shlex.join(run.command)))


async def _died(exc: BaseException, transport: Any, run: _Run) -> str:
    if not isinstance(transport, SubprocessTransport):
        return one_line(exc)
    try:  # (the pipes close a moment before the exit status is known)
        code = await asyncio.wait_for(transport.wait(), 10.0)
    except (TimeoutError, AcpError):
        code = transport.returncode
    tail = transport.stderr_tail[-3:]
    how = f"exited with code {code}" if code is not None and code >= 0 else one_line(exc)
    return sanitize_for_terminal(f"the agent {shlex.join(run.command)!r} {how}" +
                                 ("; last stderr: " + " | ".join(tail) if tail else ""))


def _short(argv: list[str]) -> str:
    """A column title for a command line: the program's name and its arguments, file paths
    shortened to their names."""
    words = [os.path.basename(w) if "/" in w and not w.startswith("-") else w for w in argv]
    text = shlex.join(words)
    return text if len(text) <= 40 else text[:39] + "…"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40] or "agent"


def _record(runs: list[_Run], args: argparse.Namespace) -> Path | None:
    """Import every run's trace into the devtools database: its path (None: nothing recorded)."""
    traces = [r for r in runs if r.trace and os.path.exists(r.trace)]
    if args.no_record or not traces:
        return None
    from ..devtools.importer import import_trace
    from ..devtools.store import Store, default_db_path

    db = Path(args.db) if args.db else default_db_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    store = Store(db)
    try:
        for run in traces:
            run.recording = import_trace(store, run.trace, source=f"prompt --agent {run.spec}").conn
    finally:
        store.close()
    return db


def _diff_paths(runs: list[_Run]) -> list[str]:
    recorded = [r.recording for r in runs if r.recording is not None]
    return [f"/diff?a={recorded[0]}&b={other}" for other in recorded[1:]]


def _columns(runs: list[_Run], width: int) -> str:
    """The runs side by side, one column each."""
    gap = " │ "
    col = max(20, (width - len(gap) * (len(runs) - 1)) // len(runs))
    blocks = []
    for run in runs:
        lines = [run.name, "─" * min(col, max(len(run.name), 8))]
        status = "ok" if run.ok else "FAILED"
        stop = run.report.stop_reason if run.report else None
        lines.append(f"{status} · {run.duration:.2f} s" + (f" · {stop}" if stop else ""))
        if run.error:
            lines += textwrap.wrap(f"error: {run.error}", col) or [""]
        if run.report and run.report.text():
            lines.append("")
            for para in run.report.text().splitlines() or [""]:
                lines += textwrap.wrap(para, col) or [""]
        if run.report and run.report.tool_calls:
            lines += ["", "tool calls:"]
            for c in run.report.tool_calls.values():
                lines += textwrap.wrap(f"- {c['title']} ({c['kind']}): {c['status']}", col)
        lines += ["", "files changed:" if run.files else "files changed: none"]
        lines += [f"{c['change'][0].upper()} {c['path']}" for c in run.files]
        blocks.append([sanitize_for_terminal(line)[:col] for line in lines])
    rows = itertools.zip_longest(*blocks, fillvalue="")
    return "\n".join(gap.join(cell.ljust(col) for cell in row).rstrip() for row in rows)


async def _compare(args: argparse.Namespace) -> list[_Run]:
    runs = [_Run(i, spec) for i, spec in enumerate(args.agents)]
    seen: dict[str, int] = {}
    for run in runs:  # (the same agent twice: its columns told apart)
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run.name += f" #{seen[run.name]}"
    policy = PermissionPolicy.allow_all() if args.allow else PermissionPolicy.deny_all()
    repo = None if args.in_place else await find_repo(Path(args.cwd).resolve())
    scratch = Path(tempfile.mkdtemp(prefix="acplink-compare-"))
    try:
        await asyncio.gather(*(_run_one(run, args, scratch, policy, repo) for run in runs))
        await asyncio.to_thread(_record, runs, args)
    finally:
        if not args.keep:
            for run in runs:
                if repo is not None and run.worktree is not None:
                    await _forget(repo, run.worktree)
            await asyncio.to_thread(shutil.rmtree, scratch, True)
            for run in runs:
                run.trace = ""
    return runs


async def _forget(repo: GitRepo, worktree: Path) -> None:
    try:
        await repo.remove(worktree)
    except WorktreeError as exc:
        print(f"acplink: could not remove the git worktree {worktree}: {one_line(exc)}", file=sys.stderr)


def run_compare(args: argparse.Namespace) -> int:
    """Run ``args.text`` with every ``--agent`` (the exit status: 0 when every turn ended with end_turn)."""
    try:
        runs = asyncio.run(_compare(args))
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except (AcpError, OSError) as exc:
        return fail(one_line(exc))
    db = next((Path(args.db) if args.db else None for r in runs if r.recording is not None), None)
    recorded = any(r.recording is not None for r in runs)
    if recorded and db is None:
        from ..devtools.store import default_db_path

        db = default_db_path()
    diffs = _diff_paths(runs)
    if args.json:
        out = {"prompt": args.text, "agents": [r.as_dict(args.keep) for r in runs],
               "devtools": {"db": str(db), "diff": diffs} if recorded else None}
        sys.stdout.write(orjson.dumps(out).decode() + "\n")
    else:
        sys.stdout.write(_columns(runs, shutil.get_terminal_size((160, 24)).columns) + "\n")
        if recorded:
            where = f" --db {shlex.quote(str(db))}" if args.db else ""
            print(f"\nrecorded: acplink devtools{where}  (compare: {', '.join(diffs) or 'one recording'})",
                  file=sys.stderr)
        if args.keep:
            print("working copies: " + ", ".join(r.workdir for r in runs), file=sys.stderr)
            if any(r.worktree is not None for r in runs):
                print("(git worktrees: `git worktree remove --force PATH` removes one)", file=sys.stderr)
    sys.stdout.flush()
    return 0 if all(r.ok for r in runs) else EXIT_SOME_FAILED
