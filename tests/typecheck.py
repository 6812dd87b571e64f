"""Type-check user code as users do: ``mypy --strict`` without the pydantic plugin, and
pyright in strict mode, each run once over every file that the tests check.

The files: the examples, every Python snippet of the docs (``doc_snippets``), and the cases
of ``tests/typing_cases`` (lines marked ``# error`` must be reported, all others clean).
:func:`results` writes them to one temporary folder and runs both checkers once per test
session (with pytest-xdist, once per run: the first worker to ask runs them, the others read its
results); the tests look up their file's diagnostics in it.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from doc_snippets import ROOT, snippets

EXAMPLES = ROOT / "examples"
CASES = Path(__file__).resolve().parent / "typing_cases"
TIMEOUT = 600  # generous: both checkers over every file, on a loaded 2-core machine

#: the timeout of a test that asks for :func:`results`: the first one runs both checkers (at once,
#: each bounded by TIMEOUT), and under pytest-xdist another worker's test may first wait for them
#: (the suite's default per-test timeout is shorter)
WAITS_FOR_RESULTS = pytest.mark.timeout(2 * TIMEOUT + 60)

MYPY_INI = """\
[mypy]
strict = True
python_version = 3.11
"""

PYRIGHT_CONFIG = {"typeCheckingMode": "strict", "pythonVersion": "3.11"}


def have_node() -> bool:
    """pyright runs on node (its PyPI package fetches the npm package at first use)."""
    return shutil.which("node") is not None


@dataclass
class Results:
    folder: Path
    #: file name → [(line, message)] per checker
    mypy: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    pyright: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    pyright_ran: bool = False

    def errors(self, name: str) -> dict[str, list[tuple[int, str]]]:
        out = {"mypy": self.mypy.get(name, [])}
        if self.pyright_ran:
            out["pyright"] = self.pyright.get(name, [])
        return out


def files() -> dict[str, str]:
    """Every file to check: name → source."""
    out = {p.name: p.read_text() for p in sorted(EXAMPLES.glob("*.py"))}
    out.update({f"case_{p.name}": p.read_text() for p in sorted(CASES.glob("*.py"))})
    out.update({f"{s.name}.py": s.source() for s in snippets()})
    return out


def start_mypy(folder: Path, names: list[str]) -> subprocess.Popen[str]:
    (folder / "mypy.ini").write_text(MYPY_INI)
    return subprocess.Popen(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-error-summary",
         "--show-error-codes", "--no-pretty", "--cache-dir", str(folder / ".mypy_cache"), *names],
        cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_mypy(proc: subprocess.Popen[str]) -> dict[str, list[tuple[int, str]]]:
    stdout, stderr = _communicate(proc)
    out: dict[str, list[tuple[int, str]]] = {}
    for line in stdout.splitlines():
        m = re.match(r"^([^:]+\.py):(\d+): error: (.*)$", line)
        if m:
            out.setdefault(Path(m.group(1)).name, []).append((int(m.group(2)), m.group(3)))
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not out):
        raise RuntimeError(f"mypy failed to run ({proc.returncode}):\n{stdout}\n{stderr}")
    return out


def _communicate(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def start_pyright(folder: Path) -> subprocess.Popen[str]:
    (folder / "pyrightconfig.json").write_text(json.dumps(PYRIGHT_CONFIG))
    exe = Path(sys.executable).with_name("pyright")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pyright"]
    return subprocess.Popen(
        [*cmd, "--outputjson", "--pythonpath", sys.executable, "-p", str(folder / "pyrightconfig.json")],
        cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"})


def finish_pyright(proc: subprocess.Popen[str]) -> dict[str, list[tuple[int, str]]]:
    stdout, stderr = _communicate(proc)
    try:
        report = json.loads(stdout)
    except ValueError:
        raise RuntimeError(f"pyright failed to run ({proc.returncode}):\n{stdout}\n{stderr}") from None
    out: dict[str, list[tuple[int, str]]] = {}
    for d in report.get("generalDiagnostics", []):
        if d.get("severity") != "error":
            continue
        line = int(d["range"]["start"]["line"]) + 1
        out.setdefault(Path(d["file"]).name, []).append((line, f"{d['message']} ({d.get('rule', '')})"))
    return out


#: why the checkers failed in this process, once they have: later tests fail at once with it
#: instead of running both checkers again (and timing out again on a machine that is too busy)
_failed: list[str] = []


@functools.cache
def results() -> Results:
    """Both checkers' diagnostics over :func:`files`, computed once per test session (once per
    run under pytest-xdist: the workers share them through a locked file)."""
    if _failed:
        raise RuntimeError(f"the type checkers failed earlier in this session: {_failed[0]}")
    try:
        return _shared_results()
    except BaseException as e:  # (a test's timeout too)
        _failed.append(f"{type(e).__name__}: {e}"[:2000])
        raise


def _shared_results() -> Results:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return _check()
    shared = Path(tempfile.gettempdir()) / f"acplink-typecheck-{run}"
    shared.mkdir(exist_ok=True)
    atexit.register(shutil.rmtree, shared, ignore_errors=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker checks; the others wait, then read
        done = shared / "results.json"
        if done.exists():
            saved = json.loads(done.read_text())

            def found(checker: str) -> dict[str, list[tuple[int, str]]]:
                return {name: [(line, msg) for line, msg in errors] for name, errors in saved[checker].items()}

            return Results(Path(saved["folder"]), found("mypy"), found("pyright"), saved["pyright_ran"])
        res = _check()
        done.write_text(json.dumps({"folder": str(res.folder), "mypy": res.mypy, "pyright": res.pyright,
                                    "pyright_ran": res.pyright_ran}))
        return res


def _check() -> Results:
    """Writes :func:`files` to a temporary folder and runs mypy and pyright over it at once."""
    folder = Path(tempfile.mkdtemp(prefix="acplink-typecheck-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    sources = files()
    for name, text in sources.items():
        (folder / name).write_text(text)
    res = Results(folder)
    mypy = start_mypy(folder, sorted(sources))
    pyright = start_pyright(folder) if have_node() else None
    try:
        res.mypy = finish_mypy(mypy)
        if pyright is not None:
            res.pyright = finish_pyright(pyright)
            res.pyright_ran = True
    finally:
        for proc in (mypy, pyright):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    return res
