"""Helpers for the CLI tests: run ``acplink`` as a real process, with a marker in its
environment, and check that nothing it started (agents, terminals) outlives it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pexpect
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_SCRIPT = Path(sys.executable).parent / "acplink"
ACPLINK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "acplink"]
CRASH_AGENT = [sys.executable, str(HERE / "crash_agent.py")]

PEERS_PYTHON = ROOT / ".peers-venv" / "bin" / "python"
JS_DIR = ROOT / "tests" / "interop" / "js"
NODE = shutil.which("node")


def _py_missing() -> str | None:
    if not PEERS_PYTHON.exists():
        return ("official Python SDK venv missing: python3 -m venv .peers-venv && "
                ".peers-venv/bin/pip install agent-client-protocol==0.12.1")
    return None


def _ts_missing() -> str | None:
    if NODE is None:
        return "node not found on PATH (needed for the official TypeScript SDK agent)"
    if not (JS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        return "official TypeScript SDK not installed: (cd tests/interop/js && npm ci)"
    return None


#: official-SDK agents: name -> (command, reason the environment is missing or None)
OFFICIAL_AGENTS: dict[str, tuple[list[str], str | None]] = {
    "python-sdk": ([str(PEERS_PYTHON), str(ROOT / "tests" / "interop" / "peers" / "py_agent.py")], _py_missing()),
    "ts-sdk": ([str(NODE), str(JS_DIR / "agent.mjs")], _ts_missing()),
}


def official_params() -> list[object]:
    return [pytest.param(name, id=name, marks=[pytest.mark.skipif(reason is not None, reason=reason or "")])
            for name, (_, reason) in OFFICIAL_AGENTS.items()]


def official_agent(name: str) -> list[str]:
    return OFFICIAL_AGENTS[name][0]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


class Cli:
    """Runs ``acplink`` in ``workdir`` with a private demo store and a leak marker: as a real
    process (:meth:`run`) or in this process (:meth:`call`, faster: no interpreter start)."""

    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str] | None = None,
                 monkeypatch: pytest.MonkeyPatch | None = None) -> None:
        self.capsys = capsys
        self.monkeypatch = monkeypatch
        self.marker = uuid.uuid4().hex
        self.workdir = tmp_path / "work"
        self.workdir.mkdir()
        (self.workdir / "hello.txt").write_text("line one\n")
        self.env = {
            **os.environ,
            "ACPLINK_DEMO_STORE": str(tmp_path / "store"),
            "ACPLINK_TEST_MARK": self.marker,
            "PROMPT_TOOLKIT_NO_CPR": "1",
            "PYTHONUNBUFFERED": "1",
        }
        for var in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
            self.env.pop(var, None)

    def run(self, *args: str, input: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*ACPLINK, *args], input=input, capture_output=True, text=True,
                              cwd=self.workdir, env=self.env, timeout=timeout,
                              stdin=None if input is not None else subprocess.DEVNULL)

    def call(self, *args: str) -> Result:
        """``acplink ARGS`` in this process (stdin is not read)."""
        from acplink.cli.main import main

        assert self.capsys is not None and self.monkeypatch is not None
        self.monkeypatch.chdir(self.workdir)
        for key in ("ACPLINK_DEMO_STORE", "ACPLINK_TEST_MARK"):
            self.monkeypatch.setenv(key, self.env[key])
        self.capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = self.capsys.readouterr()
        return Result(code, out, err)

    def leftovers(self) -> list[int]:
        """Live processes (not zombies) that carry this test's marker in their environment."""
        needle = f"ACPLINK_TEST_MARK={self.marker}".encode()
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if stat[stat.rfind(b")") + 2:][:1] != b"Z":
                found.append(int(name))
        return found

    def assert_no_leftovers(self, settle: float = 5.0) -> None:
        deadline = time.monotonic() + settle
        left = self.leftovers()
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = self.leftovers()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert not left, f"processes left behind: {left}"


def no_traceback(text: str) -> bool:
    return "Traceback" not in text


class Chat:
    """``acplink chat [OPTIONS] [-- AGENT...]`` on a pseudo-terminal (pexpect), in the test's
    workdir and environment; every expectation waits for text, never for time."""

    def __init__(self, cli: Cli, *agent: str, term: str = "xterm-256color", options: Sequence[str] = (),
                 timeout: float = 20) -> None:
        env = {**cli.env, "TERM": term}
        args = [*ACPLINK[1:], "chat", *options, *(["--", *agent] if agent else [])]
        self.child = pexpect.spawn(ACPLINK[0], args, cwd=str(cli.workdir), env=env, dimensions=(40, 120),
                                   encoding="utf-8", timeout=timeout)
        self.transcript: list[str] = []

    def expect(self, pattern: str | type[pexpect.EOF]) -> str:
        self.child.expect(pattern)
        seen = str(self.child.before) + (str(self.child.after) if isinstance(self.child.after, str) else "")
        self.transcript.append(seen)
        return seen

    def send(self, line: str) -> None:
        self.child.send(line + "\r")

    def say(self, line: str, reply: str, prompt: str = "ask>") -> str:
        """Send ``line``, wait for ``reply`` and the next prompt; what came meanwhile."""
        self.send(line)
        return self.expect(reply) + self.expect(prompt)

    def finish(self) -> int:
        """Wait for the process to end; its exit status."""
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.exitstatus is not None, f"killed by signal {self.child.signalstatus}"
        return int(self.child.exitstatus)

    def close(self) -> None:
        if self.child.isalive():
            self.child.close(force=True)
        elif not self.child.closed:
            self.child.close()
