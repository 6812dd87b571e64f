"""The README's quick start installs into a virtualenv (a stock Debian, Ubuntu or Homebrew
Python refuses a global ``pip install``: externally-managed-environment), the same one
scripts/test.sh uses, and the README names the kit's v2 suite next to the v1 one."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _quick_start() -> list[list[str]]:
    """The quick start's command line, split at ``&&``: one argv per command."""
    fence = README.split("<!-- quick-start -->", 1)[1].split("```", 2)[1]
    body = fence.removeprefix("sh\n").strip()
    assert "\n" not in body, "the quick start is one command line"
    return [shlex.split(part) for part in body.split("&&")]


def test_the_quick_start_installs_into_a_venv_then_runs_the_demo() -> None:
    steps = _quick_start()
    venv = next(i for i, argv in enumerate(steps) if argv[1:3] == ["-m", "venv"])
    env_dir = steps[venv][3]
    activate = next(i for i, argv in enumerate(steps) if argv[:2] == [".", f"{env_dir}/bin/activate"])
    install = next(i for i, argv in enumerate(steps) if "install" in argv and "pip" in argv[0])
    assert venv < activate < install, steps  # pip runs inside the virtualenv, never before it
    assert steps[-1] == ["acplink", "chat"], steps
    assert env_dir == ".venv"
    assert re.search(r"-m venv \.venv\b", (ROOT / "scripts" / "test.sh").read_text())  # the same virtualenv


def test_no_global_pip_install_is_shown() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    code = quick.split("```")[1::2]  # (the fenced command lines, not the prose)
    for line in "\n".join(code).splitlines():
        if "pip install" in line:
            assert "venv" in line and line.index("venv") < line.index("pip install"), line


def test_the_readme_names_the_v2_suite_of_the_kit() -> None:
    row = next(line for line in README.splitlines() if "check --protocol 2" in line)
    assert "106" in row and "v2" in row
