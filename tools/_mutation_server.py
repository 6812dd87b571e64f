"""The worker of tools/mutate.py: imports the heavy modules once, then forks one child per
mutant, which runs pytest on the mutated copy of src/ (set up by the parent tool).

Protocol (JSON lines): stdin ``{"tests": [...], "timeout": s}``, stdout
``{"outcome": "killed" | "survived" | "timeout", "seconds": s}``. With ``"cover": path``
instead, one pytest run records which test executes which line of the target files.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("mutation", max_examples=25, deadline=None)
settings.load_profile("mutation")
for name in os.environ.get("MUTATION_PRELOAD", "").split():
    importlib.import_module(name)  # never a module being mutated (the child imports that)


class Cover:
    """A pytest plugin recording, per test, the lines of ``files`` it runs (all threads)."""

    def __init__(self, files: list[str]) -> None:
        self.files = set(files)
        self.current = ""
        self.lines: dict[str, dict[int, set[str]]] = {f: {} for f in files}

    def _trace(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename not in self.files:
            return None
        self._line(frame)
        return self._local

    def _local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self._line(frame)
        return self._local

    def _line(self, frame: Any) -> None:
        if self.current:
            self.lines[frame.f_code.co_filename].setdefault(frame.f_lineno, set()).add(self.current)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        self.current = item.nodeid
        sys.settrace(self._trace)
        threading.settrace(self._trace)
        yield
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        self.current = ""


def run_child(args: list[str], plugins: list[Any]) -> int:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    return int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", "--no-header", *args], plugins=plugins))


def main() -> None:
    for raw in sys.stdin:
        job = json.loads(raw)
        start = time.monotonic()
        if "cover" in job:
            cover = Cover(job["files"])
            pid = os.fork()
            if pid == 0:
                code = run_child(job["tests"], [cover])
                with open(job["cover"], "w") as f:
                    json.dump({file: {line: sorted(ids) for line, ids in lines.items()}
                               for file, lines in cover.lines.items()}, f)
                os._exit(code)
        else:
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)
                os._exit(run_child(job["tests"], []))
        deadline = start + job.get("timeout", 600)
        outcome = "timeout"
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                outcome = "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
                break
            time.sleep(0.02)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        print(json.dumps({"outcome": outcome, "seconds": round(time.monotonic() - start, 2)}), flush=True)


if __name__ == "__main__":
    main()
