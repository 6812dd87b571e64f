"""``--otel`` without the SDK installed: one line naming the extra, no traceback, exit 2; and
every command that should have the option has it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ACPLINK = [sys.executable, "-m", "acplink"]


@pytest.fixture
def no_otel_env(tmp_path: Path) -> dict[str, str]:
    """Python processes that cannot import OpenTelemetry (as without the extras)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['opentelemetry'] = None\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.parametrize("argv", [["prompt", "--otel", "hi"], ["demo-agent", "--otel"],
                                  ["serve", "--metrics", "0"], ["serve", "--otel"]])
def test_otel_without_the_sdk_is_one_line(argv: list[str], no_otel_env: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run([*ACPLINK, *argv], capture_output=True, text=True, env=no_otel_env, cwd=tmp_path,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    what = "--metrics" if "--metrics" in argv else "--otel"
    assert proc.stderr.startswith(f"acplink: error: {what} needs the 'otlp' extra (not installed: opentelemetry")
    assert proc.stderr.rstrip().endswith("pip install 'acplink[otlp]'") and proc.stderr.count("\n") == 1


def test_the_commands_with_otel() -> None:
    from acplink.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("chat", "prompt", "serve", "demo-agent"):
        options = {o for a in sub.choices[name]._actions for o in a.option_strings}  # type: ignore[attr-defined]
        assert "--otel" in options, name
    serve = {o for a in sub.choices["serve"]._actions for o in a.option_strings}  # type: ignore[attr-defined]
    assert {"--metrics", "--metrics-host"} <= serve
