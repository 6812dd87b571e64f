"""An agent run by hand on a terminal (stdin a TTY) says on stderr what it is and how to talk
to it, and the first line typed that is not JSON gets a hint before the protocol's parse
error; run by a client (stdin a pipe) it says nothing."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

ACPLINK = str(Path(sys.executable).parent / "acplink")
ECHO = "from acplink import AgentApp, run_agent\nrun_agent(AgentApp('echo'))\n"


def _line(fd: int, deadline: float) -> bytes:
    out = b""
    while not out.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no line in time (so far {out!r})"
        chunk = os.read(fd, 1)
        assert chunk, f"end of output (so far {out!r})"
        out += chunk
    return out


def _by_hand(argv: list[str], cwd: Path) -> tuple[str, str, dict[str, object], int]:
    """Run ``argv`` with a terminal as stdin, type a line that is not JSON, then Ctrl-D: its first
    two stderr lines, its answer on stdout, its exit status."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env={**os.environ, "ACPLINK_DEMO_STORE": str(cwd / "store")})
    os.close(slave)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        deadline = time.monotonic() + 60
        banner = _line(proc.stderr.fileno(), deadline).decode()
        os.write(master, b"hello\n")
        hint = _line(proc.stderr.fileno(), deadline).decode()
        answer = orjson.loads(_line(proc.stdout.fileno(), deadline))
        os.write(master, b"\x04")  # Ctrl-D: end of input on the terminal
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        proc.stdout.close()
        proc.stderr.close()
    return banner, hint, answer, code


def test_the_demo_agent_on_a_terminal_says_what_it_is(tmp_path: Path) -> None:
    banner, hint, answer, code = _by_hand([ACPLINK, "demo-agent"], tmp_path)
    on_path = shutil.which("acplink")
    command = "acplink" if on_path and os.path.samefile(on_path, ACPLINK) else ACPLINK
    assert banner == (f"acplink agent 'acplink-demo' speaking ACP (JSON-RPC) on stdin/stdout; talk to it with "
                      f"`acplink chat -- {command} demo-agent` (Ctrl-D ends it)\n"), banner
    assert "not JSON-RPC" in hint and f"`acplink chat -- {command} demo-agent`" in hint, hint
    assert answer["error"]["code"] == -32700  # (the protocol's answer is still given, after the hint)
    assert code == 0


def test_any_run_agent_app_on_a_terminal_names_its_command(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO)
    banner, hint, _, code = _by_hand([sys.executable, "echo.py"], tmp_path)
    assert banner.startswith("acplink agent 'echo' speaking ACP"), banner
    shown = f"`acplink chat -- {os.path.basename(sys.executable)} echo.py`"
    assert shown in banner and shown.strip("`") in hint, (banner, hint)
    assert code == 0


def test_run_by_a_client_it_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO)
    proc = subprocess.run([sys.executable, "echo.py"], input=b"hello\n", capture_output=True, cwd=tmp_path,
                          timeout=60)
    assert proc.stderr == b"" and proc.returncode == 0
    assert orjson.loads(proc.stdout)["error"]["code"] == -32700
