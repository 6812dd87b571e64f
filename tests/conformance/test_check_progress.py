"""`acplink check` while it runs: one updating line on a terminal (erased before the report,
absent when stdout is not a terminal), each check's results as it ends with --verbose; and the
checked demo agent keeps its sessions in a temporary store, never the user's."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

from acplink.cli.check_progress import CheckProgress

ACPLINK = [sys.executable, "-m", "acplink.cli.main"]
DEMO = [sys.executable, "-m", "acplink.demo"]


def _home(tmp_path: Path) -> dict[str, str]:
    """An environment whose home, XDG folders and temp folder are under ``tmp_path``, with no
    explicit demo store: where an unguarded demo agent would write its sessions."""
    env = {k: v for k, v in os.environ.items() if k != "ACPLINK_DEMO_STORE"}
    for name in ("home", "state", "data", "tmp"):
        (tmp_path / name).mkdir()
    env.update(HOME=str(tmp_path / "home"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_DATA_HOME=str(tmp_path / "data"), TMPDIR=str(tmp_path / "tmp"), COLUMNS="100", LINES="30")
    return env


def _run_on_pty(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes]:
    """Run acplink with stdout and stderr on a pseudo-terminal; its exit code and output."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*ACPLINK, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env,
                            cwd=cwd)
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        code = proc.wait(timeout=60)
    return code, out


def test_a_terminal_sees_one_updating_line_erased_before_the_report(tmp_path: Path) -> None:
    env = _home(tmp_path)
    code, out = _run_on_pty(["check", "-k", "initialize", "-k", "unknown-method", "--", *DEMO], env, tmp_path)
    assert code == 0, out
    text = out.decode()
    report_at = text.index("acplink check:")
    live = text[:report_at]
    # the updating line: carriage return, "done/total", a requirement id and the check's name
    assert re.search(r"\r0/2 (INIT-001 initialize|RPC-001 unknown-method)", live), live
    assert re.search(r"\r2/2 ", live), live
    assert live.startswith("\rstarting the agent … 0 s\x1b[K"), live  # (before the first check runs)
    assert live.endswith("\r\x1b[K"), live  # erased before the report
    assert "\n" not in live  # one line, rewritten in place
    # the store the demo agent would have used is untouched
    assert not list((tmp_path / "state").rglob("*")) and not list((tmp_path / "home").rglob("*"))


def test_redirected_output_holds_only_the_report_and_verbose_streams_results(tmp_path: Path) -> None:
    env = _home(tmp_path)
    proc = subprocess.run([*ACPLINK, "check", "-k", "initialize", "--", *DEMO], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("acplink check:") and "\r" not in proc.stdout and "\x1b" not in proc.stdout
    proc = subprocess.run([*ACPLINK, "check", "-v", "-k", "initialize", "-k", "unknown-method", "--", *DEMO],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    first, second, report = proc.stdout.split("\n", 2)
    assert first.startswith("[1/2] ") and second.startswith("[2/2] "), proc.stdout
    by_check = {line.split()[1]: line for line in (first, second)}
    assert re.fullmatch(r"\[\d/2\] initialize \d+\.\d s: PASS INIT-001, PASS INIT-002, .*PASS SCHEMA-001.*",
                        by_check["initialize"]), by_check
    assert "PASS RPC-001" in by_check["unknown-method"]
    assert report.startswith("acplink check:") and "\r" not in proc.stdout


def test_check_leaves_nothing_in_the_users_stores(tmp_path: Path) -> None:
    """The demo agent's store (XDG_STATE_HOME/acplink/demo) stays empty after a check that
    creates sessions, and the temporary store is removed."""
    env = _home(tmp_path)
    proc = subprocess.run([*ACPLINK, "check", "-k", "session-new", "-k", "prompt", "-k", "session-list", "--", *DEMO], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=180, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS  SESS-001" in proc.stdout
    for name in ("home", "state", "data", "tmp"):
        assert list((tmp_path / name).rglob("*")) == [], name


def test_the_result_line_names_each_requirement_once_at_its_worst() -> None:
    from acplink.conformance import Outcome
    from acplink.conformance.runner import CheckRun

    run = CheckRun("load", 1.25, [Outcome("SESS-011", "pass", ""), Outcome("SESS-016", "pass", ""),
                                  Outcome("SESS-016", "fail", "late history"), Outcome("SESS-011", "skipped", "")],
                   [], error="setup\x1b[2J failed\nmore")
    line = CheckProgress(live=False).result_line(run, 3, 12)
    assert line == "[ 3/12] load 1.2 s: SKIP SESS-011, FAIL SESS-016 (setup failed)"
