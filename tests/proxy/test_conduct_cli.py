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
    (["conduct", "--proxy", "acplink:nope", "--", "agent"], "no built-in proxy 'nope'; built-ins: context, passthrough"),
    (["conduct", "--as-proxy", "--", "agent"], "--as-proxy runs proxies only"),
    (["conduct", "--as-proxy"], "--as-proxy needs at least one --proxy"),
    (["conduct", "--proxy", "'unclosed", "--", "agent"], "--proxy \"'unclosed\": No closing quotation"),
])
def test_usage_errors_are_one_line(args: list[str], words: str) -> None:
    proc = subprocess.run([*ACPLINK, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr == f"acplink: error: {words}\n" or proc.stderr.startswith(f"acplink: error: {words}")
    assert proc.stderr.count("\n") == 1
