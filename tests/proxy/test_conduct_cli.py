"""``acplink conduct`` from the command line: behind ``acplink prompt``, its usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ACPLINK = [sys.executable, "-m", "acplink"]
DEMO = [sys.executable, "-m", "acplink.demo"]


def test_acplink_prompt_through_a_chain(tmp_path: Path) -> None:
    chain = [*ACPLINK, "conduct", "--proxy", "acplink:context=Be brief.", "--proxy", "acplink:passthrough", "--", *DEMO]
    proc = subprocess.run([*ACPLINK, "prompt", "hello there", "--", *chain], capture_output=True, text=True,
                          timeout=60, env={"ACPLINK_DEMO_STORE": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "You said: Be brief.hello there"


@pytest.mark.parametrize("args, words", [
    (["conduct", "--proxy", "acplink:passthrough"], "no agent command"),
    (["conduct", "--proxy", "acplink:nope", "--", "agent"], "no built-in proxy 'nope'; built-ins: context, mcp-http, passthrough"),
    (["conduct", "--as-proxy", "--", "agent"], "--as-proxy runs proxies only"),
    (["conduct", "--as-proxy"], "--as-proxy needs at least one --proxy"),
    (["conduct", "--proxy", "'unclosed", "--", "agent"], "--proxy \"'unclosed\": cannot split the command: No closing quotation"),
])
def test_usage_errors_are_one_line(args: list[str], words: str) -> None:
    proc = subprocess.run([*ACPLINK, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr == f"acplink: error: {words}\n" or proc.stderr.startswith(f"acplink: error: {words}")
    assert proc.stderr.count("\n") == 1


def test_acplink_chat_through_a_chain_on_a_pty(tmp_path: Path) -> None:
    import os

    import pexpect

    env = {**os.environ, "ACPLINK_DEMO_STORE": str(tmp_path), "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color",
           "PYTHONUNBUFFERED": "1"}
    for var in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
        env.pop(var, None)
    chain = [*ACPLINK, "conduct", "--proxy", "acplink:passthrough", "--proxy", "acplink:passthrough", "--", *DEMO]
    child = pexpect.spawn(ACPLINK[0], [*ACPLINK[1:], "chat", "--", *chain], cwd=str(tmp_path), env=env,
                          dimensions=(40, 120), encoding="utf-8", timeout=30)
    try:
        child.expect("ask>")
        assert "acplink demo agent" in str(child.before)
        child.send("hello through proxies\r")
        child.expect("You said: hello through proxies")
        child.expect("ask>")
        child.send("slow 500\r")  # Ctrl-C: session/cancel goes hop by hop
        child.expect("chunk 2/500")
        child.sendintr()
        child.expect("turn ended: cancelled")
        child.expect("ask>")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
