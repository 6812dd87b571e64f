"""Type-check user code as users do: ``mypy --strict`` without the pydantic plugin, and
pyright in strict mode, each run once over every file that the tests check.

The files: the examples, every Python snippet of the docs (``doc_snippets``), and the cases
of ``tests/typing_cases`` (lines marked ``# error`` must be reported, all others clean).
:func:`results` writes them to one temporary folder and runs both checkers once per test
session; the tests look up their file's diagnostics in it.
"""

from __future__ import annotations

import atexit
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

from doc_snippets import ROOT, snippets

EXAMPLES = ROOT / "examples"
CASES = Path(__file__).resolve().parent / "typing_cases"
TIMEOUT = 600  # generous: both checkers over every file, on a loaded 2-core machine

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


def run_mypy(folder: Path, names: list[str]) -> dict[str, list[tuple[int, str]]]:
    (folder / "mypy.ini").write_text(MYPY_INI)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-error-summary",
         "--show-error-codes", "--no-pretty", "--cache-dir", str(folder / ".mypy_cache"), *names],
        cwd=folder, capture_output=True, text=True, timeout=TIMEOUT)
    out: dict[str, list[tuple[int, str]]] = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^([^:]+\.py):(\d+): error: (.*)$", line)
        if m:
            out.setdefault(Path(m.group(1)).name, []).append((int(m.group(2)), m.group(3)))
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and not out):
        raise RuntimeError(f"mypy failed to run ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return out


def run_pyright(folder: Path) -> dict[str, list[tuple[int, str]]]:
    (folder / "pyrightconfig.json").write_text(json.dumps(PYRIGHT_CONFIG))
    exe = Path(sys.executable).with_name("pyright")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pyright"]
    proc = subprocess.run(
        [*cmd, "--outputjson", "--pythonpath", sys.executable, "-p", str(folder / "pyrightconfig.json")],
        cwd=folder, capture_output=True, text=True, timeout=TIMEOUT,
        env={**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"})
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"pyright failed to run ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}") from None
    out: dict[str, list[tuple[int, str]]] = {}
    for d in report.get("generalDiagnostics", []):
        if d.get("severity") != "error":
            continue
        line = int(d["range"]["start"]["line"]) + 1
        out.setdefault(Path(d["file"]).name, []).append((line, f"{d['message']} ({d.get('rule', '')})"))
    return out


@functools.cache
def results() -> Results:
    """Both checkers' diagnostics over :func:`files`, computed once per test session."""
    folder = Path(tempfile.mkdtemp(prefix="acplink-typecheck-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    sources = files()
    for name, text in sources.items():
        (folder / name).write_text(text)
    res = Results(folder)
    res.mypy = run_mypy(folder, sorted(sources))
    if have_node():
        res.pyright = run_pyright(folder)
        res.pyright_ran = True
    return res
